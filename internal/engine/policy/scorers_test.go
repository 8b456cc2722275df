package policy

import (
	"math"
	"testing"
)

func approx(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
}

func ctxFor(snaps []InstanceSnapshot) *scoreCtx {
	st := NewRouterState(len(snaps), nil, 0)
	return &scoreCtx{req: &RequestView{InputTokens: 100}, st: st, snaps: snaps, blockSize: 10}
}

func queues(q ...int32) []InstanceSnapshot {
	s := make([]InstanceSnapshot, len(q))
	for i := range q {
		s[i] = InstanceSnapshot{Index: int32(i), QueueDepth: q[i]}
	}
	return s
}

func TestQueueScorerMinMax(t *testing.T) {
	out := make([]float64, 3)
	queueScorer{}.score(ctxFor(queues(2, 5, 8)), out)
	approx(t, "spread", out, []float64{1, 0.5, 0})
	queueScorer{}.score(ctxFor(queues(4, 4, 4)), out)
	approx(t, "all equal scores 1", out, []float64{1, 1, 1})
}

func TestRunningRequestsScorerMinMax(t *testing.T) {
	s := []InstanceSnapshot{{BatchSize: 1}, {BatchSize: 3}, {BatchSize: 5}}
	out := make([]float64, 3)
	runningScorer{}.score(ctxFor(s), out)
	approx(t, "running", out, []float64{1, 0.5, 0})
}

func TestKVCacheUtilizationScorer(t *testing.T) {
	s := []InstanceSnapshot{{KVUtilization: 0.2}, {KVUtilization: 0.9}, {KVUtilization: 0}}
	out := make([]float64, 3)
	kvScorer{}.score(ctxFor(s), out)
	approx(t, "kv", out, []float64{0.8, 1 - 0.9, 1})
}

func TestLoadAwareScorer(t *testing.T) {
	out := make([]float64, 4)
	loadAwareScorer{threshold: 128}.score(ctxFor(queues(0, 64, 128, 500)), out)
	approx(t, "load-aware", out, []float64{0.5, 0.25, 0, 0})
}

func TestLoadBalanceScorer(t *testing.T) {
	s := []InstanceSnapshot{{}, {QueueDepth: 1, BatchSize: 1, InFlightRequests: 2}}
	out := make([]float64, 2)
	loadBalanceScorer{}.score(ctxFor(s), out)
	approx(t, "load-balance", out, []float64{1, 0.2})
}

func TestActiveRequestScorer(t *testing.T) {
	c := ctxFor(queues(0, 0, 0))
	c.st.Loads[0].ActiveRequests = 0
	c.st.Loads[1].ActiveRequests = 2
	c.st.Loads[2].ActiveRequests = 4
	out := make([]float64, 3)
	activeScorer{idle: 0, maxBusy: 1}.score(c, out)
	approx(t, "default", out, []float64{1, 0.5, 0})
	activeScorer{idle: 2, maxBusy: 0.5}.score(c, out)
	approx(t, "idle threshold and busy cap", out, []float64{1, 1, 0})
	c.st.Loads[2].ActiveRequests = 8
	activeScorer{idle: 0, maxBusy: 0.5}.score(c, out)
	approx(t, "busy cap", out, []float64{1, 0.5 * 6.0 / 8.0, 0})
}

func TestTokenLoadScorer(t *testing.T) {
	c := ctxFor(queues(0, 0, 0))
	c.req.InputTokens = 100
	c.st.PrefixMatch = []int32{0, 5, 20}
	c.st.Loads[0].InFlightTokens = 300
	c.st.Loads[1].InFlightTokens = 0
	c.st.Loads[2].InFlightTokens = 0
	out := make([]float64, 3)
	tokenLoadScorer{threshold: 1000}.score(c, out)
	// instance 0: 300 + 100 uncached; 1: 0 + (100-50); 2: fully cached -> load 0 -> 1.
	approx(t, "token-load", out, []float64{0.6, 0.95, 1})
	c.st.Loads[0].InFlightTokens = 5000
	tokenLoadScorer{threshold: 1000}.score(c, out)
	if out[0] != 0 {
		t.Fatalf("load above threshold must score 0, got %v", out[0])
	}
}

func TestPrefixCacheScorer(t *testing.T) {
	c := ctxFor(queues(0, 0, 0))
	c.st.PrefixMatch = []int32{5, 2, 0}
	c.st.PrefixTotal = 10
	c.blockSize = 1
	out := make([]float64, 3)
	prefixScorer{weight: 0, scale: 8192}.score(c, out)
	approx(t, "match ratio", out, []float64{0.5, 0.2, 0})
	// llm-d's own worked example: w=0.5, scale=100, block 1, 5 of 10 blocks:
	// 0.5·min(1, 5/100)² + 0.5·0.5 = 0.25125.
	prefixScorer{weight: 0.5, scale: 100}.score(c, out)
	approx(t, "match length", out[:1], []float64{0.25125})
	c.st.PrefixTotal = 0
	prefixScorer{}.score(c, out)
	approx(t, "no blocks", out, []float64{0, 0, 0})
}

func TestNoHitLRUScorer(t *testing.T) {
	c := ctxFor(queues(0, 0, 0, 0))
	s := &noHitLRUScorer{size: 1024}
	out := make([]float64, 4)
	c.cold = false
	s.score(c, out)
	approx(t, "warm request is neutral", out, []float64{0.5, 0.5, 0.5, 0.5})
	c.cold = true
	s.score(c, out)
	approx(t, "never used", out, []float64{1, 2.0 / 3, 1.0 / 3, 0})
	s.commit(c, 0)
	s.commit(c, 2)
	// never used: 1, 3 (ranks 0, 1); used oldest first: 0 (rank 2), 2 (rank 3).
	s.score(c, out)
	approx(t, "after cold requests to 0 then 2", out, []float64{1 - 2.0/3, 1, 0, 1 - 1.0/3})
	s.commit(c, 0) // 0 becomes most recent: order 2, 0
	s.score(c, out)
	approx(t, "re-used moves to the back", out, []float64{0, 1, 1 - 2.0/3, 1 - 1.0/3})
	c.cold = false
	s.commit(c, 1) // warm requests do not touch the LRU
	c.cold = true
	s.score(c, out)
	approx(t, "warm commit ignored", out, []float64{0, 1, 1 - 2.0/3, 1 - 1.0/3})
	small := &noHitLRUScorer{size: 1}
	small.commit(c, 0)
	small.commit(c, 1)
	if len(small.order) != 1 || small.order[0] != 1 {
		t.Fatalf("lruSize 1 must keep only the latest cold target, got %v", small.order)
	}
}

func TestScorerAliasesResolveToLLMDTypes(t *testing.T) {
	for alias, want := range map[string]string{
		"queue-depth": ScorerQueue, "kv-utilization": ScorerKVCache, "prefix-affinity": ScorerPrefixCache,
		"precise-prefix-cache": ScorerPrefixCache, "no-hit-lru": ScorerNoHitLRU, "load-aware": ScorerLoadAware,
		"active-requests": ScorerActive, "load-balance": ScorerLoadBalance, ScorerTokenLoad: ScorerTokenLoad,
	} {
		if got, ok := CanonicalScorer(alias); !ok || got != want {
			t.Errorf("%s -> %q, want %q", alias, got, want)
		}
	}
	if _, ok := CanonicalScorer("nope"); ok {
		t.Error("unknown scorer accepted")
	}
}
