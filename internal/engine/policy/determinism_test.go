package policy

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"
)

// runTrace drives a pipeline through a synthetic stream (arrivals, delays, routing, first
// tokens, completions) and returns a digest of every decision and of the final router state.
func runTrace(t *testing.T, text string) uint64 {
	t.Helper()
	p := build(t, text, 5)
	src := rand.New(rand.NewPCG(11, 12))
	h := fnv.New64a()
	type live struct {
		ticket Ticket
		done   int64
	}
	var running []live
	snaps := idle(5)
	for i := 0; i < 2000; i++ {
		now := int64(i) * 1000
		kept := running[:0]
		for _, l := range running {
			if l.done <= now {
				p.FirstToken(&l.ticket)
				p.Finished(&l.ticket, now)
				continue
			}
			kept = append(kept, l)
		}
		running = kept
		for j := range snaps {
			snaps[j].QueueDepth = int32(src.IntN(6))
			snaps[j].KVUtilization = float64(src.IntN(10)) / 10
			snaps[j].InFlightRequests = p.State().Loads[j].ActiveRequests
		}
		g := uint64(src.IntN(6))
		hashes := make([]uint64, 1+src.IntN(12))
		for k := range hashes {
			hashes[k] = g*1000 + uint64(k) + 1
		}
		v := req(uint64(i), int32(src.IntN(3)), int32(src.IntN(4)), int32(64*len(hashes)), hashes...)
		p.Arrive(v, now)
		a := p.Admit(v, snaps, now)
		fmt.Fprint(h, a.Action, a.Delay)
		if a.Action != Admit {
			continue
		}
		pr := p.Prioritize(v, snaps, now)
		d := p.Route(v, snaps, now)
		fmt.Fprint(h, pr.Score, d.Target, d.Scores)
		running = append(running, live{ticket: d.Ticket, done: now + int64(src.IntN(20_000))})
	}
	st := p.State()
	fmt.Fprint(h, st.Global, st.Loads)
	for i := range running {
		p.Finished(&running[i].ticket, 1<<40)
	}
	// Conservation: once every dispatched request finished, the router's books are empty.
	if st.Global.InFlight != 0 || st.Global.Completed != st.Global.Admitted {
		t.Fatalf("in flight %d, completed %d of %d admitted", st.Global.InFlight, st.Global.Completed, st.Global.Admitted)
	}
	for i, l := range st.Loads {
		if l != (InstanceLoad{}) {
			t.Fatalf("instance %d still charged %+v", i, l)
		}
	}
	for _, id := range st.TenantIDs() {
		if n := st.Tenant(id).ActiveRequests; n != 0 {
			t.Fatalf("tenant %d still has %d active", id, n)
		}
	}
	return h.Sum64()
}

func TestPipelineIsDeterministic(t *testing.T) {
	for _, text := range []string{
		`admission: {policy: rate-limit, params: {rate: 500, per_tenant: true}}
priority: {policy: deadline-aware}
routing: {policy: weighted, scorers: [{name: prefix-cache-scorer, weight: 3}, {name: no-hit-lru-scorer, weight: 1}, {name: token-load-scorer, weight: 1}, {name: active-request-scorer, weight: 1}], params: {picker: weighted-random}}`,
		`admission: {cel: "tenant.recentRate < 400.0 || request.sloClass == 'critical'"}
priority: {cel: "double(request.inputTokens) / 64.0"}
routing: {cel: "instance.prefixMatch * 4.0 - double(instance.activeRequests) + request.priority / 100.0"}`,
	} {
		a, b := runTrace(t, text), runTrace(t, text)
		if a != b {
			t.Fatalf("two runs of the same bundle differ:\n%s", text)
		}
	}
}
