package sim

import (
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// These tests map the behavioural contracts of the engine design (BC-1..BC-14) and its
// scenarios onto the simulator. BC-1 (model config validity) and most of BC-2 (engine config
// validity) live with the model package, which owns those types; BC-10's stream derivation is
// tested in the rng package.

// simulate runs cfg on reqs with an optional per-event observer and returns the simulation.
func simulate(t *testing.T, cfg *Config, reqs []workload.Request, observe func(*simulation, *event)) *simulation {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := mustSim(t, cfg, &sliceSource{reqs: reqs})
	if observe != nil {
		s.observe = func(ev event) { observe(s, &ev) }
	}
	if err := s.run(); err != nil {
		t.Fatal(err)
	}
	return s
}

// BC-2: invalid engine settings are rejected with the field and the rule.
func TestContractEngineConfigValidity(t *testing.T) {
	base := testInstance(defaultModel())
	cases := []struct {
		field string
		mod   func(*InstanceConfig)
	}{
		{"total-kv-blocks", func(c *InstanceConfig) { c.TotalKVBlocks = 0 }},
		{"block-size-in-tokens", func(c *InstanceConfig) { c.BlockSize = -1 }},
		{"max-num-seqs", func(c *InstanceConfig) { c.MaxNumSeqs = 0 }},
		{"max-num-batched-tokens", func(c *InstanceConfig) { c.MaxNumBatchedTokens = 0 }},
		{"long-prefill-token-threshold", func(c *InstanceConfig) { c.LongPrefillTokenThreshold = -5 }},
		{"max-model-len", func(c *InstanceConfig) { c.MaxModelLen = -1 }},
		{"max-model-len", func(c *InstanceConfig) { c.MaxModelLen = 1 << 20 }}, // needs more blocks than the cache has
		{"preemption policy", func(c *InstanceConfig) { c.Preemption = "lifo" }},
		{"latency model", func(c *InstanceConfig) { c.Latency = nil }},
	}
	for _, tc := range cases {
		c := base
		tc.mod(&c)
		err := (&Config{Instances: []InstanceConfig{c}}).Validate()
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: got %v, want an error naming the field", tc.field, err)
		}
	}
	if err := (&Config{}).Validate(); err == nil {
		t.Error("a cluster without instances must be rejected")
	}
	if _, err := Run(&Config{Instances: []InstanceConfig{base}, Horizon: -1}, &sliceSource{}); err == nil {
		t.Error("negative horizon must be rejected before the run")
	}
}

// BC-4 and scenario "Enqueue affects only target instance": a request routed to instance 0
// changes only instance 0's queue; and an instance's results do not depend on its neighbours.
func TestContractInstanceIsolation(t *testing.T) {
	m := defaultModel()
	cfg := &Config{Instances: []InstanceConfig{testInstance(m), testInstance(m)}}
	reqs := []workload.Request{{ID: 1, Arrival: 0, InputLen: 64, OutputLen: 8}}
	checked := false
	simulate(t, cfg, reqs, func(s *simulation, ev *event) {
		if ev.kind() == evQueued && !checked {
			checked = true
			var a, b Snapshot
			s.insts[0].snapshot(&a)
			s.insts[1].snapshot(&b)
			if a.QueueDepth != 1 || b.QueueDepth != 0 || b.InFlight != 0 {
				t.Errorf("after enqueue: instance 0 %+v, instance 1 %+v", a, b)
			}
		}
	})
	if !checked {
		t.Fatal("no queued event observed")
	}

	// Round-robin over two instances sends even requests to 0 and odd ones to 1. Instance 1's
	// records must equal a single-instance run over the odd requests alone, whatever instance
	// 0 does with a heavier load.
	all := gen(genSpec{n: 120, gapUs: 5000, inMean: 300, inStd: 100, outMean: 80, outSd: 40, seed: 21})
	for i := range all {
		if i%2 == 0 {
			all[i].InputLen *= 3 // make instance 0 busier
		}
	}
	var odd []workload.Request
	for i := 1; i < len(all); i += 2 {
		odd = append(odd, all[i])
	}
	both := &Config{Instances: []InstanceConfig{testInstance(m), testInstance(m)}, Options: Options{RequestRecords: true}}
	alone := &Config{Instances: []InstanceConfig{testInstance(m)}, Options: Options{RequestRecords: true}}
	rb := simulate(t, both, all, nil).res
	ra := simulate(t, alone, odd, nil).res
	j := 0
	for _, r := range rb.Records {
		if r.Instance != 1 {
			continue
		}
		a := ra.Records[j]
		a.Instance = 1
		if r != a {
			t.Fatalf("request %d differs: in cluster %+v, alone %+v", r.ID, r, a)
		}
		j++
	}
	if j != len(odd) {
		t.Fatalf("instance 1 served %d requests, want %d", j, len(odd))
	}
}

// BC-5, BC-13, BC-14 and BC-12, observed after every event of a loaded run with preemption:
// the clock never decreases, KV blocks are conserved, the event queue stays proportional to
// the requests in flight, and batches never exceed max-num-seqs.
func TestContractPerEventInvariants(t *testing.T) {
	m := defaultModel()
	ic := testInstance(m)
	ic.TotalKVBlocks, ic.MaxNumSeqs = 300, 24
	cfg := &Config{Instances: []InstanceConfig{ic, ic, ic}, Router: LeastLoaded, Options: Options{CheckInvariants: true}}
	reqs := gen(genSpec{n: 600, gapUs: 1500, inMean: 250, inStd: 100, outMean: 120, outSd: 60, prefixLen: 32, prefixGroups: 3, poisson: true, seed: 22})
	var last int64
	var maxHeap, maxLive, maxBatch int
	events := 0
	s := simulate(t, cfg, reqs, func(s *simulation, ev *event) {
		events++
		if ev.time < last {
			t.Fatalf("clock moved back from %d to %d", last, ev.time)
		}
		last = ev.time
		for i := range s.insts {
			in := &s.insts[i]
			if u, f := in.kv.UsedBlocks(), in.kv.FreeBlocks(); u+f != in.kv.TotalBlocks() {
				t.Fatalf("instance %d: used %d + free %d != %d", i, u, f, in.kv.TotalBlocks())
			}
			maxBatch = max(maxBatch, len(in.running))
		}
		maxHeap = max(maxHeap, s.heap.len()+s.dead.len())
		maxLive = max(maxLive, s.slab.live)
		if s.dead.len() > s.slab.live {
			t.Fatalf("%d deadlines pending for %d live requests", s.dead.len(), s.slab.live)
		}
	})
	if maxBatch > int(ic.MaxNumSeqs) || maxBatch == 0 {
		t.Errorf("largest batch %d, limit %d", maxBatch, ic.MaxNumSeqs)
	}
	var pre int64
	for _, st := range s.res.Instances {
		pre += st.Preemptions
	}
	if pre == 0 {
		t.Error("the run should preempt")
	}
	// Each live request has at most an arrival-pipeline event and a timeout pending, plus one
	// step per instance and the source's next arrival.
	if bound := 2*maxLive + len(cfg.Instances) + 1; maxHeap > bound {
		t.Errorf("event queue peaked at %d with at most %d live requests (bound %d)", maxHeap, maxLive, bound)
	}
	if int64(events) != s.res.Events {
		t.Errorf("observed %d events, result says %d", events, s.res.Events)
	}
}

// BC-7 and scenarios "Request completes successfully" / "Multiple requests complete": every
// request reaches exactly one terminal outcome, and with no horizon all complete.
func TestContractRequestLifecycle(t *testing.T) {
	m := defaultModel()
	cfg := &Config{Instances: []InstanceConfig{testInstance(m), testInstance(m)}, Options: Options{RequestRecords: true, CheckInvariants: true}}
	reqs := []workload.Request{
		{ID: 1, Arrival: 0, InputLen: 40, OutputLen: 10},
		{ID: 2, Arrival: 10, InputLen: 90, OutputLen: 3},
		{ID: 3, Arrival: 20, InputLen: 17, OutputLen: 1},
	}
	res := simulate(t, cfg, reqs, nil).res
	if len(res.Records) != 3 {
		t.Fatalf("%d records", len(res.Records))
	}
	for _, r := range res.Records {
		if r.Outcome != OutcomeCompleted || r.Done <= r.Arrival || r.OutputTokens != r.OutputLen {
			t.Errorf("request %d: %+v", r.ID, r)
		}
	}
	if c := res.Instances[0].Completed + res.Instances[1].Completed; c != 3 {
		t.Errorf("completed %d", c)
	}

	// With a horizon, unfinished requests remain queued or running, and are counted once.
	cfg.Horizon = 150_000
	reqs = gen(genSpec{n: 200, gapUs: 1000, inMean: 300, inStd: 50, outMean: 300, outSd: 50, seed: 23})
	res = simulate(t, cfg, reqs, nil).res
	var counts [6]int
	for _, r := range res.Records {
		counts[r.Outcome]++
	}
	var injected, finished int64
	for _, st := range res.Instances {
		injected += st.Injected
		finished += st.Completed + st.TimedOut + st.Dropped + st.StillQueued + st.StillRunning
	}
	if counts[OutcomeQueued] == 0 || counts[OutcomeRunning] == 0 {
		t.Errorf("outcomes %v: the horizon should leave queued and running requests", counts)
	}
	if injected != finished || int(injected) != len(res.Records)-counts[OutcomeUnrouted] {
		t.Errorf("conservation: injected %d, accounted %d, records %d", injected, finished, len(res.Records))
	}
	if res.End != cfg.Horizon {
		t.Errorf("end %d, want the horizon %d", res.End, cfg.Horizon)
	}
}

// BC-8: for every completed request, arrival <= scheduling <= first token <= completion.
func TestContractCausality(t *testing.T) {
	for _, sc := range scenarios() {
		res := runScenario(t, sc, false, true)
		for _, r := range res.Records {
			if r.Outcome != OutcomeCompleted {
				continue
			}
			sched := r.Arrival + r.SchedulingDelay
			first := r.Arrival + r.TTFT
			if r.SchedulingDelay < 0 || first <= sched || r.TTFT > r.E2E {
				t.Fatalf("%s: request %d violates causality: %+v", sc.name, r.ID, r)
			}
			if r.Done < first-defaultModel().outTok {
				t.Fatalf("%s: request %d completes at %d before its first token %d", sc.name, r.ID, r.Done, first)
			}
		}
	}
}

// BC-12 and scenario "Batch respects MaxNumSeqs": 200 queued requests, max-num-seqs 128.
func TestContractBatchSizeLimit(t *testing.T) {
	ic := testInstance(defaultModel())
	ic.MaxNumSeqs, ic.MaxNumBatchedTokens, ic.TotalKVBlocks = 128, 1<<20, 1<<16
	cfg := &Config{Instances: []InstanceConfig{ic}, Options: Options{CheckInvariants: true}}
	reqs := make([]workload.Request, 200)
	for i := range reqs {
		reqs[i] = workload.Request{ID: uint64(i), InputLen: 32, OutputLen: 50}
	}
	peak := 0
	simulate(t, cfg, reqs, func(s *simulation, _ *event) { peak = max(peak, len(s.insts[0].running)) })
	if peak != 128 {
		t.Fatalf("peak batch %d, want exactly the limit 128", peak)
	}
}

// Scenario "Clock stops at horizon": events after the horizon are not processed.
func TestContractHorizon(t *testing.T) {
	cfg := &Config{Instances: []InstanceConfig{testInstance(&linearModel{base: 10, queueing: 0})}, Horizon: 1000, Options: Options{RequestRecords: true}}
	reqs := []workload.Request{
		{ID: 1, Arrival: 500, InputLen: 8, OutputLen: 1},
		{ID: 2, Arrival: 800, InputLen: 8, OutputLen: 1},
		{ID: 3, Arrival: 1200, InputLen: 8, OutputLen: 1},
	}
	var seen []int64
	s := simulate(t, cfg, reqs, func(_ *simulation, ev *event) {
		if ev.kind() == evClusterArrival {
			seen = append(seen, ev.time)
		}
		if ev.time > 1000 {
			t.Fatalf("processed an event at %d after the horizon", ev.time)
		}
	})
	if len(seen) != 2 || seen[0] != 500 || seen[1] != 800 {
		t.Fatalf("arrivals processed at %v, want [500 800]", seen)
	}
	if s.res.Records[2].Outcome != OutcomeUnrouted {
		t.Errorf("request 3: %v", s.res.Records[2].Outcome)
	}
}

// Unservable requests are dropped at enqueue with their reason, as BLIS does.
func TestContractUnservableDrops(t *testing.T) {
	ic := testInstance(defaultModel())
	ic.MaxModelLen, ic.TotalKVBlocks, ic.BlockSize = 1000, 100, 16
	ic2 := ic
	ic2.MaxModelLen = 0
	ic2.TotalKVBlocks = 10
	cfg := &Config{Instances: []InstanceConfig{ic, ic2}, Options: Options{RequestRecords: true, CheckInvariants: true}}
	reqs := []workload.Request{
		{ID: 0, InputLen: 1000, OutputLen: 1},  // -> instance 0: input >= max-model-len
		{ID: 1, InputLen: 161, OutputLen: 1},   // -> instance 1: 11 blocks > 10
		{ID: 2, InputLen: 900, OutputLen: 101}, // -> instance 0: 1001 > max-model-len
		{ID: 3, InputLen: 150, OutputLen: 5},   // -> instance 1: fits in 10 blocks with its output
	}
	res := simulate(t, cfg, reqs, nil).res
	want := []string{DropInputTooLong, DropExceedsKVCache, DropTotalTooLong, ""}
	for i, r := range res.Records {
		if r.DropReason != want[i] {
			t.Errorf("request %d: reason %q, want %q", i, r.DropReason, want[i])
		}
	}
	if res.Records[3].Outcome != OutcomeCompleted {
		t.Errorf("request 3: %v", res.Records[3].Outcome)
	}
	st0, st1 := res.Instances[0], res.Instances[1]
	if st0.Dropped != 2 || st0.DroppedInputTooLong != 1 || st0.DroppedTotalTooLong != 1 || st1.DroppedKV != 1 {
		t.Errorf("drop counters %+v %+v", st0, st1)
	}
	if st0.TotalInputTokens != 0 {
		t.Errorf("dropped prompts must not count as input tokens: %d", st0.TotalInputTokens)
	}
}

// Scenario "KV blocks conserved during simulation": an instance with 29,205 blocks keeps
// allocated + free == 29,205 after every event of a run that fills and drains the cache.
func TestContractKVConservationScenario(t *testing.T) {
	ic := testInstance(defaultModel())
	ic.TotalKVBlocks, ic.MaxNumSeqs, ic.MaxNumBatchedTokens = 29205, 256, 8192
	cfg := &Config{Instances: []InstanceConfig{ic}}
	reqs := gen(genSpec{n: 400, gapUs: 500, inMean: 1500, inStd: 500, outMean: 400, outSd: 200, prefixLen: 128, prefixGroups: 8, seed: 24})
	peak := int32(0)
	simulate(t, cfg, reqs, func(s *simulation, _ *event) {
		kv := s.insts[0].kv
		if kv.UsedBlocks()+kv.FreeBlocks() != 29205 {
			t.Fatalf("used %d + free %d != 29205", kv.UsedBlocks(), kv.FreeBlocks())
		}
		peak = max(peak, kv.UsedBlocks())
	})
	if peak < 10000 {
		t.Errorf("the run used at most %d blocks; it should fill a good part of the cache", peak)
	}
}
