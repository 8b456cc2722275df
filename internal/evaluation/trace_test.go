package evaluation

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/trace"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden summaries")

// pathologies reads testdata/pathologies.yaml.
func pathologies(t testing.TB) *Manifests {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "pathologies.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := &Manifests{}
	if err := m.Add("pathologies.yaml", data); err != nil {
		t.Fatal(err)
	}
	return m
}

// evaluate resolves and runs one Evaluation of the pathology file, after edit (if any).
func evaluate(t testing.TB, name string, edit func(*blisv1alpha1.Evaluation)) (*Result, blisv1alpha1.EvaluationStatus) {
	t.Helper()
	m := pathologies(t)
	ev, err := m.Select(name, false)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&ev)
	}
	in, err := m.Inputs(ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return res, res.Status()
}

// Each pathological template raises its anomaly counters in status and its issue in the
// summary; the sane bundle raises none.
func TestPathologiesInStatus(t *testing.T) {
	_, sane := evaluate(t, "sane", nil)
	if a := sane.Anomalies; a == nil || *a != (blisv1alpha1.AnomalyCounters{}) {
		t.Errorf("sane anomalies: %+v", a)
	}
	if !strings.Contains(sane.TraceSummary, "## Key Issues (0 detected)") || sane.Metrics.JainFairnessIndex != 1 {
		t.Errorf("sane summary:\n%s", sane.TraceSummary)
	}
	for _, tc := range []struct {
		name   string
		check  func(a *blisv1alpha1.AnomalyCounters, m *blisv1alpha1.EvaluationMetrics) bool
		issues []string
	}{
		{"reject-all", func(a *blisv1alpha1.AnomalyCounters, m *blisv1alpha1.EvaluationMetrics) bool {
			return a.RejectedRequests == 800 && m.CompletedRequests == 0
		}, []string{`ADMISSION: 100.0% of requests rejected (800 of 800)`, `reason "reject-all": 800 rejections`}},
		{"inverted-slo", func(a *blisv1alpha1.AnomalyCounters, _ *blisv1alpha1.EvaluationMetrics) bool {
			return a.PriorityInversions >= 10
		}, []string{"SCHEDULING: ", "priority inversions"}},
		{"reverse-priority", func(a *blisv1alpha1.AnomalyCounters, _ *blisv1alpha1.EvaluationMetrics) bool {
			return a.PriorityInversions >= 10
		}, []string{"SCHEDULING: "}},
		{"always-busiest", func(a *blisv1alpha1.AnomalyCounters, m *blisv1alpha1.EvaluationMetrics) bool {
			return a.HolBlockingEvents > 0 && m.TtftP99Ms/m.TtftP50Ms > trace.TailBlowupRatio
		}, []string{"ROUTING: load imbalance: the busiest replica received 4.00x", "requests per replica: 800, 0, 0, 0",
			"TAIL: tail latency blow-up", "CAPACITY: ", "head-of-line blocking episodes"}},
	} {
		_, st := evaluate(t, tc.name, nil)
		if st.Anomalies == nil || !tc.check(st.Anomalies, st.Metrics) {
			t.Errorf("%s: anomalies %+v", tc.name, st.Anomalies)
		}
		for _, want := range tc.issues {
			if !strings.Contains(st.TraceSummary, want) {
				t.Errorf("%s: summary lacks %q:\n%s", tc.name, want, st.TraceSummary)
			}
		}
		if strings.Contains(st.TraceSummary, "(0 detected)") {
			t.Errorf("%s: no issue detected", tc.name)
		}
	}
}

// The summaries of the sane evaluation are pinned for every strategy (run with -update to
// rewrite them after checking), stay within the token budget (bytes / 4), and are identical
// from one run to the next.
func TestSummaryGolden(t *testing.T) {
	type golden struct{ eval, strategy string }
	cases := []golden{{"always-busiest", trace.StrategyIssueFocused}, {"always-busiest", trace.StrategyPatternMining}}
	for _, s := range trace.Strategies {
		cases = append(cases, golden{"sane", s})
	}
	for _, tc := range cases {
		strategy := tc.strategy
		res, st := evaluate(t, tc.eval, func(ev *blisv1alpha1.Evaluation) { ev.Spec.Trace.SummaryStrategy = strategy })
		text := st.TraceSummary
		tokens := trace.EstimateTokens(text)
		if tokens > trace.DefaultMaxTokens || (tokens < 500 && (strategy == trace.StrategyIssueFocused || strategy == trace.StrategyDecisionAudit)) {
			t.Errorf("%s %s: %d tokens", tc.eval, strategy, tokens)
		}
		if again := res.TraceSummary(); again != text {
			t.Errorf("%s: summary differs between renderings", strategy)
		}
		path := filepath.Join("testdata", "summary_"+tc.eval+"_"+strategy+".golden")
		if *updateGolden {
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(want) != text {
			t.Errorf("%s: summary differs from %s (run with -update after checking):\n%s", strategy, path, text)
		}
	}
	_, st := evaluate(t, "sane", nil)
	for _, section := range []string{"## Outcome", "## Key Issues", "## Worst Decisions (5 examples)", "## Suggested Focus",
		"Class critical (", "(target 250ms) ok", "prefix=", "x the class target"} {
		if !strings.Contains(st.TraceSummary, section) {
			t.Errorf("issue_focused summary lacks %q", section)
		}
	}
}

// summaryMaxTokens bounds the summary; level none still summarises the counters.
func TestSummaryBudgetAndLevels(t *testing.T) {
	for _, budget := range []int32{100, 250, 600} {
		_, st := evaluate(t, "always-busiest", func(ev *blisv1alpha1.Evaluation) { ev.Spec.Trace.SummaryMaxTokens = budget })
		if n := trace.EstimateTokens(st.TraceSummary); n > int(budget) || n < int(budget)/3 {
			t.Errorf("budget %d: %d tokens", budget, n)
		}
		if !strings.HasPrefix(st.TraceSummary, "## Outcome\n") {
			t.Errorf("budget %d: summary starts %q", budget, st.TraceSummary[:20])
		}
	}
	_, none := evaluate(t, "always-busiest", func(ev *blisv1alpha1.Evaluation) { ev.Spec.Trace.Level = blisv1alpha1.TraceNone })
	_, dec := evaluate(t, "always-busiest", nil)
	if *none.Anomalies != *dec.Anomalies || none.Metrics.TtftP99Ms != dec.Metrics.TtftP99Ms {
		t.Errorf("level none: anomalies %+v vs %+v", none.Anomalies, dec.Anomalies)
	}
	if strings.Contains(none.TraceSummary, "Worst Decisions") || !strings.Contains(none.TraceSummary, "load imbalance") {
		t.Errorf("level none summary:\n%s", none.TraceSummary)
	}
	_, audit := evaluate(t, "always-busiest", func(ev *blisv1alpha1.Evaluation) {
		ev.Spec.Trace.Level = blisv1alpha1.TraceNone
		ev.Spec.Trace.SummaryStrategy = trace.StrategyDecisionAudit
	})
	if !strings.Contains(audit.TraceSummary, "set trace.level to decisions") {
		t.Errorf("decision_audit without records:\n%s", audit.TraceSummary)
	}
}

// Bad trace settings name the Evaluation and the field.
func TestTraceSettingErrors(t *testing.T) {
	for _, tc := range []struct {
		edit func(*blisv1alpha1.TraceSpec)
		want string
	}{
		{func(s *blisv1alpha1.TraceSpec) { s.Level = "verbose" }, `Evaluation sane: spec.trace.level: unknown trace level "verbose"`},
		{func(s *blisv1alpha1.TraceSpec) { s.SummaryStrategy = "haiku" }, `Evaluation sane: spec.trace.summaryStrategy: unknown summary strategy "haiku"`},
		{func(s *blisv1alpha1.TraceSpec) { s.SummaryMaxTokens = 20 }, `Evaluation sane: spec.trace.summaryMaxTokens: must be in [100, 4000], got 20`},
	} {
		m := pathologies(t)
		ev, err := m.Select("sane", false)
		if err != nil {
			t.Fatal(err)
		}
		tc.edit(&ev.Spec.Trace)
		in, err := m.Inputs(ev, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Resolve(in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

// The anomaly-derived metrics can be objectives.
func TestAnomalyObjectives(t *testing.T) {
	_, st := evaluate(t, "always-busiest", func(ev *blisv1alpha1.Evaluation) {
		ev.Spec.Objectives = []blisv1alpha1.Objective{
			{Name: "loadImbalance", Direction: "minimize", Weight: 1},
			{Name: "jainFairnessIndex", Direction: "maximize", Weight: 1},
			{Name: "tailLatencyBlowup", Direction: "minimize", Weight: 1},
			{Name: "holBlockingEvents", Direction: "minimize", Weight: 1},
			{Name: "kvMeanUtilization", Direction: "maximize", Weight: 1},
			{Name: "rejectedRequests/critical", Direction: "minimize", Weight: 1},
		}
	})
	got := map[string]float64{}
	for _, f := range st.Fitness {
		got[f.Name] = f.Value
	}
	// loadImbalance 4 normalises to 1 / (1 + 4) = 0.2.
	if got["loadImbalance"] != 0.2 || got["jainFairnessIndex"] != 1 || got["tailLatencyBlowup"] >= 0.5 || got["holBlockingEvents"] >= 1 ||
		got["kvMeanUtilization"] <= 0 || got["kvMeanUtilization"] >= 1 || got["rejectedRequests/critical"] != 1 {
		t.Errorf("fitness %v", got)
	}
	m := pathologies(t)
	ev, _ := m.Select("sane", false)
	ev.Spec.Objectives = []blisv1alpha1.Objective{{Name: "fairness", Direction: "maximize", Weight: 1}}
	in, _ := m.Inputs(ev, nil)
	if _, err := Resolve(in); err == nil || !strings.Contains(err.Error(), `Evaluation sane: spec.objectives[0].name: unknown metric "fairness"`) {
		t.Errorf("unknown objective: %v", err)
	}
}

// BenchmarkTraceSummary builds the issue_focused summary of a loaded run with decision records
// (the run itself is outside the loop).
func BenchmarkTraceSummary(b *testing.B) {
	res, _ := evaluate(b, "always-busiest", nil)
	b.ReportAllocs()
	for b.Loop() {
		if res.TraceSummary() == "" {
			b.Fatal("empty summary")
		}
	}
}

// BenchmarkTraceSummaryDecisionAudit builds the decision_audit summary.
func BenchmarkTraceSummaryDecisionAudit(b *testing.B) {
	res, _ := evaluate(b, "always-busiest", func(ev *blisv1alpha1.Evaluation) {
		ev.Spec.Trace.SummaryStrategy = trace.StrategyDecisionAudit
	})
	b.ReportAllocs()
	for b.Loop() {
		if res.TraceSummary() == "" {
			b.Fatal("empty summary")
		}
	}
}

// The summary never exceeds the status limit, cut at a line boundary.
func TestSummaryStatusLimit(t *testing.T) {
	_, st := evaluate(t, "always-busiest", func(ev *blisv1alpha1.Evaluation) {
		ev.Spec.Trace.SummaryMaxTokens = 4000
		ev.Spec.Trace.SummaryStrategy = trace.StrategyDecisionAudit
		ev.Spec.Trace.Level = blisv1alpha1.TraceFull
	})
	if n := len(st.TraceSummary); n > blisv1alpha1.MaxTraceSummaryLength || n < 2000 || !strings.HasSuffix(st.TraceSummary, "\n") {
		t.Errorf("summary of %d bytes", n)
	}
	if got := truncateSummary("ab\ncd\nef\n", 7); got != "ab\ncd\n" {
		t.Errorf("truncate: %q", got)
	}
	if got := truncateSummary("abcdef", 3); got != "" {
		t.Errorf("truncate without a line break: %q", got)
	}
}
