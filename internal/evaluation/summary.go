package evaluation

import (
	"fmt"
	"strings"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/trace"
)

// anomalies averages the anomaly counters over the seeds (rounded to the nearest integer, as
// every count in status). Scale oscillations and KV thrashing stay 0: this engine version
// simulates neither autoscaling nor KV tiers.
func (r *Result) anomalies(a aggregate) *blisv1alpha1.AnomalyCounters {
	var inv, hol, osc, thr float64
	var n int
	for _, s := range r.Seeds {
		if s.trace != nil {
			a := &s.trace.Anomalies
			inv += float64(a.PriorityInversions)
			hol += float64(a.HOLBlockingEvents)
			osc += float64(a.ScaleOscillations)
			thr += float64(a.KVThrashingEvents)
			n++
		}
	}
	ac := &blisv1alpha1.AnomalyCounters{}
	if n > 0 {
		ac.PriorityInversions, ac.HolBlockingEvents = roundInt(inv/float64(n)), roundInt(hol/float64(n))
		ac.ScaleOscillations, ac.KvThrashingEvents = roundInt(osc/float64(n)), roundInt(thr/float64(n))
	}
	get := func(name string) int64 {
		for i, d := range metricDefs {
			if d.name == name && a.has[i] {
				return roundInt(a.values[i])
			}
		}
		return 0
	}
	ac.RejectedRequests, ac.DroppedUnservable, ac.TimedOutRequests = get("rejectedRequests"), get("droppedUnservable"), get("timedOutRequests")
	return ac
}

// SummaryInput returns the trace summary's input: the first seed's trace and outcome, the
// bundle's stage names and the fitness line.
func (r *Result) SummaryInput() *trace.SummaryInput {
	if len(r.Seeds) == 0 {
		return nil
	}
	s := &r.Seeds[0]
	in := &trace.SummaryInput{Trace: s.trace, Headline: s.headline, Classes: s.groups, Tenants: s.tenants, Replicas: r.plan.replicas}
	if s.names != nil {
		in.ClassNames, in.TenantNames = s.names.SLOClasses, s.names.Tenants
	}
	if b := r.plan.bundle; b != nil {
		in.Policies = []string{
			"admission=" + orDefault(b.Admission.Policy, "always-admit"),
			"priority=" + orDefault(b.Priority.Policy, "constant"),
			"routing=" + orDefault(b.Routing.Policy, "round-robin"),
			"scheduler=" + orDefault(b.Scheduler, "fcfs"),
			"preemption=" + orDefault(b.Preemption.Policy, "fcfs"),
		}
	}
	f := r.fitness(r.mean())
	if f.hasScore {
		var parts []string
		for _, v := range f.values {
			parts = append(parts, fmt.Sprintf("%s %.3f", v.name, v.value))
		}
		in.Objective = fmt.Sprintf("%.4f", f.score)
		if len(parts) > 0 {
			in.Objective += " (" + strings.Join(parts, ", ") + ")"
		}
	}
	if len(r.Seeds) > 1 {
		in.Objective = strings.TrimSpace(in.Objective + fmt.Sprintf(" [outcome and decisions of seed %d, 1 of %d seeds]", s.Seed, len(r.Seeds)))
	}
	return in
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// TraceSummary renders the status trace summary with the document's strategy and budget,
// cut at a line boundary to status' limit.
func (r *Result) TraceSummary() string {
	in := r.SummaryInput()
	if in == nil {
		return ""
	}
	return truncateSummary(trace.Summarize(in, r.plan.strategy, r.plan.maxTokens), blisv1alpha1.MaxTraceSummaryLength)
}

// truncateSummary cuts text to at most limit bytes at the last line break that fits.
func truncateSummary(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	cut := strings.LastIndexByte(text[:limit], '\n')
	if cut < 0 {
		return ""
	}
	return text[:cut+1]
}

// SeedTrace is one seed's trace with the names its class and tenant indexes refer to.
type SeedTrace struct {
	// Seed is the simulation seed.
	Seed int64 `json:"seed"`
	// Classes and Tenants name the records' class and tenant indexes.
	Classes []string `json:"classes,omitempty"`
	Tenants []string `json:"tenants,omitempty"`
	// Trace holds the counters and the kept records (bounded, see docs/traces.md).
	Trace *trace.Trace `json:"trace"`
}

// Traces returns every seed's trace, in seed order.
func (r *Result) Traces() []SeedTrace {
	out := make([]SeedTrace, 0, len(r.Seeds))
	for _, s := range r.Seeds {
		st := SeedTrace{Seed: s.Seed, Trace: s.trace}
		if s.names != nil {
			st.Classes, st.Tenants = s.names.SLOClasses, s.names.Tenants
		}
		out = append(out, st)
	}
	return out
}
