package sim

import (
	"testing"

	"math/rand/v2"

	"github.com/inference-sim/blis-operator/internal/engine/latency"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// linearModel is a small latency model for tests: a fixed cost per step, per prefill token and
// per decode request, plus fixed overheads.
type linearModel struct {
	base, perPrefill, perDecode, perCtx int64
	queueing, outTok, post              int64
}

func (m *linearModel) Name() string { return "test-linear" }
func (m *linearModel) StepTime(s *latency.StepShape) int64 {
	t := m.base + m.perPrefill*s.PrefillTokens + m.perDecode*s.DecodeRequests
	if m.perCtx > 0 {
		t += s.DecodeContext / m.perCtx
	}
	return max(t, 1)
}
func (m *linearModel) QueueingTime(int64) int64         { return m.queueing }
func (m *linearModel) OutputTokenProcessingTime() int64 { return m.outTok }
func (m *linearModel) PostDecodeFixedOverhead() int64   { return m.post }

// sliceSource yields fixed requests in order.
type sliceSource struct {
	reqs []workload.Request
	i    int
}

func (s *sliceSource) Next(r *workload.Request) bool {
	if s.i >= len(s.reqs) {
		return false
	}
	*r = s.reqs[s.i]
	s.i++
	return true
}

func (s *sliceSource) Tables() *workload.Tables {
	return &workload.Tables{Clients: []string{"default"}, Tenants: []string{""}, SLOClasses: []string{"standard", "critical", "batch"}}
}

// genSpec describes a synthetic workload for tests.
type genSpec struct {
	n              int
	gapUs          int64 // mean inter-arrival time
	poisson        bool
	inMean, inStd  int32
	outMean, outSd int32
	prefixLen      int32 // shared prefix (one group) prepended to every prompt
	prefixGroups   int   // number of distinct prefixes (0 = 1)
	timeout        int64
	classes        bool // spread requests over the three SLO classes
	seed           uint64
}

func gen(sp genSpec) []workload.Request {
	rnd := rand.New(rand.NewPCG(sp.seed, 7))
	out := make([]workload.Request, 0, sp.n)
	var t int64
	clamp := func(mean, sd int32) int32 {
		v := int32(float64(mean) + rnd.NormFloat64()*float64(sd))
		return max(v, 1)
	}
	groups := max(sp.prefixGroups, 1)
	for i := 0; i < sp.n; i++ {
		in := clamp(sp.inMean, sp.inStd)
		outLen := clamp(sp.outMean, sp.outSd)
		r := workload.Request{ID: uint64(i), Arrival: t, InputLen: in, OutputLen: outLen, Timeout: sp.timeout}
		if sp.prefixLen > 0 {
			g := uint64(rnd.IntN(groups))
			r.Segments = []workload.Segment{
				{Key: 1000 + g, Offset: 0, Length: sp.prefixLen},
				{Key: 1<<40 | uint64(i), Offset: 0, Length: in},
			}
			r.InputLen = in + sp.prefixLen
		}
		if sp.classes {
			r.Class = int32(i % 3)
		}
		out = append(out, r)
		if sp.poisson {
			t += int64(rnd.ExpFloat64() * float64(sp.gapUs))
		} else {
			t += sp.gapUs
		}
	}
	return out
}

func testInstance(m latency.Model) InstanceConfig {
	return InstanceConfig{
		Model: "test", Latency: m, TotalKVBlocks: 4096, BlockSize: 16,
		MaxNumSeqs: 64, MaxNumBatchedTokens: 2048,
	}
}

func defaultModel() *linearModel {
	return &linearModel{base: 5000, perPrefill: 10, perDecode: 100, perCtx: 100, queueing: 1000, outTok: 40, post: 700}
}

// mustSim prepares a simulation of cfg on src, failing the test if the setup fails.
func mustSim(t testing.TB, cfg *Config, src workload.Source) *simulation {
	t.Helper()
	s, err := newSimulation(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
