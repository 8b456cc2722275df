package export

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

// fakeCaches answers the precise prefix producer from a fixed table, identically for every
// pipeline.
type fakeCaches struct{}

func (fakeCaches) CachedPrefix(instance int, req *policy.RequestView) (int32, int32, int32) {
	total := int32(len(req.PrefixHashes))
	return int32((uint64(instance) + req.PrefixHashes[0]) % uint64(total+1)), total, 16
}

// decisions drives a pipeline built from b through a fixed sequence of requests and instance
// states, and records every admission and routing decision.
func decisions(t *testing.T, b *policy.Bundle, classes []string) []string {
	t.Helper()
	const n = 4
	infos := make([]policy.InstanceInfo, n)
	for i := range infos {
		infos[i] = policy.InstanceInfo{TotalKVBlocks: 5000, BlockSize: 16}
	}
	p, err := policy.Build(b, policy.BuildEnv{Instances: infos, ClassNames: classes, Precise: fakeCaches{}})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 11))
	snaps := make([]policy.InstanceSnapshot, n)
	var inflight []policy.Ticket
	var out []string
	for id := range 2000 {
		now := int64(id) * 10_000
		for i := range snaps {
			snaps[i] = policy.InstanceSnapshot{Index: int32(i), Timestamp: now, QueueDepth: int32(r.IntN(12)),
				BatchSize: int32(r.IntN(64)), KVUtilization: r.Float64(), InFlightRequests: int32(r.IntN(80))}
		}
		doc, blocks := uint64(r.IntN(6)), 1+r.IntN(40)
		hashes := make([]uint64, blocks)
		for k := range hashes {
			hashes[k] = doc*1000 + uint64(k) + 1
		}
		cls := int32(r.IntN(len(classes)))
		v := policy.RequestView{ID: uint64(id), Arrival: now, InputTokens: int32(blocks*64 + r.IntN(64)), MaxTokens: 256,
			Class: cls, ClassName: classes[cls], PrefixHashes: hashes, Streaming: true}
		p.Arrive(&v, now)
		d := p.Admit(&v, snaps, now)
		if d.Action != policy.Admit {
			out = append(out, fmt.Sprintf("%d %s", id, d.Action))
			continue
		}
		p.Prioritize(&v, snaps, now)
		rd := p.Route(&v, snaps, now)
		out = append(out, fmt.Sprintf("%d -> %d", id, rd.Target))
		inflight = append(inflight, rd.Ticket)
		if len(inflight) > 30 {
			k := r.IntN(len(inflight))
			p.Finished(&inflight[k], now)
			inflight = append(inflight[:k], inflight[k+1:]...)
		}
	}
	return out
}

// Export then import makes the same admission and routing decisions, request by request, as
// the original bundle: the policy pipeline the simulator runs cannot tell them apart.
func TestRoundTripSameDecisions(t *testing.T) {
	classes := []string{"critical", "standard", "batch", "sheddable"}
	cases := []struct {
		name, bundle string
		cluster      Cluster
	}{
		{"llm-d default", "routing: {policy: weighted}\n", Cluster{}},
		{"blis weighted-routing (precise)", "file:../policy/testdata/blis/weighted-routing.yaml", Cluster{}},
		{"scorer params", "routing:\n  policy: weighted\n  scorers:\n    - {name: prefix-affinity, weight: 3, params: {matchLengthWeight: 0.25}}\n    - {name: load-aware, weight: 1, params: {threshold: 8}}\n    - {name: active-requests, weight: 0.5, params: {idleThreshold: 2}}\n    - {name: token-load, weight: 0.75, params: {queueThresholdTokens: 100000}}\n    - {name: no-hit-lru, weight: 0.25}\n  params: {picker: weighted-random}\n  prefix_cache: {autoTune: false, blockSizeTokens: 64, lruCapacityPerServer: 200}\n", Cluster{}},
		{"prefix-affinity", "routing: {policy: prefix-affinity}\n", Cluster{}},
		{"cel linear", "routing: {cel: \"3.0 * score.prefixCache + 1.5 * score.queue\"}\n", Cluster{}},
		{"gaie-legacy tuned", "admission: {policy: gaie-legacy, gaie_qd_threshold: 4, gaie_kv_threshold: 0.6, slo_priorities: {standard: -1}}\npriority: {policy: slo-based}\nrouting: {policy: weighted}\n", Cluster{SLOClasses: classes}},
		{"always-admit sheddable", "priority: {policy: slo-based}\nrouting: {policy: weighted}\n", Cluster{SLOClasses: classes}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := loadBundle(t, c.bundle)
			res, err := Export(Input{Bundle: b, Cluster: c.cluster}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var objs [][]byte
			if o := res.File(FileObjectives); o != nil {
				objs = append(objs, o)
			}
			im, err := Import(res.File(FileEPPConfig), objs...)
			if err != nil {
				t.Fatal(err)
			}
			want, got := decisions(t, b, classes), decisions(t, im.Bundle, classes)
			admitted, rejected := 0, 0
			for i := range want {
				if want[i] != got[i] {
					t.Fatalf("decision %d differs: original %q, round-tripped %q", i, want[i], got[i])
				}
				if len(want[i]) > 0 && want[i][len(want[i])-1] == 't' {
					rejected++
				} else {
					admitted++
				}
			}
			if admitted == 0 || c.name == "gaie-legacy tuned" && rejected == 0 {
				t.Fatalf("admitted %d, rejected %d: the comparison does not exercise the policy", admitted, rejected)
			}
		})
	}
}

// The decision trace tells bundles apart: a different weight changes routing.
func TestDecisionTraceIsSensitive(t *testing.T) {
	classes := []string{"standard"}
	a := decisions(t, loadBundle(t, "routing: {policy: weighted}\n"), classes)
	b := decisions(t, loadBundle(t, "routing: {policy: weighted, scorers: [{name: queue-scorer, weight: 2}, {name: kv-cache-utilization-scorer, weight: 2}, {name: prefix-cache-scorer, weight: 3.5}]}\n"), classes)
	same := 0
	for i := range a {
		if a[i] == b[i] {
			same++
		}
	}
	if same == len(a) {
		t.Fatal("a changed prefix weight left every decision unchanged")
	}
}
