package policy_test

import (
	"fmt"

	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/rng"
)

// cluster stands in for the simulator: it owns the live instance state.
type cluster struct{ queue []int32 }

func (c *cluster) Observe(i int, now int64, dst *policy.InstanceSnapshot) {
	*dst = policy.InstanceSnapshot{Index: int32(i), QueueDepth: c.queue[i], KVUtilization: 0.1 * float64(c.queue[i])}
}

// Example shows the calls the simulator makes for each request.
func Example() {
	bundle, err := policy.Parse([]byte(`
admission: {policy: gaie-legacy, latency_us: 20}
priority: {policy: slo-based}
routing:
  policy: weighted
  scorers: [{name: prefix-cache-scorer, weight: 3}, {name: queue-scorer, weight: 2}]
  latency_us: 100
scheduler: priority-fcfs
`))
	if err != nil {
		panic(err)
	}
	live := &cluster{queue: []int32{0, 0}}
	p, err := policy.Build(bundle, policy.BuildEnv{
		Instances:   []policy.InstanceInfo{{TotalKVBlocks: 1000, BlockSize: 16}, {TotalKVBlocks: 1000, BlockSize: 16}},
		TenantNames: []string{""}, ClassNames: []string{"standard", "critical"},
		RNG: rng.Derive(42, rng.Router),
	})
	if err != nil {
		panic(err)
	}
	snaps, _ := policy.NewSnapshotProvider(2, p.Observability(), live)
	var tickets []policy.Ticket
	for id := uint64(1); id <= 4; id++ {
		now := int64(id) * 1000
		// The simulator hashes the prompt in blocks of p.PrefixBlockSize() tokens; all
		// requests share their first two blocks. Request 2 finds them on instance 1 but its
		// shorter queue on instance 0 balances that; from then on both instances are warm
		// and the queue decides.
		hashes := []uint64{7, 8, 100 + id}
		v := policy.RequestView{ID: id, Arrival: now, InputTokens: 200, ClassName: "standard", PrefixHashes: hashes}
		p.Arrive(&v, now)
		now += p.AdmissionLatency()
		if d := p.Admit(&v, snaps.Snapshots(now), now); d.Action != policy.Admit {
			continue
		}
		p.Prioritize(&v, snaps.Snapshots(now), now)
		now += p.RoutingLatency()
		d := p.Route(&v, snaps.Snapshots(now), now)
		live.queue[d.Target]++
		tickets = append(tickets, d.Ticket)
		fmt.Printf("request %d -> instance %d (scores %.2f)\n", id, d.Target, d.Scores)
	}
	for i := range tickets {
		p.Finished(&tickets[i], 10_000)
	}
	fmt.Println("in flight after completion:", p.State().Global.InFlight, "hash block size:", p.PrefixBlockSize())
	// Output:
	// request 1 -> instance 1 (scores [2.00 2.00])
	// request 2 -> instance 0 (scores [2.00 2.00])
	// request 3 -> instance 0 (scores [4.00 4.00])
	// request 4 -> instance 1 (scores [2.00 4.00])
	// in flight after completion: 0 hash block size: 64
}
