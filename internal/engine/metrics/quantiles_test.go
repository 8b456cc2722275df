package metrics

import (
	"math"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// gridIndex returns the position of probability p (percent) in the grid.
func gridIndex(t *testing.T, p float64) int {
	t.Helper()
	for i, q := range QuantileGrid() {
		if q == p {
			return i
		}
	}
	t.Fatalf("%v is not on the grid", p)
	return -1
}

func TestQuantileGrid(t *testing.T) {
	g := QuantileGrid()
	if len(g) != 103 || g[0] != 0 || g[len(g)-1] != 100 || len(g) > 120 {
		t.Fatalf("grid has %d points from %v to %v", len(g), g[0], g[len(g)-1])
	}
	for i := 1; i < len(g); i++ {
		if g[i] <= g[i-1] {
			t.Fatalf("grid not increasing at %d: %v then %v", i, g[i-1], g[i])
		}
	}
	for _, p := range []float64{50, 90, 95, 99, 99.5, 99.9} {
		gridIndex(t, p)
	}
}

// TestDistributionsHandComputed checks a small sample point by point:
//
//	standard: completed TTFT 1 ms and 3 ms, E2E 5 ms and 9 ms, TPOT 1 ms (3 gaps) and 2 ms (2 gaps)
//	critical: completed TTFT 2 ms, E2E 4 ms, one output token (no gap); timed out after a
//	          first token at 6 ms
//	gaps:     1 ms ×3, 2 ms ×2
func TestDistributionsHandComputed(t *testing.T) {
	names := &workload.Tables{SLOClasses: []string{"standard", "critical"}}
	c := NewCollector("instance_0", false)
	c.Completed(&RequestRecord{ID: 1, OutputTokens: 4, TTFT: 1000, ITLSum: 3000, E2E: 5000, Class: 0})
	c.Completed(&RequestRecord{ID: 2, OutputTokens: 3, TTFT: 3000, ITLSum: 4000, E2E: 9000, Class: 0})
	c.Completed(&RequestRecord{ID: 3, OutputTokens: 1, TTFT: 2000, E2E: 4000, Class: 1})
	c.Record(&RequestRecord{ID: 4, Status: StatusTimedOut, TTFT: 6000, Class: 1})
	c.AddITL(1000, 3)
	c.AddITL(2000, 2)

	got := Distributions([]*Collector{c}, nil, names)
	type key struct{ metric, class string }
	want := []struct {
		key
		count  int64
		points map[float64]float64 // percent -> ms
	}{
		// TTFT ranks p/100·3 over {1, 2, 3, 6}: p50 = 2.5, p99 = 3 + 0.97·3.
		{key{MetricTTFT, ""}, 4, map[float64]float64{0: 1, 50: 2.5, 99: 5.91, 100: 6}},
		// Gaps {1, 1, 1, 2, 2}: rank p/100·4; p60 = 1 + 0.4·1.
		{key{MetricITL, ""}, 5, map[float64]float64{0: 1, 50: 1, 60: 1.4, 99: 2, 100: 2}},
		// E2E of completed requests {4, 5, 9}: p75 at rank 1.5 = 7.
		{key{MetricE2E, ""}, 3, map[float64]float64{0: 4, 50: 5, 75: 7, 100: 9}},
		// Classes by name: critical, then standard; critical has no TPOT sample.
		{key{MetricTTFT, "critical"}, 1, map[float64]float64{0: 2, 99: 2, 100: 2}},
		{key{MetricE2E, "critical"}, 1, map[float64]float64{0: 4, 100: 4}},
		{key{MetricTTFT, "standard"}, 2, map[float64]float64{0: 1, 50: 2, 100: 3}},
		{key{MetricITL, "standard"}, 2, map[float64]float64{25: 1.25, 100: 2}},
		{key{MetricE2E, "standard"}, 2, map[float64]float64{99: 8.96, 100: 9}},
	}
	if len(got) != len(want) {
		t.Fatalf("%d distributions, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if (key{g.Metric, g.Class}) != w.key || g.Count != w.count || len(g.Ms) != len(QuantileGrid()) {
			t.Fatalf("distribution %d is %s/%q with %d samples and %d points, want %s/%q with %d",
				i, g.Metric, g.Class, g.Count, len(g.Ms), w.metric, w.class, w.count)
		}
		for p, ms := range w.points {
			if v := g.Ms[gridIndex(t, p)]; math.Abs(v-ms) > 1e-9 {
				t.Errorf("%s/%q p%v = %v ms, want %v", g.Metric, g.Class, p, v, ms)
			}
		}
		for j := 1; j < len(g.Ms); j++ {
			if g.Ms[j] < g.Ms[j-1] {
				t.Errorf("%s/%q decreases at grid point %d", g.Metric, g.Class, j)
			}
		}
	}
}

// The grid's percentiles are bit-identical to the metrics output's (the scenario of the
// output tests: two instances, a gateway, two classes).
func TestDistributionsMatchFinalize(t *testing.T) {
	inst, gw := scenario(false)
	rep := Finalize(inst, 100_000, testNames, Options{Gateway: gw})
	dists := Distributions(inst, gw, testNames)
	p50, p90, p95, p99 := gridIndex(t, 50), gridIndex(t, 90), gridIndex(t, 95), gridIndex(t, 99)
	check := func(d Distribution, want [4]float64) {
		t.Helper()
		if got := [4]float64{d.Ms[p50], d.Ms[p90], d.Ms[p95], d.Ms[p99]}; got != want {
			t.Errorf("%s/%q: p50/90/95/99 %v, output %v", d.Metric, d.Class, got, want)
		}
	}
	o := rep.Cluster
	var classes int
	for _, d := range dists {
		if d.Class == "" {
			switch d.Metric {
			case MetricTTFT:
				check(d, [4]float64{o.TTFTP50Ms, o.TTFTP90Ms, o.TTFTP95Ms, o.TTFTP99Ms})
			case MetricITL:
				check(d, [4]float64{o.ITLP50Ms, o.ITLP90Ms, o.ITLP95Ms, o.ITLP99Ms})
			case MetricE2E:
				check(d, [4]float64{o.E2EP50Ms, o.E2EP90Ms, o.E2EP95Ms, o.E2EP99Ms})
			}
			continue
		}
		classes++
		co := o.PerClass[d.Class]
		if co == nil {
			t.Fatalf("class %q is not in per_class", d.Class)
		}
		switch d.Metric {
		case MetricTTFT:
			check(d, [4]float64{co.TTFTP50Ms, co.TTFTP90Ms, co.TTFTP95Ms, co.TTFTP99Ms})
			if d.Count != co.Completed {
				t.Errorf("class %q TTFT over %d samples, %d completed", d.Class, d.Count, co.Completed)
			}
		case MetricITL:
			check(d, [4]float64{co.ITLP50Ms, co.ITLP90Ms, co.ITLP95Ms, co.ITLP99Ms})
		case MetricE2E:
			check(d, [4]float64{co.E2EP50Ms, co.E2EP90Ms, co.E2EP95Ms, co.E2EP99Ms})
		}
	}
	if classes == 0 {
		t.Fatal("no per-class distributions")
	}
}

// Nothing completed: no latency statistics, so no distributions.
func TestDistributionsNoneCompleted(t *testing.T) {
	c := NewCollector("instance_0", false)
	c.Record(&RequestRecord{ID: 1, Status: StatusRunning, TTFT: 1000, Scheduled: true})
	if d := Distributions([]*Collector{c}, nil, nil); d != nil {
		t.Fatalf("distributions without completions: %+v", d)
	}
}
