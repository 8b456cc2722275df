package evaluation

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// FlatMetrics flattens an Evaluation status into one name → number map (OpenEvolve's metrics
// dict): every headline metric under its status name, per-class metrics as <metric>/<class>
// (tenant rows as <metric>/tenant:<name>), anomaly counters as anomalies/<name>, fitness values
// as fitness/<name>, and combined_score (the fitness score) when there is one.
func FlatMetrics(st *blisv1alpha1.EvaluationStatus) map[string]float64 {
	out := map[string]float64{}
	if st.Metrics != nil {
		js, err := json.Marshal(st.Metrics)
		if err == nil {
			var m map[string]any
			if json.Unmarshal(js, &m) == nil {
				for k, v := range m {
					if f, ok := v.(float64); ok {
						out[k] = f
					}
				}
			}
		}
		for _, c := range st.Metrics.PerClass {
			js, err := json.Marshal(c)
			if err != nil {
				continue
			}
			var m map[string]any
			if json.Unmarshal(js, &m) != nil {
				continue
			}
			for k, v := range m {
				if f, ok := v.(float64); ok {
					out[k+"/"+c.Name] = f
				}
			}
		}
	}
	if st.Anomalies != nil {
		a := st.Anomalies
		out["anomalies/priorityInversions"] = float64(a.PriorityInversions)
		out["anomalies/holBlockingEvents"] = float64(a.HolBlockingEvents)
		out["anomalies/rejectedRequests"] = float64(a.RejectedRequests)
		out["anomalies/droppedUnservable"] = float64(a.DroppedUnservable)
		out["anomalies/timedOutRequests"] = float64(a.TimedOutRequests)
		out["anomalies/scaleOscillations"] = float64(a.ScaleOscillations)
		out["anomalies/kvThrashingEvents"] = float64(a.KvThrashingEvents)
	}
	for _, f := range st.Fitness {
		out["fitness/"+f.Name] = f.Value
	}
	if st.FitnessScore != nil {
		out["combined_score"] = *st.FitnessScore
	}
	return out
}

// Score is the single number an optimizer maximises: the fitness score when the Evaluation
// defines objectives or fitness weights, else the SLO attainment when the workload has goodput
// targets, else 0.
func Score(st *blisv1alpha1.EvaluationStatus) float64 {
	if st.FitnessScore != nil {
		return *st.FitnessScore
	}
	if st.Metrics != nil {
		return st.Metrics.SloAttainment
	}
	return 0
}

// Reflection renders a status as text for an optimizer's reflection step (GEPA's
// ExtractTracesForReflection): what was run and the score and how it was made, then the trace
// summary (status.traceSummary: outcome against targets, issues, worst decisions, suggested
// focus), the replicate spread and the settings that were not simulated. A status without a
// trace summary gets the metrics rendered instead (latency, throughput, request outcomes, SLO
// attainment per class). The rendering is deterministic (same status, same text).
func Reflection(name string, st *blisv1alpha1.EvaluationStatus, notes []string) string {
	var b strings.Builder
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	tail := func() string {
		if st.Replicates != nil {
			for _, r := range st.Replicates.Metrics {
				fmt.Fprintf(&b, "Across seeds, %s = %s ± %s (95%% CI, stddev %s).\n", r.Name, num(r.Mean), num(r.Ci95), num(r.Stddev))
			}
		}
		for _, n := range notes {
			fmt.Fprintf(&b, "Not simulated: %s.\n", n)
		}
		return b.String()
	}
	seeds := 1
	if st.Replicates != nil {
		seeds = int(st.Replicates.Count)
	}
	hash := st.InputHash
	if len(hash) > 12 {
		hash = hash[:12]
	}
	fmt.Fprintf(&b, "Evaluation %s (input %s, engine %s), %d seed(s).\n", name, hash, st.EngineVersion, seeds)
	if st.FitnessScore != nil {
		fmt.Fprintf(&b, "Fitness score %s (higher is better).", num(*st.FitnessScore))
		if len(st.Fitness) > 0 {
			parts := make([]string, 0, len(st.Fitness))
			for _, f := range st.Fitness {
				parts = append(parts, f.Name+" "+num(f.Value))
			}
			fmt.Fprintf(&b, " Normalised components (1 is best): %s.", strings.Join(parts, ", "))
		}
		b.WriteString("\n")
	} else {
		b.WriteString("No objectives or fitness weights were given.\n")
	}
	if st.TraceSummary != "" {
		b.WriteString("\n")
		b.WriteString(st.TraceSummary)
		if !strings.HasSuffix(st.TraceSummary, "\n") {
			b.WriteString("\n")
		}
		b.WriteString("\n")
		return tail()
	}
	m := st.Metrics
	if m == nil {
		return tail()
	}
	fmt.Fprintf(&b, "Latency: TTFT mean %s ms, p50 %s ms, p99 %s ms; E2E mean %s ms, p50 %s ms, p99 %s ms; ITL mean %s ms, p99 %s ms; scheduling delay p99 %s ms.\n",
		num(m.TtftMeanMs), num(m.TtftP50Ms), num(m.TtftP99Ms), num(m.E2eMeanMs), num(m.E2eP50Ms), num(m.E2eP99Ms),
		num(m.ItlMeanMs), num(m.ItlP99Ms), num(m.SchedulingDelayP99Ms))
	fmt.Fprintf(&b, "Throughput: %s responses/s, %s output tokens/s over %s simulated seconds (%s replica-seconds).\n",
		num(m.ResponsesPerSec), num(m.TokensPerSec), num(m.VllmEstimatedDurationS), num(m.ReplicaSeconds))
	fmt.Fprintf(&b, "Requests: %d injected, %d completed, %d rejected by admission, %d timed out, %d dropped as unservable, %d still queued, %d still running; %d preemptions.\n",
		m.InjectedRequests, m.CompletedRequests, m.RejectedRequests, m.TimedOutRequests, m.DroppedUnservable, m.StillQueued, m.StillRunning, m.PreemptionCount)
	if m.CacheHitRate > 0 {
		fmt.Fprintf(&b, "Prefix cache hit rate %s.\n", num(m.CacheHitRate))
	}
	if m.GoodputRps > 0 || m.SloAttainment > 0 {
		fmt.Fprintf(&b, "SLO attainment %s, goodput %s requests/s.\n", num(m.SloAttainment), num(m.GoodputRps))
	}
	classes := append([]blisv1alpha1.ClassMetrics(nil), m.PerClass...)
	sort.Slice(classes, func(i, j int) bool { return classes[i].Name < classes[j].Name })
	for _, c := range classes {
		fmt.Fprintf(&b, "Class %s: %d completed, TTFT p99 %s ms, E2E p99 %s ms, ITL p99 %s ms", c.Name, c.CompletedRequests,
			num(c.TtftP99Ms), num(c.E2eP99Ms), num(c.ItlP99Ms))
		if c.SloAttainment > 0 || c.GoodputRps > 0 {
			fmt.Fprintf(&b, ", SLO attainment %s", num(c.SloAttainment))
		}
		b.WriteString(".\n")
	}
	return tail()
}
