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
