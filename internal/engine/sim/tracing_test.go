package sim

import (
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/trace"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// pathologyRun simulates a loaded 4-instance cluster with mixed SLO classes under bundle and
// returns the trace.
func pathologyRun(t *testing.T, bundle string, level trace.Level) (*Result, *trace.Trace) {
	t.Helper()
	reqs := gen(genSpec{n: 1200, gapUs: 8000, poisson: true, inMean: 600, inStd: 200, outMean: 60, outSd: 20,
		prefixLen: 256, prefixGroups: 8, classes: true, seed: 11})
	ic := testInstance(defaultModel())
	ic.TotalKVBlocks, ic.MaxNumSeqs = 1200, 64
	cfg := &Config{
		Instances: []InstanceConfig{ic, ic, ic, ic},
		Policy:    parseBundle(t, bundle),
		Seed:      3,
		Options:   Options{Trace: &trace.Config{Level: level, TTFTTargets: []int64{200_000, 100_000, 2_000_000}}},
	}
	res, err := Run(cfg, &sliceSource{reqs: reqs})
	if err != nil {
		t.Fatal(err)
	}
	if res.Trace == nil {
		t.Fatal("no trace")
	}
	return res, res.Trace
}

const saneBundle = "priority: {policy: slo-based}\nscheduler: priority-fcfs\nrouting: {policy: least-loaded}"

// Each pathological template triggers its anomaly and the sane bundle does not.
func TestPathologicalTemplatesTriggerAnomalies(t *testing.T) {
	_, sane := pathologyRun(t, saneBundle, trace.LevelNone)
	sa := &sane.Anomalies
	t.Logf("sane: inversions %d, HOL %d, imbalance %.2f", sa.PriorityInversions, sa.HOLBlockingEvents, sa.LoadImbalance())
	if sa.Rejected != 0 || sa.PriorityInversions > 10 || sa.LoadImbalance() > 1.2 {
		t.Errorf("sane bundle: rejected %d, inversions %d, imbalance %.2f", sa.Rejected, sa.PriorityInversions, sa.LoadImbalance())
	}

	res, rej := pathologyRun(t, "admission: {policy: reject-all}", trace.LevelNone)
	if rej.Anomalies.Rejected != res.Generated || rej.Anomalies.RejectionRate() != 1 {
		t.Errorf("reject-all: rejected %d of %d (rate %.2f)", rej.Anomalies.Rejected, res.Generated, rej.Anomalies.RejectionRate())
	}

	floor := max(10*sa.PriorityInversions, 100)
	for _, b := range []string{
		"priority: {policy: inverted-slo}\nscheduler: priority-fcfs\nrouting: {policy: least-loaded}",
		"priority: {policy: slo-based}\nscheduler: reverse-priority\nrouting: {policy: least-loaded}",
	} {
		_, tr := pathologyRun(t, b, trace.LevelNone)
		t.Logf("%q: inversions %d", b, tr.Anomalies.PriorityInversions)
		if tr.Anomalies.PriorityInversions < floor {
			t.Errorf("%q: %d priority inversions, want >= %d (sane: %d)", b, tr.Anomalies.PriorityInversions, floor, sa.PriorityInversions)
		}
	}

	_, busy := pathologyRun(t, "routing: {policy: always-busiest}", trace.LevelNone)
	ba := &busy.Anomalies
	if ba.LoadImbalance() < 2 || ba.HOLBlockingEvents <= max(10*sa.HOLBlockingEvents, 10) {
		t.Errorf("always-busiest: imbalance %.2f, HOL %d (sane HOL %d)", ba.LoadImbalance(), ba.HOLBlockingEvents, sa.HOLBlockingEvents)
	}
}

// Tracing never changes the simulated behaviour, and records stay within their caps.
func TestTraceDoesNotChangeResults(t *testing.T) {
	reqs := gen(genSpec{n: 800, gapUs: 3000, poisson: true, inMean: 500, inStd: 150, outMean: 50, outSd: 10,
		prefixLen: 128, prefixGroups: 4, classes: true, seed: 5})
	ic := testInstance(defaultModel())
	ic.TotalKVBlocks = 300
	bundle := "priority: {policy: slo-based}\nrouting: {policy: weighted, scorers: [{name: precise-prefix-cache, weight: 2}, {name: queue-depth, weight: 1}]}\npreemption: {policy: priority}"
	run := func(tc *trace.Config) *Result {
		cfg := &Config{Instances: []InstanceConfig{ic, ic, ic}, Policy: parseBundle(t, bundle), Seed: 9,
			Options: Options{RequestRecords: true, CheckInvariants: true, Trace: tc}}
		res, err := Run(cfg, &sliceSource{reqs: reqs})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	base := run(nil)
	for _, lv := range []trace.Level{trace.LevelNone, trace.LevelDecisions, trace.LevelFull} {
		tc := &trace.Config{Level: lv, Samples: 50, Worst: 5, Ring: 7, TTFTTargets: []int64{100_000, 50_000, 1_000_000}}
		res := run(tc)
		if res.Events != base.Events || res.End != base.End || len(res.Records) != len(base.Records) {
			t.Fatalf("level %v: events %d/%d end %d/%d", lv, res.Events, base.Events, res.End, base.End)
		}
		for i := range res.Records {
			if res.Records[i] != base.Records[i] {
				t.Fatalf("level %v: record %d differs: %+v vs %+v", lv, i, res.Records[i], base.Records[i])
			}
		}
		tr := res.Trace
		if tr.Anomalies.Routed != int64(len(reqs)) {
			t.Errorf("level %v: routed %d of %d", lv, tr.Anomalies.Routed, len(reqs))
		}
		var steps int64
		for i := range res.Instances {
			steps += res.Instances[i].Steps
		}
		if tr.Anomalies.Steps != steps || tr.Anomalies.KVMeanUtilization() <= 0 || tr.Anomalies.KVMeanUtilization() > 1 {
			t.Errorf("level %v: %d steps recorded of %d, mean KV %v", lv, tr.Anomalies.Steps, steps, tr.Anomalies.KVMeanUtilization())
		}
		if lv == trace.LevelNone {
			if len(tr.Samples)+len(tr.Worst)+len(tr.Preemptions)+len(tr.Batches) != 0 {
				t.Errorf("level none kept records")
			}
			continue
		}
		if len(tr.Samples) != 50 || len(tr.Worst) != 5 || tr.SampledFrom != int64(len(reqs)) || len(tr.Preemptions) > 7 {
			t.Errorf("level %v: %d samples of %d, %d worst, %d preemptions", lv, len(tr.Samples), tr.SampledFrom, len(tr.Worst), len(tr.Preemptions))
		}
		if (lv == trace.LevelFull) != (len(tr.Batches) == 7) {
			t.Errorf("level %v: %d batch records", lv, len(tr.Batches))
		}
		for i := 1; i < len(tr.Worst); i++ {
			if tr.Worst[i].Severity > tr.Worst[i-1].Severity {
				t.Errorf("worst records out of order: %v then %v", tr.Worst[i-1].Severity, tr.Worst[i].Severity)
			}
		}
		// The worst record is the request with the largest TTFT relative to its class target.
		targets := tc.TTFTTargets
		var top float64
		for _, r := range res.Records {
			if r.Outcome == OutcomeCompleted {
				top = max(top, float64(r.TTFT)/float64(targets[r.Class]))
			}
		}
		if w := tr.Worst[0]; w.Severity != top || w.Outcome != trace.OutcomeCompleted {
			t.Errorf("worst severity %v (%v), want %v", w.Severity, w.Outcome, top)
		}
		for _, s := range tr.Samples {
			rec := res.Records[s.ID]
			if s.TTFT != rec.TTFT || s.Chosen.Instance != rec.Instance || s.NumAlternatives != 2 || s.Chosen.PrefixBlocks < 0 {
				t.Fatalf("sample %+v does not match record %+v", s, rec)
			}
		}
	}
	// Same seed, same trace.
	a := run(&trace.Config{Level: trace.LevelDecisions, Samples: 20}).Trace
	b := run(&trace.Config{Level: trace.LevelDecisions, Samples: 20}).Trace
	for i := range a.Samples {
		if a.Samples[i] != b.Samples[i] {
			t.Fatalf("sample %d differs between identical runs", i)
		}
	}
}

var _ workload.Source = (*sliceSource)(nil)

// Round-robin reads no snapshots: its records carry the live state, marked as such.
func TestTraceLiveStateForSnapshotFreePolicies(t *testing.T) {
	reqs := gen(genSpec{n: 200, gapUs: 2000, inMean: 300, inStd: 50, outMean: 40, outSd: 5, seed: 2})
	ic := testInstance(defaultModel())
	cfg := &Config{Instances: []InstanceConfig{ic, ic}, Policy: parseBundle(t, "routing: {policy: round-robin}"),
		Options: Options{Trace: &trace.Config{Level: trace.LevelDecisions}}}
	res, err := Run(cfg, &sliceSource{reqs: reqs})
	if err != nil {
		t.Fatal(err)
	}
	busy := false
	for _, s := range res.Trace.Samples {
		if !s.Live || s.NumAlternatives != 1 {
			t.Fatalf("record %+v", s)
		}
		busy = busy || s.Chosen.BatchSize > 0 || s.Alternatives[0].BatchSize > 0
	}
	if !busy {
		t.Error("the live state never showed a running batch")
	}
	cfg.Options.Trace = nil
	base, err := Run(cfg, &sliceSource{reqs: reqs})
	if err != nil {
		t.Fatal(err)
	}
	if base.Events != res.Events || base.End != res.End || base.Collectors[0].Counts() != res.Collectors[0].Counts() {
		t.Errorf("reading the live state changed the run")
	}
}
