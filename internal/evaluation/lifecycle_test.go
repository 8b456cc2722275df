package evaluation

import (
	"context"
	"strings"
	"testing"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// The bundle's instanceLifecycle: its loading delay replaces the cluster's modelLoadDelayUs on
// its own stream, and without a warm start the initial replicas load too.
func TestEvaluationInstanceLifecycle(t *testing.T) {
	in := autoscaledInputs(t, "threshold", "wait")
	base := mustResolve(t, in)
	if ac := base.plan.autoscale; ac.ModelLoad.MeanUs != 1_000_000 || ac.LoadingStream || ac.ColdStart {
		t.Fatalf("without instanceLifecycle: %+v", ac)
	}
	p := in.Policy.DeepCopy()
	p.Spec.InstanceLifecycle = &blisv1alpha1.InstanceLifecycle{LoadingDelay: &blisv1alpha1.DelaySpec{Mean: 45, Stddev: 10}, WarmStartInitialInstances: true}
	in.Policy = p
	r := mustResolve(t, in)
	ac := r.plan.autoscale
	if ac.ModelLoad.MeanUs != 45_000_000 || ac.ModelLoad.StddevUs != 10_000_000 || !ac.LoadingStream || ac.ColdStart {
		t.Fatalf("loading delay 45 ± 10 s with a warm start: %+v", ac)
	}
	for _, n := range r.Notes {
		if strings.Contains(n, "instanceLifecycle") {
			t.Errorf("note %q: the lifecycle is simulated", n)
		}
	}
	if r.Hash == base.Hash {
		t.Fatal("the lifecycle does not change the document hash")
	}
	p.Spec.InstanceLifecycle.WarmStartInitialInstances = false
	cold := mustResolve(t, in)
	if ac := cold.plan.autoscale; !ac.ColdStart {
		t.Fatalf("no warm start, but the initial replicas do not load: %+v", ac)
	}
	// Every request still completes; the first ones waited about 45 s for the first replica.
	res, err := Run(context.Background(), cold)
	if err != nil {
		t.Fatal(err)
	}
	st := res.Status()
	if st.Metrics == nil || st.Metrics.CompletedRequests != 400 || st.Metrics.TtftP99Ms < 20_000 {
		t.Fatalf("cold start metrics %+v", st.Metrics)
	}

	// Without autoscaling the fixed replicas cold-start too: a constant 3 s load, every request
	// served after it, and no note.
	c := in.Cluster.DeepCopy()
	c.Spec.Autoscaling = nil
	in.Cluster = c
	p.Spec.InstanceLifecycle.LoadingDelay = &blisv1alpha1.DelaySpec{Mean: 3}
	r = mustResolve(t, in)
	for _, n := range r.Notes {
		if strings.Contains(n, "instanceLifecycle") {
			t.Errorf("note %q: the cold start of fixed replicas is simulated", n)
		}
	}
	ac = r.plan.autoscale
	if ac == nil || !ac.ColdStart || ac.ModelLoad.MeanUs != 3_000_000 || ac.MinReplicas != ac.MaxReplicas || int(ac.MaxReplicas) != r.Document.Cluster.Replicas {
		t.Fatalf("fixed cold start: %+v", ac)
	}
	res, err = Run(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	st = res.Status()
	if st.Metrics == nil || st.Metrics.CompletedRequests != 400 || st.Metrics.TtftP99Ms < 3_000 {
		t.Fatalf("fixed cold start metrics %+v", st.Metrics)
	}
	// With a warm start the fixed replicas are ready at time 0, as without a lifecycle.
	p.Spec.InstanceLifecycle.WarmStartInitialInstances = true
	if r = mustResolve(t, in); r.plan.autoscale != nil {
		t.Fatalf("warm start without autoscaling: %+v", r.plan.autoscale)
	}
}
