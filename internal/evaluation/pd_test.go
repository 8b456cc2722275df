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

// TestEvaluationPoolOverrides: a prefill pool on TP2 and a decode pool on A100-80 with the
// roofline model resolve through the model package like the cluster; status.metrics.pools
// reports both pools, and the faster prefill pool lowers the prefill TTFT.
func TestEvaluationPoolOverrides(t *testing.T) {
	run := func(mod func(pools []blisv1alpha1.ReplicaPoolSpec)) (*Resolved, blisv1alpha1.EvaluationStatus) {
		t.Helper()
		in := baseInputs(t)
		in.Spec.Seeds = []int64{1, 2}
		c := in.Cluster.DeepCopy()
		c.Spec.Pools = []blisv1alpha1.ReplicaPoolSpec{{Name: "p", Role: blisv1alpha1.PoolPrefill, Replicas: 1}, {Name: "d", Role: blisv1alpha1.PoolDecode, Replicas: 2}}
		mod(c.Spec.Pools)
		in.Cluster = c
		r := mustResolve(t, in)
		res, err := Run(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		return r, res.Status()
	}
	rp, plain := run(func([]blisv1alpha1.ReplicaPoolSpec) {})
	r, st := run(func(p []blisv1alpha1.ReplicaPoolSpec) {
		p[0].Engine = &blisv1alpha1.PoolEngineSpec{TensorParallelSize: 2}
		p[1].GPU = "A100-80"
		p[1].LatencyModel = &blisv1alpha1.LatencyModelSpec{Backend: blisv1alpha1.LatencyRoofline}
	})
	pd := r.Document.Cluster.PD
	if pd.Prefill == nil || pd.Prefill.Engine.TensorParallelSize != 2 || pd.Decode == nil || pd.Decode.GPU != "A100-80" || pd.Decode.LatencyModel != "roofline" {
		t.Fatalf("document pools: prefill %+v, decode %+v", pd.Prefill, pd.Decode)
	}
	// GPUs: the prefill replica has TP2, the two decode replicas the cluster's.
	plainGPUs, err := rp.Document.Cluster.TotalGPUs()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Document.Cluster.TotalGPUs(); err != nil || plainGPUs%3 != 0 || got != 2+2*(plainGPUs/3) {
		t.Errorf("total GPUs %d (%v), %d with the cluster's instance everywhere", got, err, plainGPUs)
	}
	if r.plan.pools[0] == nil || r.plan.pools[1] == nil || r.plan.pools[1].Latency.Name() == r.plan.instance.Latency.Name() {
		t.Fatalf("plan pools %+v", r.plan.pools)
	}
	for _, s := range []blisv1alpha1.EvaluationStatus{plain, st} {
		ps := s.Metrics.Pools
		if len(ps) != 2 || ps[0].Name != "prefill" || ps[1].Name != "decode" || ps[0].Replicas != 1 || ps[1].Replicas != 2 {
			t.Fatalf("status pools %+v", ps)
		}
		if ps[1].CompletedRequests != s.Metrics.CompletedRequests || ps[0].CompletedRequests != ps[0].KVTransfers || ps[0].KVTransfers == 0 ||
			ps[0].KVTransfers != ps[1].KVTransfers || ps[0].TtftP99Ms <= 0 || ps[1].ItlP99Ms <= 0 || ps[1].PeakKVUtilization <= 0 {
			t.Errorf("status pools %+v, completed %d", ps, s.Metrics.CompletedRequests)
		}
	}
	if !(st.Metrics.Pools[0].TtftMeanMs < plain.Metrics.Pools[0].TtftMeanMs) {
		t.Errorf("prefill TTFT mean %.3f ms on TP2, %.3f ms on TP1", st.Metrics.Pools[0].TtftMeanMs, plain.Metrics.Pools[0].TtftMeanMs)
	}

	for _, bad := range []struct {
		name string
		mod  func(c *blisv1alpha1.SimulatedClusterSpec)
		want string
	}{
		{"monolithic override", func(c *blisv1alpha1.SimulatedClusterSpec) {
			c.Pools = []blisv1alpha1.ReplicaPoolSpec{{Name: "m", Replicas: 2, GPU: "A100-80"}}
		}, "pools[0].role: gpu, engine and latencyModel overrides apply only to prefill and decode pools"},
		{"prefill pools differ", func(c *blisv1alpha1.SimulatedClusterSpec) {
			c.Pools = append(c.Pools, blisv1alpha1.ReplicaPoolSpec{Name: "p2", Role: blisv1alpha1.PoolPrefill, Replicas: 1, GPU: "A100-80"})
		}, "pools[2]: prefill pools with different gpu, engine or latencyModel are not simulated"},
		{"unknown pool GPU", func(c *blisv1alpha1.SimulatedClusterSpec) { c.Pools[1].GPU = "NOPE" }, "decode pool"},
	} {
		in := baseInputs(t)
		cc := in.Cluster.DeepCopy()
		cc.Spec.Pools = []blisv1alpha1.ReplicaPoolSpec{{Name: "p", Role: blisv1alpha1.PoolPrefill, Replicas: 1}, {Name: "d", Role: blisv1alpha1.PoolDecode, Replicas: 2}}
		bad.mod(&cc.Spec)
		in.Cluster = cc
		if _, err := Resolve(in); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %v, want %q", bad.name, err, bad.want)
		}
	}
}
