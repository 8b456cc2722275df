package trace

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

func newTest(level Level) *Recorder {
	return NewRecorder(Config{Level: level, Samples: 4, Worst: 3, Ring: 2, Examples: 1,
		ClassPriority: []int32{3, 4, -1}, TTFTTargets: []int64{1000, 500, 0}, Instances: 2}, rand.New(rand.NewPCG(1, 2)))
}

func TestParseLevel(t *testing.T) {
	for s, want := range map[string]Level{"": LevelNone, "none": LevelNone, "decisions": LevelDecisions, "full": LevelFull} {
		if got, err := ParseLevel(s); err != nil || got != want || (s != "" && got.String() != s) {
			t.Errorf("%q: %v %v", s, got, err)
		}
	}
	if _, err := ParseLevel("verbose"); err == nil || !strings.Contains(err.Error(), "valid: none, decisions, full") {
		t.Errorf("verbose: %v", err)
	}
	if err := CheckStrategy("haiku"); err == nil {
		t.Error("unknown strategy accepted")
	}
}

// A priority inversion is counted when a request enters a batch while a request of a more
// important class waits on the same instance, and only then.
func TestPriorityInversions(t *testing.T) {
	r := newTest(LevelNone)
	r.Queued(0, 2) // batch waits on instance 0
	r.Queued(0, 1) // critical waits on instance 0
	r.Queued(1, 1) // critical waits on instance 1
	r.Scheduled(0, 0, 2, 0)
	if r.an.PriorityInversions != 1 {
		t.Fatalf("batch before a waiting critical: %d inversions", r.an.PriorityInversions)
	}
	r.Scheduled(0, 1, 1, 0) // critical: nothing more important waits
	r.Queued(0, 0)          // standard on 0; critical waits only on instance 1
	r.Scheduled(0, 2, 0, 0)
	if r.an.PriorityInversions != 1 || r.an.Scheduled != 3 {
		t.Errorf("%d inversions, %d scheduled", r.an.PriorityInversions, r.an.Scheduled)
	}
	r.Queued(0, 1)
	r.LeftQueue(0, 1) // timed out while waiting: no longer an inversion
	r.Queued(0, 0)
	r.Scheduled(0, 3, 0, 0)
	if r.an.PriorityInversions != 1 || r.an.InversionsAt[0] != 1 || r.an.InversionsAt[1] != 0 {
		t.Errorf("a departed request still counted: %d (%v)", r.an.PriorityInversions, r.an.InversionsAt)
	}
}

// Head-of-line blocking counts one episode per blocked head, and none with nothing behind it.
func TestHOLEpisodes(t *testing.T) {
	r := newTest(LevelNone)
	r.HOLBlocked(0, 7, 3)
	r.HOLBlocked(0, 7, 4) // same head, next step
	r.HOLBlocked(1, 7, 2) // another instance
	r.HOLBlocked(0, 8, 1) // nothing waits behind
	r.HOLBlocked(0, 9, 2)
	if r.an.HOLBlockingEvents != 3 || r.an.HOLAt[0] != 2 || r.an.HOLAt[1] != 1 {
		t.Errorf("%d episodes (%v)", r.an.HOLBlockingEvents, r.an.HOLAt)
	}
}

func TestAdmissionCounters(t *testing.T) {
	r := newTest(LevelDecisions)
	r.Admission(1, 1, 0, 0, Delayed, "busy")
	r.Admission(2, 1, 0, 0, Admitted, "")
	r.Admission(3, 2, 0, 0, Rejected, "busy")
	r.Admission(4, 3, 1, 0, Rejected, "quota")
	a := &r.an
	if a.Admitted != 1 || a.Rejected != 2 || a.Delayed != 1 || a.RejectionRate() != 2.0/3 {
		t.Errorf("counters %+v", a)
	}
	if len(a.Reasons) != 2 || a.Reasons[0] != (ReasonCount{"busy", 1, 1}) || a.Reasons[1] != (ReasonCount{"quota", 1, 0}) {
		t.Errorf("reasons %+v", a.Reasons)
	}
	if tr := r.Trace(10); len(tr.Rejections) != 1 || tr.Rejections[0].ID != 2 {
		t.Errorf("rejection examples %+v", tr.Rejections)
	}
	for i := range 40 {
		r.Admission(5, 9, 0, 0, Rejected, string(rune('a'+i)))
	}
	if n := len(r.an.Reasons); n != maxReasons+1 || r.an.Reasons[n-1].Reason != "other" {
		t.Errorf("%d reasons, last %q", n, r.an.Reasons[n-1].Reason)
	}
}

// Routing records keep the best alternatives with their scores and prefix blocks, the regret
// against the best of them, and the outcome; memory stays within the caps.
func TestRoutingRecords(t *testing.T) {
	r := newTest(LevelDecisions)
	snaps := []policy.InstanceSnapshot{{Index: 0, InFlightRequests: 5}, {Index: 1, InFlightRequests: 1}}
	prefix := map[int32]int32{0: 0, 1: 6}
	in := &RoutingInput{Target: 0, Reason: "weighted", Scores: []float64{0.4, 0.9}, Snaps: snaps,
		Prefix: func(i int32) int32 { return prefix[i] }}
	for id := range uint64(20) {
		in.Slot, in.ID, in.Class, in.Time = int32(id%5), id, 0, int64(id)
		r.Routing(in)
		r.Finished(int32(id%5), OutcomeCompleted, int64(100*(id%7+1)), 5000, 6000, 0)
	}
	tr := r.Trace(100)
	if len(tr.Samples) != 4 || tr.SampledFrom != 20 || len(tr.Worst) != 3 {
		t.Fatalf("%d samples of %d, %d worst", len(tr.Samples), tr.SampledFrom, len(tr.Worst))
	}
	s := tr.Samples[0]
	if s.NumAlternatives != 1 || s.Alternatives[0].Instance != 1 || s.Alternatives[0].PrefixBlocks != 6 || s.Chosen.PrefixBlocks != 0 ||
		s.PrefixRegret != 6 || s.ScoreRegret != 0.5 || s.Chosen.InFlight != 5 {
		t.Errorf("record %+v", s)
	}
	// TTFTs are 100..700 µs against a 1000 µs target: the worst are the three 700s (IDs 6 and
	// 13) and a 600 (IDs 5, 12, 19: the lowest ID wins ties).
	w := tr.Worst
	if w[0].Severity != 0.7 || w[1].Severity != 0.7 || w[2].Severity != 0.6 || w[0].ID != 6 || w[1].ID != 13 || w[2].ID != 5 {
		t.Errorf("worst %v/%d %v/%d %v/%d", w[0].Severity, w[0].ID, w[1].Severity, w[1].ID, w[2].Severity, w[2].ID)
	}
	if r.an.PrefixRegretDecisions != 20 || r.an.ScoreRegretDecisions != 20 || r.an.LoadImbalance() != 2 {
		t.Errorf("counters %+v", r.an)
	}
}

// Level none keeps counters only; rings keep the latest entries in order.
func TestLevelsAndRings(t *testing.T) {
	r := newTest(LevelNone)
	r.Routing(&RoutingInput{Target: 1})
	r.Preempted(1, 0, 1, 0)
	r.Batch(BatchRecord{Time: 1})
	if tr := r.Trace(5); len(tr.Samples)+len(tr.Worst)+len(tr.Preemptions)+len(tr.Batches) != 0 || tr.Anomalies.Preemptions != 1 || tr.Anomalies.Routed != 1 {
		t.Errorf("level none kept %+v", tr)
	}
	f := newTest(LevelFull)
	for i := range int64(5) {
		f.Preempted(i, 0, uint64(i), 0)
		f.Batch(BatchRecord{Time: i})
	}
	tr := f.Trace(5)
	if len(tr.Preemptions) != 2 || tr.Preemptions[0].Time != 3 || tr.Preemptions[1].Time != 4 || len(tr.Batches) != 2 || tr.Batches[1].Time != 4 {
		t.Errorf("rings %+v %+v", tr.Preemptions, tr.Batches)
	}
	// A request still in flight at the end is reported as unfinished.
	f.Routing(&RoutingInput{Slot: 0, ID: 42, Time: 10, Class: 1})
	if w := f.Trace(1010).Worst; len(w) != 1 || w[0].Outcome != OutcomeUnfinished || w[0].Severity != 2 {
		t.Errorf("unfinished %+v", w)
	}
}

// The summary is deterministic, within budget, and names what it detects.
func TestSummarize(t *testing.T) {
	att := 0.5
	in := &SummaryInput{
		Trace:    &Trace{Anomalies: Anomalies{Admitted: 90, Rejected: 10, Scheduled: 90, PriorityInversions: 9, Routed: 90, RoutedTo: []int64{80, 10}}},
		Headline: Headline{Injected: 90, Completed: 90, TTFTP50Ms: 10, TTFTP99Ms: 200},
		Classes:  []Group{{Name: "critical", Count: 100, TTFTP99Ms: 300, TargetTTFTMs: 100, Attainment: &att}},
		Replicas: 2,
	}
	text := Summarize(in, "", 0)
	for _, want := range []string{"ADMISSION: 10.0% of requests rejected", "SCHEDULING: 9 priority inversions", "ROUTING: load imbalance",
		"TAIL: tail latency blow-up: TTFT p99/p50 = 20.0", "SLO: class critical attains its SLO for only 50.0%", "TTFT p99 300ms (target 100ms) MISS"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	if Summarize(in, "", 0) != text {
		t.Error("not deterministic")
	}
	if short := Summarize(in, "", 60); EstimateTokens(short) > 60 || !strings.HasPrefix(short, "## Outcome") {
		t.Errorf("budget 60: %d tokens:\n%s", EstimateTokens(short), short)
	}
}

func TestSummaryNamesScaleOscillationsAndThrashing(t *testing.T) {
	in := &SummaryInput{Trace: &Trace{Anomalies: Anomalies{ScaleOscillations: 12, KVThrashingEvents: 50, Scheduled: 100}}}
	text := Summarize(in, "", 2000)
	for _, want := range []string{"12 scale oscillations", "50 KV thrashing reloads"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
}
