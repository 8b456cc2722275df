package evaluation

import (
	"context"
	"strings"
	"testing"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

// plainStalenessInputs is the base evaluation on a cluster that sets no signal staleness.
func plainStalenessInputs(t *testing.T) Inputs {
	in := baseInputs(t)
	c := in.Cluster.DeepCopy()
	c.Spec.Observability = nil
	c.Spec.ControlPlane.SnapshotRefreshIntervalUs, c.Spec.ControlPlane.CacheSignalDelayUs = nil, nil
	in.Cluster = c
	return in
}

func TestControlPlaneStalenessIsSimulated(t *testing.T) {
	plain := mustResolve(t, plainStalenessInputs(t))
	in := plainStalenessInputs(t)
	c := in.Cluster.DeepCopy()
	refresh, delay := int64(100_000), int64(200_000)
	c.Spec.ControlPlane.SnapshotRefreshIntervalUs = &refresh
	c.Spec.ControlPlane.CacheSignalDelayUs = &delay
	in.Cluster = c
	r := mustResolve(t, in)
	for _, n := range r.Notes {
		if strings.Contains(n, "controlPlane") {
			t.Errorf("note %q: the control-plane delays are simulated", n)
		}
	}
	o := r.Document.Cluster.Observability
	if o == nil || o.SnapshotRefreshUs != refresh || o.CacheSignalDelayUs != delay {
		t.Fatalf("document observability %+v", o)
	}
	if plain.Document.Cluster.Observability != nil {
		t.Errorf("a cluster without the settings got observability %+v", plain.Document.Cluster.Observability)
	}
	if r.Hash == plain.Hash {
		t.Error("the settings did not change the input hash")
	}
	a, err := Run(context.Background(), plain)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if sa, sb := a.Status().Metrics, b.Status().Metrics; sa.TtftP99Ms == sb.TtftP99Ms && sa.E2eP99Ms == sb.E2eP99Ms {
		t.Errorf("stale signals left TTFT and E2E p99 unchanged (%v, %v)", sa.TtftP99Ms, sa.E2eP99Ms)
	}

	// Zero is "not set": the document and its hash stay those of a cluster without them.
	zero := plainStalenessInputs(t)
	zc := zero.Cluster.DeepCopy()
	var z int64
	zc.Spec.ControlPlane.SnapshotRefreshIntervalUs = &z
	zc.Spec.ControlPlane.CacheSignalDelayUs = &z
	zero.Cluster = zc
	if rz := mustResolve(t, zero); rz.Hash != plain.Hash {
		t.Error("zero delays changed the input hash")
	}
}

func TestMergeObservability(t *testing.T) {
	cl := &policy.ObservabilityConfig{SnapshotRefreshUs: 50_000, CacheSignalDelayUs: 7}
	b := &policy.ObservabilityConfig{QueueDepth: policy.FieldConfig{Mode: policy.Immediate}}
	m, err := mergeObservability(cl, b)
	if err != nil {
		t.Fatal(err)
	}
	if m.SnapshotRefreshUs != 50_000 || m.CacheSignalDelayUs != 7 || m.QueueDepth.Mode != policy.Immediate {
		t.Errorf("merged %+v", m)
	}
	if d := m.Defaulted(); d.QueueDepth.Mode != policy.Immediate || d.KVUtilization.Mode != policy.Periodic {
		t.Errorf("the bundle's own queue-depth rule must win and the interval fill the rest: %+v", d)
	}
	if _, err := mergeObservability(&policy.ObservabilityConfig{KVUtilization: policy.FieldConfig{Mode: policy.Immediate}}, b); err == nil {
		t.Error("per-signal rules in both the cluster and the bundle were accepted")
	}
	if _, err := mergeObservability(cl, &policy.ObservabilityConfig{SnapshotRefreshUs: 1}); err == nil {
		t.Error("a refresh interval in both the cluster and the bundle was accepted")
	}
}

func TestHPAScrapeDelayIsSimulated(t *testing.T) {
	// The oscillator acts at every evaluation it has a sample for: with the delay it starts
	// later, so the replica time changes.
	live := autoscaledInputs(t, "oscillator", "wait")
	late := autoscaledInputs(t, "oscillator", "wait")
	late.Policy.Spec.Autoscaler.HpaScrapeDelay = &blisv1alpha1.DelaySpec{Mean: 5}
	rl, rd := mustResolve(t, live), mustResolve(t, late)
	for _, n := range rd.Notes {
		if strings.Contains(n, "hpaScrapeDelay") {
			t.Errorf("note %q: the scrape delay is simulated", n)
		}
	}
	if rd.plan.autoscale == nil || rd.plan.autoscale.ScrapeDelay.MeanUs != 5_000_000 {
		t.Fatalf("autoscaler %+v", rd.plan.autoscale)
	}
	if rl.plan.autoscale.ScrapeDelay.MeanUs != 0 {
		t.Errorf("a bundle without hpaScrapeDelay got %+v", rl.plan.autoscale.ScrapeDelay)
	}
	a, err := Run(context.Background(), rl)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(context.Background(), rd)
	if err != nil {
		t.Fatal(err)
	}
	if a.Status().Metrics.ReplicaSeconds == b.Status().Metrics.ReplicaSeconds {
		t.Error("a 5 s scrape delay left the replica time unchanged")
	}
}
