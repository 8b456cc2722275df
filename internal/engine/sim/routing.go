package sim

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
)

// Snapshot is what a router may observe about one instance when it routes a request. The
// simulator fills it synchronously at the routing event, so it is never stale here; the policy
// layer adds staleness by refreshing its own copies on a schedule.
type Snapshot struct {
	// QueueDepth is the number of requests in the instance's wait queue.
	QueueDepth int32
	// BatchSize is the number of requests in its running batch.
	BatchSize int32
	// Pending is the number of requests routed to it that have not yet entered its wait queue
	// (they are in the API-server queueing delay).
	Pending int32
	// InFlight is every request routed to the instance and not yet finished:
	// Pending + QueueDepth + BatchSize.
	InFlight int32
	// FreeKVBlocks and TotalKVBlocks describe the KV cache.
	FreeKVBlocks, TotalKVBlocks int32
	// KVUtilization is the fraction of KV blocks in use.
	KVUtilization float64
}

// RouteRequest is the read-only view of a request a router gets.
type RouteRequest struct {
	ID                  uint64
	Arrival             int64
	InputLen, OutputLen int32
	Client, Tenant      int32
	Class               int32
	Session             uint64
}

// Router chooses the instance that serves a request.
type Router interface {
	// Route returns an index into snaps. The simulator rejects an out-of-range answer with an
	// error rather than guessing.
	Route(req *RouteRequest, snaps []Snapshot) int
}

// RouterFactory builds a fresh router for one run, so that a Config can be run many times with
// identical results. rng is the run's "router" stream for randomized policies.
type RouterFactory func(instances int, rng *rand.Rand) Router

type roundRobin struct{ next int }

func (r *roundRobin) Route(_ *RouteRequest, snaps []Snapshot) int {
	i := r.next % len(snaps)
	r.next = i + 1
	return i
}

// RoundRobin routes requests to instances 0, 1, ..., n-1, 0, ... in arrival order.
func RoundRobin(int, *rand.Rand) Router { return &roundRobin{} }

type leastLoaded struct{}

func (leastLoaded) Route(_ *RouteRequest, snaps []Snapshot) int {
	best := 0
	for i := 1; i < len(snaps); i++ {
		if snaps[i].InFlight < snaps[best].InFlight {
			best = i
		}
	}
	return best
}

// LeastLoaded routes each request to the instance with the fewest in-flight requests (routed
// and not finished); ties go to the lowest index.
func LeastLoaded(int, *rand.Rand) Router { return leastLoaded{} }

var routers = map[string]RouterFactory{
	"round-robin":  RoundRobin,
	"least-loaded": LeastLoaded,
}

// RouterNames lists the known routing policies, sorted.
func RouterNames() []string {
	names := make([]string, 0, len(routers))
	for n := range routers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// RouterByName returns the routing policy with the given name.
func RouterByName(name string) (RouterFactory, error) {
	if f, ok := routers[name]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("unknown routing policy %q (known: %s)", name, strings.Join(RouterNames(), ", "))
}
