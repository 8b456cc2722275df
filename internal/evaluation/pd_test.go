package evaluation

import (
	"context"
	"strings"
	"testing"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

func TestEvaluationDisaggregation(t *testing.T) {
	in := baseInputs(t)
	in.Spec.Seeds = []int64{1}
	c := in.Cluster.DeepCopy()
	c.Spec.Pools = []blisv1alpha1.ReplicaPoolSpec{{Name: "p", Role: blisv1alpha1.PoolPrefill, Replicas: 1}, {Name: "d", Role: blisv1alpha1.PoolDecode, Replicas: 2}}
	c.Spec.KVTransfer = &blisv1alpha1.KVTransferSpec{BandwidthGBps: 40, BaseLatencyUs: 30, Decider: "prefix-threshold", DirectDecodeThreshold: 256}
	in.Cluster = c
	r := mustResolve(t, in)
	pd := r.Document.Cluster.PD
	if pd == nil || pd.PrefillReplicas != 1 || pd.Decider != "prefix-threshold" || pd.NonCachedTokens != 256 || r.Document.Cluster.Replicas != 3 {
		t.Fatalf("document P/D %+v, replicas %d", pd, r.Document.Cluster.Replicas)
	}
	res, err := Run(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if st := res.Status(); st.Metrics == nil || st.Metrics.CompletedRequests == 0 {
		t.Fatalf("no completed requests: %+v", st.Metrics)
	}

	for _, bad := range []struct {
		name string
		mod  func(c *blisv1alpha1.SimulatedClusterSpec)
		want string
	}{
		{"no decode replicas", func(c *blisv1alpha1.SimulatedClusterSpec) { c.Pools[1].Replicas = 0 }, "needs prefill and decode replicas"},
		{"decider without pools", func(c *blisv1alpha1.SimulatedClusterSpec) {
			c.Pools = []blisv1alpha1.ReplicaPoolSpec{{Name: "m", Replicas: 2}}
		}, "need prefill and decode pools"},
		{"bandwidth", func(c *blisv1alpha1.SimulatedClusterSpec) { c.KVTransfer.BandwidthGBps = -1 }, "bandwidthGBps"},
	} {
		in := baseInputs(t)
		cc := c.DeepCopy()
		bad.mod(&cc.Spec)
		in.Cluster = cc
		if _, err := Resolve(in); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %v, want %q", bad.name, err, bad.want)
		}
	}
}

// TestEvaluationDisaggregationAutoscaled: each of the prefill and decode pools is autoscaled
// within its own minReplicas/maxReplicas, and the cluster's autoscaling bounds must be their
// sums.
func TestEvaluationDisaggregationAutoscaled(t *testing.T) {
	in := autoscaledInputs(t, "oscillator", "redirect")
	one, two := int32(1), int32(2)
	c := in.Cluster.DeepCopy()
	c.Spec.Pools = []blisv1alpha1.ReplicaPoolSpec{
		{Name: "d", Role: blisv1alpha1.PoolDecode, Replicas: 1, MinReplicas: &one, MaxReplicas: &two},
		{Name: "p", Role: blisv1alpha1.PoolPrefill, Replicas: 1, MinReplicas: &one, MaxReplicas: &two},
	}
	c.Spec.Autoscaling.MinReplicas, c.Spec.Autoscaling.MaxReplicas = 2, 4
	in.Cluster = c
	r := mustResolve(t, in)
	a := r.Document.Cluster.Autoscaling
	if a == nil || a.Prefill == nil || a.Decode == nil || *a.Prefill != (PoolBoundsDoc{1, 2}) || *a.Decode != (PoolBoundsDoc{1, 2}) {
		t.Fatalf("document autoscaling %+v", a)
	}
	p := r.plan
	if p.pd.PrefillInstances != 2 || p.autoscale.Prefill.InitialReplicas != 1 || p.autoscale.Decode.InitialReplicas != 1 {
		t.Fatalf("plan: %d prefill slots, autoscale %+v", p.pd.PrefillInstances, *p.autoscale)
	}
	res, err := Run(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	st := res.Status()
	if st.Metrics == nil || st.Metrics.CompletedRequests == 0 || st.Metrics.ReplicaSeconds <= 0 {
		t.Fatalf("metrics %+v", st.Metrics)
	}
	if st.Anomalies == nil || st.Anomalies.ScaleOscillations == 0 {
		t.Errorf("the oscillator on both pools raised no oscillations: %+v", st.Anomalies)
	}

	for _, bad := range []struct {
		name string
		mod  func(c *blisv1alpha1.SimulatedClusterSpec)
		want string
	}{
		{"cluster max", func(c *blisv1alpha1.SimulatedClusterSpec) { c.Autoscaling.MaxReplicas = 5 }, "autoscaling.maxReplicas: on a disaggregated cluster must equal the sum"},
		{"cluster min", func(c *blisv1alpha1.SimulatedClusterSpec) { c.Autoscaling.MinReplicas = 1 }, "autoscaling.minReplicas: on a disaggregated cluster must equal the sum"},
		{"pool without a ready replica", func(c *blisv1alpha1.SimulatedClusterSpec) {
			zero := int32(0)
			c.Pools[0].MinReplicas = &zero
			c.Autoscaling.MinReplicas = 1
		}, "decode pools' minReplicas must add up to >= 1"},
		{"replicas outside pool bounds", func(c *blisv1alpha1.SimulatedClusterSpec) { c.Pools[1].Replicas = 3 }, "pools[1]: replicas (3) must be within"},
	} {
		in := autoscaledInputs(t, "oscillator", "redirect")
		cc := c.DeepCopy()
		bad.mod(&cc.Spec)
		in.Cluster = cc
		if _, err := Resolve(in); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %v, want %q", bad.name, err, bad.want)
		}
	}
}
