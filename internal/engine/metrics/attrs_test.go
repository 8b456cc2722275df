package metrics

import (
	"math"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// attrsCollector records six completed requests: three of class 0 (one without its own
// target), three of class 1 (one without), E2E mean 500 ms.
func attrsCollector() *Collector {
	c := NewCollector("instance_0", false)
	ms := int64(1000)
	for _, r := range []RequestRecord{
		{ID: 1, TTFT: 50 * ms, E2E: 500 * ms},
		{ID: 2, TTFT: 300 * ms, E2E: 600 * ms, SLOTarget: 200 * ms},
		{ID: 3, TTFT: 150 * ms, E2E: 700 * ms, SLOTarget: 200 * ms},
		{ID: 4, Class: 1, TTFT: 80 * ms, E2E: 400 * ms, SLOTarget: 100 * ms},
		{ID: 5, Class: 1, TTFT: 120 * ms, E2E: 400 * ms, SLOTarget: 100 * ms},
		{ID: 6, Class: 1, TTFT: 10 * ms, E2E: 400 * ms},
	} {
		r.InputTokens, r.OutputTokens = 10, 5
		c.Completed(&r)
	}
	return c
}

// A request's own TTFT target replaces its class's TTFT target and keeps the class's others; a
// class without targets is gated over the requests with their own only.
func TestOwnSLOTargetsComposeWithClassTargets(t *testing.T) {
	names := &workload.Tables{SLOClasses: []string{"standard", "critical"}}
	rep := Finalize([]*Collector{attrsCollector()}, 10_000_000, names, Options{Targets: []SLOTarget{{E2E: 1_000_000}}})
	o := rep.Cluster
	std, crit := o.PerClass["standard"], o.PerClass["critical"]
	if *std.SLOAttainment != 2.0/3 || *std.SLOAttainmentByDim.TTFT != 2.0/3 || *std.SLOAttainmentByDim.E2E != 1 {
		t.Errorf("standard: attainment %v by dim %+v", *std.SLOAttainment, *std.SLOAttainmentByDim)
	}
	if *crit.SLOAttainment != 0.5 || *crit.SLOAttainmentByDim.TTFT != 0.5 || crit.SLOAttainmentByDim.E2E != nil {
		t.Errorf("critical: attainment %v by dim %+v", *crit.SLOAttainment, *crit.SLOAttainmentByDim)
	}
	if *o.SLOAttainment != 3.0/5 || *o.GoodputRPS != 0.3 {
		t.Errorf("cluster: attainment %v goodput %v, want 0.6 and 0.3", *o.SLOAttainment, *o.GoodputRPS)
	}
	// Own targets alone (no class targets) gate the run.
	o = Finalize([]*Collector{attrsCollector()}, 10_000_000, names, Options{}).Cluster
	if *o.SLOAttainment != 2.0/4 || *o.PerClass["standard"].SLOAttainment != 0.5 {
		t.Errorf("own targets only: attainment %v, standard %v", *o.SLOAttainment, *o.PerClass["standard"].SLOAttainment)
	}
}

// The saturation block is BLIS's threshold detector over the completed requests' mean E2E, and
// only present when asked for.
func TestSaturationThreshold(t *testing.T) {
	col := []*Collector{attrsCollector()}
	if s := Finalize(col, 10_000_000, nil, Options{}).Cluster.Saturation; s != nil {
		t.Errorf("saturation without a threshold: %+v", s)
	}
	conf := 1 - 1/math.Sqrt(7)
	for _, tc := range []struct {
		threshold, score float64
		level            string
	}{
		{1000, 0.25, "STABLE"},
		{500, 0.75, "OVERLOADED"},
		{250, 1, "OVERLOADED"},
		{400, 0.75 + 0.25/4, "OVERLOADED"},
	} {
		s := Finalize(col, 10_000_000, nil, Options{SaturationThresholdMs: tc.threshold}).Cluster.Saturation
		if s == nil || s.Level != tc.level || math.Abs(s.Score-tc.score) > 1e-12 || s.Confidence != conf ||
			s.Signals["mean_e2e"] != 500 || s.Signals["threshold"] != tc.threshold {
			t.Errorf("threshold %v: %+v, want %s score %v", tc.threshold, s, tc.level, tc.score)
		}
	}
	empty := Finalize([]*Collector{NewCollector("i", false)}, 0, nil, Options{SaturationThresholdMs: 5000}).Cluster.Saturation
	if empty == nil || empty.Level != "STABLE" || empty.Score != 0 || empty.Confidence != 0 || len(empty.Signals) != 0 {
		t.Errorf("nothing completed: %+v", empty)
	}
}

// Adapters: TTFT percentiles in µs over each adapter's requests and its output tokens per
// second; requests without an adapter are not a key, and no adapter means no block.
func TestAdaptersBlock(t *testing.T) {
	c := NewCollector("instance_0", false)
	for i, ttft := range []int64{100, 200, 300, 400, 50} {
		r := RequestRecord{ID: uint64(i), TTFT: ttft, E2E: 1000, InputTokens: 4, OutputTokens: int32(10 * (i + 1)), Adapter: 1}
		if i == 4 {
			r.Adapter = 0
		}
		c.Completed(&r)
	}
	names := &workload.Tables{Adapters: []string{"", "lora-a"}}
	o := Finalize([]*Collector{c}, 2_000_000, names, Options{}).Cluster
	a := o.Adapters["lora-a"]
	if len(o.Adapters) != 1 || a == nil || a.TTFTP50Us != 250 || a.TTFTP99Us != 397 || a.ThroughputTokPerS != 50 {
		t.Errorf("adapters %+v (lora-a %+v)", o.Adapters, a)
	}
	if Finalize([]*Collector{attrsCollector()}, 1, nil, Options{}).Cluster.Adapters != nil {
		t.Error("adapters block without adapters")
	}
}
