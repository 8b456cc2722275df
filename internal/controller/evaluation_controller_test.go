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
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestValidatingReconcilers: the three input kinds report Ready from the engine's validation,
// with the field at fault when they fail.
func TestValidatingReconcilers(t *testing.T) {
	ns := newNamespace(t)
	startManager(t, Config{InProcessOnly: true})
	ctx := context.Background()

	good := testCluster(ns, "good")
	bad := testCluster(ns, "bad")
	// The blackbox latency model's coefficients were fitted per catalog GPU, so a bandwidth
	// override cannot be simulated with it.
	bwTBs := 4.0
	bad.Spec.Hardware = &blisv1alpha1.HardwareSpec{BwPeakTBs: &bwTBs}
	bad.Spec.LatencyModel.Backend = blisv1alpha1.LatencyBlackbox
	pol := testPolicy(ns, "policy")
	missingCM := testPolicy(ns, "from-configmap")
	missingCM.Spec.BlisConfigMapRef = &blisv1alpha1.ConfigMapKeyReference{Name: "absent", Key: "policy.yaml"}
	wl := testWorkload(ns, "workload")
	create(t, good, bad, pol, missingCM, wl)

	eventually(t, "SimulatedCluster good Ready", func() (bool, string) {
		var o blisv1alpha1.SimulatedCluster
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(good), &o)
		c := meta.FindStatusCondition(o.Status.Conditions, blisv1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == o.Generation &&
			o.Status.TotalGPUs == 2 && o.Status.KVBlocksPerReplica > 0, describeConds(o.Status.Conditions)
	})
	eventually(t, "SimulatedCluster bad not Ready, naming the hardware field", func() (bool, string) {
		var o blisv1alpha1.SimulatedCluster
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(bad), &o)
		c := meta.FindStatusCondition(o.Status.Conditions, blisv1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == ReasonUnsupported &&
			strings.Contains(c.Message, "SimulatedCluster bad") && strings.Contains(c.Message, "spec.hardware.bwPeakTBs"), describeConds(o.Status.Conditions)
	})
	eventually(t, "PolicyBundle Ready with a content hash", func() (bool, string) {
		var o blisv1alpha1.PolicyBundle
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(pol), &o)
		return isTrue(o.Status.Conditions, blisv1alpha1.ConditionReady) && len(o.Status.ContentHash) == 64, describeConds(o.Status.Conditions)
	})
	eventually(t, "PolicyBundle with a missing ConfigMap not Ready", func() (bool, string) {
		var o blisv1alpha1.PolicyBundle
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(missingCM), &o)
		c := meta.FindStatusCondition(o.Status.Conditions, blisv1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == ReasonReferenceNotFound &&
			strings.Contains(c.Message, "absent"), describeConds(o.Status.Conditions)
	})
	eventually(t, "WorkloadSpec Ready with a content hash", func() (bool, string) {
		var o blisv1alpha1.WorkloadSpec
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(wl), &o)
		return isTrue(o.Status.Conditions, blisv1alpha1.ConditionReady) && len(o.Status.ContentHash) == 64, describeConds(o.Status.Conditions)
	})
}

func describeConds(conds []metav1.Condition) string {
	var b strings.Builder
	for _, c := range conds {
		b.WriteString(c.Type + "=" + string(c.Status) + " (" + c.Reason + ": " + c.Message + "); ")
	}
	return b.String()
}

// TestInProcessRunWithReplicates runs the real engine in-process with three seeds and checks
// the status: conditions with observedGeneration, times, hash, metrics, replicate statistics,
// fitness, and a status far below the object limit.
func TestInProcessRunWithReplicates(t *testing.T) {
	ns := newNamespace(t)
	startManager(t, Config{InProcessOnly: true})
	createInputs(t, ns)
	create(t, testEval(ns, "replicates", blisv1alpha1.ExecutorInProcess, 1, 2, 3))

	ev := waitCondition(t, ns, "replicates", ConditionSucceeded, metav1.ConditionTrue, ReasonCompleted)
	st := ev.Status
	if st.Phase != blisv1alpha1.PhaseSucceeded || st.StartTime == nil || st.CompletionTime == nil || st.Attempts != 1 {
		t.Fatalf("phase %s start %v completion %v attempts %d", st.Phase, st.StartTime, st.CompletionTime, st.Attempts)
	}
	if len(st.InputHash) != 64 || st.EngineVersion == "" || st.ObservedGeneration != ev.Generation {
		t.Fatalf("hash %q engine %q observedGeneration %d", st.InputHash, st.EngineVersion, st.ObservedGeneration)
	}
	for _, c := range st.Conditions {
		if c.ObservedGeneration != ev.Generation {
			t.Errorf("condition %s has observedGeneration %d, want %d", c.Type, c.ObservedGeneration, ev.Generation)
		}
	}
	for _, typ := range []string{ConditionAccepted, blisv1alpha1.ConditionReady, ConditionSucceeded} {
		if !isTrue(st.Conditions, typ) {
			t.Errorf("condition %s is not True: %s", typ, describeEval(ev))
		}
	}
	if isTrue(st.Conditions, blisv1alpha1.ConditionRunning) || isTrue(st.Conditions, blisv1alpha1.ConditionFailed) {
		t.Errorf("Running or Failed still True: %s", describeEval(ev))
	}
	if st.Metrics == nil || st.Metrics.CompletedRequests == 0 || st.Metrics.TtftP99Ms <= 0 {
		t.Fatalf("metrics %+v", st.Metrics)
	}
	if st.Replicates == nil || st.Replicates.Count != 3 || len(st.Replicates.Metrics) == 0 {
		t.Fatalf("replicates %+v", st.Replicates)
	}
	if st.FitnessScore == nil || len(st.Fitness) != 1 || st.Fitness[0].Name != "ttftP99Ms" {
		t.Fatalf("fitness %v %+v", st.FitnessScore, st.Fitness)
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > 64<<10 {
		t.Fatalf("the Evaluation is %d bytes, above 64 KiB", len(raw))
	}

	// The in-process status equals what the engine computes for the same input.
	var cl blisv1alpha1.SimulatedCluster
	var po blisv1alpha1.PolicyBundle
	var wl blisv1alpha1.WorkloadSpec
	for name, o := range map[string]client.Object{"cluster": &cl, "policy": &po, "workload": &wl} {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, o); err != nil {
			t.Fatal(err)
		}
	}
	res, err := evaluation.Resolve(evaluation.Inputs{Name: ev.Name, Spec: ev.Spec, Cluster: &cl, Policy: &po, Workload: &wl})
	if err != nil {
		t.Fatal(err)
	}
	want, err := DefaultRun(context.Background(), res)
	if err != nil {
		t.Fatal(err)
	}
	if res.Hash != st.InputHash || !equalJSON(t, want.Metrics, st.Metrics) || !equalJSON(t, want.Replicates, st.Replicates) {
		t.Fatalf("status differs from a direct engine run of the same input")
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	x, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(x) == string(y)
}

// TestWaitsForReferences: an Evaluation created before its inputs waits with Accepted=False
// and a reason naming the missing object, and runs as soon as they exist and are Ready.
func TestWaitsForReferences(t *testing.T) {
	ns := newNamespace(t)
	startManager(t, Config{InProcessOnly: true})
	create(t, testEval(ns, "early", blisv1alpha1.ExecutorInProcess))
	ev := waitCondition(t, ns, "early", ConditionAccepted, metav1.ConditionFalse, ReasonReferenceNotFound)
	if c := meta.FindStatusCondition(ev.Status.Conditions, ConditionAccepted); !strings.Contains(c.Message, `SimulatedCluster "cluster"`) {
		t.Fatalf("message %q does not name the missing SimulatedCluster", c.Message)
	}
	if ev.Status.Phase != blisv1alpha1.PhasePending {
		t.Fatalf("phase %s, want Pending", ev.Status.Phase)
	}
	createInputs(t, ns)
	waitCondition(t, ns, "early", ConditionSucceeded, metav1.ConditionTrue, ReasonCompleted)
}

// TestInvalidInputs: an Evaluation whose own spec fails the engine's validation is Failed with
// a message naming the object and field; one whose referenced object is invalid waits with
// Accepted=False; neither makes the reconciler return errors in a loop.
func TestInvalidInputs(t *testing.T) {
	ns := newNamespace(t)
	startManager(t, Config{InProcessOnly: true})
	createInputs(t, ns)

	badObjective := testEval(ns, "bad-objective", blisv1alpha1.ExecutorInProcess)
	badObjective.Spec.Objectives = []blisv1alpha1.Objective{{Name: "noSuchMetric", Direction: "minimize", Weight: 1}}
	create(t, badObjective)
	ev := waitCondition(t, ns, "bad-objective", blisv1alpha1.ConditionFailed, metav1.ConditionTrue, "")
	c := meta.FindStatusCondition(ev.Status.Conditions, blisv1alpha1.ConditionFailed)
	if !strings.Contains(c.Message, "Evaluation bad-objective") || !strings.Contains(c.Message, "objectives[0]") {
		t.Fatalf("message %q does not name the Evaluation and field", c.Message)
	}
	if a := meta.FindStatusCondition(ev.Status.Conditions, ConditionAccepted); a == nil || a.Status != metav1.ConditionFalse {
		t.Fatalf("Accepted: %+v", a)
	}

	// A cluster asking for what the engine cannot simulate (a GPU bandwidth override under the
	// blackbox model, whose coefficients were fitted per catalog GPU) is not Ready, and the
	// Evaluation waits on it.
	pd := testCluster(ns, "pd")
	bwTBs := 4.0
	pd.Spec.Hardware = &blisv1alpha1.HardwareSpec{BwPeakTBs: &bwTBs}
	pd.Spec.LatencyModel.Backend = blisv1alpha1.LatencyBlackbox
	create(t, pd)
	onPD := testEval(ns, "on-pd", blisv1alpha1.ExecutorInProcess)
	onPD.Spec.ClusterRef.Name = "pd"
	create(t, onPD)
	// The Evaluation may first wait for the cluster's validation; once the cluster is found
	// invalid, its message names the field at fault.
	eventually(t, "Evaluation on-pd waits naming the hardware field", func() (bool, string) {
		var e blisv1alpha1.Evaluation
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "on-pd"}, &e); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(e.Status.Conditions, ConditionAccepted)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == ReasonReferenceNotReady &&
			strings.Contains(c.Message, "spec.hardware.bwPeakTBs"), describeEval(&e)
	})

	// An inline cluster that is invalid in the same way fails the Evaluation (its spec cannot change).
	inline := testEval(ns, "inline-pd", blisv1alpha1.ExecutorInProcess)
	inline.Spec.ClusterRef = nil
	inline.Spec.Cluster = pd.Spec.DeepCopy()
	create(t, inline)
	ev = waitCondition(t, ns, "inline-pd", blisv1alpha1.ConditionFailed, metav1.ConditionTrue, ReasonUnsupported)
	if c := meta.FindStatusCondition(ev.Status.Conditions, blisv1alpha1.ConditionFailed); !strings.Contains(c.Message, "spec.cluster.hardware.bwPeakTBs") {
		t.Fatalf("message %q does not name the field at fault", c.Message)
	}
}

// TestInvalidCombination: a cluster and a policy that are each valid but do not fit together
// (precise prefix scoring on replicas without prefix caching) leave the Evaluation waiting with
// Accepted=False, reason InvalidReference, naming the policy's field and the cluster setting.
func TestInvalidCombination(t *testing.T) {
	ns := newNamespace(t)
	startManager(t, Config{InProcessOnly: true})
	cl := testCluster(ns, "cluster")
	off := false
	cl.Spec.Engine.EnablePrefixCaching = &off
	pol := testPolicy(ns, "policy")
	pol.Spec.Routing = &blisv1alpha1.RoutingPolicy{Policy: "weighted", Scorers: []blisv1alpha1.Scorer{{Name: "precise-prefix-cache", Weight: 1}}}
	create(t, cl, pol, testWorkload(ns, "workload"))
	create(t, testEval(ns, "mismatch", blisv1alpha1.ExecutorInProcess))
	ev := waitCondition(t, ns, "mismatch", ConditionAccepted, metav1.ConditionFalse, ReasonInvalidReference)
	c := meta.FindStatusCondition(ev.Status.Conditions, ConditionAccepted)
	if !strings.Contains(c.Message, "PolicyBundle policy: spec.routing.scorers[0].name") || !strings.Contains(c.Message, "enablePrefixCaching: false") {
		t.Fatalf("message %q does not name the policy field and the cluster setting", c.Message)
	}
	if ev.Status.Phase == blisv1alpha1.PhaseFailed {
		t.Fatal("a fault of referenced objects must not fail the Evaluation for good")
	}
}

// TestCacheHit: an Evaluation with the input of a Succeeded one reuses its result without
// running; opting out runs the engine again.
func TestCacheHit(t *testing.T) {
	ns := newNamespace(t)
	counter := &countingRun{}
	startManager(t, Config{InProcessOnly: true, Run: counter.run})
	createInputs(t, ns)
	create(t, testEval(ns, "first", blisv1alpha1.ExecutorInProcess, 7))
	first := waitCondition(t, ns, "first", ConditionSucceeded, metav1.ConditionTrue, ReasonCompleted)

	hitsBefore := counterValue(t, cacheHits)
	create(t, testEval(ns, "second", blisv1alpha1.ExecutorInProcess, 7))
	second := waitCondition(t, ns, "second", ConditionSucceeded, metav1.ConditionTrue, ReasonCacheHit)
	eventually(t, "the cache hit counter", func() (bool, string) {
		return counterValue(t, cacheHits) == hitsBefore+1, ""
	})
	if second.Status.CachedFrom != "first" || second.Status.InputHash != first.Status.InputHash || second.Status.Attempts != 0 {
		t.Fatalf("cachedFrom %q hash %q attempts %d", second.Status.CachedFrom, second.Status.InputHash, second.Status.Attempts)
	}
	if !equalJSON(t, first.Status.Metrics, second.Status.Metrics) || !equalJSON(t, first.Status.FitnessScore, second.Status.FitnessScore) {
		t.Fatal("the reused result differs from the original")
	}
	if n := counter.count(); n != 1 {
		t.Fatalf("the engine ran %d times, want 1", n)
	}

	optOut := testEval(ns, "no-reuse", blisv1alpha1.ExecutorInProcess, 7)
	optOut.Spec.Execution.ReuseCachedResult = ptr.To(false)
	create(t, optOut)
	third := waitCondition(t, ns, "no-reuse", ConditionSucceeded, metav1.ConditionTrue, ReasonCompleted)
	if third.Status.CachedFrom != "" || !equalJSON(t, first.Status.Metrics, third.Status.Metrics) {
		t.Fatal("the rerun differs from the original (the engine is deterministic)")
	}
	if n := counter.count(); n != 2 {
		t.Fatalf("the engine ran %d times, want 2", n)
	}
}

// TestIdenticalRunWaits: an Evaluation created while another of the same input runs waits for
// that run (Queued, WaitingForIdenticalRun) and reuses its result instead of running the
// engine again; when the run it waits for is deleted, it runs itself, and a third one waits for
// that run in turn.
func TestIdenticalRunWaits(t *testing.T) {
	ns := newNamespace(t)
	gate := newGatedRun()
	t.Cleanup(gate.openGate)
	startManager(t, Config{InProcessOnly: true, Run: gate.run})
	createInputs(t, ns)

	create(t, testEval(ns, "leader", blisv1alpha1.ExecutorInProcess, 7))
	waitCondition(t, ns, "leader", blisv1alpha1.ConditionRunning, metav1.ConditionTrue, ReasonInProcess)
	eventually(t, "the leader's run to start", func() (bool, string) { return gate.starts() == 1, "" })
	create(t, testEval(ns, "deleted", blisv1alpha1.ExecutorInProcess, 8))
	waitCondition(t, ns, "deleted", blisv1alpha1.ConditionRunning, metav1.ConditionTrue, ReasonInProcess)
	eventually(t, "the second run to start", func() (bool, string) { return gate.starts() == 2, "" })

	create(t, testEval(ns, "follower", blisv1alpha1.ExecutorInProcess, 7))
	ev := waitCondition(t, ns, "follower", blisv1alpha1.ConditionQueued, metav1.ConditionTrue, ReasonWaitingForIdenticalRun)
	if c := meta.FindStatusCondition(ev.Status.Conditions, blisv1alpha1.ConditionQueued); ev.Status.Phase != blisv1alpha1.PhaseQueued ||
		!strings.Contains(c.Message, "Evaluation leader") {
		t.Fatalf("phase %s, %q", ev.Status.Phase, c.Message)
	}

	// The run waited for is deleted: the waiting Evaluation runs itself, and a later one of the
	// same input waits for that run.
	create(t, testEval(ns, "orphan", blisv1alpha1.ExecutorInProcess, 8))
	waitCondition(t, ns, "orphan", blisv1alpha1.ConditionQueued, metav1.ConditionTrue, ReasonWaitingForIdenticalRun)
	if err := env.Client.Delete(context.Background(), testEval(ns, "deleted", blisv1alpha1.ExecutorInProcess, 8)); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, ns, "orphan", blisv1alpha1.ConditionRunning, metav1.ConditionTrue, ReasonInProcess)
	eventually(t, "the orphan's own run to start", func() (bool, string) { return gate.starts() == 3, "" })
	create(t, testEval(ns, "late", blisv1alpha1.ExecutorInProcess, 8))
	ev = waitCondition(t, ns, "late", blisv1alpha1.ConditionQueued, metav1.ConditionTrue, ReasonWaitingForIdenticalRun)
	if c := meta.FindStatusCondition(ev.Status.Conditions, blisv1alpha1.ConditionQueued); !strings.Contains(c.Message, "Evaluation orphan") {
		t.Fatalf("late waits for %q", c.Message)
	}

	gate.openGate()
	leader := waitCondition(t, ns, "leader", ConditionSucceeded, metav1.ConditionTrue, ReasonCompleted)
	follower := waitCondition(t, ns, "follower", ConditionSucceeded, metav1.ConditionTrue, ReasonCacheHit)
	waitCondition(t, ns, "orphan", ConditionSucceeded, metav1.ConditionTrue, ReasonCompleted)
	late := waitCondition(t, ns, "late", ConditionSucceeded, metav1.ConditionTrue, ReasonCacheHit)
	if follower.Status.CachedFrom != "leader" || late.Status.CachedFrom != "orphan" || follower.Status.Attempts != 0 {
		t.Fatalf("cachedFrom %q and %q, attempts %d", follower.Status.CachedFrom, late.Status.CachedFrom, follower.Status.Attempts)
	}
	if !equalJSON(t, leader.Status.Metrics, follower.Status.Metrics) {
		t.Fatal("the reused result differs from the leader's")
	}
	if q := meta.FindStatusCondition(follower.Status.Conditions, blisv1alpha1.ConditionQueued); q == nil || q.Status != metav1.ConditionFalse {
		t.Fatalf("follower Queued: %+v", q)
	}
	if n := gate.starts(); n != 3 {
		t.Fatalf("the engine started %d times, want 3 (leader, deleted, orphan)", n)
	}
}

// countingRun runs the real engine and counts runs per Evaluation input.
type countingRun struct {
	mu sync.Mutex
	n  int
}

func (c *countingRun) run(ctx context.Context, r *evaluation.Resolved) (*blisv1alpha1.EvaluationStatus, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return DefaultRun(ctx, r)
}

func (c *countingRun) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// gatedRun blocks every run until its input's gate opens (or its context ends) and records
// starts and cancellations.
type gatedRun struct {
	mu        sync.Mutex
	open      bool
	release   chan struct{}
	started   []string
	cancelled int
}

func newGatedRun() *gatedRun { return &gatedRun{release: make(chan struct{})} }

func (g *gatedRun) run(ctx context.Context, r *evaluation.Resolved) (*blisv1alpha1.EvaluationStatus, error) {
	g.mu.Lock()
	g.started = append(g.started, r.Hash)
	g.mu.Unlock()
	select {
	case <-g.release:
	case <-ctx.Done():
		g.mu.Lock()
		g.cancelled++
		g.mu.Unlock()
		return nil, ctx.Err()
	}
	return DefaultRun(ctx, r)
}

func (g *gatedRun) openGate() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open {
		g.open = true
		close(g.release)
	}
}

func (g *gatedRun) starts() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.started)
}

func (g *gatedRun) cancels() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cancelled
}

// TestParallelismCapsAndPriority: with a global cap of one, one Evaluation runs and the others
// wait Queued with the reason and their position; when the slot frees, the highest priority
// (then the oldest) is admitted next.
func TestParallelismCapsAndPriority(t *testing.T) {
	ns := newNamespace(t)
	gate := newGatedRun()
	startManager(t, Config{InProcessOnly: true, MaxRunning: 1, Run: gate.run})
	createInputs(t, ns)
	high := &schedulingPriority{name: "blis-test-high", value: 1000}
	high.create(t)

	create(t, testEval(ns, "a-running", blisv1alpha1.ExecutorInProcess, 1))
	waitCondition(t, ns, "a-running", blisv1alpha1.ConditionRunning, metav1.ConditionTrue, ReasonInProcess)
	create(t, testEval(ns, "b-low", blisv1alpha1.ExecutorInProcess, 2))
	waitCondition(t, ns, "b-low", blisv1alpha1.ConditionQueued, metav1.ConditionTrue, ReasonGlobalLimitReached)
	hi := testEval(ns, "c-high", blisv1alpha1.ExecutorInProcess, 3)
	hi.Spec.Execution.PriorityClassName = high.name
	create(t, hi)
	ev := waitCondition(t, ns, "c-high", blisv1alpha1.ConditionQueued, metav1.ConditionTrue, ReasonGlobalLimitReached)
	if c := meta.FindStatusCondition(ev.Status.Conditions, blisv1alpha1.ConditionQueued); !strings.Contains(c.Message, "position 1 of 2") {
		t.Fatalf("the high-priority Evaluation should be first in the queue: %q", c.Message)
	}
	if ev.Status.Phase != blisv1alpha1.PhaseQueued {
		t.Fatalf("phase %s", ev.Status.Phase)
	}
	// An explicit spec.execution.priority wins over the priority class's value.
	top := testEval(ns, "d-top", blisv1alpha1.ExecutorInProcess, 4)
	top.Spec.Execution.PriorityClassName = high.name
	top.Spec.Execution.Priority = ptr.To[int32](5000)
	create(t, top)
	ev = waitCondition(t, ns, "d-top", blisv1alpha1.ConditionQueued, metav1.ConditionTrue, ReasonGlobalLimitReached)
	if c := meta.FindStatusCondition(ev.Status.Conditions, blisv1alpha1.ConditionQueued); !strings.Contains(c.Message, "position 1 of 3") {
		t.Fatalf("the Evaluation with priority 5000 should be first in the queue: %q", c.Message)
	}

	gate.openGate()
	waitCondition(t, ns, "a-running", ConditionSucceeded, metav1.ConditionTrue, "")
	// d-top, then c-high, were admitted before b-low although created later.
	d := waitCondition(t, ns, "d-top", ConditionSucceeded, metav1.ConditionTrue, "")
	c := waitCondition(t, ns, "c-high", ConditionSucceeded, metav1.ConditionTrue, "")
	b := waitCondition(t, ns, "b-low", ConditionSucceeded, metav1.ConditionTrue, "")
	if c.Status.StartTime.Before(d.Status.StartTime) {
		t.Fatalf("c-high started at %v, before d-top at %v", c.Status.StartTime, d.Status.StartTime)
	}
	if !c.Status.StartTime.Before(b.Status.StartTime) && !c.Status.StartTime.Equal(b.Status.StartTime) {
		t.Fatalf("c-high started at %v, after b-low at %v", c.Status.StartTime, b.Status.StartTime)
	}
	if q := meta.FindStatusCondition(b.Status.Conditions, blisv1alpha1.ConditionQueued); q == nil || q.Status != metav1.ConditionFalse {
		t.Fatalf("b-low Queued: %+v", q)
	}
}

// TestNamespaceCap: a per-namespace cap of one queues a second Evaluation of the namespace
// while another namespace still runs.
func TestNamespaceCap(t *testing.T) {
	ns1, ns2 := newNamespace(t), newNamespace(t)
	gate := newGatedRun()
	startManager(t, Config{InProcessOnly: true, MaxRunning: 10, MaxRunningPerNamespace: 1, Run: gate.run})
	createInputs(t, ns1)
	createInputs(t, ns2)
	create(t, testEval(ns1, "one", blisv1alpha1.ExecutorInProcess, 1))
	waitCondition(t, ns1, "one", blisv1alpha1.ConditionRunning, metav1.ConditionTrue, "")
	create(t, testEval(ns1, "two", blisv1alpha1.ExecutorInProcess, 2))
	waitCondition(t, ns1, "two", blisv1alpha1.ConditionQueued, metav1.ConditionTrue, ReasonNamespaceLimitReached)
	create(t, testEval(ns2, "other", blisv1alpha1.ExecutorInProcess, 1))
	waitCondition(t, ns2, "other", blisv1alpha1.ConditionRunning, metav1.ConditionTrue, "")
	gate.openGate()
	waitCondition(t, ns1, "two", ConditionSucceeded, metav1.ConditionTrue, "")
}

// TestDeleteCancelsInProcessRun: deleting a running Evaluation cancels its in-process run.
func TestDeleteCancelsInProcessRun(t *testing.T) {
	ns := newNamespace(t)
	gate := newGatedRun()
	t.Cleanup(gate.openGate)
	startManager(t, Config{InProcessOnly: true, Run: gate.run})
	createInputs(t, ns)
	ev := testEval(ns, "doomed", blisv1alpha1.ExecutorInProcess)
	create(t, ev)
	waitCondition(t, ns, "doomed", blisv1alpha1.ConditionRunning, metav1.ConditionTrue, "")
	eventually(t, "the run to start", func() (bool, string) { return gate.starts() == 1, "" })
	if err := env.Client.Delete(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the run to be cancelled", func() (bool, string) { return gate.cancels() == 1, "" })
}

// TestRestartRerunsOnce: a manager stopped during an in-process run leaves the Evaluation
// Running; the next manager runs it again exactly once (the engine is deterministic) and
// writes the result once.
func TestRestartRerunsOnce(t *testing.T) {
	ns := newNamespace(t)
	gate := newGatedRun()
	t.Cleanup(gate.openGate)
	stop := startManager(t, Config{InProcessOnly: true, Run: gate.run})
	createInputs(t, ns)
	create(t, testEval(ns, "interrupted", blisv1alpha1.ExecutorInProcess))
	before := waitCondition(t, ns, "interrupted", blisv1alpha1.ConditionRunning, metav1.ConditionTrue, ReasonInProcess)
	eventually(t, "the run to start", func() (bool, string) { return gate.starts() == 1, "" })
	stop()

	counter := &countingRun{}
	startManager(t, Config{InProcessOnly: true, Run: counter.run})
	after := waitCondition(t, ns, "interrupted", ConditionSucceeded, metav1.ConditionTrue, ReasonCompleted)
	if n := counter.count(); n != 1 {
		t.Fatalf("the restarted manager ran the evaluation %d times, want 1", n)
	}
	if after.Status.InputHash != before.Status.InputHash || after.Status.Attempts != 1 {
		t.Fatalf("hash %s→%s attempts %d", before.Status.InputHash, after.Status.InputHash, after.Status.Attempts)
	}
}

// TestReferenceDeletedMidRun: deleting a referenced object while the run is in progress sets
// InputsResolved=False with reason ReferenceDeleted; the run finishes on its snapshotted input.
func TestReferenceDeletedMidRun(t *testing.T) {
	ns := newNamespace(t)
	gate := newGatedRun()
	t.Cleanup(gate.openGate)
	startManager(t, Config{InProcessOnly: true, Run: gate.run})
	createInputs(t, ns)
	create(t, testEval(ns, "orphaned", blisv1alpha1.ExecutorInProcess))
	waitCondition(t, ns, "orphaned", blisv1alpha1.ConditionRunning, metav1.ConditionTrue, ReasonInProcess)
	if err := env.Client.Delete(context.Background(), testWorkload(ns, "workload")); err != nil {
		t.Fatal(err)
	}
	ev := waitCondition(t, ns, "orphaned", blisv1alpha1.ConditionInputsResolved, metav1.ConditionFalse, ReasonReferenceDeleted)
	if c := meta.FindStatusCondition(ev.Status.Conditions, blisv1alpha1.ConditionInputsResolved); !strings.Contains(c.Message, `WorkloadSpec "workload"`) {
		t.Fatalf("message %q", c.Message)
	}
	gate.openGate()
	waitCondition(t, ns, "orphaned", ConditionSucceeded, metav1.ConditionTrue, ReasonCompleted)
}

// counterValue reads a counter's value.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
