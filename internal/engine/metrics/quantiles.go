package metrics

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// Latency metrics of a Distribution.
const (
	MetricTTFT = "ttft"
	MetricITL  = "itl"
	MetricE2E  = "e2e"
)

// quantileGrid is the probability grid of every Distribution, in percent: every whole percent
// from 0 to 99, then 99.5, 99.9 and 100 (103 points). The tail points resolve the SLO-relevant
// region; 0 and 100 are the minimum and maximum.
var quantileGrid = func() []float64 {
	g := make([]float64, 0, 103)
	for p := range 100 {
		g = append(g, float64(p))
	}
	return append(g, 99.5, 99.9, 100)
}()

// QuantileGrid returns the probabilities (in percent, increasing) at which Distributions
// evaluates every distribution. It contains 50, 90, 95 and 99 exactly, so those points equal
// the percentiles of the metrics output. The caller must not modify it.
func QuantileGrid() []float64 { return quantileGrid }

// Distribution is one latency metric's empirical distribution, evaluated at QuantileGrid.
type Distribution struct {
	// Metric is MetricTTFT, MetricITL or MetricE2E.
	Metric string
	// Class is the SLO class name ("" for every request).
	Class string
	// Count is the number of samples.
	Count int64
	// Ms holds the value in ms at each probability of QuantileGrid.
	Ms []float64
}

// Distributions returns the latency distributions of the cluster made of instances (and the
// gateway collector, which may be nil), over the same samples and with the same percentile rule
// as Finalize's cluster block, so that each distribution's p50, p90, p95 and p99 points equal
// the block's:
//
//   - every request first, in the order ttft (requests that produced a first token), itl
//     (every inter-token gap, as itl_*), e2e (completed requests);
//   - then each SLO class with completed requests, by class name, in the same order over the
//     class's completed requests, where itl is per-request TPOT, as per_class's itl_*.
//
// A metric without samples is left out, and there are none at all when no request completed
// (the output then reports no latency statistics either). names are the workload's tables.
func Distributions(instances []*Collector, gateway *Collector, names *workload.Tables) []Distribution {
	cols := slices.Clone(instances)
	if gateway != nil {
		cols = append(cols, gateway)
	}
	var completed int64
	var n, classes int
	var itl WeightedSamples
	for _, c := range cols {
		completed += c.counts.Completed
		n += len(c.samples)
		classes = max(classes, len(c.classReq))
		itl.Merge(&c.itl)
	}
	if completed == 0 {
		return nil
	}
	samples := make([]sample, 0, n)
	for _, c := range cols {
		samples = append(samples, c.samples...)
	}
	var out []Distribution
	var d dist
	add := func(metric, class string) {
		if len(d.v) == 0 {
			return
		}
		ms := make([]float64, len(quantileGrid))
		for i, p := range quantileGrid {
			ms[i] = PercentileMs(d.v, p)
		}
		out = append(out, Distribution{Metric: metric, Class: class, Count: int64(len(d.v)), Ms: ms})
	}
	d.fill(samples, func(s *sample) (float64, bool) { return s.ttft, s.has(fTTFT) })
	add(MetricTTFT, "")
	if itl.Count() > 0 {
		ms := make([]float64, len(quantileGrid))
		for i, p := range quantileGrid {
			ms[i] = itl.PercentileMs(p)
		}
		out = append(out, Distribution{Metric: MetricITL, Count: itl.Count(), Ms: ms})
	}
	d.fill(samples, func(s *sample) (float64, bool) { return s.e2e, s.has(fCompleted) })
	add(MetricE2E, "")

	if classes == 0 {
		return out
	}
	grouped, start := group(samples, classes, func(s *sample) int32 { return s.class })
	type named struct {
		name string
		k    int
	}
	var order []named
	seen := make(map[string]bool, classes)
	reqs := make([]int64, classes)
	for _, c := range cols {
		for k, v := range c.classReq {
			reqs[k] += v
		}
	}
	for k := range classes {
		if reqs[k] == 0 {
			continue
		}
		// The same names as Finalize's per_class keys, given over the same classes.
		name := className(names, k)
		if seen[name] {
			name += "#" + strconv.Itoa(k)
		}
		seen[name] = true
		if start[k+1] > start[k] {
			order = append(order, named{name, k})
		}
	}
	slices.SortStableFunc(order, func(a, b named) int { return cmp.Compare(a.name, b.name) })
	for _, c := range order {
		cs := grouped[start[c.k]:start[c.k+1]]
		d.fill(cs, func(s *sample) (float64, bool) { return s.ttft, true })
		add(MetricTTFT, c.name)
		d.fill(cs, func(s *sample) (float64, bool) { return s.tpot, s.has(fTPOT) })
		add(MetricITL, c.name)
		d.fill(cs, func(s *sample) (float64, bool) { return s.e2e, true })
		add(MetricE2E, c.name)
	}
	return out
}
