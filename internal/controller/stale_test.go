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
	"strings"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// laggingClient reads through to the API server, except that it serves chosen Evaluations at an
// older version and can hide Jobs: what a manager's cache shows before the watch events of
// recent writes arrive.
type laggingClient struct {
	client.Client

	mu       sync.Mutex
	evals    map[client.ObjectKey]*blisv1alpha1.Evaluation
	hideJobs bool
}

func (c *laggingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch o := obj.(type) {
	case *blisv1alpha1.Evaluation:
		if old, ok := c.evals[key]; ok {
			old.DeepCopyInto(o)
			return nil
		}
	case *batchv1.Job:
		if c.hideJobs {
			return apierrors.NewNotFound(batchv1.Resource("jobs"), key.Name)
		}
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// serve makes the client return ev (nil: the current version) for ev's key.
func (c *laggingClient) serve(key client.ObjectKey, ev *blisv1alpha1.Evaluation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev == nil {
		delete(c.evals, key)
		return
	}
	c.evals[key] = ev
}

func (c *laggingClient) hide(jobs bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hideJobs = jobs
}

// readyInputs creates the three fixtures and marks them Ready, as their reconcilers would.
func readyInputs(t *testing.T, ns string) {
	t.Helper()
	createInputs(t, ns)
	ctx := context.Background()
	cluster, policy, workload := &blisv1alpha1.SimulatedCluster{}, &blisv1alpha1.PolicyBundle{}, &blisv1alpha1.WorkloadSpec{}
	inputs := []struct {
		name  string
		obj   client.Object
		conds *[]metav1.Condition
	}{
		{"cluster", cluster, &cluster.Status.Conditions},
		{"policy", policy, &policy.Status.Conditions},
		{"workload", workload, &workload.Status.Conditions},
	}
	for _, in := range inputs {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: in.name}, in.obj); err != nil {
			t.Fatal(err)
		}
		meta.SetStatusCondition(in.conds, metav1.Condition{Type: blisv1alpha1.ConditionReady, Status: metav1.ConditionTrue,
			Reason: ReasonValid, Message: "valid", ObservedGeneration: in.obj.GetGeneration()})
		if err := env.Client.Status().Update(ctx, in.obj); err != nil {
			t.Fatal(err)
		}
	}
}

// staleReconciler is an Evaluation reconciler without a manager, reading through lc, its
// in-process pool started until the test ends.
func staleReconciler(t *testing.T, lc *laggingClient, cfg Config) (*EvaluationReconciler, *events.FakeRecorder) {
	t.Helper()
	cfg.Defaults()
	rec := events.NewFakeRecorder(100)
	r := newEvaluationReconciler(lc, env.Client, env.Scheme, rec, cfg)
	// No Evaluation ran before this reconciler (seedSlots lists through a field index).
	r.seeded = true
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.pool.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r, rec
}

func reconcileOnce(t *testing.T, r *EvaluationReconciler, key client.ObjectKey) {
	t.Helper()
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
}

func getEval(t *testing.T, key client.ObjectKey) *blisv1alpha1.Evaluation {
	t.Helper()
	var ev blisv1alpha1.Evaluation
	if err := env.Client.Get(context.Background(), key, &ev); err != nil {
		t.Fatal(err)
	}
	return &ev
}

// drain returns the events recorded so far.
func drain(rec *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestStaleCacheDoesNotRerun: once an in-process run's outcome is in status (and the pool has
// forgotten the run), a reconcile that reads an older version of the Evaluation from a cache
// that has not caught up (before the run started, or while it ran) does not start the engine
// again; the next read of the current version finds the Evaluation Succeeded.
func TestStaleCacheDoesNotRerun(t *testing.T) {
	ns := newNamespace(t)
	readyInputs(t, ns)
	counter := &countingRun{}
	lc := &laggingClient{Client: env.Client, evals: map[client.ObjectKey]*blisv1alpha1.Evaluation{}}
	r, _ := staleReconciler(t, lc, Config{InProcessOnly: true, Run: counter.run})

	ev := testEval(ns, "once", blisv1alpha1.ExecutorInProcess, 7)
	ev.Spec.Execution.ReuseCachedResult = ptr.To(false)
	create(t, ev)
	key := client.ObjectKeyFromObject(ev)
	created := getEval(t, key)
	reconcileOnce(t, r, key)
	running := getEval(t, key)
	if !isTrue(running.Status.Conditions, blisv1alpha1.ConditionRunning) {
		t.Fatalf("not running: %s", describeEval(running))
	}
	eventually(t, "the run to finish", func() (bool, string) {
		s, _ := r.pool.state(running.UID)
		return s == runDone, ""
	})
	reconcileOnce(t, r, key)
	if done := getEval(t, key); !isTrue(done.Status.Conditions, ConditionSucceeded) || r.pool.size() != 0 {
		t.Fatalf("after the outcome: %s; pool holds %d runs", describeEval(done), r.pool.size())
	}

	for _, old := range []*blisv1alpha1.Evaluation{created, running} {
		lc.serve(key, old)
		reconcileOnce(t, r, key)
		if n := r.pool.size(); n != 0 {
			t.Fatalf("a reconcile reading version %s (phase %q) submitted the run again", old.ResourceVersion, old.Status.Phase)
		}
	}
	lc.serve(key, nil)
	reconcileOnce(t, r, key)
	if n := counter.count(); n != 1 {
		t.Fatalf("the engine ran %d times, want 1", n)
	}
	if done := getEval(t, key); done.Status.Phase != blisv1alpha1.PhaseSucceeded || done.Status.Attempts != 1 {
		t.Fatalf("%s, attempts %d", describeEval(done), done.Status.Attempts)
	}
}

// TestStaleCacheJobRun: a Job the cache has not seen yet is not taken as lost (no second
// attempt, no JobLost event); a Job deleted after the run started is not recreated by a
// reconcile that reads the Evaluation as it was before the run started (that would make it a
// first attempt again, and the loss would never count), but by the next reconcile of the
// current version, as attempt 2.
func TestStaleCacheJobRun(t *testing.T) {
	ns := newNamespace(t)
	readyInputs(t, ns)
	lc := &laggingClient{Client: env.Client, evals: map[client.ObjectKey]*blisv1alpha1.Evaluation{}}
	r, rec := staleReconciler(t, lc, Config{EngineImage: testImage})
	ctx := context.Background()

	ev := testEval(ns, "job", blisv1alpha1.ExecutorJob, 21)
	ev.Spec.Execution.ReuseCachedResult = ptr.To(false)
	create(t, ev)
	key := client.ObjectKeyFromObject(ev)
	created := getEval(t, key)
	reconcileOnce(t, r, key)
	running := getEval(t, key)
	var job batchv1.Job
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: runName(running)}, &job); err != nil {
		t.Fatalf("no Job after the first reconcile (%s): %v", describeEval(running), err)
	}
	drain(rec)

	// The Job's watch lags behind the Evaluation's.
	lc.hide(true)
	reconcileOnce(t, r, key)
	lc.hide(false)
	if e := getEval(t, key); e.Status.Attempts != 1 || meta.FindStatusCondition(e.Status.Conditions, blisv1alpha1.ConditionRunning).Reason != ReasonJobCreated ||
		strings.Contains(describeEval(e), "created again") {
		t.Fatalf("a Job missing from the cache was taken as lost: attempts %d, %s", e.Status.Attempts, describeEval(e))
	}
	for _, e := range drain(rec) {
		if strings.Contains(e, ReasonJobLost) {
			t.Fatalf("event %q for a Job that exists", e)
		}
	}

	if err := env.Client.Delete(ctx, &job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	lc.serve(key, created)
	reconcileOnce(t, r, key)
	lc.serve(key, nil)
	var again batchv1.Job
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&job), &again); !apierrors.IsNotFound(err) {
		t.Fatalf("a reconcile reading the Evaluation before its run started created the Job again (attempt %s): %v",
			again.Annotations[AnnotationAttempt], err)
	}

	reconcileOnce(t, r, key)
	e := getEval(t, key)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&job), &again); err != nil || again.UID == job.UID {
		t.Fatalf("the lost Job was not created again: %v (%s)", err, describeEval(e))
	}
	if e.Status.Attempts != 2 || again.Annotations[AnnotationAttempt] != "2" {
		t.Fatalf("attempts %d, Job attempt %s, want 2", e.Status.Attempts, again.Annotations[AnnotationAttempt])
	}
}
