package sim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// scenario is a named configuration and workload exercising a mechanism of the instance model.
type scenario struct {
	name string
	cfg  func() *Config
	spec genSpec
	reqs []workload.Request // used instead of spec when set
}

func scenarios() []scenario {
	m := defaultModel()
	one := func(mod func(*InstanceConfig)) func() *Config {
		return func() *Config {
			ic := testInstance(m)
			mod(&ic)
			return &Config{Instances: []InstanceConfig{ic}, Seed: 3}
		}
	}
	return []scenario{
		{"plain", one(func(*InstanceConfig) {}),
			genSpec{n: 200, gapUs: 15000, inMean: 300, inStd: 150, outMean: 120, outSd: 60, seed: 11}, nil},
		{"chunked-prefill", one(func(c *InstanceConfig) { c.MaxNumBatchedTokens = 256; c.LongPrefillTokenThreshold = 96 }),
			genSpec{n: 150, gapUs: 20000, inMean: 700, inStd: 300, outMean: 60, outSd: 30, seed: 12}, nil},
		{"preemption-fcfs", one(func(c *InstanceConfig) { c.TotalKVBlocks = 160; c.MaxNumSeqs = 32 }),
			genSpec{n: 200, gapUs: 4000, inMean: 200, inStd: 80, outMean: 200, outSd: 100, seed: 13}, nil},
		{"preemption-priority", one(func(c *InstanceConfig) { c.TotalKVBlocks = 160; c.Preemption = PreemptPriority }),
			genSpec{n: 200, gapUs: 4000, inMean: 200, inStd: 80, outMean: 200, outSd: 100, classes: true, seed: 14}, nil},
		{"prefix-hits", one(func(c *InstanceConfig) { c.TotalKVBlocks = 600 }),
			genSpec{n: 300, gapUs: 8000, inMean: 100, inStd: 50, outMean: 50, outSd: 20, prefixLen: 200, prefixGroups: 4, poisson: true, seed: 15}, nil},
		{"timeouts", one(func(c *InstanceConfig) { c.MaxNumSeqs = 4 }),
			genSpec{n: 120, gapUs: 8000, inMean: 200, inStd: 50, outMean: 150, outSd: 50, timeout: 2_500_000, seed: 16}, nil},
		{"max-model-len", one(func(c *InstanceConfig) { c.MaxModelLen = 600 }),
			genSpec{n: 150, gapUs: 10000, inMean: 400, inStd: 200, outMean: 150, outSd: 100, seed: 17}, nil},
		{"cluster-least-loaded", func() *Config {
			c := &Config{Seed: 5, Router: LeastLoaded}
			for i := range 3 {
				ic := testInstance(m)
				ic.TotalKVBlocks = int32(200 + 100*i)
				c.Instances = append(c.Instances, ic)
			}
			return c
		}, genSpec{n: 400, gapUs: 3000, inMean: 250, inStd: 100, outMean: 150, outSd: 80, prefixLen: 48, prefixGroups: 2, poisson: true, seed: 18}, nil},
		// Tight KV, a small budget, a long-prefill threshold and a length cap together: phase 1
		// mixes prefill chunks, capped requests, block allocations and preemptions in one step.
		{"tight-everything", one(func(c *InstanceConfig) {
			c.TotalKVBlocks, c.MaxNumBatchedTokens, c.LongPrefillTokenThreshold, c.MaxModelLen = 120, 160, 48, 500
		}), genSpec{n: 200, gapUs: 3000, inMean: 250, inStd: 120, outMean: 200, outSd: 120, seed: 19}, nil},
		{"tight-priority-capped", one(func(c *InstanceConfig) {
			c.TotalKVBlocks, c.MaxNumBatchedTokens, c.MaxModelLen, c.Preemption = 100, 96, 400, PreemptPriority
		}), genSpec{n: 200, gapUs: 3000, inMean: 200, inStd: 100, outMean: 200, outSd: 100, classes: true, seed: 20}, nil},
		{"no-chunked-prefill", one(func(c *InstanceConfig) {
			c.DisableChunkedPrefill, c.MaxNumBatchedTokens, c.MaxModelLen, c.TotalKVBlocks = true, 700, 700, 200
		}), genSpec{n: 200, gapUs: 5000, inMean: 300, inStd: 150, outMean: 150, outSd: 80, seed: 21}, nil},
		{"policy-victims", func() *Config {
			ic := testInstance(m)
			ic.TotalKVBlocks, ic.MaxNumBatchedTokens = 150, 256
			return &Config{Instances: []InstanceConfig{ic, ic}, Seed: 6,
				Policy: mustBundle("priority: {policy: slo-based}\npreemption: {policy: priority}\nrouting: {policy: least-loaded}")}
		}, genSpec{n: 300, gapUs: 2500, inMean: 200, inStd: 80, outMean: 200, outSd: 100, classes: true, seed: 22}, nil},
		// Concurrent partial prefills: long and short prompts mixed under a small budget, so
		// steps split the budget between prefills and short prompts step over long ones, with
		// preemptions from a tight cache; then the same in the heap form of the wait queue.
		{"partial-prefills", one(func(c *InstanceConfig) {
			c.TotalKVBlocks, c.MaxNumBatchedTokens, c.LongPrefillTokenThreshold = 200, 256, 120
			c.MaxNumPartialPrefills, c.MaxLongPartialPrefills = 3, 1
		}), genSpec{n: 200, gapUs: 6000, inMean: 250, inStd: 200, outMean: 80, outSd: 60, prefixLen: 32, prefixGroups: 3, seed: 25}, nil},
		{"partial-prefills-policy", func() *Config {
			ic := testInstance(m)
			ic.TotalKVBlocks, ic.MaxNumBatchedTokens, ic.MaxModelLen = 220, 384, 1200
			ic.MaxNumPartialPrefills, ic.MaxLongPartialPrefills = 4, 2
			return &Config{Instances: []InstanceConfig{ic, ic}, Seed: 10,
				Policy: mustBundle("priority: {policy: slo-based}\nscheduler: priority-fcfs\npreemption: {policy: priority}\nrouting: {policy: least-loaded}")}
		}, genSpec{n: 300, gapUs: 3000, inMean: 300, inStd: 250, outMean: 100, outSd: 80, classes: true, seed: 26}, nil},
		{"cpu-tier", func() *Config {
			ic := testInstance(m)
			ic.TotalKVBlocks, ic.MaxNumSeqs = 300, 16
			ic.CPUTier = &KVTierConfig{CapacityBlocks: 2000, BandwidthGBps: 16, BaseLatencyUs: 50, BlockBytes: 2 << 20, OffloadThreshold: 0.3}
			return &Config{Instances: []InstanceConfig{ic}, Seed: 7}
		}, genSpec{n: 300, gapUs: 6000, inMean: 48, inStd: 16, outMean: 60, outSd: 30, prefixLen: 320, prefixGroups: 12, seed: 23}, nil},
	}
}

// disaggScenarios are equivalence scenarios outside scenarios(): under disaggregation a
// request's first token precedes its admission on the decode instance, which the causality
// contract over scenarios() does not allow for.
func disaggScenarios() []scenario {
	m := defaultModel()
	return []scenario{
		{"pd", func() *Config {
			ic := testInstance(m)
			ic.TotalKVBlocks, ic.MaxNumBatchedTokens = 400, 512
			return &Config{Instances: []InstanceConfig{ic, ic, ic}, Seed: 8, Router: LeastLoaded,
				PD: &PDConfig{PrefillInstances: 1, Decider: DecideAlways, BandwidthGBps: 20, BaseLatencyUs: 100, BytesPerToken: 128 << 10}}
		}, genSpec{n: 250, gapUs: 4000, inMean: 300, inStd: 150, outMean: 120, outSd: 60, seed: 24}, nil},
	}
}

// steadyScenarios are equivalence scenarios dominated by long steady decode phases: short
// prompts, long outputs and many concurrent requests, so most steps are decode-only, most
// decode tokens fit in their last block and the per-request events (block boundaries,
// completions, length caps) are sparse among many steps that only advance every request. They
// vary what ends a steady stretch: arrivals, a length cap in force (capAt set), a budget that
// bounds the batch, and a burst that decodes in lockstep until the KV cache runs out and
// preempts.
func steadyScenarios() []scenario {
	m := defaultModel()
	one := func(mod func(*InstanceConfig)) func() *Config {
		return func() *Config {
			ic := testInstance(m)
			ic.TotalKVBlocks, ic.MaxNumSeqs = 40000, 256
			mod(&ic)
			return &Config{Instances: []InstanceConfig{ic}, Seed: 9}
		}
	}
	return []scenario{
		{"steady-decode", one(func(*InstanceConfig) {}),
			genSpec{n: 200, gapUs: 2000, inMean: 24, inStd: 8, outMean: 600, outSd: 200, seed: 31}, nil},
		{"steady-decode-capped", one(func(c *InstanceConfig) { c.BlockSize, c.MaxModelLen = 8, 400 }),
			genSpec{n: 300, gapUs: 2000, inMean: 24, inStd: 8, outMean: 300, outSd: 60, seed: 32}, nil},
		{"steady-decode-budget", one(func(c *InstanceConfig) { c.BlockSize, c.MaxNumBatchedTokens = 32, 48 }),
			genSpec{n: 250, gapUs: 2000, inMean: 24, inStd: 8, outMean: 400, outSd: 150, seed: 33}, nil},
		{"steady-decode-burst", one(func(c *InstanceConfig) { c.TotalKVBlocks, c.MaxNumSeqs = 2500, 128 }),
			genSpec{n: 128, gapUs: 1, inMean: 16, inStd: 4, outMean: 400, outSd: 10, seed: 34}, nil},
		{"steady-decode-burst-priority", one(func(c *InstanceConfig) {
			c.TotalKVBlocks, c.MaxNumSeqs, c.Preemption = 2500, 128, PreemptPriority
		}), genSpec{n: 128, gapUs: 1, inMean: 16, inStd: 4, outMean: 400, outSd: 10, classes: true, seed: 35}, nil},
	}
}

// mustBundle parses a policy bundle for a scenario, panicking on a malformed literal.
func mustBundle(yaml string) *policy.Bundle {
	b, err := policy.Parse([]byte(yaml))
	if err != nil {
		panic(err)
	}
	return b
}

// randomScenario draws an instance configuration and workload from seed: KV from very tight to
// ample, small to large budgets and batches, with or without a long-prefill threshold, a length
// cap, priority victims, prefix sharing, timeouts and several instances.
func randomScenario(seed uint64) scenario {
	rnd := rand.New(rand.NewPCG(seed, 99))
	pick := func(lo, hi int) int32 { return int32(lo + rnd.IntN(hi-lo+1)) }
	m := defaultModel()
	ic := testInstance(m)
	ic.BlockSize = []int32{8, 16, 32}[rnd.IntN(3)]
	ic.TotalKVBlocks = pick(60, 1200)
	ic.MaxNumSeqs = pick(2, 96)
	ic.MaxNumBatchedTokens = pick(24, 2048)
	if rnd.IntN(2) == 0 {
		ic.LongPrefillTokenThreshold = pick(8, 300)
	}
	if rnd.IntN(2) == 0 {
		ic.MaxModelLen = pick(200, 900)
		ic.TotalKVBlocks = max(ic.TotalKVBlocks, (ic.MaxModelLen+ic.BlockSize-1)/ic.BlockSize)
	}
	if rnd.IntN(3) == 0 {
		ic.Preemption = PreemptPriority
	}
	ic.DisablePrefixCaching = rnd.IntN(4) == 0
	if seed > 40 {
		// Concurrent partial prefills, drawn apart so the configurations of seeds up to 40
		// stay as they were.
		pr := rand.New(rand.NewPCG(seed, 100))
		ic.MaxNumPartialPrefills = int32(2 + pr.IntN(4))
		ic.MaxLongPartialPrefills = int32(1 + pr.IntN(int(ic.MaxNumPartialPrefills)))
	}
	n := 1 + rnd.IntN(3)
	cfg := &Config{Seed: int64(seed), Router: LeastLoaded}
	for range n {
		cfg.Instances = append(cfg.Instances, ic)
	}
	sp := genSpec{
		n: 120 + rnd.IntN(120), gapUs: int64(pick(1000, 12000)), poisson: rnd.IntN(2) == 0,
		inMean: pick(20, 500), outMean: pick(2, 300), classes: rnd.IntN(2) == 0, seed: seed,
	}
	sp.inStd, sp.outSd = sp.inMean/2, sp.outMean/2
	if rnd.IntN(2) == 0 {
		sp.prefixLen, sp.prefixGroups = pick(16, 200), 1+rnd.IntN(4)
	}
	if rnd.IntN(4) == 0 {
		sp.timeout = int64(pick(500_000, 5_000_000))
	}
	return scenario{name: fmt.Sprintf("random-%d", seed), cfg: func() *Config { return cfg }, spec: sp}
}

func runScenario(t *testing.T, sc scenario, eager, invariants bool) *Result {
	t.Helper()
	cfg := sc.cfg()
	cfg.Options = Options{RequestRecords: true, CheckInvariants: invariants}
	reqs := sc.reqs
	if reqs == nil {
		reqs = gen(sc.spec)
	}
	s := mustSim(t, cfg, &sliceSource{reqs: reqs})
	s.eagerKV = eager
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := s.run(); err != nil {
		t.Fatalf("%s: %v", sc.name, err)
	}
	return s.res
}

// TestOptimizedMatchesReference runs every scenario with the optimized stepper and with the
// reference stepper (KV allocated token by token, as BLIS does) and requires identical
// per-request results, counters and step records.
func TestOptimizedMatchesReference(t *testing.T) {
	for _, sc := range append(append(scenarios(), disaggScenarios()...), steadyScenarios()...) {
		t.Run(sc.name, func(t *testing.T) {
			fast := runScenario(t, sc, false, true)
			ref := runScenario(t, sc, true, true)
			if !reflect.DeepEqual(fast, ref) {
				a, _ := json.Marshal(fast.Instances)
				b, _ := json.Marshal(ref.Instances)
				t.Fatalf("optimized and reference results differ\nfast: %s\nref:  %s", a, b)
			}
		})
	}
}

// TestOptimizedMatchesReferenceRandom repeats the equivalence over randomized configurations,
// and checks that together they reach every path of batch formation the optimized stepper
// treats apart from the common decode token.
func TestOptimizedMatchesReferenceRandom(t *testing.T) {
	var total InstanceStats
	for seed := uint64(1); seed <= 60; seed++ {
		sc := randomScenario(seed)
		if err := sc.cfg().Validate(); err != nil {
			t.Fatalf("%s: %v", sc.name, err)
		}
		fast := runScenario(t, sc, false, true)
		ref := runScenario(t, sc, true, true)
		if !reflect.DeepEqual(fast, ref) {
			a, _ := json.Marshal(fast.Instances)
			b, _ := json.Marshal(ref.Instances)
			t.Fatalf("%s: optimized and reference results differ\nfast: %s\nref:  %s", sc.name, a, b)
		}
		for _, st := range fast.Instances {
			total.Preemptions += st.Preemptions
			total.DeferredDecodes += st.DeferredDecodes
			total.TimedOut += st.TimedOut
			total.PrefixHitTokens += st.PrefixHitTokens
			total.Completed += st.Completed
			total.Dropped += st.Dropped
		}
	}
	t.Logf("completed %d preempted %d deferred decodes %d timed out %d dropped %d prefix hits %d",
		total.Completed, total.Preemptions, total.DeferredDecodes, total.TimedOut, total.Dropped, total.PrefixHitTokens)
	if total.Preemptions == 0 || total.DeferredDecodes == 0 || total.TimedOut == 0 || total.PrefixHitTokens == 0 || total.Dropped == 0 {
		t.Errorf("the random configurations miss a mechanism")
	}
}

// TestScenarioMechanisms checks that each scenario actually exercises its mechanism, so the
// equivalence test above is meaningful.
func TestScenarioMechanisms(t *testing.T) {
	for _, sc := range scenarios() {
		res := runScenario(t, sc, false, true)
		var st InstanceStats
		for _, s := range res.Instances {
			st.Preemptions += s.Preemptions
			st.TimedOut += s.TimedOut
			st.Dropped += s.Dropped
			st.PrefixHitTokens += s.PrefixHitTokens
			st.Completed += s.Completed
			st.DeferredDecodes += s.DeferredDecodes
		}
		t.Logf("%s: completed %d preempted %d timed out %d dropped %d prefix hits %d", sc.name, st.Completed, st.Preemptions, st.TimedOut, st.Dropped, st.PrefixHitTokens)
		switch sc.name {
		case "preemption-fcfs", "preemption-priority":
			if st.Preemptions == 0 {
				t.Errorf("%s: no preemption", sc.name)
			}
			// A priority victim can sit before requests that phase 1 then never reaches, so
			// their decode tokens are deferred; the ITL bookkeeping must handle those steps.
			if sc.name == "preemption-priority" && st.DeferredDecodes == 0 {
				t.Errorf("%s: no deferred decode token", sc.name)
			}
		case "prefix-hits":
			if st.PrefixHitTokens == 0 {
				t.Errorf("%s: no prefix hits", sc.name)
			}
		case "timeouts":
			if st.TimedOut == 0 {
				t.Errorf("%s: no timeouts", sc.name)
			}
		case "max-model-len":
			if st.Dropped == 0 {
				t.Errorf("%s: no drops", sc.name)
			}
		}
		if st.Completed == 0 {
			t.Errorf("%s: nothing completed", sc.name)
		}
	}
}

// TestSteadyScenariosDecode checks that the steady scenarios are what they claim: many requests
// decoding at once over many steps (an average decode batch of at least 32), and, for the
// bursts, preemptions once the cache runs out.
func TestSteadyScenariosDecode(t *testing.T) {
	for _, sc := range steadyScenarios() {
		res := runScenario(t, sc, false, true)
		var st InstanceStats
		for _, s := range res.Instances {
			st.Steps += s.Steps
			st.Preemptions += s.Preemptions
			st.DeferredDecodes += s.DeferredDecodes
			st.Completed += s.Completed
		}
		var decodeTokens int64
		for _, r := range res.Records {
			decodeTokens += int64(r.ITLCount)
		}
		avg := float64(decodeTokens) / float64(max(st.Steps, 1))
		t.Logf("%s: steps %d completed %d average decode batch %.1f preempted %d deferred %d",
			sc.name, st.Steps, st.Completed, avg, st.Preemptions, st.DeferredDecodes)
		if st.Completed == 0 || avg < 32 {
			t.Errorf("%s: completed %d, average decode batch %.1f: not a steady decode workload", sc.name, st.Completed, avg)
		}
		switch sc.name {
		case "steady-decode-burst", "steady-decode-burst-priority":
			if st.Preemptions == 0 {
				t.Errorf("%s: no preemption", sc.name)
			}
		}
	}
}
