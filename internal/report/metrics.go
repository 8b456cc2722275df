package report

import (
	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// Directions of a metric: which way is better.
const (
	lowerIsBetter  = -1
	neutral        = 0
	higherIsBetter = 1
)

// metricDef is one headline metric as a report shows it: its status name (also the name of
// its replicate statistics), a label, a unit and which way is better.
type metricDef struct {
	key, label, unit string
	better           int
	get              func(m *blisv1alpha1.EvaluationMetrics) float64
}

// headlineMetrics are the headline rows of a report and of a comparison, in display order.
var headlineMetrics = []metricDef{
	{"injectedRequests", "requests injected", "", neutral, func(m *blisv1alpha1.EvaluationMetrics) float64 { return float64(m.InjectedRequests) }},
	{"completedRequests", "requests completed", "", higherIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return float64(m.CompletedRequests) }},
	{"rejectedRequests", "requests rejected", "", lowerIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return float64(m.RejectedRequests) }},
	{"timedOutRequests", "requests timed out", "", lowerIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return float64(m.TimedOutRequests) }},
	{"responsesPerSec", "throughput", "req/s", higherIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.ResponsesPerSec }},
	{"tokensPerSec", "output tokens", "tok/s", higherIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.TokensPerSec }},
	{"goodputRps", "goodput", "req/s", higherIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.GoodputRps }},
	{"sloAttainment", "SLO attainment", "fraction", higherIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.SloAttainment }},
	{"ttftMeanMs", "TTFT mean", "ms", lowerIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.TtftMeanMs }},
	{"ttftP50Ms", "TTFT p50", "ms", lowerIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.TtftP50Ms }},
	{"ttftP90Ms", "TTFT p90", "ms", lowerIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.TtftP90Ms }},
	{"ttftP99Ms", "TTFT p99", "ms", lowerIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.TtftP99Ms }},
	{"itlMeanMs", "ITL mean", "ms", lowerIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.ItlMeanMs }},
	{"itlP99Ms", "ITL p99", "ms", lowerIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.ItlP99Ms }},
	{"e2eMeanMs", "E2E mean", "ms", lowerIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.E2eMeanMs }},
	{"e2eP50Ms", "E2E p50", "ms", lowerIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.E2eP50Ms }},
	{"e2eP90Ms", "E2E p90", "ms", lowerIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.E2eP90Ms }},
	{"e2eP99Ms", "E2E p99", "ms", lowerIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.E2eP99Ms }},
	{"schedulingDelayP99Ms", "scheduling delay p99", "ms", lowerIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.SchedulingDelayP99Ms }},
	{"cacheHitRate", "prefix cache hit rate", "fraction", higherIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.CacheHitRate }},
	{"preemptionCount", "preemptions", "", lowerIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return float64(m.PreemptionCount) }},
	{"jainFairnessIndex", "Jain fairness index", "", higherIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.JainFairnessIndex }},
	{"replicaSeconds", "replica-seconds", "s", lowerIsBetter, func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.ReplicaSeconds }},
	{"vllmEstimatedDurationS", "simulated duration", "s", neutral, func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.VllmEstimatedDurationS }},
}

// classDef is one per-class metric.
type classDef struct {
	key, label, unit string
	better           int
	get              func(c *blisv1alpha1.ClassMetrics) float64
}

// classMetrics are the per-class columns of a report and the per-class rows of a comparison.
var classMetrics = []classDef{
	{"completedRequests", "completed", "", higherIsBetter, func(c *blisv1alpha1.ClassMetrics) float64 { return float64(c.CompletedRequests) }},
	{"rejectedRequests", "rejected", "", lowerIsBetter, func(c *blisv1alpha1.ClassMetrics) float64 { return float64(c.RejectedRequests) }},
	{"ttftP99Ms", "TTFT p99", "ms", lowerIsBetter, func(c *blisv1alpha1.ClassMetrics) float64 { return c.TtftP99Ms }},
	{"itlP99Ms", "ITL p99", "ms", lowerIsBetter, func(c *blisv1alpha1.ClassMetrics) float64 { return c.ItlP99Ms }},
	{"e2eP99Ms", "E2E p99", "ms", lowerIsBetter, func(c *blisv1alpha1.ClassMetrics) float64 { return c.E2eP99Ms }},
	{"sloAttainment", "SLO attainment", "fraction", higherIsBetter, func(c *blisv1alpha1.ClassMetrics) float64 { return c.SloAttainment }},
	{"goodputRps", "goodput", "req/s", higherIsBetter, func(c *blisv1alpha1.ClassMetrics) float64 { return c.GoodputRps }},
}

// replicateStat returns the replicate statistics named name and the replicate count (0 when
// the status has none).
func replicateStat(st *blisv1alpha1.EvaluationStatus, name string) (blisv1alpha1.ReplicateStat, int32, bool) {
	if st.Replicates == nil {
		return blisv1alpha1.ReplicateStat{}, 0, false
	}
	for _, r := range st.Replicates.Metrics {
		if r.Name == name {
			return r, st.Replicates.Count, true
		}
	}
	return blisv1alpha1.ReplicateStat{}, st.Replicates.Count, false
}

// seedCount is the number of seeds a status covers (1 without replicate statistics).
func seedCount(st *blisv1alpha1.EvaluationStatus) int {
	if st.Replicates != nil && st.Replicates.Count > 0 {
		return int(st.Replicates.Count)
	}
	return 1
}

// hasSLO reports whether a status has SLO attainment to show (the workload set SLO targets).
func hasSLO(m *blisv1alpha1.EvaluationMetrics) bool {
	if m == nil {
		return false
	}
	if m.SloAttainment > 0 || m.GoodputRps > 0 {
		return true
	}
	for _, c := range m.PerClass {
		if c.SloAttainment > 0 || c.GoodputRps > 0 {
			return true
		}
	}
	return false
}
