package policy

import (
	"fmt"
	"math"
)

// DefaultSLOPriorities are the GAIE priorities of BLIS's SLO classes (negative = sheddable).
// Unknown or empty classes rank as "standard".
var DefaultSLOPriorities = map[string]int{
	"critical": 4, "standard": 3, "batch": -1, "sheddable": -2, "background": -3,
}

// sloTable resolves SLO class indices to priorities without map lookups on the hot path.
type sloTable struct {
	byClass []float64 // indexed by class index
	names   map[string]float64
	def     float64
}

func newSLOTable(classNames []string, overrides map[string]int) *sloTable {
	t := &sloTable{names: make(map[string]float64), def: float64(DefaultSLOPriorities["standard"])}
	for k, v := range DefaultSLOPriorities {
		t.names[k] = float64(v)
	}
	for k, v := range overrides {
		t.names[k] = float64(v)
	}
	if v, ok := t.names["standard"]; ok {
		t.def = v
	}
	t.byClass = make([]float64, len(classNames))
	for i, n := range classNames {
		t.byClass[i] = t.lookupName(n)
	}
	return t
}

func (t *sloTable) lookupName(name string) float64 {
	if v, ok := t.names[name]; ok {
		return v
	}
	return t.def
}

func (t *sloTable) priority(r *RequestView) float64 {
	if r.Class >= 0 && int(r.Class) < len(t.byClass) {
		return t.byClass[r.Class]
	}
	return t.lookupName(r.ClassName)
}

type alwaysAdmit struct{}

func (alwaysAdmit) Decide(*RequestView, *RouterState, []InstanceSnapshot, int64) AdmissionDecision {
	return AdmissionDecision{Action: Admit}
}

type rejectAll struct{}

func (rejectAll) Decide(*RequestView, *RouterState, []InstanceSnapshot, int64) AdmissionDecision {
	return AdmissionDecision{Action: Reject, Reason: "reject-all"}
}

// bucket is one token bucket, full at start (BLIS semantics).
type bucket struct {
	tokens     float64
	lastRefill int64
}

// tokenBucket admits a request when its cost (input tokens, or 1 per request) is available.
type tokenBucket struct {
	capacity, refill float64 // tokens, tokens per second
	perTenant        bool
	perRequest       bool
	buckets          []bucket
}

func (t *tokenBucket) Decide(r *RequestView, _ *RouterState, _ []InstanceSnapshot, now int64) AdmissionDecision {
	i := 0
	if t.perTenant {
		i = int(max(r.Tenant, 0))
	}
	for i >= len(t.buckets) {
		t.buckets = append(t.buckets, bucket{tokens: t.capacity})
	}
	b := &t.buckets[i]
	if elapsed := now - b.lastRefill; elapsed > 0 {
		b.tokens = min(t.capacity, b.tokens+float64(elapsed)*t.refill/1e6)
		b.lastRefill = now
	}
	cost := float64(r.InputTokens)
	if t.perRequest {
		cost = 1
	}
	if b.tokens >= cost {
		b.tokens -= cost
		return AdmissionDecision{Action: Admit}
	}
	return AdmissionDecision{Action: Reject, Reason: "insufficient tokens"}
}

// rateLimit admits at most rate requests per second over a sliding window, globally or per
// tenant; over the limit it rejects, or delays up to maxAttempts times before rejecting.
type rateLimit struct {
	limit       int64
	window      int64
	perTenant   bool
	delay       int64
	maxAttempts int32
	windows     []rateWindow
}

func (p *rateLimit) Decide(r *RequestView, _ *RouterState, _ []InstanceSnapshot, now int64) AdmissionDecision {
	i := 0
	if p.perTenant {
		i = int(max(r.Tenant, 0))
	}
	for i >= len(p.windows) {
		p.windows = append(p.windows, rateWindow{width: p.window / rateBuckets})
	}
	w := &p.windows[i]
	w.advance(now)
	if w.total < p.limit {
		w.add(now)
		return AdmissionDecision{Action: Admit}
	}
	if p.delay > 0 && r.Attempt < p.maxAttempts {
		return AdmissionDecision{Action: Delay, Delay: p.delay, Reason: "rate limit: delayed"}
	}
	return AdmissionDecision{Action: Reject, Reason: "rate limit exceeded"}
}

// tenantQuota caps each tenant's in-flight requests at floor(quota × capacity).
type tenantQuota struct {
	limits []int64 // by tenant index
	names  map[string]float64
	def    float64
	cap    float64
}

func (p *tenantQuota) limit(r *RequestView) int64 {
	if r.Tenant >= 0 && int(r.Tenant) < len(p.limits) {
		return p.limits[r.Tenant]
	}
	q, ok := p.names[r.TenantName]
	if !ok {
		q = p.def
	}
	return int64(math.Floor(q * p.cap))
}

func (p *tenantQuota) Decide(r *RequestView, st *RouterState, _ []InstanceSnapshot, _ int64) AdmissionDecision {
	if int64(st.Tenant(r.Tenant).ActiveRequests) >= p.limit(r) {
		return AdmissionDecision{Action: Reject, Reason: "tenant quota exceeded"}
	}
	return AdmissionDecision{Action: Admit}
}

// tierShed is BLIS's tier-shed: when the largest EffectiveLoad exceeds threshold, requests whose
// SLO-class priority is below minPriority are rejected.
type tierShed struct {
	threshold   int64
	minPriority float64
	slo         *sloTable
}

func (p *tierShed) Decide(r *RequestView, _ *RouterState, snaps []InstanceSnapshot, _ int64) AdmissionDecision {
	var maxLoad int64
	for i := range snaps {
		maxLoad = max(maxLoad, snaps[i].EffectiveLoad())
	}
	if maxLoad <= p.threshold || p.slo.priority(r) >= p.minPriority {
		return AdmissionDecision{Action: Admit}
	}
	return AdmissionDecision{Action: Reject, Reason: "tier-shed: overloaded, class below minimum priority"}
}

// gaieLegacy is BLIS's gaie-legacy (llm-d admission without flow control): sheddable requests
// (priority < 0) are rejected while the pool saturation mean(max(q/qT, kv/kvT)) is >= 1.
type gaieLegacy struct {
	qd, kv float64
	slo    *sloTable
}

// saturation is llm-d's utilization detector; an empty pool is saturated.
func saturation(snaps []InstanceSnapshot, qd, kv float64) float64 {
	if len(snaps) == 0 {
		return 1
	}
	var sum float64
	for i := range snaps {
		sum += max(float64(snaps[i].QueueDepth)/qd, snaps[i].KVUtilization/kv)
	}
	return sum / float64(len(snaps))
}

func (p *gaieLegacy) Decide(r *RequestView, _ *RouterState, snaps []InstanceSnapshot, _ int64) AdmissionDecision {
	if p.slo.priority(r) >= 0 || saturation(snaps, p.qd, p.kv) < 1.0 {
		return AdmissionDecision{Action: Admit}
	}
	return AdmissionDecision{Action: Reject, Reason: "system saturated, sheddable request dropped"}
}

// buildAdmissionTemplate instantiates an admission template.
func buildAdmissionTemplate(name string, r *paramReader, c *buildCtx) (AdmissionPolicy, error) {
	switch name {
	case "always-admit":
		return alwaysAdmit{}, nil
	case "reject-all":
		return rejectAll{}, nil
	case "token-bucket":
		p := &tokenBucket{
			capacity:  r.float("capacity", 10000),
			refill:    r.float("refill_rate", 1000),
			perTenant: r.bool("per_tenant", false),
		}
		p.perRequest = r.str("cost", "input-tokens", "input-tokens", "request") == "request"
		if p.capacity <= 0 {
			return nil, fmt.Errorf("parameter \"capacity\": must be > 0, got %v", p.capacity)
		}
		if p.refill <= 0 {
			return nil, fmt.Errorf("parameter \"refill_rate\": must be > 0, got %v", p.refill)
		}
		return p, nil
	case "rate-limit":
		rate := r.float("rate", 100)
		window := r.int("window_us", DefaultRateWindow)
		p := &rateLimit{
			window:      window,
			perTenant:   r.bool("per_tenant", false),
			delay:       r.int("delay_us", 0),
			maxAttempts: int32(r.int("max_attempts", 10)),
		}
		if rate <= 0 {
			return nil, fmt.Errorf("parameter \"rate\": must be > 0, got %v", rate)
		}
		if window < rateBuckets {
			return nil, fmt.Errorf("parameter \"window_us\": must be >= %d, got %d", rateBuckets, window)
		}
		if p.delay < 0 {
			return nil, fmt.Errorf("parameter \"delay_us\": must be >= 0, got %d", p.delay)
		}
		p.limit = int64(math.Floor(rate * float64(window) / 1e6))
		if p.limit < 1 {
			return nil, fmt.Errorf("parameter \"rate\": %v req/s admits no request in a %d µs window", rate, window)
		}
		return p, nil
	case "tenant-quota":
		p := &tenantQuota{
			names: r.floatMap("quotas", c.tenantBudgets),
			def:   r.float("default_quota", 1),
			cap:   float64(r.int("capacity", 256)),
		}
		if p.cap <= 0 {
			return nil, fmt.Errorf("parameter \"capacity\": must be > 0, got %v", p.cap)
		}
		for _, k := range sortedKeys(p.names) {
			if v := p.names[k]; v < 0 || v > 1 {
				return nil, fmt.Errorf("parameter \"quotas\": tenant %q: must be in [0, 1], got %v", k, v)
			}
		}
		p.limits = make([]int64, len(c.tenantNames))
		for i, n := range c.tenantNames {
			q, ok := p.names[n]
			if !ok {
				q = p.def
			}
			p.limits[i] = int64(math.Floor(q * p.cap))
		}
		return p, nil
	case "tier-shed":
		p := &tierShed{
			threshold:   r.int("threshold", 0),
			minPriority: float64(r.int("min_priority", 3)),
			slo:         c.slo,
		}
		if p.threshold < 0 {
			return nil, fmt.Errorf("parameter \"threshold\": must be >= 0, got %d", p.threshold)
		}
		return p, nil
	case "gaie-legacy":
		p := &gaieLegacy{
			qd:  r.float("qd_threshold", DefaultSaturationQueueThreshold),
			kv:  r.float("kv_threshold", DefaultSaturationKVThreshold),
			slo: c.slo,
		}
		if p.qd <= 0 {
			return nil, fmt.Errorf("parameter \"qd_threshold\": must be > 0, got %v", p.qd)
		}
		if p.kv <= 0 || p.kv > 1 {
			return nil, fmt.Errorf("parameter \"kv_threshold\": must be in (0, 1], got %v", p.kv)
		}
		return p, nil
	}
	return nil, errUnknownTemplate
}
