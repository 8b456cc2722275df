package policy

import "sort"

// rateBuckets is the resolution of the sliding-window rate counters.
const rateBuckets = 10

// DefaultRateWindow is the sliding window (µs) over which recent rates are measured.
const DefaultRateWindow int64 = 1_000_000

// rateWindow counts events in a sliding window of rateBuckets equal buckets. Integer counts keep
// the rate bit-identical on every platform (no exponential decay through math.Exp).
type rateWindow struct {
	width  int64 // bucket width in µs
	start  int64 // start time of the newest bucket
	head   int   // index of the newest bucket
	counts [rateBuckets]int32
	total  int64
	primed bool
}

func (w *rateWindow) advance(now int64) {
	if !w.primed {
		w.start = now - now%w.width
		w.primed = true
		return
	}
	for now >= w.start+w.width {
		// Skipping many empty buckets at once keeps a long idle gap O(rateBuckets).
		if now >= w.start+w.width*rateBuckets {
			w.counts = [rateBuckets]int32{}
			w.total = 0
			w.start = now - now%w.width
			return
		}
		w.head = (w.head + 1) % rateBuckets
		w.total -= int64(w.counts[w.head])
		w.counts[w.head] = 0
		w.start += w.width
	}
}

func (w *rateWindow) add(now int64) {
	w.advance(now)
	w.counts[w.head]++
	w.total++
}

// rate returns events per second over the window ending at now.
func (w *rateWindow) rate(now int64) float64 {
	w.advance(now)
	return float64(w.total) * 1e6 / float64(w.width*rateBuckets)
}

// TenantState is the router's view of one tenant.
type TenantState struct {
	// RequestCount is the number of requests of the tenant that arrived so far.
	RequestCount int64
	// ActiveRequests counts the tenant's dispatched requests that have not finished.
	ActiveRequests int32
	arrivals       rateWindow
}

// RecentRate is the tenant's arrival rate (requests/s) over the last rate window.
func (t *TenantState) RecentRate(now int64) float64 { return t.arrivals.rate(now) }

// GlobalState is the router's cluster-wide view.
type GlobalState struct {
	// InFlight counts dispatched requests that have not finished.
	InFlight int32
	// Arrived, Admitted, Rejected and Completed count requests by stage.
	Arrived, Admitted, Rejected, Completed int64
	arrivals, completions                  rateWindow
}

// RequestRate is the arrival rate (requests/s) over the last rate window.
func (g *GlobalState) RequestRate(now int64) float64 { return g.arrivals.rate(now) }

// Throughput is the completion rate (requests/s) over the last rate window.
func (g *GlobalState) Throughput(now int64) float64 { return g.completions.rate(now) }

// InstanceLoad is what the router itself tracks per instance (llm-d's in-flight load producer):
// always current, independent of snapshot staleness.
type InstanceLoad struct {
	// ActiveRequests counts requests dispatched to the instance and not finished.
	ActiveRequests int32
	// InFlightTokens sums the uncached prompt tokens of dispatched requests whose prompt is
	// still being processed (released at the first token of streaming requests, else at the end).
	InFlightTokens int64
}

// RouterState is the router's state: per-tenant and global counters, router-side per-instance
// load, and the shadow prefix index. Tenants and instances are slices indexed by their ids, so
// every traversal is in a fixed order.
type RouterState struct {
	// Clock is the time of the latest event the router saw.
	Clock int64
	// Global holds cluster-wide counters.
	Global      GlobalState
	tenants     []TenantState
	tenantNames []string
	// Loads holds the router-tracked load of each instance, indexed by instance.
	Loads []InstanceLoad
	// Prefix is the shadow prefix index (nil when no policy needs one).
	Prefix *PrefixIndex
	// PrefixMatch holds, for the request being decided, the matched prefix blocks per
	// instance as llm-d's approximate producer computes them; PrefixTotal is the number of
	// blocks looked up. Valid during one decision.
	PrefixMatch []int32
	PrefixTotal int32
	window      int64
}

// NewRouterState returns the state of a router over n instances. tenantNames names the tenant
// indices (index 0 is the default tenant); it may be nil.
func NewRouterState(n int, tenantNames []string, window int64) *RouterState {
	if window < rateBuckets {
		window = DefaultRateWindow // a bucket must be at least 1 µs wide
	}
	s := &RouterState{
		Loads:       make([]InstanceLoad, n),
		PrefixMatch: make([]int32, n),
		tenantNames: tenantNames,
		window:      window,
	}
	s.Global.arrivals.width = window / rateBuckets
	s.Global.completions.width = window / rateBuckets
	s.tenants = make([]TenantState, len(tenantNames))
	for i := range s.tenants {
		s.tenants[i].arrivals.width = window / rateBuckets
	}
	return s
}

// Tenant returns the state of tenant index i, growing the table for indices not seen before.
func (s *RouterState) Tenant(i int32) *TenantState {
	if i < 0 {
		i = 0
	}
	for int(i) >= len(s.tenants) {
		s.tenants = append(s.tenants, TenantState{arrivals: rateWindow{width: s.window / rateBuckets}})
	}
	return &s.tenants[i]
}

// TenantName returns the name of tenant index i ("" when unknown).
func (s *RouterState) TenantName(i int32) string {
	if i >= 0 && int(i) < len(s.tenantNames) {
		return s.tenantNames[i]
	}
	return ""
}

// TenantIDs returns the tenant indices seen so far, sorted by tenant name and then index.
func (s *RouterState) TenantIDs() []int32 {
	ids := make([]int32, len(s.tenants))
	for i := range ids {
		ids[i] = int32(i)
	}
	sort.SliceStable(ids, func(a, b int) bool { return s.TenantName(ids[a]) < s.TenantName(ids[b]) })
	return ids
}

// InstanceIDs returns the instance indices in ascending order.
func (s *RouterState) InstanceIDs() []int32 {
	ids := make([]int32, len(s.Loads))
	for i := range ids {
		ids[i] = int32(i)
	}
	return ids
}

// arrive records a request's arrival.
func (s *RouterState) arrive(tenant int32, now int64) {
	s.Clock = now
	t := s.Tenant(tenant)
	t.RequestCount++
	t.arrivals.add(now)
	s.Global.Arrived++
	s.Global.arrivals.add(now)
}
