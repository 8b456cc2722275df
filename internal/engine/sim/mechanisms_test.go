package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/metrics"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// plainModel has no overheads, so latencies can be computed by hand:
// step = 1000 + 10 µs per prefill token + 100 µs per decode request.
func plainModel() *linearModel { return &linearModel{base: 1000, perPrefill: 10, perDecode: 100} }

func runOne(t *testing.T, ic InstanceConfig, reqs []workload.Request) *Result {
	t.Helper()
	cfg := &Config{Instances: []InstanceConfig{ic}, Options: Options{RequestRecords: true, CheckInvariants: true}}
	return simulate(t, cfg, reqs, nil).res
}

func TestChunkedPrefillByBudget(t *testing.T) {
	ic := testInstance(plainModel())
	ic.MaxNumBatchedTokens = 100
	res := runOne(t, ic, []workload.Request{{ID: 1, InputLen: 250, OutputLen: 2}})
	r := res.Records[0]
	// Chunks of 100, 100, 50: steps of 2000, 2000, 1500; then one decode step of 1100.
	if r.TTFT != 5500 || r.E2E != 6600 || res.Instances[0].Steps != 4 {
		t.Fatalf("TTFT %d E2E %d steps %d, want 5500, 6600, 4", r.TTFT, r.E2E, res.Instances[0].Steps)
	}
}

func TestChunkedPrefillByLongPrefillThreshold(t *testing.T) {
	ic := testInstance(plainModel())
	ic.LongPrefillTokenThreshold = 60
	res := runOne(t, ic, []workload.Request{{ID: 1, InputLen: 250, OutputLen: 1}})
	// Chunks 60, 60, 60, 60, 10: 4 steps of 1600 and one of 1100.
	if r := res.Records[0]; r.TTFT != 4*1600+1100 || r.E2E != r.TTFT {
		t.Fatalf("TTFT %d E2E %d", r.TTFT, r.E2E)
	}
}

// Without chunked prefill, a prompt waits until its whole remaining length fits in a step.
func TestChunkedPrefillDisabled(t *testing.T) {
	ic := testInstance(plainModel())
	ic.MaxNumBatchedTokens = 300
	ic.DisableChunkedPrefill = true
	reqs := []workload.Request{
		{ID: 1, Arrival: 0, InputLen: 200, OutputLen: 3},
		{ID: 2, Arrival: 0, InputLen: 200, OutputLen: 3},
	}
	res := runOne(t, ic, reqs)
	a, b := res.Records[0], res.Records[1]
	// Step 1 admits only request 1 (200 tokens; 200 more would exceed 300). Step 2 decodes
	// request 1 (1 token) and admits request 2 whole (201 <= 300).
	if a.TTFT != 3000 || b.SchedulingDelay != 3000 || b.TTFT != 3000+1000+100+2000 {
		t.Fatalf("a %+v\nb %+v", a, b)
	}
}

func TestPrefixCacheHit(t *testing.T) {
	mk := func(id uint64, at int64) workload.Request {
		return workload.Request{ID: id, Arrival: at, InputLen: 100, OutputLen: 1, Segments: []workload.Segment{
			{Key: 77, Length: 64}, {Key: 1000 + id, Length: 36},
		}}
	}
	reqs := []workload.Request{mk(1, 0), mk(2, 100_000)}
	ic := testInstance(plainModel())
	res := runOne(t, ic, reqs)
	// The second request finds the 4 shared blocks and computes only 36 tokens.
	if a, b := res.Records[0].TTFT, res.Records[1].TTFT; a != 2000 || b != 1360 {
		t.Fatalf("TTFT %d and %d, want 2000 and 1360", a, b)
	}
	if st := res.Instances[0]; st.PrefixHitTokens != 64 || st.PrefixLookupTokens != 200 {
		t.Fatalf("prefix stats %+v", st)
	}
	ic.DisablePrefixCaching = true
	res = runOne(t, ic, reqs)
	if b := res.Records[1].TTFT; b != 2000 {
		t.Fatalf("without prefix caching TTFT %d, want 2000", b)
	}
}

// Two requests that together need more KV blocks than exist: fcfs preempts the tail (the
// later request), priority preempts the least urgent (here the earlier, standard-class one).
func TestPreemptionVictims(t *testing.T) {
	reqs := []workload.Request{
		{ID: 1, Arrival: 0, InputLen: 8, OutputLen: 12, Class: 0},  // standard
		{ID: 2, Arrival: 10, InputLen: 8, OutputLen: 12, Class: 1}, // critical
	}
	ic := testInstance(plainModel())
	ic.TotalKVBlocks, ic.BlockSize = 6, 4
	for _, tc := range []struct {
		policy     PreemptionPolicy
		victim, ok int
	}{{PreemptFCFS, 1, 0}, {PreemptPriority, 0, 1}} {
		ic.Preemption = tc.policy
		res := runOne(t, ic, reqs)
		v, o := res.Records[tc.victim], res.Records[tc.ok]
		if v.Preemptions == 0 || o.Preemptions != 0 {
			t.Errorf("%s: victim preempted %d times, other %d times", tc.policy, v.Preemptions, o.Preemptions)
		}
		if v.Outcome != OutcomeCompleted || o.Outcome != OutcomeCompleted || v.OutputTokens != 12 {
			t.Errorf("%s: outcomes %+v %+v", tc.policy, v, o)
		}
		if res.Instances[0].Preemptions != int64(v.Preemptions) {
			t.Errorf("%s: instance counted %d preemptions", tc.policy, res.Instances[0].Preemptions)
		}
	}
}

func TestTimeouts(t *testing.T) {
	ic := testInstance(plainModel())
	ic.MaxNumSeqs = 1
	reqs := []workload.Request{
		{ID: 1, Arrival: 0, InputLen: 10, OutputLen: 100, Timeout: 50_000}, // runs, times out while decoding
		{ID: 2, Arrival: 10, InputLen: 10, OutputLen: 5, Timeout: 20_000},  // waits behind it, times out queued
		{ID: 3, Arrival: 20, InputLen: 10, OutputLen: 5, Timeout: -1},      // never times out
	}
	res := runOne(t, ic, reqs)
	a, b, c := res.Records[0], res.Records[1], res.Records[2]
	if a.Outcome != OutcomeTimedOut || a.Done != 50_000 {
		t.Errorf("running request: %+v", a)
	}
	if b.Outcome != OutcomeTimedOut || b.Done != 20_010 {
		t.Errorf("queued request: %+v", b)
	}
	// The step in flight when request 1 is cancelled still ends at its scheduled time (as in
	// BLIS); request 3 is admitted by the step that follows, within one decode step.
	if admitted := c.Arrival + c.SchedulingDelay; c.Outcome != OutcomeCompleted || admitted < 50_000 || admitted > 50_000+1100 {
		t.Errorf("third request: %+v", c)
	}
	if st := res.Instances[0]; st.TimedOut != 2 || st.Completed != 1 {
		t.Errorf("stats %+v", st)
	}
}

// A request whose prompt and output exactly fill max-model-len completes with all its tokens.
func TestMaxModelLenBoundary(t *testing.T) {
	ic := testInstance(plainModel())
	ic.MaxModelLen = 64
	res := runOne(t, ic, []workload.Request{{ID: 1, InputLen: 60, OutputLen: 4}, {ID: 2, InputLen: 60, OutputLen: 5}})
	if r := res.Records[0]; r.Outcome != OutcomeCompleted || r.OutputTokens != 4 || r.LengthCapped {
		t.Errorf("boundary request %+v", r)
	}
	if r := res.Records[1]; r.Outcome != OutcomeDropped || r.DropReason != DropTotalTooLong {
		t.Errorf("over-long request %+v", r)
	}
}

// closedLoop is a reactive source: each finished request is followed, after a think time, by
// the next one until rounds requests have been sent.
type closedLoop struct {
	sliceSource
	rounds, sent int
	seen         []workload.Outcome
}

func (c *closedLoop) Finished(id uint64, out workload.Outcome, _ int32, now int64, inject func(*workload.Request)) {
	c.seen = append(c.seen, out)
	if c.sent >= c.rounds {
		return
	}
	c.sent++
	inject(&workload.Request{ID: id + 1, Arrival: now + 1000, InputLen: 20, OutputLen: 3, Session: 9, Round: int32(c.sent)})
}

func TestReactiveSource(t *testing.T) {
	src := &closedLoop{sliceSource: sliceSource{reqs: []workload.Request{{ID: 0, InputLen: 20, OutputLen: 3, Session: 9}}}, rounds: 4}
	cfg := &Config{Instances: []InstanceConfig{testInstance(plainModel())}, Options: Options{RequestRecords: true, CheckInvariants: true}}
	res, err := Run(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 5 || len(src.seen) != 5 {
		t.Fatalf("%d records, %d callbacks", len(res.Records), len(src.seen))
	}
	for i := 1; i < 5; i++ {
		prev, cur := res.Records[i-1], res.Records[i]
		if cur.Arrival != prev.Done+1000 || cur.Round != int32(i) || cur.Outcome != OutcomeCompleted {
			t.Fatalf("round %d: %+v after %+v", i, cur, prev)
		}
	}
}

// Requests still in the admission/routing pipeline at the horizon are reported on the gateway
// collector, so the cluster block accounts for them.
func TestUnroutedAtHorizon(t *testing.T) {
	cfg := &Config{Instances: []InstanceConfig{testInstance(plainModel())}, AdmissionLatency: 5000, Horizon: 3000, Options: Options{RequestRecords: true}}
	src := &sliceSource{reqs: []workload.Request{{ID: 1, Arrival: 1000, InputLen: 10, OutputLen: 2}}}
	res, err := Run(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	if res.Unrouted != 1 || res.Gateway == nil || res.Records[0].Outcome != OutcomeUnrouted {
		t.Fatalf("unrouted %d gateway %v record %+v", res.Unrouted, res.Gateway, res.Records[0])
	}
	rep := res.Report(src.Tables(), metrics.Options{})
	if rep.Cluster.StillQueued != 1 || rep.Instances[0].InjectedRequests != 0 {
		t.Fatalf("cluster %+v", rep.Cluster)
	}
}

func TestRouters(t *testing.T) {
	snaps := []Snapshot{{InFlight: 3}, {InFlight: 1}, {InFlight: 1}, {InFlight: 2}}
	if got := LeastLoaded(4, nil).Route(&RouteRequest{}, snaps); got != 1 {
		t.Errorf("least-loaded chose %d, want 1 (fewest in flight, lowest index on ties)", got)
	}
	rr := RoundRobin(4, nil)
	for i := range 9 {
		if got := rr.Route(&RouteRequest{}, snaps); got != i%4 {
			t.Fatalf("round-robin call %d chose %d", i, got)
		}
	}
	if _, err := RouterByName("nope"); err == nil {
		t.Error("unknown router accepted")
	}
	bad := func(int, *rand.Rand) Router { return badRouter{} }
	_, err := Run(&Config{Instances: []InstanceConfig{testInstance(plainModel())}, Router: bad}, &sliceSource{reqs: []workload.Request{{InputLen: 5, OutputLen: 1}}})
	if err == nil {
		t.Error("an out-of-range routing decision must fail the run")
	}
}

type badRouter struct{}

func (badRouter) Route(*RouteRequest, []Snapshot) int { return 5 }

// A source that goes back in time or yields an invalid request fails the run with an error.
func TestSourceValidation(t *testing.T) {
	for _, reqs := range [][]workload.Request{
		{{ID: 1, Arrival: 100, InputLen: 5, OutputLen: 1}, {ID: 2, Arrival: 50, InputLen: 5, OutputLen: 1}},
		{{ID: 1, InputLen: 0, OutputLen: 1}},
		{{ID: 1, InputLen: 5, OutputLen: -1}},
		{{ID: 1, InputLen: 5, OutputLen: 1, Segments: []workload.Segment{{Key: 1, Length: 3}}}},
	} {
		if _, err := Run(&Config{Instances: []InstanceConfig{testInstance(plainModel())}}, &sliceSource{reqs: reqs}); err == nil {
			t.Errorf("%+v: accepted", reqs)
		}
	}
}

// itl_* aggregates follow BLIS: the gaps of completed requests only, each request's gaps
// exactly once (the per-step difference array must agree with the per-request sums).
func TestITLAggregatesCompletedRequestsOnly(t *testing.T) {
	for _, sc := range scenarios() {
		res := runScenario(t, sc, false, false)
		var sum, count int64
		for _, r := range res.Records {
			if r.Outcome == OutcomeCompleted {
				sum += r.ITLSum
				count += int64(r.ITLCount)
			}
		}
		var itl metrics.WeightedSamples
		var deferred int64
		for i, c := range res.Collectors {
			itl.Merge(c.ITL())
			deferred += res.Instances[i].DeferredDecodes
		}
		if itl.Count() != count || int64(itl.Sum()) != sum {
			t.Errorf("%s: collectors hold %d gaps summing to %.0f, completed requests %d summing to %d",
				sc.name, itl.Count(), itl.Sum(), count, sum)
		}
		t.Logf("%s: %d gaps, %d deferred decode tokens", sc.name, count, deferred)
	}
}

// Without max-model-len, a request whose prompt and output can never fit in the cache is
// dropped instead of being preempted and recomputed forever (it has no deadline here).
func TestNeverFittingRequestIsDropped(t *testing.T) {
	ic := testInstance(plainModel())
	ic.TotalKVBlocks, ic.BlockSize = 4, 4
	res := runOne(t, ic, []workload.Request{
		{ID: 1, InputLen: 8, OutputLen: 20, Timeout: -1}, // 27 tokens held at most: 7 blocks
		{ID: 2, InputLen: 8, OutputLen: 9, Timeout: -1},  // 16 tokens: exactly 4 blocks
	})
	if r := res.Records[0]; r.Outcome != OutcomeDropped || r.DropReason != DropExceedsKVCache {
		t.Errorf("request 1: %+v", r)
	}
	if r := res.Records[1]; r.Outcome != OutcomeCompleted || r.OutputTokens != 9 {
		t.Errorf("request 2: %+v", r)
	}
}
