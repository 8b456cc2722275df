package evaluation

import (
	"context"
	"strings"
	"testing"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

func TestEvaluationCPUTier(t *testing.T) {
	in := baseInputs(t)
	in.Spec.Seeds = []int64{1}
	c := in.Cluster.DeepCopy()
	c.Spec.KVTiers = []blisv1alpha1.KVTierSpec{{Tier: "cpu", CapacityBlocks: 100000, BandwidthGBps: 32, BaseLatencyUs: 50}, {Tier: "filesystem", CapacityBlocks: 1, BandwidthGBps: 1}}
	in.Cluster = c
	r := mustResolve(t, in)
	if tr := r.Document.Cluster.CPUTier; tr == nil || tr.CapacityBlocks != 100000 || tr.BandwidthGBps != 32 {
		t.Fatalf("document tier %+v", tr)
	}
	if n := r.Document.Cluster.CPUTier.Next; n == nil || n.Tier != "filesystem" || n.CapacityBlocks != 1 {
		t.Fatalf("document tier below cpu %+v", n)
	}
	for _, n := range r.Notes {
		if strings.Contains(n, "not simulated") && strings.Contains(n, "tier") {
			t.Errorf("stale note %q", n)
		}
	}
	if r.plan.instance.CPUTier == nil || r.plan.instance.CPUTier.BlockBytes <= 0 || r.plan.instance.CPUTier.Next == nil {
		t.Fatalf("engine instance tier %+v", r.plan.instance.CPUTier)
	}
	if _, err := Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}

	for _, bad := range []struct {
		tiers []blisv1alpha1.KVTierSpec
		want  string
	}{
		{[]blisv1alpha1.KVTierSpec{{Tier: "cpu", CapacityBlocks: 10, BandwidthGBps: 0}}, "bandwidthGBps"},
		{[]blisv1alpha1.KVTierSpec{{Tier: "cpu", CapacityBlocks: 10, BandwidthGBps: 1}, {Tier: "cpu", CapacityBlocks: 10, BandwidthGBps: 1}}, "at most one cpu tier"},
	} {
		in := baseInputs(t)
		c := in.Cluster.DeepCopy()
		c.Spec.KVTiers = bad.tiers
		in.Cluster = c
		if _, err := Resolve(in); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: error %v, want %q", bad.tiers, err, bad.want)
		}
	}
}
