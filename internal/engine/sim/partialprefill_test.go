package sim

import (
	"reflect"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/latency"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// shapeProbe wraps a latency model and records, over every step, the most prefill chunks and
// the most long prefill chunks (remaining prompt above thr) one step held.
type shapeProbe struct {
	latency.Model
	thr                 int64
	maxChunks, maxLong  int
	steps, splitBudgets int
}

func (p *shapeProbe) StepTime(s *latency.StepShape) int64 {
	p.steps++
	long := 0
	for _, ch := range s.Prefill {
		if ch.PromptLen-ch.Context > p.thr {
			long++
		}
	}
	p.maxChunks = max(p.maxChunks, len(s.Prefill))
	p.maxLong = max(p.maxLong, long)
	if len(s.Prefill) > 1 {
		p.splitBudgets++
	}
	return p.Model.StepTime(s)
}

func runReqs(t *testing.T, ic InstanceConfig, reqs []workload.Request) *Result {
	t.Helper()
	cfg := &Config{Instances: []InstanceConfig{ic}, Seed: 1, Options: Options{RequestRecords: true, CheckInvariants: true}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	res, err := Run(cfg, &sliceSource{reqs: reqs})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A long and a short prompt arriving together: with one partial prefill the long one takes the
// whole budget and the short one waits for its prefill to finish; with two the budget is split
// between them and the short one's first token comes in the first step.
func TestPartialPrefillsShortPromptTTFT(t *testing.T) {
	reqs := []workload.Request{
		{ID: 0, Arrival: 0, InputLen: 2000, OutputLen: 20},
		{ID: 1, Arrival: 0, InputLen: 100, OutputLen: 20},
	}
	ttft := func(n, l int32) (long, short int64) {
		ic := testInstance(defaultModel())
		ic.MaxNumBatchedTokens, ic.LongPrefillTokenThreshold = 512, 1000
		ic.MaxNumPartialPrefills, ic.MaxLongPartialPrefills = n, l
		res := runReqs(t, ic, reqs)
		return res.Records[0].TTFT, res.Records[1].TTFT
	}
	long0, short0 := ttft(0, 0)
	long1, short1 := ttft(1, 1)
	long2, short2 := ttft(2, 1)
	if long1 != long0 || short1 != short0 {
		t.Errorf("one partial prefill differs from the default: long %d/%d short %d/%d", long1, long0, short1, short0)
	}
	if short2 >= short1 {
		t.Errorf("two partial prefills: short TTFT %d, want below %d", short2, short1)
	}
	if long2 < long1 {
		t.Errorf("two partial prefills: long TTFT %d, want at least %d (it shares the budget)", long2, long1)
	}
	t.Logf("short TTFT %d -> %d, long TTFT %d -> %d", short1, short2, long1, long2)
}

// With the long limit taken by a first long prompt, a second long prompt ahead of a short one
// is stepped over: the short one is admitted in the first step and the second long one keeps
// its place at the front of the queue.
func TestPartialPrefillsShortJumpsLong(t *testing.T) {
	reqs := []workload.Request{
		{ID: 0, Arrival: 0, InputLen: 1500, OutputLen: 10},
		{ID: 1, Arrival: 0, InputLen: 1500, OutputLen: 10},
		{ID: 2, Arrival: 0, InputLen: 64, OutputLen: 10},
		{ID: 3, Arrival: 0, InputLen: 1400, OutputLen: 10},
	}
	ic := testInstance(defaultModel())
	ic.MaxNumBatchedTokens, ic.LongPrefillTokenThreshold = 512, 256
	ic.MaxNumPartialPrefills, ic.MaxLongPartialPrefills = 3, 1
	res := runReqs(t, ic, reqs)
	r := res.Records
	if r[2].SchedulingDelay != r[0].SchedulingDelay {
		t.Errorf("short prompt admitted at %d, the first long one at %d: want the same step", r[2].SchedulingDelay, r[0].SchedulingDelay)
	}
	if r[2].TTFT >= r[0].TTFT || r[0].TTFT >= r[1].TTFT || r[1].TTFT >= r[3].TTFT {
		t.Errorf("TTFTs %d %d %d %d: want short < first long < second long < third long", r[2].TTFT, r[0].TTFT, r[1].TTFT, r[3].TTFT)
	}
	for _, rec := range r {
		if rec.Outcome != OutcomeCompleted {
			t.Errorf("request %d: %v", rec.ID, rec.Outcome)
		}
	}
}

// A step never holds more than max-num-partial-prefills prefill chunks, nor more long ones than
// max-long-partial-prefills, over mixed workloads with preemptions, prefix hits and the heap
// form of the queue; and the limits are reached, so the check means something.
func TestPartialPrefillsLimits(t *testing.T) {
	for _, sc := range scenarios() {
		if sc.name != "partial-prefills" && sc.name != "partial-prefills-policy" {
			continue
		}
		cfg := sc.cfg()
		ic := cfg.Instances[0]
		probe := &shapeProbe{Model: ic.Latency, thr: int64(partialThreshold(&ic))}
		for i := range cfg.Instances {
			cfg.Instances[i].Latency = probe
		}
		cfg.Options = Options{CheckInvariants: true}
		if _, err := Run(cfg, &sliceSource{reqs: gen(sc.spec)}); err != nil {
			t.Fatalf("%s: %v", sc.name, err)
		}
		n, l := int(ic.MaxNumPartialPrefills), int(ic.MaxLongPartialPrefills)
		t.Logf("%s: steps %d, with several prefills %d, most prefills %d, most long %d", sc.name, probe.steps, probe.splitBudgets, probe.maxChunks, probe.maxLong)
		if probe.maxChunks > n || probe.maxLong > l {
			t.Errorf("%s: a step held %d prefills (%d long), limits %d (%d long)", sc.name, probe.maxChunks, probe.maxLong, n, l)
		}
		if probe.maxChunks != n || probe.maxLong != l {
			t.Errorf("%s: the limits %d (%d long) were never reached (%d, %d)", sc.name, n, l, probe.maxChunks, probe.maxLong)
		}
	}
}

// Setting one partial prefill (and one long one) is the classic behaviour: results identical
// to leaving the settings unset.
func TestPartialPrefillsOneIsDefault(t *testing.T) {
	for _, sc := range scenarios() {
		if sc.name == "partial-prefills" || sc.name == "partial-prefills-policy" {
			continue
		}
		base := runScenario(t, sc, false, false)
		one := sc
		one.cfg = func() *Config {
			c := sc.cfg()
			for i := range c.Instances {
				c.Instances[i].MaxNumPartialPrefills, c.Instances[i].MaxLongPartialPrefills = 1, 1
			}
			return c
		}
		if got := runScenario(t, one, false, false); !reflect.DeepEqual(got, base) {
			t.Errorf("%s: max-num-partial-prefills 1 changes the results", sc.name)
		}
	}
}

// The default long-prefill threshold under concurrent partial prefills is 4% of max-model-len.
func TestPartialThreshold(t *testing.T) {
	for _, tc := range []struct {
		thr, mml, want int32
	}{{300, 0, 300}, {300, 8192, 300}, {0, 8192, 327}, {0, 0, 1<<31 - 1}, {0, 20, 1<<31 - 1}} {
		c := InstanceConfig{LongPrefillTokenThreshold: tc.thr, MaxModelLen: tc.mml}
		if got := partialThreshold(&c); got != tc.want {
			t.Errorf("threshold %d, max-model-len %d: got %d, want %d", tc.thr, tc.mml, got, tc.want)
		}
	}
}

func TestPartialPrefillsValidate(t *testing.T) {
	for _, tc := range []struct {
		n, l    int32
		noChunk bool
		ok      bool
	}{
		{0, 0, false, true}, {1, 1, false, true}, {4, 2, false, true}, {4, 4, false, true}, {4, 0, false, true},
		{-1, 0, false, false}, {2, 3, false, false}, {0, 2, false, false}, {2, -1, false, false}, {2, 1, true, false}, {1, 1, true, true},
	} {
		ic := testInstance(defaultModel())
		ic.MaxNumPartialPrefills, ic.MaxLongPartialPrefills, ic.DisableChunkedPrefill = tc.n, tc.l, tc.noChunk
		if err := ic.Validate(); (err == nil) != tc.ok {
			t.Errorf("partial prefills %d, long %d, chunked prefill off %v: error %v, want ok %v", tc.n, tc.l, tc.noChunk, err, tc.ok)
		}
	}
}
