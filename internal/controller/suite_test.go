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

package controller

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/testenv"
)

// env is the package's control plane (a real etcd and kube-apiserver with the CRDs).
var env *testenv.Env

func TestMain(m *testing.M) {
	if os.Getenv("BLIS_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	}
	os.Exit(testenv.RunMain(m, &env))
}

// Readiness bounds of the tests: how long the control plane may take, not performance claims.
const (
	waitTimeout  = 60 * time.Second
	pollInterval = 50 * time.Millisecond
)

var nsCounter atomic.Int32

// newNamespace creates a namespace for one test.
func newNamespace(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d-%s", nsCounter.Add(1), strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	if len(name) > 60 {
		name = name[:60]
	}
	name = strings.TrimRight(strings.ReplaceAll(name, "_", "-"), "-")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	// The control plane has no namespace controller: the test's Evaluations are deleted when it
	// ends (after its manager stopped), so that one left Running does not hold a parallelism
	// slot in the managers of later tests (their ledgers hold the slots of every Running
	// Evaluation they find at start).
	t.Cleanup(func() {
		if err := env.Client.DeleteAllOf(context.Background(), &blisv1alpha1.Evaluation{}, client.InNamespace(name)); err != nil {
			t.Errorf("deleting the Evaluations of namespace %s: %v", name, err)
		}
	})
	return name
}

// startManager runs a manager with the reconcilers configured by cfg until the test ends (or
// until the returned stop function is called).
func startManager(t testing.TB, cfg Config) (stop func()) {
	t.Helper()
	return startManagerWith(t, env.Config, cfg)
}

// startManagerWith is startManager with the manager's client configuration; extra registers
// further reconcilers (PolicyStudy, promotion) beside the four of SetupWithManager.
func startManagerWith(t testing.TB, restCfg *rest.Config, cfg Config, extra ...func(ctrl.Manager) error) (stop func()) {
	t.Helper()
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:     env.Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      cache.Options{ByObject: CacheOptions()},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := SetupWithManager(mgr, cfg); err != nil {
		t.Fatal(err)
	}
	for _, setup := range extra {
		if err := setup(mgr); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// eventually polls cond until it holds, failing the test with the last state after waitTimeout.
func eventually(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, waitTimeout, true, func(context.Context) (bool, error) {
		ok, state := cond()
		last = state
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %s)", what, err, last)
	}
}

// describeEval summarises an Evaluation's state for failure messages.
func describeEval(ev *blisv1alpha1.Evaluation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase %q", ev.Status.Phase)
	for _, c := range ev.Status.Conditions {
		fmt.Fprintf(&b, "; %s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// waitCondition waits until condition typ of Evaluation ns/name has status and reason (any
// reason when empty) and returns the Evaluation.
func waitCondition(t testing.TB, ns, name, typ string, status metav1.ConditionStatus, reason string) *blisv1alpha1.Evaluation {
	t.Helper()
	var ev *blisv1alpha1.Evaluation
	eventually(t, fmt.Sprintf("Evaluation %s %s=%s %s", name, typ, status, reason), func() (bool, string) {
		var e blisv1alpha1.Evaluation
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &e); err != nil {
			return false, err.Error()
		}
		ev = &e
		c := meta.FindStatusCondition(e.Status.Conditions, typ)
		return c != nil && c.Status == status && (reason == "" || c.Reason == reason), describeEval(&e)
	})
	return ev
}

// Fixtures: a small cluster, a default policy and a short workload that simulate in well under
// a second.

func testCluster(ns, name string) *blisv1alpha1.SimulatedCluster {
	return &blisv1alpha1.SimulatedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: blisv1alpha1.SimulatedClusterSpec{
			Model: blisv1alpha1.ModelSpec{Name: "meta-llama/llama-3.1-8b-instruct"},
			GPU:   "H100",
			Pools: []blisv1alpha1.ReplicaPoolSpec{{Name: "main", Replicas: 2}},
		},
	}
}

func testPolicy(ns, name string) *blisv1alpha1.PolicyBundle {
	return &blisv1alpha1.PolicyBundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       blisv1alpha1.PolicyBundleSpec{},
	}
}

func testWorkload(ns, name string) *blisv1alpha1.WorkloadSpec {
	return &blisv1alpha1.WorkloadSpec{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: blisv1alpha1.WorkloadSpecSpec{
			Scenario:    "bursty-traffic",
			NumRequests: ptr.To[int64](40),
		},
	}
}

// testEval is an Evaluation of the three fixtures by reference.
func testEval(ns, name string, executor blisv1alpha1.Executor, seeds ...int64) *blisv1alpha1.Evaluation {
	return &blisv1alpha1.Evaluation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: blisv1alpha1.EvaluationSpec{
			ClusterRef:  &blisv1alpha1.LocalObjectReference{Name: "cluster"},
			PolicyRef:   &blisv1alpha1.LocalObjectReference{Name: "policy"},
			WorkloadRef: &blisv1alpha1.LocalObjectReference{Name: "workload"},
			Seeds:       seeds,
			Objectives: []blisv1alpha1.Objective{
				{Name: "ttftP99Ms", Direction: "minimize", Weight: 1},
			},
			Execution: blisv1alpha1.ExecutionSpec{Executor: executor},
		},
	}
}

// createInputs creates the three fixtures named cluster, policy and workload in ns.
func createInputs(t testing.TB, ns string) {
	t.Helper()
	for _, o := range []client.Object{testCluster(ns, "cluster"), testPolicy(ns, "policy"), testWorkload(ns, "workload")} {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}

func create(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// schedulingPriority is a PriorityClass created for a test and deleted after it.
type schedulingPriority struct {
	name  string
	value int32
}

func (p *schedulingPriority) create(t testing.TB) {
	t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: p.name}, Value: p.value}
	if err := env.Client.Create(context.Background(), pc); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pc) })
}

// updateFresh re-reads obj, applies change and updates it, retrying when the update conflicts
// with the controllers' own writes (status, promotion annotations) made in between.
func updateFresh[T client.Object](t *testing.T, obj T, change func(T)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change(obj)
		return env.Client.Update(context.Background(), obj)
	})
	if err != nil {
		t.Fatal(err)
	}
}
