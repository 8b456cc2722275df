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
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// evaluationTimeout bounds how long the sample Evaluations may take on the node (the capacity
// plan simulates five seeds of an hour of traffic in one engine pod).
const evaluationTimeout = 8 * time.Minute

// Condition types and reasons the operator writes (internal/controller).
const (
	condSucceeded  = "Succeeded"
	reasonComplete = "Completed"
	reasonCacheHit = "CacheHit"
)

// describeEvaluations summarises the Evaluations of ns for failure messages.
func describeEvaluations(list *blisv1alpha1.EvaluationList) string {
	var b strings.Builder
	for _, ev := range list.Items {
		fmt.Fprintf(&b, "\n  %s: phase %q attempts %d", ev.Name, ev.Status.Phase, ev.Status.Attempts)
		for _, c := range ev.Status.Conditions {
			if c.Status == metav1.ConditionTrue || c.Type == "Accepted" {
				fmt.Fprintf(&b, "; %s=%s %s: %.200s", c.Type, c.Status, c.Reason, c.Message)
			}
		}
	}
	return b.String()
}

// waitEvaluation waits until Evaluation ns/name has condition typ True and returns it.
func waitEvaluation(ctx context.Context, t *testing.T, c *cluster, ns, name, typ string, timeout time.Duration) *blisv1alpha1.Evaluation {
	t.Helper()
	var ev blisv1alpha1.Evaluation
	waitFor(ctx, t, timeout, "Evaluation "+name+" "+typ, func(ctx context.Context) (bool, string, error) {
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ev); err != nil {
			return false, "", err
		}
		if meta.IsStatusConditionTrue(ev.Status.Conditions, "Failed") {
			c := meta.FindStatusCondition(ev.Status.Conditions, "Failed")
			return false, "", fmt.Errorf("Evaluation %s failed: %s: %s", name, c.Reason, c.Message)
		}
		return meta.IsStatusConditionTrue(ev.Status.Conditions, typ), describeEvaluations(&blisv1alpha1.EvaluationList{Items: []blisv1alpha1.Evaluation{ev}}), nil
	})
	return &ev
}

// TestOperatorRunsSamples applies config/samples with kubectl into a namespace that enforces the
// restricted Pod Security Standard and waits until every Evaluation is Succeeded: the job-executor
// ones through real engine pods writing their result ConfigMap with their own service account,
// the in-process ones in the manager. kubectl get evaluations shows the result columns, and an
// Evaluation identical to a finished one reuses its result without a Job.
func TestOperatorRunsSamples(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	managerPod(ctx, t, c)
	ns := c.newNamespace(ctx, t, "blis-e2e-operator")
	c.dumpOnFailure(t, ns, "app.kubernetes.io/managed-by=blis-operator")
	c.dumpManagerLogsOnFailure(t)

	out, err := c.runKubectl(ctx, "apply", "-n", ns, "-k", filepath.Join(c.repoRoot, "config", "samples"))
	if err != nil {
		t.Fatal(err)
	}
	t.Log(strings.TrimSpace(out))

	var list blisv1alpha1.EvaluationList
	waitFor(ctx, t, evaluationTimeout, "every sample Evaluation to succeed", func(ctx context.Context) (bool, string, error) {
		if err := c.client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, "", err
		}
		done := 0
		for _, ev := range list.Items {
			if meta.IsStatusConditionTrue(ev.Status.Conditions, "Failed") {
				return false, "", fmt.Errorf("Evaluation %s failed:%s", ev.Name, describeEvaluations(&list))
			}
			if meta.IsStatusConditionTrue(ev.Status.Conditions, condSucceeded) {
				done++
			}
		}
		return len(list.Items) > 0 && done == len(list.Items), describeEvaluations(&list), nil
	})

	jobRuns := 0
	for _, ev := range list.Items {
		st := ev.Status
		if st.CompletionTime != nil {
			t.Logf("%s (%s executor, %d seeds): created to Succeeded in %v", ev.Name, ev.Spec.Execution.Executor,
				len(ev.Spec.Seeds), st.CompletionTime.Sub(ev.CreationTimestamp.Time))
		}
		if st.Metrics == nil || st.Metrics.CompletedRequests == 0 || len(st.InputHash) != 64 || st.CompletionTime == nil {
			t.Errorf("%s: incomplete status %+v", ev.Name, st)
			continue
		}
		if ev.Spec.Execution.Executor != blisv1alpha1.ExecutorJob {
			continue
		}
		jobRuns++
		// The result came through the result ConfigMap, checked against the input hash.
		ref := st.ResultRef
		if ref == nil || ref.Kind != "ConfigMap" || ref.Digest == "" {
			t.Errorf("%s: result reference %+v", ev.Name, ref)
			continue
		}
		var cm corev1.ConfigMap
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, &cm); err != nil {
			t.Errorf("%s: result ConfigMap: %v", ev.Name, err)
			continue
		}
		if cm.Annotations["blis.inference-sim.io/input-hash"] != st.InputHash || !strings.Contains(cm.Data[ref.Key], st.InputHash) {
			t.Errorf("%s: the result ConfigMap is not for input %s", ev.Name, st.InputHash)
		}
		if owner := metav1.GetControllerOf(&cm); owner == nil || owner.UID != ev.UID {
			t.Errorf("%s: the result ConfigMap is not owned by the Evaluation", ev.Name)
		}
		// The engine ran as a real pod of an owned Job (which completes once the pod, having
		// written the result, exits).
		waitFor(ctx, t, shortTimeout, "the engine Job of "+ev.Name+" to complete", func(ctx context.Context) (bool, string, error) {
			var jobs batchv1.JobList
			if err := c.client.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{"blis.inference-sim.io/evaluation-uid": string(ev.UID)}); err != nil {
				return false, "", err
			}
			if len(jobs.Items) != 1 {
				return false, fmt.Sprintf("%d Jobs", len(jobs.Items)), nil
			}
			j := jobs.Items[0]
			if owner := metav1.GetControllerOf(&j); owner == nil || owner.UID != ev.UID {
				return false, "", fmt.Errorf("Job %s is not owned by Evaluation %s", j.Name, ev.Name)
			}
			return j.Status.Succeeded == 1, fmt.Sprintf("succeeded %d failed %d", j.Status.Succeeded, j.Status.Failed), nil
		})
	}
	if jobRuns == 0 {
		t.Fatal("no sample Evaluation ran in a Job")
	}

	out, err = c.runKubectl(ctx, "get", "evaluations", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl get evaluations:\n%s", out)
	header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
	for _, col := range []string{"PHASE", "READY", "FITNESS", "TTFT-P99-MS", "E2E-P99-MS", "AGE"} {
		if !strings.Contains(strings.Join(header, " "), col) {
			t.Errorf("kubectl get evaluations has no %s column: %v", col, header)
		}
	}
	if strings.Count(out, "Succeeded") != len(list.Items) {
		t.Errorf("kubectl shows %d Succeeded rows, want %d", strings.Count(out, "Succeeded"), len(list.Items))
	}

	// The manager's peak memory so far (it ran the in-process samples), as the kernel sees it.
	_, mpod := managerPod(ctx, t, c)
	_, id, _ := strings.Cut(mpod.Status.ContainerStatuses[0].ContainerID, "://")
	if pid, err := containerPID(id); err == nil {
		t.Logf("manager process: peak RSS %s, RSS now %s", procStatus(t, pid)["VmHWM"], procStatus(t, pid)["VmRSS"])
	}

	// Exact result reuse: the same input again gets the result without a Job.
	var original *blisv1alpha1.Evaluation
	for i := range list.Items {
		if list.Items[i].Spec.Execution.Executor == blisv1alpha1.ExecutorJob {
			original = &list.Items[i]
			break
		}
	}
	again := &blisv1alpha1.Evaluation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: original.Name + "-again"},
		Spec:       *original.Spec.DeepCopy(),
	}
	if err := c.client.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	hit := waitEvaluation(ctx, t, c, ns, again.Name, condSucceeded, shortTimeout)
	if r := meta.FindStatusCondition(hit.Status.Conditions, condSucceeded).Reason; r != reasonCacheHit || hit.Status.CachedFrom != original.Name {
		t.Fatalf("reason %s cachedFrom %q, want CacheHit from %s", r, hit.Status.CachedFrom, original.Name)
	}
	var jobs batchv1.JobList
	if err := c.client.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{"blis.inference-sim.io/evaluation-uid": string(hit.UID)}); err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 0 {
		t.Fatalf("a cache hit created %d Jobs", len(jobs.Items))
	}
}

// longEvaluation is an Evaluation whose engine pod runs for about ten seconds (eight seeds of an
// hour of the capacity plan's traffic), by reference to the capacity-planning sample in ns.
func longEvaluation(ns, name string, firstSeed int64) *blisv1alpha1.Evaluation {
	seeds := make([]int64, 8)
	for i := range seeds {
		seeds[i] = firstSeed + int64(i)
	}
	return &blisv1alpha1.Evaluation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: blisv1alpha1.EvaluationSpec{
			ClusterRef:  &blisv1alpha1.LocalObjectReference{Name: "capacity-qwen7b-a100"},
			PolicyRef:   &blisv1alpha1.LocalObjectReference{Name: "capacity-baseline"},
			WorkloadRef: &blisv1alpha1.LocalObjectReference{Name: "capacity-daily-load"},
			Seeds:       seeds,
			Execution: blisv1alpha1.ExecutionSpec{
				Executor:          blisv1alpha1.ExecutorJob,
				MaxRetries:        ptr.To[int32](3),
				ReuseCachedResult: ptr.To(false),
			},
		},
	}
}

// runningEnginePod waits until the engine pod of ev runs and returns it.
func runningEnginePod(ctx context.Context, t *testing.T, c *cluster, ev *blisv1alpha1.Evaluation) *corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	waitFor(ctx, t, jobTimeout, "the engine pod of "+ev.Name+" to run", func(ctx context.Context) (bool, string, error) {
		var cur blisv1alpha1.Evaluation
		if err := c.client.Get(ctx, client.ObjectKeyFromObject(ev), &cur); err != nil {
			return false, "", err
		}
		var pods corev1.PodList
		if err := c.client.List(ctx, &pods, client.InNamespace(ev.Namespace),
			client.MatchingLabels{"blis.inference-sim.io/evaluation-uid": string(cur.UID)}); err != nil {
			return false, "", err
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				pod = p
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d pods", len(pods.Items)), nil
	})
	return &pod
}

// TestOperatorRetriesKilledPodAndCleansUp: an engine pod killed mid-run is retried by its Job
// and the Evaluation still succeeds, with the attempts counted; deleting a running Evaluation
// removes its Job and pods.
func TestOperatorRetriesKilledPodAndCleansUp(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	managerPod(ctx, t, c)
	ns := c.newNamespace(ctx, t, "blis-e2e-failures")
	c.dumpOnFailure(t, ns, "app.kubernetes.io/managed-by=blis-operator")
	c.dumpManagerLogsOnFailure(t)
	if _, err := c.runKubectl(ctx, "apply", "-n", ns, "-f", filepath.Join(c.repoRoot, "config", "samples", "capacity-planning.yaml")); err != nil {
		t.Fatal(err)
	}
	// Only its inputs are needed here: remove the sample's own Evaluation.
	if _, err := c.runKubectl(ctx, "delete", "-n", ns, "evaluation", "capacity-plan-qwen7b", "--wait=false"); err != nil {
		t.Fatal(err)
	}

	killed := longEvaluation(ns, "killed-mid-run", 101)
	if err := c.client.Create(ctx, killed); err != nil {
		t.Fatal(err)
	}
	pod := runningEnginePod(ctx, t, c, killed)
	if err := c.client.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed engine pod %s while it ran", pod.Name)
	ev := waitEvaluation(ctx, t, c, ns, killed.Name, condSucceeded, evaluationTimeout)
	if r := meta.FindStatusCondition(ev.Status.Conditions, condSucceeded).Reason; r != reasonComplete {
		t.Fatalf("reason %s", r)
	}
	if ev.Status.Attempts < 2 {
		t.Fatalf("attempts %d, want at least 2 after a killed pod", ev.Status.Attempts)
	}
	t.Logf("succeeded after %d attempts", ev.Status.Attempts)

	// Deleting a running Evaluation stops its work.
	doomed := longEvaluation(ns, "deleted-mid-run", 201)
	if err := c.client.Create(ctx, doomed); err != nil {
		t.Fatal(err)
	}
	runningEnginePod(ctx, t, c, doomed)
	var cur blisv1alpha1.Evaluation
	if err := c.client.Get(ctx, client.ObjectKeyFromObject(doomed), &cur); err != nil {
		t.Fatal(err)
	}
	if err := c.client.Delete(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, shortTimeout, "the Job and pods of the deleted Evaluation to go", func(ctx context.Context) (bool, string, error) {
		sel := client.MatchingLabels{"blis.inference-sim.io/evaluation-uid": string(cur.UID)}
		var jobs batchv1.JobList
		var pods corev1.PodList
		var cms corev1.ConfigMapList
		if err := c.client.List(ctx, &jobs, client.InNamespace(ns), sel); err != nil {
			return false, "", err
		}
		if err := c.client.List(ctx, &pods, client.InNamespace(ns), sel); err != nil {
			return false, "", err
		}
		if err := c.client.List(ctx, &cms, client.InNamespace(ns), sel); err != nil {
			return false, "", err
		}
		n := len(jobs.Items) + len(pods.Items) + len(cms.Items)
		return n == 0, fmt.Sprintf("%d jobs, %d pods, %d configmaps", len(jobs.Items), len(pods.Items), len(cms.Items)), nil
	})
	if err := c.client.Get(ctx, client.ObjectKeyFromObject(doomed), &cur); !apierrors.IsNotFound(err) {
		t.Fatalf("the Evaluation still exists: %v", err)
	}
}

// dumpManagerLogsOnFailure logs the manager's recent logs if the test failed.
func (c *cluster) dumpManagerLogsOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, err := c.runKubectl(ctx, "-n", managerNamespace, "logs", "deployment/"+managerDeployment, "--tail=200"); err == nil {
			t.Logf("manager logs:\n%s", out)
		}
	})
}

// TestOperatorSurvivesManagerRestart: the manager pod is deleted while an engine Job runs; the
// new manager adopts the run (same Job, one attempt) and records its result once.
func TestOperatorSurvivesManagerRestart(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	_, oldPod := managerPod(ctx, t, c)
	ns := c.newNamespace(ctx, t, "blis-e2e-restart")
	c.dumpOnFailure(t, ns, "app.kubernetes.io/managed-by=blis-operator")
	c.dumpManagerLogsOnFailure(t)
	if _, err := c.runKubectl(ctx, "apply", "-n", ns, "-f", filepath.Join(c.repoRoot, "config", "samples", "capacity-planning.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.runKubectl(ctx, "delete", "-n", ns, "evaluation", "capacity-plan-qwen7b", "--wait=false"); err != nil {
		t.Fatal(err)
	}
	ev := longEvaluation(ns, "across-restart", 301)
	if err := c.client.Create(ctx, ev); err != nil {
		t.Fatal(err)
	}
	enginePod := runningEnginePod(ctx, t, c, ev)
	if err := c.client.Delete(ctx, oldPod); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted manager pod %s while engine pod %s ran", oldPod.Name, enginePod.Name)
	waitFor(ctx, t, rolloutTimeout, "a new manager pod", func(ctx context.Context) (bool, string, error) {
		var pods corev1.PodList
		if err := c.client.List(ctx, &pods, client.InNamespace(managerNamespace), client.MatchingLabels{"control-plane": "controller-manager"}); err != nil {
			return false, "", err
		}
		for _, p := range pods.Items {
			if p.Name != oldPod.Name && p.DeletionTimestamp == nil && podReady(&p) {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d pods", len(pods.Items)), nil
	})
	done := waitEvaluation(ctx, t, c, ns, ev.Name, condSucceeded, evaluationTimeout)
	var jobs batchv1.JobList
	if err := c.client.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{"blis.inference-sim.io/evaluation-uid": string(done.UID)}); err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 1 || done.Status.Attempts != 1 {
		t.Fatalf("%d Jobs, %d attempts: want the one Job of the first attempt", len(jobs.Items), done.Status.Attempts)
	}
	var pods corev1.PodList
	if err := c.client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"blis.inference-sim.io/evaluation-uid": string(done.UID)}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 || pods.Items[0].Name != enginePod.Name {
		t.Fatalf("want only the engine pod %s, got %d pods", enginePod.Name, len(pods.Items))
	}
}

// TestOperatorReportsOOM: an engine pod whose memory limit is far too small is OOM-killed on
// every retry; the Evaluation fails with reason OOMKilled and says which limit to raise. A run
// longer than its timeout fails with DeadlineExceeded.
func TestOperatorReportsOOM(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	managerPod(ctx, t, c)
	ns := c.newNamespace(ctx, t, "blis-e2e-oom")
	c.dumpOnFailure(t, ns, "app.kubernetes.io/managed-by=blis-operator")
	if _, err := c.runKubectl(ctx, "apply", "-n", ns, "-f", filepath.Join(c.repoRoot, "config", "samples", "capacity-planning.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.runKubectl(ctx, "delete", "-n", ns, "evaluation", "capacity-plan-qwen7b", "--wait=false"); err != nil {
		t.Fatal(err)
	}
	ev := longEvaluation(ns, "starved", 401)
	ev.Spec.Execution.MaxRetries = ptr.To[int32](1)
	ev.Spec.Execution.Resources = &corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("48Mi")},
	}
	if err := c.client.Create(ctx, ev); err != nil {
		t.Fatal(err)
	}
	var cur blisv1alpha1.Evaluation
	waitFor(ctx, t, evaluationTimeout, "the starved Evaluation to fail", func(ctx context.Context) (bool, string, error) {
		if err := c.client.Get(ctx, client.ObjectKeyFromObject(ev), &cur); err != nil {
			return false, "", err
		}
		return meta.IsStatusConditionTrue(cur.Status.Conditions, "Failed"), describeEvaluations(&blisv1alpha1.EvaluationList{Items: []blisv1alpha1.Evaluation{cur}}), nil
	})
	f := meta.FindStatusCondition(cur.Status.Conditions, "Failed")
	if f.Reason != "OOMKilled" || !strings.Contains(f.Message, "limits.memory") || cur.Status.Attempts != 2 {
		t.Fatalf("Failed %s: %s (attempts %d); want OOMKilled after 2 attempts", f.Reason, f.Message, cur.Status.Attempts)
	}
	t.Logf("Failed: %s: %s", f.Reason, f.Message)

	// A run longer than its timeout ends at the Job's deadline.
	slow := longEvaluation(ns, "too-slow", 501)
	slow.Spec.Execution.Timeout = &metav1.Duration{Duration: 3 * time.Second}
	if err := c.client.Create(ctx, slow); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, evaluationTimeout, "the slow Evaluation to fail", func(ctx context.Context) (bool, string, error) {
		if err := c.client.Get(ctx, client.ObjectKeyFromObject(slow), &cur); err != nil {
			return false, "", err
		}
		return meta.IsStatusConditionTrue(cur.Status.Conditions, "Failed"), describeEvaluations(&blisv1alpha1.EvaluationList{Items: []blisv1alpha1.Evaluation{cur}}), nil
	})
	if f := meta.FindStatusCondition(cur.Status.Conditions, "Failed"); f.Reason != "DeadlineExceeded" {
		t.Fatalf("Failed %s: %s; want DeadlineExceeded", f.Reason, f.Message)
	} else {
		t.Logf("Failed: %s: %s", f.Reason, f.Message)
	}
}
