package sim

import (
	"encoding/json"
	"reflect"
	"testing"

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
	}
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
	for _, sc := range scenarios() {
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
