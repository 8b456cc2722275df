package trace

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Summary strategies.
const (
	// StrategyIssueFocused lists the top problems with counts and examples, the worst
	// decisions with their context, and where to focus.
	StrategyIssueFocused = "issue_focused"
	// StrategyDecisionAudit lists sampled decisions annotated with their outcomes, then the
	// worst ones.
	StrategyDecisionAudit = "decision_audit"
	// StrategyCounterfactual lists the decisions whose alternatives looked better at the time,
	// with the measured difference.
	StrategyCounterfactual = "counterfactual"
	// StrategyPatternMining lists the decision contexts most often followed by a missed target.
	StrategyPatternMining = "pattern_mining"
)

// Strategies are the summary strategies, in documentation order.
var Strategies = []string{StrategyIssueFocused, StrategyDecisionAudit, StrategyCounterfactual, StrategyPatternMining}

// DefaultMaxTokens is the summary budget when none is given.
const DefaultMaxTokens = 1200

// CheckStrategy returns an error for an unknown strategy name (empty is the default,
// issue_focused).
func CheckStrategy(s string) error {
	if s == "" {
		return nil
	}
	for _, k := range Strategies {
		if s == k {
			return nil
		}
	}
	return fmt.Errorf("unknown summary strategy %q; valid: %s", s, strings.Join(Strategies, ", "))
}

// EstimateTokens estimates the tokens of text as its length in bytes over 4, rounded up.
func EstimateTokens(text string) int { return (len(text) + 3) / 4 }

// Headline are the run's outcome numbers (means over seeds when several ran).
type Headline struct {
	// Request counts.
	Injected, Completed, Rejected, TimedOut, Dropped, Preemptions float64
	// Throughput.
	ResponsesPerSec, TokensPerSec float64
	// Latencies in ms.
	TTFTP50Ms, TTFTP99Ms, E2EP50Ms, E2EP99Ms, ITLP99Ms float64
	// Optional fractions (nil = not defined for the run).
	SLOAttainment, CacheHitRate, Jain *float64
}

// Group is one SLO class's or tenant's outcome.
type Group struct {
	// Name is the class or tenant name.
	Name string
	// Count, Completed and Rejected count its requests.
	Count, Completed, Rejected float64
	// TTFTP99Ms and E2EP99Ms are its tail latencies.
	TTFTP99Ms, E2EP99Ms float64
	// TargetTTFTMs and TargetE2EMs are its targets (0 = none).
	TargetTTFTMs, TargetE2EMs float64
	// Attainment is its SLO attainment (nil without targets).
	Attainment *float64
}

// SummaryInput is everything a summary is built from.
type SummaryInput struct {
	// Trace is the run's trace (one seed's).
	Trace *Trace
	// Headline, Classes and Tenants are the outcome.
	Headline Headline
	Classes  []Group
	Tenants  []Group
	// ClassNames and TenantNames name the records' class and tenant indexes.
	ClassNames, TenantNames []string
	// Policies names the bundle's stages ("admission=always-admit", ...), in order.
	Policies []string
	// Replicas is the number of instances.
	Replicas int
	// Objective, when set, is the fitness line ("fitness 0.73 (ttftP99Ms 0.41, ...)").
	Objective string
}

// Anomaly thresholds used by the summary (see docs/traces.md).
const (
	// TailBlowupRatio: TTFT p99 over p50 above this is a tail-latency blow-up.
	TailBlowupRatio = 10.0
	// ImbalanceRatio: the busiest instance's routed requests over the mean above this is a
	// load imbalance.
	ImbalanceRatio = 1.5
	// RejectionRateLimit: a rejection rate above this is reported.
	RejectionRateLimit = 0.01
	// AttainmentLimit: a class below this SLO attainment is reported.
	AttainmentLimit = 0.9
	// FairnessLimit: Jain's index below this is reported.
	FairnessLimit = 0.9
)

// issue is one detected problem.
type issue struct {
	area, title string
	weight      float64 // ranking key, larger first
	details     []string
	focus       string
}

// Summarize renders the summary of in with strategy (empty = issue_focused) within about
// maxTokens tokens (EstimateTokens; 0 = DefaultMaxTokens). The text is a pure function of its
// input.
func Summarize(in *SummaryInput, strategy string, maxTokens int) string {
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	b := &builder{limit: maxTokens * 4}
	issues := detect(in)
	switch strategy {
	case StrategyDecisionAudit:
		b.outcome(in)
		b.issueHeadlines(issues)
		b.audit(in)
		b.worst(in, 3)
		b.focus(issues)
	case StrategyCounterfactual:
		b.outcome(in)
		b.issueHeadlines(issues)
		b.counterfactual(in)
		b.focus(issues)
	case StrategyPatternMining:
		b.outcome(in)
		b.issueHeadlines(issues)
		b.patterns(in)
		b.focus(issues)
	default:
		b.outcome(in)
		b.issues(issues)
		b.worst(in, 5)
		b.focus(issues)
	}
	return b.String()
}

// builder writes lines until the budget is spent; a section header is written only with room
// for at least one of its lines.
type builder struct {
	sb      strings.Builder
	limit   int
	pending string
	full    bool
}

func (b *builder) section(title string) { b.pending = "\n## " + title + "\n" }

func (b *builder) line(format string, args ...any) bool {
	if b.full {
		return false
	}
	l := fmt.Sprintf(format, args...) + "\n"
	if b.sb.Len()+len(b.pending)+len(l) > b.limit {
		b.full = true
		return false
	}
	b.sb.WriteString(b.pending)
	b.pending = ""
	b.sb.WriteString(l)
	return true
}

func (b *builder) String() string { return strings.TrimLeft(b.sb.String(), "\n") }

func ms(us int64) string { return num(float64(us) / 1000) }

// num formats a number with at most 3 significant decimals.
func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// cnt formats a count (a mean over seeds may be fractional).
func cnt(v float64) string {
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func pct(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" }

func mark(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISS"
}

// nameAt names index i of a name table: its name, "default" for an empty name, prefix<i>
// beyond the table, "-" for none.
func nameAt(names []string, i int32, prefix string) string {
	switch {
	case i < 0:
		return "-"
	case int(i) >= len(names):
		return prefix + strconv.Itoa(int(i))
	case names[i] == "":
		return "default"
	}
	return names[i]
}

func (b *builder) outcome(in *SummaryInput) {
	h := &in.Headline
	b.section("Outcome")
	if len(in.Policies) > 0 {
		b.line("- Policy: %s; %d replicas", strings.Join(in.Policies, ", "), in.Replicas)
	}
	if in.Objective != "" {
		b.line("- Fitness: %s", in.Objective)
	}
	b.line("- Requests: %s injected, %s completed, %s rejected, %s timed out, %s dropped",
		cnt(h.Injected), cnt(h.Completed), cnt(h.Rejected), cnt(h.TimedOut), cnt(h.Dropped))
	b.line("- Throughput: %s req/s, %s tok/s", num(h.ResponsesPerSec), num(h.TokensPerSec))
	b.line("- TTFT p50 %sms, p99 %sms; E2E p50 %sms, p99 %sms; ITL p99 %sms",
		num(h.TTFTP50Ms), num(h.TTFTP99Ms), num(h.E2EP50Ms), num(h.E2EP99Ms), num(h.ITLP99Ms))
	for _, c := range in.Classes {
		var parts []string
		if c.TargetTTFTMs > 0 {
			parts = append(parts, fmt.Sprintf("TTFT p99 %sms (target %sms) %s", num(c.TTFTP99Ms), num(c.TargetTTFTMs), mark(c.TTFTP99Ms <= c.TargetTTFTMs)))
		} else {
			parts = append(parts, fmt.Sprintf("TTFT p99 %sms", num(c.TTFTP99Ms)))
		}
		if c.TargetE2EMs > 0 {
			parts = append(parts, fmt.Sprintf("E2E p99 %sms (target %sms) %s", num(c.E2EP99Ms), num(c.TargetE2EMs), mark(c.E2EP99Ms <= c.TargetE2EMs)))
		}
		if c.Attainment != nil {
			parts = append(parts, "SLO attainment "+pct(*c.Attainment))
		}
		b.line("- Class %s (%s requests): %s", c.Name, cnt(c.Count), strings.Join(parts, ", "))
	}
	if h.SLOAttainment != nil {
		b.line("- SLO attainment overall: %s", pct(*h.SLOAttainment))
	}
	if h.CacheHitRate != nil {
		b.line("- Prefix cache hit rate: %s", pct(*h.CacheHitRate))
	}
	if t := in.Trace; t != nil && t.Anomalies.Steps > 0 {
		b.line("- KV cache utilization: mean %s over %d engine steps", pct(t.Anomalies.KVMeanUtilization()), t.Anomalies.Steps)
	}
	if h.Jain != nil {
		b.line("- Fairness (Jain over %d tenants): %s", len(in.Tenants), strconv.FormatFloat(*h.Jain, 'f', 3, 64))
	}
}

// detect finds the issues, most important first.
func detect(in *SummaryInput) []issue {
	var out []issue
	h := &in.Headline
	var a Anomalies
	if in.Trace != nil {
		a = in.Trace.Anomalies
	}
	if r := a.RejectionRate(); r > RejectionRateLimit {
		is := issue{area: "ADMISSION", weight: 10 * r,
			title: fmt.Sprintf("%s of requests rejected (%d of %d)", pct(r), a.Rejected, a.Admitted+a.Rejected),
			focus: "Admit more: relax the admission thresholds, or shed only the least important classes"}
		for _, rc := range a.Reasons {
			if rc.Rejected > 0 {
				is.details = append(is.details, fmt.Sprintf("reason %q: %d rejections", rc.Reason, rc.Rejected))
			}
		}
		if in.Trace != nil {
			for i, e := range in.Trace.Rejections {
				if i == 2 {
					break
				}
				is.details = append(is.details, fmt.Sprintf("e.g. t=%ss req_%d (%s, tenant %s) rejected: %s",
					num(float64(e.Time)/1e6), e.ID, nameAt(in.ClassNames, e.Class, "class"), nameAt(in.TenantNames, e.Tenant, "tenant"), e.Reason))
			}
		}
		out = append(out, is)
	}
	var total float64
	for _, c := range in.Classes {
		total += c.Count
	}
	for _, c := range in.Classes {
		if c.Attainment != nil && *c.Attainment < AttainmentLimit {
			out = append(out, issue{area: "SLO", weight: 5 * (1 - *c.Attainment) * (1 + c.Count/max(total, 1)),
				title: fmt.Sprintf("class %s attains its SLO for only %s of %s requests (TTFT p99 %sms vs target %sms)",
					c.Name, pct(*c.Attainment), cnt(c.Count), num(c.TTFTP99Ms), num(c.TargetTTFTMs)),
				focus: fmt.Sprintf("Protect class %s: route it to less loaded replicas and schedule it ahead of less important classes", c.Name)})
		}
	}
	if a.Scheduled > 0 && a.PriorityInversions > 0 {
		r := float64(a.PriorityInversions) / float64(a.Scheduled)
		if r > 0.01 {
			out = append(out, issue{area: "SCHEDULING", weight: 4 * r,
				title:   fmt.Sprintf("%d priority inversions (%s of batch admissions): less important requests entered batches while more important ones waited on the same replica", a.PriorityInversions, pct(r)),
				details: []string{"inversions per replica: " + joinInts(a.InversionsAt, 8)},
				focus:   "Order the wait queue by SLO class (priority slo-based with scheduler priority-fcfs); check the priority policy's sign"})
		}
	}
	if a.HOLBlockingEvents > 0 && a.Scheduled > 0 {
		r := float64(a.HOLBlockingEvents) / float64(a.Scheduled)
		if r > 0.01 {
			out = append(out, issue{area: "CAPACITY", weight: 3 * min(r, 1),
				title:   fmt.Sprintf("%d head-of-line blocking episodes: a queue head could not get KV blocks while others waited (%s of batch admissions)", a.HOLBlockingEvents, pct(r)),
				details: []string{"episodes per replica: " + joinInts(a.HOLAt, 8)},
				focus:   "Spread load by free KV blocks (kv-utilization scorer) and keep long prompts off nearly full replicas"})
		}
	}
	if a.ScaleOscillations > 0 {
		out = append(out, issue{area: "AUTOSCALING", weight: 1 + min(float64(a.ScaleOscillations)/10, 2),
			title: fmt.Sprintf("%d scale oscillations: the autoscaler reversed its previous action within the oscillation window", a.ScaleOscillations),
			focus: "Widen the hysteresis band (scale_down_threshold well below scale_up_threshold) and lengthen the scale-down cooldown"})
	}
	if a.KVThrashingEvents > 0 && a.Scheduled > 0 {
		r := float64(a.KVThrashingEvents) / float64(a.Scheduled)
		if r > 0.01 {
			out = append(out, issue{area: "CAPACITY", weight: 2 * min(r, 1),
				title: fmt.Sprintf("%d KV thrashing reloads: blocks came back from the CPU tier right after moving (%s per batch admission)", a.KVThrashingEvents, num(r)),
				focus: "Keep each prefix group on one replica (prefix-cache scorer) or give the GPU cache more room"})
		}
	}
	if li := a.LoadImbalance(); in.Replicas > 1 && li > ImbalanceRatio {
		is := issue{area: "ROUTING", weight: 2 * (li - 1),
			title: fmt.Sprintf("load imbalance: the busiest replica received %sx the mean share of requests", num(li)),
			focus: "Weight load signals (queue-depth, in-flight) higher in routing"}
		is.details = append(is.details, "requests per replica: "+joinInts(a.RoutedTo, 8))
		out = append(out, is)
	}
	if h.TTFTP50Ms > 0 && h.TTFTP99Ms/h.TTFTP50Ms > TailBlowupRatio {
		out = append(out, issue{area: "TAIL", weight: 0.1 * h.TTFTP99Ms / h.TTFTP50Ms,
			title: fmt.Sprintf("tail latency blow-up: TTFT p99/p50 = %s (p50 %sms, p99 %sms)", num(h.TTFTP99Ms/h.TTFTP50Ms), num(h.TTFTP50Ms), num(h.TTFTP99Ms)),
			focus: "Find what the slowest requests share (see the worst decisions): bursts, long prompts, or one replica"})
	}
	if h.TimedOut > 0 {
		out = append(out, issue{area: "TIMEOUTS", weight: 10 * h.TimedOut / max(h.Injected, 1),
			title: fmt.Sprintf("%s requests timed out", cnt(h.TimedOut)),
			focus: "Reduce queueing: admission control under overload, or more even routing"})
	}
	if h.Dropped > 0 {
		out = append(out, issue{area: "CAPACITY", weight: 5 * h.Dropped / max(h.Injected, 1),
			title: fmt.Sprintf("%s requests dropped as unservable (longer than the context or the KV cache)", cnt(h.Dropped)),
			focus: "The workload's longest requests do not fit the replicas' configuration"})
	}
	if h.Completed > 0 && h.Preemptions/h.Completed > 0.1 {
		is := issue{area: "PREEMPTION", weight: h.Preemptions / h.Completed,
			title: fmt.Sprintf("%s preemptions for %s completed requests", cnt(h.Preemptions), cnt(h.Completed)),
			focus: "Avoid KV exhaustion: route by free KV blocks, or admit fewer long requests at once"}
		if in.Trace != nil {
			if p := in.Trace.Preemptions; len(p) > 0 {
				e := p[len(p)-1]
				is.details = append(is.details, fmt.Sprintf("e.g. t=%ss replica %d preempted req_%d (%s)",
					num(float64(e.Time)/1e6), e.Instance, e.ID, nameAt(in.ClassNames, e.Class, "class")))
			}
		}
		out = append(out, is)
	}
	if a.Routed > 0 && a.PrefixRegretDecisions > 0 {
		r := float64(a.PrefixRegretDecisions) / float64(a.Routed)
		if r > 0.05 {
			out = append(out, issue{area: "ROUTING", weight: r,
				title: fmt.Sprintf("%s of routing decisions (%d) sent a request away from a replica holding more of its prompt prefix", pct(r), a.PrefixRegretDecisions),
				focus: "Raise the prefix-cache scorer's weight when a replica holds the prompt's prefix"})
		}
	}
	if h.Jain != nil && *h.Jain < FairnessLimit {
		out = append(out, issue{area: "FAIRNESS", weight: 3 * (1 - *h.Jain),
			title: fmt.Sprintf("tenants are served unevenly: Jain's index %s", strconv.FormatFloat(*h.Jain, 'f', 3, 64)),
			focus: "Bound each tenant's share (tenant-quota admission, tenant-aware priority)"})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].weight > out[j].weight })
	return out
}

func joinInts(xs []int64, n int) string {
	var parts []string
	for i, x := range xs {
		if i == n {
			parts = append(parts, fmt.Sprintf("... (%d replicas)", len(xs)))
			break
		}
		parts = append(parts, strconv.FormatInt(x, 10))
	}
	return strings.Join(parts, ", ")
}

func (b *builder) issues(issues []issue) {
	b.section(fmt.Sprintf("Key Issues (%d detected)", len(issues)))
	if len(issues) == 0 {
		b.line("- none: no anomaly counter crossed its threshold")
		return
	}
	for i, is := range issues {
		if i == 6 {
			break
		}
		b.line("%d. %s: %s", i+1, is.area, is.title)
		for j, d := range is.details {
			if j == 3 {
				break
			}
			b.line("   - %s", d)
		}
	}
}

func (b *builder) issueHeadlines(issues []issue) {
	b.section(fmt.Sprintf("Key Issues (%d detected)", len(issues)))
	if len(issues) == 0 {
		b.line("- none")
	}
	for i, is := range issues {
		if i == 4 {
			break
		}
		b.line("%d. %s: %s", i+1, is.area, is.title)
	}
}

func (b *builder) focus(issues []issue) {
	b.section("Suggested Focus")
	if len(issues) == 0 {
		b.line("- Keep the current structure; tune weights for throughput")
		return
	}
	seen := map[string]bool{}
	for _, is := range issues {
		if seen[is.focus] {
			continue
		}
		seen[is.focus] = true
		if len(seen) > 3 || !b.line("- %s", is.focus) {
			return
		}
	}
}

// describe renders a routing record in two lines: the decision, then its context and result.
func describe(in *SummaryInput, r *RoutingRecord) (string, string) {
	head := fmt.Sprintf("t=%ss | Routed req_%d (%s, tenant %s, %d prompt tokens, priority %s) -> replica %d (%s)",
		num(float64(r.Time)/1e6), r.ID, nameAt(in.ClassNames, r.Class, "class"), nameAt(in.TenantNames, r.Tenant, "tenant"),
		r.InputTokens, num(r.Priority), r.Chosen.Instance, r.Reason)
	ctx := fmt.Sprintf("Context: chosen %s", replica(&r.Chosen))
	if r.Live {
		ctx = fmt.Sprintf("Context (live state; the policy read none): chosen %s", replica(&r.Chosen))
	}
	for k := range r.NumAlternatives {
		ctx += fmt.Sprintf("; replica %d %s", r.Alternatives[k].Instance, replica(&r.Alternatives[k]))
	}
	res := fmt.Sprintf("Result: %s", r.Outcome)
	if r.TTFT > 0 {
		res += ", TTFT " + ms(r.TTFT) + "ms"
	}
	if r.E2E > 0 {
		res += ", E2E " + ms(r.E2E) + "ms"
	}
	if r.InputTokens > 0 {
		res += fmt.Sprintf(", %s of the prompt cached", pct(float64(r.CachedTokens)/float64(r.InputTokens)))
	}
	if r.Preemptions > 0 {
		res += fmt.Sprintf(", preempted %d times", r.Preemptions)
	}
	res += ", " + strconv.FormatFloat(r.Severity, 'g', 3, 64) + "x the class target"
	return head, ctx + "\n   " + res
}

func replica(v *ReplicaView) string {
	s := fmt.Sprintf("queue=%d batch=%d inflight=%d kv=%s", v.QueueDepth, v.BatchSize, v.InFlight, pct(v.KVUtilization))
	if v.Score != 0 {
		s += " score=" + num(v.Score)
	}
	if v.PrefixBlocks >= 0 {
		s += fmt.Sprintf(" prefix=%d blocks", v.PrefixBlocks)
	}
	return s
}

func (b *builder) worst(in *SummaryInput, n int) {
	if in.Trace == nil || len(in.Trace.Worst) == 0 {
		return
	}
	b.section(fmt.Sprintf("Worst Decisions (%d examples)", min(n, len(in.Trace.Worst))))
	for i := range min(n, len(in.Trace.Worst)) {
		head, rest := describe(in, &in.Trace.Worst[i])
		if !b.line("%d. %s\n   %s", i+1, head, rest) {
			return
		}
	}
}

func (b *builder) audit(in *SummaryInput) {
	t := in.Trace
	if t == nil || len(t.Samples) == 0 {
		b.section("Decision Audit")
		b.line("- no decision records (trace level none): set trace.level to decisions")
		return
	}
	var ok, miss, hit int
	for i := range t.Samples {
		s := &t.Samples[i]
		if s.Outcome == OutcomeCompleted && s.Severity <= 1 {
			ok++
		} else {
			miss++
		}
		if s.CachedTokens > 0 {
			hit++
		}
	}
	b.section(fmt.Sprintf("Decision Audit (%d of %d routing decisions sampled)", len(t.Samples), t.SampledFrom))
	b.line("- %d met their class target, %d did not; %d found part of the prompt cached", ok, miss, hit)
	b.line("- %d decisions had a better-scored alternative, %d an alternative holding more of the prefix",
		t.Anomalies.ScoreRegretDecisions, t.Anomalies.PrefixRegretDecisions)
	// An even spread of the sample, in request order: about one decision per 900 bytes of
	// budget (a decision takes 600-700), leaving room for the worst decisions.
	show := min(max(b.limit/900, 3), 24, len(t.Samples))
	step := max(len(t.Samples)/show, 1)
	for i := 0; i < len(t.Samples); i += step {
		head, rest := describe(in, &t.Samples[i])
		if !b.line("- %s [%s]\n   %s", head, mark(t.Samples[i].Severity <= 1 && t.Samples[i].Outcome == OutcomeCompleted), rest) {
			return
		}
	}
}

func (b *builder) counterfactual(in *SummaryInput) {
	t := in.Trace
	b.section("Counterfactuals")
	if t == nil || len(t.Samples)+len(t.Worst) == 0 {
		b.line("- no decision records (trace level none): set trace.level to decisions")
		return
	}
	b.line("- Scores and prefix blocks are the router's own at decision time; latency effects are not simulated")
	var cands []*RoutingRecord
	for i := range t.Worst {
		cands = append(cands, &t.Worst[i])
	}
	for i := range t.Samples {
		if t.Samples[i].PrefixRegret > 0 || t.Samples[i].ScoreRegret > 0 {
			cands = append(cands, &t.Samples[i])
		}
	}
	n := 0
	for _, r := range cands {
		if r.NumAlternatives == 0 || n == 6 {
			continue
		}
		a := &r.Alternatives[0]
		for k := range r.NumAlternatives {
			if r.Alternatives[k].PrefixBlocks > a.PrefixBlocks {
				a = &r.Alternatives[k]
			}
		}
		var why []string
		if d := a.PrefixBlocks - r.Chosen.PrefixBlocks; a.PrefixBlocks >= 0 && d > 0 {
			why = append(why, fmt.Sprintf("%d more prompt blocks cached", d))
		}
		if d := r.Chosen.InFlight - a.InFlight; d > 0 {
			why = append(why, fmt.Sprintf("%d fewer requests in flight", d))
		}
		if d := a.Score - r.Chosen.Score; d > 0 {
			why = append(why, "score higher by "+num(d))
		}
		if len(why) == 0 {
			continue
		}
		n++
		res := r.Outcome.String()
		if r.TTFT > 0 {
			res = "TTFT " + ms(r.TTFT) + "ms"
		}
		if !b.line("%d. If req_%d (%s) had gone to replica %d instead of %d: %s (actual %s, %sx target)",
			n, r.ID, nameAt(in.ClassNames, r.Class, "class"), a.Instance, r.Chosen.Instance, strings.Join(why, ", "), res, strconv.FormatFloat(r.Severity, 'g', 3, 64)) {
			return
		}
	}
	if n == 0 {
		b.line("- no recorded decision had an alternative that looked better at the time")
	}
}

// patterns counts bad outcomes by decision context over the sample and the worst records.
func (b *builder) patterns(in *SummaryInput) {
	t := in.Trace
	b.section("Patterns Before Missed Targets")
	if t == nil || len(t.Samples) == 0 {
		b.line("- no decision records (trace level none): set trace.level to decisions")
		return
	}
	type pat struct {
		key       string
		bad, seen int
	}
	var pats []pat
	add := func(key string, bad bool) {
		for i := range pats {
			if pats[i].key == key {
				pats[i].seen++
				if bad {
					pats[i].bad++
				}
				return
			}
		}
		p := pat{key: key, seen: 1}
		if bad {
			p.bad = 1
		}
		pats = append(pats, p)
	}
	var bad int
	for i := range t.Samples {
		s := &t.Samples[i]
		isBad := s.Outcome != OutcomeCompleted || s.Severity > 1
		if isBad {
			bad++
		}
		add("class="+nameAt(in.ClassNames, s.Class, "class"), isBad)
		add("replica="+strconv.Itoa(int(s.Chosen.Instance)), isBad)
		add("queue at decision "+bucket(s.Chosen.QueueDepth), isBad)
		if s.PrefixRegret > 0 {
			add("routed away from a cached prefix", isBad)
		}
		if s.Preemptions > 0 {
			add("preempted", isBad)
		}
	}
	base := float64(bad) / float64(len(t.Samples))
	b.line("- %d of %d sampled decisions missed their class target (%s)", bad, len(t.Samples), pct(base))
	sort.SliceStable(pats, func(i, j int) bool {
		li := float64(pats[i].bad) / float64(pats[i].seen)
		lj := float64(pats[j].bad) / float64(pats[j].seen)
		if li != lj {
			return li > lj
		}
		return pats[i].key < pats[j].key
	})
	n := 0
	for _, p := range pats {
		rate := float64(p.bad) / float64(p.seen)
		if p.seen < 3 || rate <= base || n == 6 {
			continue
		}
		n++
		if !b.line("%d. %s: %d of %d missed (%s, %sx the base rate)", n, p.key, p.bad, p.seen, pct(rate), num(rate/max(base, 1e-9))) {
			return
		}
	}
	if n == 0 {
		b.line("- no context is followed by misses more often than the base rate")
	}
}

func bucket(q int32) string {
	switch {
	case q == 0:
		return "empty"
	case q < 5:
		return "1-4"
	case q < 20:
		return "5-19"
	}
	return ">=20"
}
