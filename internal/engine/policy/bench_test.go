package policy

import (
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/rng"
)

const benchInstances = 8

func benchPipeline(tb testing.TB, text string) *Pipeline {
	tb.Helper()
	b, err := Parse([]byte(text))
	if err != nil {
		tb.Fatal(err)
	}
	inst := make([]InstanceInfo, benchInstances)
	for i := range inst {
		inst[i] = InstanceInfo{TotalKVBlocks: 4096, BlockSize: 16}
	}
	p, err := Build(b, BuildEnv{Instances: inst, TenantNames: testTenants, ClassNames: testClasses, RNG: rng.Derive(1, rng.Router)})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// benchRequests are 64 prompts of 16 blocks from 8 shared prefixes, so the prefix index sees
// hits, misses and evictions.
func benchRequests() ([]RequestView, []InstanceSnapshot) {
	reqs := make([]RequestView, 64)
	for i := range reqs {
		h := make([]uint64, 16)
		for j := range h {
			if j < 8 {
				h[j] = uint64(i%8*1000 + j + 1)
			} else {
				h[j] = uint64(i*1000 + j + 500_000)
			}
		}
		reqs[i] = RequestView{ID: uint64(i), InputTokens: 1024, MaxTokens: 128, Tenant: int32(i % 3), Class: int32(i % 4),
			TenantName: testTenants[i%3], ClassName: testClasses[i%4], PrefixHashes: h}
	}
	snaps := make([]InstanceSnapshot, benchInstances)
	for i := range snaps {
		snaps[i] = InstanceSnapshot{Index: int32(i), QueueDepth: int32(i % 3), BatchSize: int32(i), KVUtilization: float64(i) / 10}
	}
	return reqs, snaps
}

func benchRoute(b *testing.B, text string) {
	p := benchPipeline(b, text)
	reqs, snaps := benchRequests()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := &reqs[i%len(reqs)]
		d := p.Route(r, snaps, int64(i))
		p.Finished(&d.Ticket, int64(i))
	}
}

const (
	weighted3 = "routing: {policy: weighted, scorers: [{name: queue-scorer, weight: 2}, {name: kv-cache-utilization-scorer, weight: 2}, {name: prefix-cache-scorer, weight: 3}]}"
	cel3      = "routing: {cel: '2.0 * (global.maxQueueDepth == global.minQueueDepth ? 1.0 : double(global.maxQueueDepth - instance.queueDepth) / double(global.maxQueueDepth - global.minQueueDepth)) + 2.0 * (1.0 - instance.kvUtilization) + 3.0 * instance.prefixMatch'}"
)

// BenchmarkRouteRoundRobin is the baseline of a routing decision with no scoring.
func BenchmarkRouteRoundRobin(b *testing.B) { benchRoute(b, "routing: {policy: round-robin}") }

// BenchmarkRouteLeastLoaded is the simulator core's other built-in router.
func BenchmarkRouteLeastLoaded(b *testing.B) { benchRoute(b, "routing: {policy: least-loaded}") }

// BenchmarkRouteWeighted3 is llm-d's default profile (queue, kv, prefix) over 8 instances with
// 16-block prompts, including the prefix index update.
func BenchmarkRouteWeighted3(b *testing.B) { benchRoute(b, weighted3) }

// BenchmarkRouteCEL3 is the same profile written as one CEL expression per instance.
func BenchmarkRouteCEL3(b *testing.B) { benchRoute(b, cel3) }

// BenchmarkRouteCELScores is the same profile over the score.* signals (scorer columns are
// computed natively once per decision).
func BenchmarkRouteCELScores(b *testing.B) {
	benchRoute(b, "routing: {cel: '2.0 * score.queue + 2.0 * score.kvCacheUtilization + 3.0 * score.prefixCache'}")
}

// BenchmarkRouteTree scores instances with a three-level decision tree.
func BenchmarkRouteTree(b *testing.B) {
	benchRoute(b, `routing:
  tree:
    if: {observable: instance.kvUtilization, op: ">=", value: 0.9}
    then: {score: 0}
    else:
      if: {observable: instance.prefixMatch, op: ">", value: 0.5}
      then: {score: 3}
      else:
        if: {observable: instance.queueDepth, op: "<=", value: 1}
        then: {score: 2}
        else: {score: 1}`)
}

func benchAdmit(b *testing.B, text string) {
	p := benchPipeline(b, text)
	reqs, snaps := benchRequests()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.Admit(&reqs[i%len(reqs)], snaps, int64(i))
	}
}

// BenchmarkAdmitGAIELegacy is a snapshot-reading admission template.
func BenchmarkAdmitGAIELegacy(b *testing.B) { benchAdmit(b, "admission: {policy: gaie-legacy}") }

// BenchmarkAdmitCEL is the same decision as a CEL expression.
func BenchmarkAdmitCEL(b *testing.B) {
	benchAdmit(b, `admission: {cel: "!(request.sloClass in ['batch', 'sheddable', 'background']) || global.saturation < 1.0"}`)
}

func TestWeightedRoutingDoesNotAllocate(t *testing.T) {
	for _, text := range []string{weighted3, "routing: {policy: round-robin}",
		"routing: {policy: weighted, scorers: [{name: no-hit-lru-scorer, weight: 1}, {name: token-load-scorer, weight: 1}, {name: active-request-scorer, weight: 1}, {name: load-aware-scorer, weight: 1}]}"} {
		p := benchPipeline(t, text)
		reqs, snaps := benchRequests()
		i := 0
		step := func() {
			r := &reqs[i%len(reqs)]
			d := p.Route(r, snaps, int64(i))
			p.Finished(&d.Ticket, int64(i))
			i++
		}
		for k := 0; k < 1000; k++ { // warm the prefix index to its steady state
			step()
		}
		if a := testing.AllocsPerRun(200, step); a != 0 {
			t.Errorf("%s: %v allocations per decision", text, a)
		}
	}
}
