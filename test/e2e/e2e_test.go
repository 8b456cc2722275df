//go:build e2e

/*
Copyright 2026 The blis-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// managerPod waits until the manager Deployment is Available and returns its one ready pod.
func managerPod(ctx context.Context, t *testing.T, c *cluster) (*appsv1.Deployment, *corev1.Pod) {
	t.Helper()
	var dep appsv1.Deployment
	waitFor(ctx, t, rolloutTimeout, "the manager Deployment to be Available", func(ctx context.Context) (bool, string, error) {
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: managerNamespace, Name: managerDeployment}, &dep); err != nil {
			return false, "", err
		}
		s := dep.Status
		state := fmt.Sprintf("generation %d/%d, updated %d, available %d, unavailable %d",
			s.ObservedGeneration, dep.Generation, s.UpdatedReplicas, s.AvailableReplicas, s.UnavailableReplicas)
		available := slices.ContainsFunc(s.Conditions, func(c appsv1.DeploymentCondition) bool {
			return c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue
		})
		want := ptr.Deref(dep.Spec.Replicas, 1)
		done := available && s.ObservedGeneration >= dep.Generation && s.UpdatedReplicas == want &&
			s.AvailableReplicas == want && s.Replicas == want
		return done, state, nil
	})
	var pods corev1.PodList
	if err := c.client.List(ctx, &pods, client.InNamespace(managerNamespace),
		client.MatchingLabels(dep.Spec.Selector.MatchLabels)); err != nil {
		t.Fatal(err)
	}
	var ready []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && podReady(&p) {
			ready = append(ready, p)
		}
	}
	if len(ready) != 1 {
		t.Fatalf("want exactly one ready manager pod, got %d of %d", len(ready), len(pods.Items))
	}
	return &dep, &ready[0]
}

func podReady(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}

// TestManagerRunsRestricted deploys nothing itself: it checks the manager that `make deploy`
// installed from config/default is Available, holds the leader Lease, and runs as the
// restricted Pod Security Standard demands, both as declared and as the kernel sees the process.
func TestManagerRunsRestricted(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	c.dumpOnFailure(t, managerNamespace, "control-plane=controller-manager")
	dep, pod := managerPod(ctx, t, c)

	spec := pod.Spec
	psc := spec.SecurityContext
	if psc == nil || !ptr.Deref(psc.RunAsNonRoot, false) || ptr.Deref(psc.RunAsUser, 0) != 65532 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Fatalf("pod security context: %+v", psc)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(spec.Containers))
	}
	ctr := spec.Containers[0]
	sc := ctr.SecurityContext
	if sc == nil || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) || ptr.Deref(sc.AllowPrivilegeEscalation, true) ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Fatalf("container security context: %+v", sc)
	}
	if ctr.ReadinessProbe == nil || ctr.LivenessProbe == nil || ctr.Resources.Limits.Memory().IsZero() {
		t.Fatal("the manager container lacks probes or a memory limit")
	}
	engineImage := ""
	for _, e := range ctr.Env {
		if e.Name == "ENGINE_IMAGE" {
			engineImage = e.Value
		}
	}
	if engineImage != ctr.Image {
		t.Fatalf("ENGINE_IMAGE %q differs from the manager image %q", engineImage, ctr.Image)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.RestartCount != 0 {
			t.Errorf("container %s restarted %d times", cs.Name, cs.RestartCount)
		}
	}
	t.Logf("manager %s Available; pod %s runs %s", dep.Name, pod.Name, ctr.Image)

	// The kernel's view of the running manager process (this test runs on the node).
	id := pod.Status.ContainerStatuses[0].ContainerID
	_, id, _ = strings.Cut(id, "://")
	pid, err := containerPID(id)
	if err != nil {
		t.Fatal(err)
	}
	status := procStatus(t, pid)
	if uids := strings.Fields(status["Uid"]); len(uids) != 4 || slices.ContainsFunc(uids, func(u string) bool { return u != "65532" }) {
		t.Errorf("process %d runs with uids %q, want 65532 throughout", pid, status["Uid"])
	}
	if status["CapEff"] != "0000000000000000" || status["CapPrm"] != "0000000000000000" {
		t.Errorf("process %d has capabilities: effective %s permitted %s", pid, status["CapEff"], status["CapPrm"])
	}
	if status["NoNewPrivs"] != "1" {
		t.Errorf("process %d may gain privileges (NoNewPrivs %q)", pid, status["NoNewPrivs"])
	}
	if status["Seccomp"] != "2" {
		t.Errorf("process %d is not confined by a seccomp filter (Seccomp %q)", pid, status["Seccomp"])
	}
	if opts, err := rootMountOptions(pid); err != nil || !slices.Contains(opts, "ro") {
		t.Errorf("root filesystem of process %d is not read-only: %v (%v)", pid, opts, err)
	}

	// Leader election works with the namespaced Role: the Lease names this pod.
	var lease coordinationv1.Lease
	waitFor(ctx, t, shortTimeout, "the leader Lease", func(ctx context.Context) (bool, string, error) {
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: managerNamespace, Name: leaderElectionID}, &lease); err != nil {
			return false, "", err
		}
		holder := ptr.Deref(lease.Spec.HolderIdentity, "")
		return strings.HasPrefix(holder, pod.Name+"_"), "holder " + holder, nil
	})
}

// containerPID finds the host PID of the first process of container id through its cgroup.
func containerPID(id string) (int, error) {
	if id == "" {
		return 0, fmt.Errorf("no container ID")
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	found := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cg, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err != nil || !strings.Contains(string(cg), id) {
			continue
		}
		if found == 0 || pid < found {
			found = pid
		}
	}
	if found == 0 {
		return 0, fmt.Errorf("no process of container %s on this host; run the tests on the node", id)
	}
	return found, nil
}

// procStatus reads /proc/PID/status into a map of field to value.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// rootMountOptions returns the per-mount options of the root mount as process pid sees it.
func rootMountOptions(pid int) ([]string, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		return nil, err
	}
	var opts []string
	for _, line := range strings.Split(string(raw), "\n") {
		// mountinfo: ID parentID major:minor root mountpoint options ...; the last "/" wins.
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == "/" {
			opts = strings.Split(f[5], ",")
		}
	}
	if opts == nil {
		return nil, fmt.Errorf("no root mount in /proc/%d/mountinfo", pid)
	}
	return opts, nil
}

// TestManagerEndpoints checks the probes and the secure metrics endpoint: anonymous callers are
// refused, authenticated callers without the metrics-reader role are forbidden, and a
// ServiceAccount bound to it reads the metrics through the metrics Service.
func TestManagerEndpoints(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	c.dumpOnFailure(t, managerNamespace, "control-plane=controller-manager")
	_, pod := managerPod(ctx, t, c)

	// /readyz includes the informer caches: a pod is Ready as soon as its caches have synced,
	// and when it then wins the leader election its controllers start watches of their own,
	// whose informers must sync too, so readiness may drop for a moment right after the
	// election. Both probes must answer ok once that settles.
	plain := &http.Client{Timeout: 10 * time.Second}
	for _, path := range []string{"/healthz", "/readyz"} {
		url := "http://" + net.JoinHostPort(pod.Status.PodIP, "8081") + path
		waitFor(ctx, t, shortTimeout, "GET "+path+" to answer ok", func(ctx context.Context) (bool, string, error) {
			code, body := get(ctx, t, plain, url, "")
			return code == http.StatusOK && strings.TrimSpace(body) == "ok", fmt.Sprintf("HTTP %d %q", code, body), nil
		})
	}

	var svc corev1.Service
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: managerNamespace, Name: metricsService}, &svc); err != nil {
		t.Fatal(err)
	}
	url := "https://" + net.JoinHostPort(svc.Spec.ClusterIP, "8443") + "/metrics"
	// The manager's certificate is self-signed (no --metrics-cert-path); authentication is by token.
	secure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed test endpoint
	}}

	ns := c.newNamespace(ctx, t, "blis-e2e-metrics")
	reader := c.serviceAccountToken(ctx, t, ns, "scraper")
	stranger := c.serviceAccountToken(ctx, t, ns, "stranger")
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReaderRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "scraper"}},
	}
	if err := c.client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.client.Delete(context.Background(), binding) })

	var body string
	waitFor(ctx, t, shortTimeout, "the metrics endpoint to accept the metrics reader", func(ctx context.Context) (bool, string, error) {
		code, b := get(ctx, t, secure, url, reader)
		body = b
		return code == http.StatusOK, fmt.Sprintf("HTTP %d", code), nil
	})
	want := `leader_election_master_status{name="` + leaderElectionID + `"} 1`
	if !strings.Contains(body, want) || !strings.Contains(body, "rest_client_requests_total") {
		t.Fatalf("metrics lack %q or client metrics:\n%.2000s", want, body)
	}
	// The operator's own metrics.
	for _, m := range []string{"blis_evaluation_queue_depth", "blis_evaluation_running", "blis_inprocess_workers ",
		"blis_inprocess_workers_busy", "blis_evaluation_cache_hits_total"} {
		if !strings.Contains(body, m) {
			t.Errorf("metrics lack %s", m)
		}
	}
	if code, _ := get(ctx, t, secure, url, ""); code != http.StatusUnauthorized {
		t.Fatalf("anonymous GET /metrics: HTTP %d, want 401", code)
	}
	if code, _ := get(ctx, t, secure, url, stranger); code != http.StatusForbidden {
		t.Fatalf("GET /metrics without the metrics-reader role: HTTP %d, want 403", code)
	}
}

// serviceAccountToken creates ServiceAccount name in ns and returns a short-lived token for it.
func (c *cluster) serviceAccountToken(ctx context.Context, t *testing.T, ns, name string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := c.client.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	tr, err := c.clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// get performs GET url with an optional bearer token and returns the status code and body; a
// transport error is reported as code 0.
func get(ctx context.Context, t *testing.T, hc *http.Client, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, string(b)
}

// crdNames lists the CRDs of config/crd/bases by name.
func crdNames(t *testing.T, root string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases (%v)", err)
	}
	var names []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		names = append(names, crd.Name)
	}
	return names
}

// TestCRDsEstablished checks that every CRD of config/crd/bases is installed and Established.
func TestCRDsEstablished(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	for _, name := range crdNames(t, c.repoRoot) {
		waitFor(ctx, t, shortTimeout, "CRD "+name+" to be Established", func(ctx context.Context) (bool, string, error) {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := c.client.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
				return false, "", err
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, "", nil
				}
			}
			return false, "not Established", nil
		})
	}
}

// TestSamplesApply applies every manifest of config/samples with kubectl, each file into a
// namespace of its own, and reads the objects back.
func TestSamplesApply(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	files, err := filepath.Glob(filepath.Join(c.repoRoot, "config", "samples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "kustomization.yaml" })
	if len(files) == 0 {
		t.Fatal("no samples in config/samples")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			ns := c.newNamespace(ctx, t, "blis-e2e-sample")
			if out, err := c.runKubectl(ctx, "apply", "--server-side", "-n", ns, "-f", f); err != nil {
				t.Fatal(err)
			} else {
				t.Log(strings.TrimSpace(out))
			}
			if _, err := c.runKubectl(ctx, "get", "-n", ns, "-f", f, "-o", "name"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestBlisRunsInAPod runs the simulator of the manager's image as engine Jobs will: a Job of two
// pods, each running `blis run` on the same input and seed under the restricted Pod Security
// Standard with a read-only root filesystem. Both complete and print identical BLIS metrics: the
// engine is deterministic across pods.
func TestBlisRunsInAPod(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	dep, _ := managerPod(ctx, t, c)
	image := dep.Spec.Template.Spec.Containers[0].Image
	pullPolicy := dep.Spec.Template.Spec.Containers[0].ImagePullPolicy

	ns := c.newNamespace(ctx, t, "blis-e2e-job")
	c.dumpOnFailure(t, ns, "job-name=blis")
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "blis"},
		Spec: batchv1.JobSpec{
			Completions:           ptr.To[int32](2),
			Parallelism:           ptr.To[int32](2),
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To[int64](int64(jobTimeout / time.Second)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy:                corev1.RestartPolicyNever,
				AutomountServiceAccountToken: ptr.To(false),
				SecurityContext: &corev1.PodSecurityContext{
					RunAsNonRoot:   ptr.To(true),
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
				Containers: []corev1.Container{{
					Name:            "engine",
					Image:           image,
					ImagePullPolicy: pullPolicy,
					Command: []string{"/blis", "run", "--model", "meta-llama/llama-3.1-8b-instruct",
						"--num-requests", "50", "--rate", "5", "--arrival", "poisson", "--seed", "7"},
					SecurityContext: &corev1.SecurityContext{
						ReadOnlyRootFilesystem:   ptr.To(true),
						AllowPrivilegeEscalation: ptr.To(false),
						Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					},
				}},
			}},
		},
	}
	if err := c.client.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, jobTimeout, "the blis Job to complete", func(ctx context.Context) (bool, string, error) {
		if err := c.client.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			return false, "", err
		}
		for _, cond := range job.Status.Conditions {
			if cond.Status != corev1.ConditionTrue {
				continue
			}
			switch cond.Type {
			case batchv1.JobComplete:
				return true, "", nil
			case batchv1.JobFailed:
				return false, "", fmt.Errorf("job failed: %s: %s", cond.Reason, cond.Message)
			}
		}
		return false, fmt.Sprintf("active %d, succeeded %d, failed %d", job.Status.Active, job.Status.Succeeded, job.Status.Failed), nil
	})
	logs, err := c.containerLogs(ctx, ns, "job-name=blis")
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 2 {
		t.Fatalf("want the logs of two pods, got %d", len(logs))
	}
	var outputs []string
	for name, out := range logs {
		if !strings.Contains(out, "=== Simulation Metrics ===") || !strings.Contains(out, `"ttft_p99_ms"`) ||
			!strings.Contains(out, `"completed_requests": 50`) {
			t.Fatalf("%s printed no BLIS metrics for 50 completed requests:\n%.3000s", name, out)
		}
		outputs = append(outputs, out)
	}
	if outputs[0] != outputs[1] {
		t.Fatalf("two pods with the same input and seed printed different metrics:\n%.2000s\n---\n%.2000s", outputs[0], outputs[1])
	}
}
