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

// Package e2e tests blis-operator deployed as users deploy it, on the real single-node cluster of
// hack/node-up.sh, where pods actually run. `make test-e2e` starts the node, builds and imports
// the image, deploys config/default and runs these tests with KUBECONFIG pointing at the node.
//
// The tests read the host's /proc to check the manager's process, so they run on the node host.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// The names config/default gives the manager's objects.
const (
	managerNamespace  = "blis-system"
	managerDeployment = "blis-operator-controller-manager"
	metricsService    = "blis-operator-controller-manager-metrics-service"
	metricsReaderRole = "blis-operator-metrics-reader"
	leaderElectionID  = "blis-operator.blis.inference-sim.io"
)

// Readiness waits: bounds on how long the cluster may take, not performance assertions.
const (
	rolloutTimeout = 3 * time.Minute
	jobTimeout     = 3 * time.Minute
	shortTimeout   = time.Minute
	pollInterval   = 500 * time.Millisecond
)

// cluster is the connection to the cluster under test.
type cluster struct {
	cfg       *rest.Config
	client    client.Client
	clientset *kubernetes.Clientset
	kubectl   string
	repoRoot  string
}

// connect builds clients from $KUBECONFIG (the admin kubeconfig of the node).
func connect(t *testing.T) *cluster {
	t.Helper()
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		t.Fatal("KUBECONFIG is not set; run the end-to-end tests with `make test-e2e`")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("loading %s: %v", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := blisv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kubectl := os.Getenv("E2E_KUBECTL")
	if kubectl == "" {
		kubectl = "kubectl"
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{cfg: cfg, client: c, clientset: cs, kubectl: kubectl, repoRoot: root}
}

// repoRoot is the directory of the module's go.mod, searched upwards from the test's directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "config", "default")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the repository root above the working directory")
		}
		dir = parent
	}
}

// testContext returns a context that ends shortly before the test binary's deadline.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if d, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), d.Add(-5*time.Second))
	}
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it reports true, failing the test after timeout with the last error
// or state cond described.
func waitFor(ctx context.Context, t *testing.T, timeout time.Duration, what string, cond func(context.Context) (bool, string, error)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		done, state, err := cond(ctx)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = state
		return done, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %s)", what, err, last)
	}
}

// newNamespace creates a namespace that enforces the restricted Pod Security Standard and
// deletes it when the test ends.
func (c *cluster) newNamespace(ctx context.Context, t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: prefix + "-" + rand.String(5),
		Labels: map[string]string{
			"pod-security.kubernetes.io/enforce": "restricted",
			"blis.inference-sim.io/e2e":          "true",
		},
	}}
	if err := c.client.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() {
		bg := context.Background()
		if err := c.client.Delete(bg, ns); err != nil {
			t.Logf("deleting namespace %s: %v", ns.Name, err)
		}
	})
	waitFor(ctx, t, shortTimeout, "the default ServiceAccount of "+ns.Name, func(ctx context.Context) (bool, string, error) {
		var sa corev1.ServiceAccount
		err := c.client.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "default"}, &sa)
		return err == nil, "", client.IgnoreNotFound(err)
	})
	return ns.Name
}

// runKubectl runs kubectl with args and returns its combined output.
func (c *cluster) runKubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.kubectl, args...)
	cmd.Env = os.Environ()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// containerLogs returns the logs of every container of the pods matching selector in namespace,
// keyed by "pod/container".
func (c *cluster) containerLogs(ctx context.Context, namespace, selector string) (map[string]string, error) {
	pods, err := c.clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	logs := map[string]string{}
	for _, p := range pods.Items {
		for _, ctr := range p.Spec.Containers {
			raw, err := c.clientset.CoreV1().Pods(namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: ctr.Name}).DoRaw(ctx)
			if err != nil {
				return nil, fmt.Errorf("logs of %s/%s: %w", p.Name, ctr.Name, err)
			}
			logs[p.Name+"/"+ctr.Name] = string(raw)
		}
	}
	return logs, nil
}

// podLogs returns the logs of every container of the pods matching selector, for diagnostics.
func (c *cluster) podLogs(ctx context.Context, namespace, selector string) string {
	logs, err := c.containerLogs(ctx, namespace, selector)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for name, text := range logs {
		fmt.Fprintf(&b, "--- %s\n%s\n", name, text)
	}
	return b.String()
}

// dumpOnFailure logs the state of namespace (pods, events, logs) if the test failed.
func (c *cluster) dumpOnFailure(t *testing.T, namespace, selector string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, err := c.runKubectl(ctx, "-n", namespace, "get", "all,events", "-o", "wide"); err == nil {
			t.Logf("state of %s:\n%s", namespace, out)
		}
		t.Logf("logs:\n%s", c.podLogs(ctx, namespace, selector))
	})
}
