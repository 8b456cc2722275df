package evaluation

import (
	"fmt"
	"strings"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/metrics"
	"github.com/inference-sim/blis-operator/internal/engine/sim"
	"github.com/inference-sim/blis-operator/internal/engine/trace"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
	"github.com/inference-sim/blis-operator/internal/evaluation/fitness"
)

// metricDef is one headline metric: its status name, how it is read from the engine's cluster
// block, where it goes in status, and how objectives normalise it.
type metricDef struct {
	name    string
	integer bool
	scale   fitness.Scale
	// get reads the value; ok is false when the run does not define it (no SLO targets, no
	// prefix lookups).
	get func(x *seedData) (v float64, ok bool)
	// set writes it into status.metrics; nil for metrics that are objectives only (the
	// anomaly-derived ones, whose counters go to status.anomalies).
	set func(m *blisv1alpha1.EvaluationMetrics, v float64)
}

// seedData is what one seed's metrics are read from.
type seedData struct {
	o        *metrics.Output
	replicas int
	// an are the trace's anomaly counters.
	an *trace.Anomalies
	// kvPeak is the largest fraction of an instance's KV blocks in use at once.
	kvPeak float64
	// autoscale is the autoscaler's summary (autoscaled clusters only).
	autoscale *sim.AutoscaleStats
}

// autoscaled reads a value from the autoscaler's summary.
func autoscaled(f func(a *sim.AutoscaleStats) float64) func(*seedData) (float64, bool) {
	return func(x *seedData) (float64, bool) {
		if x.autoscale == nil {
			return 0, false
		}
		return f(x.autoscale), true
	}
}

func count(f func(o *metrics.Output) int64) func(*seedData) (float64, bool) {
	return func(x *seedData) (float64, bool) { return float64(f(x.o)), true }
}

func value(f func(o *metrics.Output) float64) func(*seedData) (float64, bool) {
	return func(x *seedData) (float64, bool) { return f(x.o), true }
}

func optional(f func(o *metrics.Output) *float64) func(*seedData) (float64, bool) {
	return func(x *seedData) (float64, bool) {
		if p := f(x.o); p != nil {
			return *p, true
		}
		return 0, false
	}
}

// anomaly reads a value from the anomaly counters.
func anomaly(f func(a *trace.Anomalies) (float64, bool)) func(*seedData) (float64, bool) {
	return func(x *seedData) (float64, bool) {
		if x.an == nil {
			return 0, false
		}
		return f(x.an)
	}
}

// TailBlowup is TTFT p99 over p50 (0 without a median).
func TailBlowup(o *metrics.Output) float64 {
	if o.TTFTP50Ms <= 0 {
		return 0
	}
	return o.TTFTP99Ms / o.TTFTP50Ms
}

// Reference scales of objective normalisation (see docs/evaluate.md).
var (
	scaleRequests = fitness.Scale{Ref: 100}
	scaleTokens   = fitness.Scale{Ref: 100000}
	scaleRPS      = fitness.Scale{Ref: 100}
	scaleTPS      = fitness.Scale{Ref: 10000}
	scaleTTFT     = fitness.Scale{Ref: 100}
	scaleE2E      = fitness.Scale{Ref: 1000}
	scaleITL      = fitness.Scale{Ref: 10}
	scaleSeconds  = fitness.Scale{Ref: 60}
	scaleReplicaS = fitness.Scale{Ref: 3600}
	scaleFraction = fitness.Scale{Fraction: true}
	scaleRatio    = fitness.Scale{Ref: 1}
	scaleBlowup   = fitness.Scale{Ref: trace.TailBlowupRatio}
)

// metricDefs are the headline metrics in status order, then the objective-only metrics derived
// from the anomaly counters and the KV peak.
var metricDefs = []metricDef{
	{"injectedRequests", true, scaleRequests, count(func(o *metrics.Output) int64 { return o.InjectedRequests }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.InjectedRequests = roundInt(v) }},
	{"completedRequests", true, scaleRequests, count(func(o *metrics.Output) int64 { return o.CompletedRequests }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.CompletedRequests = roundInt(v) }},
	{"rejectedRequests", true, scaleRequests, count(func(o *metrics.Output) int64 { return o.RejectedRequests }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.RejectedRequests = roundInt(v) }},
	{"stillQueued", true, scaleRequests, count(func(o *metrics.Output) int64 { return o.StillQueued }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.StillQueued = roundInt(v) }},
	{"stillRunning", true, scaleRequests, count(func(o *metrics.Output) int64 { return o.StillRunning }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.StillRunning = roundInt(v) }},
	{"droppedUnservable", true, scaleRequests, count(func(o *metrics.Output) int64 { return o.DroppedUnservable }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.DroppedUnservable = roundInt(v) }},
	{"timedOutRequests", true, scaleRequests, count(func(o *metrics.Output) int64 { return o.TimedOutRequests }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.TimedOutRequests = roundInt(v) }},
	{"lengthCappedRequests", true, scaleRequests, count(func(o *metrics.Output) int64 { return o.LengthCappedRequests }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.LengthCappedRequests = roundInt(v) }},
	{"preemptionCount", true, scaleRequests, count(func(o *metrics.Output) int64 { return o.PreemptionCount }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.PreemptionCount = roundInt(v) }},
	{"kvAllocationFailures", true, scaleRequests, count(func(o *metrics.Output) int64 { return o.KVAllocationFailures }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.KvAllocationFailures = roundInt(v) }},
	{"totalInputTokens", true, scaleTokens, count(func(o *metrics.Output) int64 { return o.TotalInputTokens }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.TotalInputTokens = roundInt(v) }},
	{"totalOutputTokens", true, scaleTokens, count(func(o *metrics.Output) int64 { return o.TotalOutputTokens }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.TotalOutputTokens = roundInt(v) }},
	{"vllmEstimatedDurationS", false, scaleSeconds, value(func(o *metrics.Output) float64 { return o.VllmDurationSec }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.VllmEstimatedDurationS = v }},
	{"responsesPerSec", false, scaleRPS, value(func(o *metrics.Output) float64 { return o.ResponsesPerSec }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.ResponsesPerSec = v }},
	{"tokensPerSec", false, scaleTPS, value(func(o *metrics.Output) float64 { return o.TokensPerSec }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.TokensPerSec = v }},
	{"goodputRps", false, scaleRPS, optional(func(o *metrics.Output) *float64 { return o.GoodputRPS }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.GoodputRps = v }},
	{"ttftMeanMs", false, scaleTTFT, value(func(o *metrics.Output) float64 { return o.TTFTMeanMs }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.TtftMeanMs = v }},
	{"ttftP50Ms", false, scaleTTFT, value(func(o *metrics.Output) float64 { return o.TTFTP50Ms }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.TtftP50Ms = v }},
	{"ttftP90Ms", false, scaleTTFT, value(func(o *metrics.Output) float64 { return o.TTFTP90Ms }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.TtftP90Ms = v }},
	{"ttftP95Ms", false, scaleTTFT, value(func(o *metrics.Output) float64 { return o.TTFTP95Ms }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.TtftP95Ms = v }},
	{"ttftP99Ms", false, scaleTTFT, value(func(o *metrics.Output) float64 { return o.TTFTP99Ms }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.TtftP99Ms = v }},
	{"e2eMeanMs", false, scaleE2E, value(func(o *metrics.Output) float64 { return o.E2EMeanMs }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.E2eMeanMs = v }},
	{"e2eP50Ms", false, scaleE2E, value(func(o *metrics.Output) float64 { return o.E2EP50Ms }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.E2eP50Ms = v }},
	{"e2eP90Ms", false, scaleE2E, value(func(o *metrics.Output) float64 { return o.E2EP90Ms }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.E2eP90Ms = v }},
	{"e2eP95Ms", false, scaleE2E, value(func(o *metrics.Output) float64 { return o.E2EP95Ms }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.E2eP95Ms = v }},
	{"e2eP99Ms", false, scaleE2E, value(func(o *metrics.Output) float64 { return o.E2EP99Ms }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.E2eP99Ms = v }},
	{"itlMeanMs", false, scaleITL, value(func(o *metrics.Output) float64 { return o.ITLMeanMs }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.ItlMeanMs = v }},
	{"itlP50Ms", false, scaleITL, value(func(o *metrics.Output) float64 { return o.ITLP50Ms }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.ItlP50Ms = v }},
	{"itlP90Ms", false, scaleITL, value(func(o *metrics.Output) float64 { return o.ITLP90Ms }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.ItlP90Ms = v }},
	{"itlP95Ms", false, scaleITL, value(func(o *metrics.Output) float64 { return o.ITLP95Ms }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.ItlP95Ms = v }},
	{"itlP99Ms", false, scaleITL, value(func(o *metrics.Output) float64 { return o.ITLP99Ms }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.ItlP99Ms = v }},
	{"schedulingDelayP99Ms", false, scaleTTFT, value(func(o *metrics.Output) float64 { return o.SchedulingDelayP99Ms }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.SchedulingDelayP99Ms = v }},
	{"sloAttainment", false, scaleFraction, optional(func(o *metrics.Output) *float64 { return o.SLOAttainment }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.SloAttainment = v }},
	{"cacheHitRate", false, scaleFraction, optional(func(o *metrics.Output) *float64 { return o.CacheHitRate }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.CacheHitRate = v }},
	{"jainFairnessIndex", false, scaleFraction, optional(func(o *metrics.Output) *float64 { return o.JainFairnessIndex }), func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.JainFairnessIndex = v }},
	{"replicaSeconds", false, scaleReplicaS, func(x *seedData) (float64, bool) {
		if x.autoscale != nil {
			return x.autoscale.ReplicaSeconds, true
		}
		return float64(x.replicas) * x.o.VllmDurationSec, true
	}, func(m *blisv1alpha1.EvaluationMetrics, v float64) { m.ReplicaSeconds = v }},

	// Objective-only metrics (see docs/traces.md for the definitions).
	{"priorityInversions", true, scaleRequests, anomaly(func(a *trace.Anomalies) (float64, bool) { return float64(a.PriorityInversions), true }), nil},
	{"holBlockingEvents", true, scaleRequests, anomaly(func(a *trace.Anomalies) (float64, bool) { return float64(a.HOLBlockingEvents), true }), nil},
	{"rejectionRate", false, scaleFraction, anomaly(func(a *trace.Anomalies) (float64, bool) { return a.RejectionRate(), a.Admitted+a.Rejected > 0 }), nil},
	{"admissionRate", false, scaleFraction, anomaly(func(a *trace.Anomalies) (float64, bool) { return 1 - a.RejectionRate(), a.Admitted+a.Rejected > 0 }), nil},
	{"preemptionRate", false, scaleRatio, func(x *seedData) (float64, bool) {
		return float64(x.o.PreemptionCount) / float64(max(x.o.CompletedRequests, 1)), true
	}, nil},
	{"loadImbalance", false, scaleRatio, anomaly(func(a *trace.Anomalies) (float64, bool) { return a.LoadImbalance(), a.Routed > 0 }), nil},
	{"replicaCost", false, scaleRatio, autoscaled(func(a *sim.AutoscaleStats) float64 { return a.Cost }), nil},
	{"scaleUps", true, scaleRatio, autoscaled(func(a *sim.AutoscaleStats) float64 { return float64(a.ScaleUps) }), nil},
	{"scaleDowns", true, scaleRatio, autoscaled(func(a *sim.AutoscaleStats) float64 { return float64(a.ScaleDowns) }), nil},
	{"scaleOscillations", true, scaleRatio, autoscaled(func(a *sim.AutoscaleStats) float64 { return float64(a.Oscillations) }), nil},
	{"tailLatencyBlowup", false, scaleBlowup, func(x *seedData) (float64, bool) { return TailBlowup(x.o), x.o.TTFTP50Ms > 0 }, nil},
	{"kvPeakUtilization", false, scaleFraction, func(x *seedData) (float64, bool) { return x.kvPeak, true }, nil},
	{"kvMeanUtilization", false, scaleFraction, anomaly(func(a *trace.Anomalies) (float64, bool) { return a.KVMeanUtilization(), a.Steps > 0 }), nil},
}

// classDef is one per-class metric.
type classDef struct {
	name    string
	integer bool
	scale   fitness.Scale
	get     func(c *metrics.ClassOutput) (float64, bool)
	set     func(m *blisv1alpha1.ClassMetrics, v float64)
}

// classDefs are the per-class (and per-tenant) metrics of status.metrics.perClass.
var classDefs = []classDef{
	{"completedRequests", true, scaleRequests, func(c *metrics.ClassOutput) (float64, bool) { return float64(c.Completed), true },
		func(m *blisv1alpha1.ClassMetrics, v float64) { m.CompletedRequests = roundInt(v) }},
	{"rejectedRequests", true, scaleRequests, func(c *metrics.ClassOutput) (float64, bool) { return float64(c.Rejected), true },
		func(m *blisv1alpha1.ClassMetrics, v float64) { m.RejectedRequests = roundInt(v) }},
	{"ttftP99Ms", false, scaleTTFT, func(c *metrics.ClassOutput) (float64, bool) { return c.TTFTP99Ms, true },
		func(m *blisv1alpha1.ClassMetrics, v float64) { m.TtftP99Ms = v }},
	{"e2eP99Ms", false, scaleE2E, func(c *metrics.ClassOutput) (float64, bool) { return c.E2EP99Ms, true },
		func(m *blisv1alpha1.ClassMetrics, v float64) { m.E2eP99Ms = v }},
	{"itlP99Ms", false, scaleITL, func(c *metrics.ClassOutput) (float64, bool) { return c.ITLP99Ms, true },
		func(m *blisv1alpha1.ClassMetrics, v float64) { m.ItlP99Ms = v }},
	{"sloAttainment", false, scaleFraction, func(c *metrics.ClassOutput) (float64, bool) {
		if c.SLOAttainment == nil {
			return 0, false
		}
		return *c.SLOAttainment, true
	}, func(m *blisv1alpha1.ClassMetrics, v float64) { m.SloAttainment = v }},
	{"goodputRps", false, scaleRPS, func(c *metrics.ClassOutput) (float64, bool) {
		if c.GoodputRPS == nil {
			return 0, false
		}
		return *c.GoodputRPS, true
	}, func(m *blisv1alpha1.ClassMetrics, v float64) { m.GoodputRps = v }},
}

func roundInt(v float64) int64 {
	if v < 0 {
		return int64(v - 0.5)
	}
	return int64(v + 0.5)
}

// MetricNames lists the metric names objectives may use: the headline metrics, then the
// per-class metrics as <metric>/<class>.
func MetricNames() []string {
	out := make([]string, 0, len(metricDefs)+len(classDefs))
	for _, d := range metricDefs {
		out = append(out, d.name)
	}
	for _, d := range classDefs {
		out = append(out, d.name+"/<class>")
	}
	return out
}

// metricRef locates an objective's metric: a headline metric, or a per-class metric of class.
type metricRef struct {
	name  string
	index int
	class string
	scale fitness.Scale
}

// needsTargets are the metrics defined only when the workload has goodput SLO targets.
var needsTargets = map[string]bool{"sloAttainment": true, "goodputRps": true}

// lookupMetric resolves an objective name against the metric catalogue. A metric that needs
// goodput SLO targets the workload does not have is accepted with a note: it has no value, so
// the objective normalises to 0.
func lookupMetric(name string, targets map[string]workload.SLOTargets) (metricRef, string, error) {
	unknown := func() error {
		return fmt.Errorf("unknown metric %q; valid: %s (class is one of %s)", name, strings.Join(MetricNames(), ", "), strings.Join(workload.SLOClasses, ", "))
	}
	base, class, perClass := strings.Cut(name, "/")
	if !perClass {
		for i, d := range metricDefs {
			if d.name == name {
				var note string
				if needsTargets[name] && !anyTarget(targets) {
					note = fmt.Sprintf("objective %s: the workload has no goodput SLO targets (goodputSloTargets), so the metric has no value and the objective scores 0", name)
				}
				return metricRef{name: name, index: i, scale: d.scale}, note, nil
			}
		}
		return metricRef{}, "", unknown()
	}
	if !contains(workload.SLOClasses, class) {
		return metricRef{}, "", fmt.Errorf("metric %q: unknown SLO class %q; valid: %s", name, class, strings.Join(workload.SLOClasses, ", "))
	}
	for i, d := range classDefs {
		if d.name == base {
			var note string
			if needsTargets[base] {
				if t, ok := targets[class]; !ok || (t.TTFT <= 0 && t.ITL <= 0 && t.E2E <= 0) {
					note = fmt.Sprintf("objective %s: the workload has no goodput SLO targets for class %s (goodputSloTargets.%s), so the metric has no value and the objective scores 0", name, class, class)
				}
			}
			return metricRef{name: name, index: i, class: class, scale: d.scale}, note, nil
		}
	}
	return metricRef{}, "", unknown()
}

func anyTarget(t map[string]workload.SLOTargets) bool {
	for _, v := range t {
		if v.TTFT > 0 || v.ITL > 0 || v.E2E > 0 {
			return true
		}
	}
	return false
}
