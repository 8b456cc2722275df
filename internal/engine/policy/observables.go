package policy

import "sort"

// Default thresholds of llm-d's utilization saturation detector, also the defaults of BLIS's
// gaie-legacy admission.
const (
	DefaultSaturationQueueThreshold = 5.0
	DefaultSaturationKVThreshold    = 0.8
)

// obsType is the CEL type of an observable.
type obsType int8

const (
	obsInt obsType = iota
	obsDouble
	obsString
	obsUint
)

// scope bits: which policy kinds may observe a signal (architectural locality).
const (
	scopeAdmission uint8 = 1 << iota
	scopePriority
	scopeRouting
	scopeRouter = scopeAdmission | scopePriority | scopeRouting
)

// observable is one documented signal a CEL expression or decision tree may read.
type observable struct {
	name  string
	typ   obsType
	scope uint8
	num   func(e *evalEnv) float64
	str   func(e *evalEnv) string
	u64   func(e *evalEnv) uint64
	doc   string
}

// aggregates are the cluster-wide summaries of the snapshots seen by one decision.
type aggregates struct {
	instances          int
	minQueue, maxQueue int32
	avgQueue, avgKV    float64
	maxKV, saturation  float64
}

func (a *aggregates) compute(snaps []InstanceSnapshot) {
	*a = aggregates{instances: len(snaps)}
	if len(snaps) == 0 {
		a.saturation = 1 // an empty pool counts as saturated, as llm-d's detector does
		return
	}
	a.minQueue, a.maxQueue = snaps[0].QueueDepth, snaps[0].QueueDepth
	var sq, skv, sat float64
	for i := range snaps {
		s := &snaps[i]
		a.minQueue, a.maxQueue = min(a.minQueue, s.QueueDepth), max(a.maxQueue, s.QueueDepth)
		sq += float64(s.QueueDepth)
		skv += s.KVUtilization
		a.maxKV = max(a.maxKV, s.KVUtilization)
		sat += max(float64(s.QueueDepth)/DefaultSaturationQueueThreshold, s.KVUtilization/DefaultSaturationKVThreshold)
	}
	n := float64(len(snaps))
	a.avgQueue, a.avgKV, a.saturation = sq/n, skv/n, sat/n
}

// evalEnv is the input of one CEL or decision-tree evaluation.
type evalEnv struct {
	req    *RequestView
	st     *RouterState
	snaps  []InstanceSnapshot
	now    int64
	inst   int // instance being scored (routing), else -1
	agg    aggregates
	scores *scoreCache // llm-d scorer values (routing only)
}

// Scorers exposed to CEL and trees as score.* observables, with llm-d's default parameters.
const (
	scoreQueue = iota
	scoreKV
	scorePrefix
	scoreLoadAware
	scoreActive
	scoreTokenLoad
	scoreRunning
	scoreLoadBalance
	numScoreObs
)

// scoreCache computes an llm-d scorer's column for all instances the first time an expression
// reads it in a decision, and serves the per-instance values from it afterwards.
type scoreCache struct {
	gen      uint64
	computed [numScoreObs]uint64
	cols     [numScoreObs][]float64
	scorers  [numScoreObs]scorer
	ctx      scoreCtx
}

func newScoreCache(n int) *scoreCache {
	c := &scoreCache{scorers: [numScoreObs]scorer{
		queueScorer{}, kvScorer{}, prefixScorer{scale: DefaultMatchLengthScaleTokens},
		loadAwareScorer{threshold: DefaultLoadAwareThreshold}, activeScorer{maxBusy: 1},
		tokenLoadScorer{threshold: DefaultQueueThresholdTokens}, runningScorer{}, loadBalanceScorer{},
	}}
	for i := range c.cols {
		c.cols[i] = make([]float64, n)
	}
	return c
}

// begin starts a new decision.
func (c *scoreCache) begin(sc *scoreCtx) {
	c.gen++
	blockSize := c.ctx.blockSize
	c.ctx = *sc
	if c.ctx.blockSize == 0 {
		c.ctx.blockSize = blockSize
	}
}

func (e *evalEnv) score(k int) float64 {
	c := e.scores
	if c == nil || e.inst < 0 {
		return 0
	}
	if c.computed[k] != c.gen {
		c.scorers[k].score(&c.ctx, c.cols[k][:len(e.snaps)])
		c.computed[k] = c.gen
	}
	return c.cols[k][e.inst]
}

func (e *evalEnv) snap() *InstanceSnapshot { return &e.snaps[e.inst] }

func (e *evalEnv) tenant() *TenantState { return e.st.Tenant(e.req.Tenant) }

func (e *evalEnv) prefixMatch() int32 {
	if e.inst < len(e.st.PrefixMatch) {
		return e.st.PrefixMatch[e.inst]
	}
	return 0
}

// observables is the complete, documented list (seed 001 §D.7 plus router aggregates).
var observables = []observable{
	{name: "request.inputTokens", typ: obsInt, scope: scopeRouter, doc: "prompt length in tokens",
		num: func(e *evalEnv) float64 { return float64(e.req.InputTokens) }},
	{name: "request.maxTokens", typ: obsInt, scope: scopeRouter, doc: "requested output bound (max_tokens)",
		num: func(e *evalEnv) float64 { return float64(e.req.MaxTokens) }},
	{name: "request.tenant", typ: obsString, scope: scopeRouter, doc: "tenant name",
		str: func(e *evalEnv) string { return e.req.TenantName }},
	{name: "request.sloClass", typ: obsString, scope: scopeRouter, doc: "SLO class name",
		str: func(e *evalEnv) string { return e.req.ClassName }},
	{name: "request.prefixHash", typ: obsUint, scope: scopeRouter, doc: "hash of the first prompt block (0 if none)",
		num: func(e *evalEnv) float64 { return float64(firstHash(e.req)) },
		u64: func(e *evalEnv) uint64 { return firstHash(e.req) }},
	{name: "request.prefixBlocks", typ: obsInt, scope: scopeRouter, doc: "number of full prompt blocks hashed for the router",
		num: func(e *evalEnv) float64 { return float64(len(e.req.PrefixHashes)) }},
	{name: "request.attempt", typ: obsInt, scope: scopeRouter, doc: "admission DELAYs so far",
		num: func(e *evalEnv) float64 { return float64(e.req.Attempt) }},
	{name: "request.ageUs", typ: obsInt, scope: scopeRouter, doc: "time since arrival (µs)",
		num: func(e *evalEnv) float64 { return float64(e.now - e.req.Arrival) }},
	{name: "request.priority", typ: obsDouble, scope: scopeRouting, doc: "priority score from the priority stage",
		num: func(e *evalEnv) float64 { return e.req.Priority }},

	{name: "tenant.requestCount", typ: obsInt, scope: scopeRouter, doc: "requests of the tenant so far",
		num: func(e *evalEnv) float64 { return float64(e.tenant().RequestCount) }},
	{name: "tenant.activeRequests", typ: obsInt, scope: scopeRouter, doc: "dispatched, unfinished requests of the tenant",
		num: func(e *evalEnv) float64 { return float64(e.tenant().ActiveRequests) }},
	{name: "tenant.recentRate", typ: obsDouble, scope: scopeRouter, doc: "tenant arrival rate (req/s, sliding window)",
		num: func(e *evalEnv) float64 { return e.tenant().RecentRate(e.now) }},

	{name: "global.inFlight", typ: obsInt, scope: scopeRouter, doc: "dispatched, unfinished requests",
		num: func(e *evalEnv) float64 { return float64(e.st.Global.InFlight) }},
	{name: "global.requestRate", typ: obsDouble, scope: scopeRouter, doc: "arrival rate (req/s, sliding window)",
		num: func(e *evalEnv) float64 { return e.st.Global.RequestRate(e.now) }},
	{name: "global.throughput", typ: obsDouble, scope: scopeRouter, doc: "completion rate (req/s, sliding window)",
		num: func(e *evalEnv) float64 { return e.st.Global.Throughput(e.now) }},
	{name: "global.instances", typ: obsInt, scope: scopeRouter, doc: "number of routable instances",
		num: func(e *evalEnv) float64 { return float64(e.agg.instances) }},
	{name: "global.avgQueueDepth", typ: obsDouble, scope: scopeRouter, doc: "mean waiting queue over instances",
		num: func(e *evalEnv) float64 { return e.agg.avgQueue }},
	{name: "global.minQueueDepth", typ: obsInt, scope: scopeRouter, doc: "shortest waiting queue",
		num: func(e *evalEnv) float64 { return float64(e.agg.minQueue) }},
	{name: "global.maxQueueDepth", typ: obsInt, scope: scopeRouter, doc: "longest waiting queue",
		num: func(e *evalEnv) float64 { return float64(e.agg.maxQueue) }},
	{name: "global.avgKVUtilization", typ: obsDouble, scope: scopeRouter, doc: "mean KV utilization",
		num: func(e *evalEnv) float64 { return e.agg.avgKV }},
	{name: "global.maxKVUtilization", typ: obsDouble, scope: scopeRouter, doc: "highest KV utilization",
		num: func(e *evalEnv) float64 { return e.agg.maxKV }},
	{name: "global.saturation", typ: obsDouble, scope: scopeRouter,
		doc: "mean over instances of max(queue/5, kv/0.8) (llm-d utilization detector)",
		num: func(e *evalEnv) float64 { return e.agg.saturation }},

	{name: "instance.index", typ: obsInt, scope: scopeRouting, doc: "instance index",
		num: func(e *evalEnv) float64 { return float64(e.inst) }},
	{name: "instance.queueDepth", typ: obsInt, scope: scopeRouting, doc: "waiting requests",
		num: func(e *evalEnv) float64 { return float64(e.snap().QueueDepth) }},
	{name: "instance.batchSize", typ: obsInt, scope: scopeRouting, doc: "running requests",
		num: func(e *evalEnv) float64 { return float64(e.snap().BatchSize) }},
	{name: "instance.kvUtilization", typ: obsDouble, scope: scopeRouting, doc: "KV blocks in use, fraction",
		num: func(e *evalEnv) float64 { return e.snap().KVUtilization }},
	{name: "instance.freeKVBlocks", typ: obsInt, scope: scopeRouting, doc: "free KV blocks",
		num: func(e *evalEnv) float64 { return float64(e.snap().FreeKVBlocks) }},
	{name: "instance.inFlight", typ: obsInt, scope: scopeRouting, doc: "routed, unfinished requests (snapshot)",
		num: func(e *evalEnv) float64 { return float64(e.snap().InFlightRequests) }},
	{name: "instance.load", typ: obsInt, scope: scopeRouting, doc: "BLIS effective load: queue + batch + in-flight",
		num: func(e *evalEnv) float64 { return float64(e.snap().EffectiveLoad()) }},
	{name: "instance.cacheHitRate", typ: obsDouble, scope: scopeRouting, doc: "recent prefix-cache hit rate",
		num: func(e *evalEnv) float64 { return e.snap().CacheHitRate }},
	{name: "instance.recentTTFT", typ: obsDouble, scope: scopeRouting, doc: "recent mean TTFT (µs)",
		num: func(e *evalEnv) float64 { return e.snap().RecentTTFT }},
	{name: "instance.recentTPOT", typ: obsDouble, scope: scopeRouting, doc: "recent mean TPOT (µs)",
		num: func(e *evalEnv) float64 { return e.snap().RecentTPOT }},
	{name: "instance.estimatedWait", typ: obsDouble, scope: scopeRouting, doc: "estimated queueing delay (µs)",
		num: func(e *evalEnv) float64 { return e.snap().EstimatedWait }},
	{name: "instance.activeRequests", typ: obsInt, scope: scopeRouting, doc: "router-tracked in-flight requests",
		num: func(e *evalEnv) float64 { return float64(e.st.Loads[e.inst].ActiveRequests) }},
	{name: "instance.inFlightTokens", typ: obsInt, scope: scopeRouting, doc: "router-tracked uncached prompt tokens in flight",
		num: func(e *evalEnv) float64 { return float64(e.st.Loads[e.inst].InFlightTokens) }},
	{name: "instance.prefixMatchBlocks", typ: obsInt, scope: scopeRouting, doc: "prompt blocks the router's prefix index credits to the instance",
		num: func(e *evalEnv) float64 { return float64(e.prefixMatch()) }},
	{name: "score.queue", typ: obsDouble, scope: scopeRouting, doc: "llm-d queue-scorer value",
		num: func(e *evalEnv) float64 { return e.score(scoreQueue) }},
	{name: "score.kvCacheUtilization", typ: obsDouble, scope: scopeRouting, doc: "llm-d kv-cache-utilization-scorer value",
		num: func(e *evalEnv) float64 { return e.score(scoreKV) }},
	{name: "score.prefixCache", typ: obsDouble, scope: scopeRouting, doc: "llm-d prefix-cache-scorer value (approximate producer, matchLengthWeight 0)",
		num: func(e *evalEnv) float64 { return e.score(scorePrefix) }},
	{name: "score.loadAware", typ: obsDouble, scope: scopeRouting, doc: "llm-d load-aware-scorer value (threshold 128)",
		num: func(e *evalEnv) float64 { return e.score(scoreLoadAware) }},
	{name: "score.activeRequest", typ: obsDouble, scope: scopeRouting, doc: "llm-d active-request-scorer value (defaults)",
		num: func(e *evalEnv) float64 { return e.score(scoreActive) }},
	{name: "score.tokenLoad", typ: obsDouble, scope: scopeRouting, doc: "llm-d token-load-scorer value (default threshold)",
		num: func(e *evalEnv) float64 { return e.score(scoreTokenLoad) }},
	{name: "score.runningRequests", typ: obsDouble, scope: scopeRouting, doc: "llm-d running-requests-size-scorer value",
		num: func(e *evalEnv) float64 { return e.score(scoreRunning) }},
	{name: "score.loadBalance", typ: obsDouble, scope: scopeRouting, doc: "BLIS load-balance scorer value",
		num: func(e *evalEnv) float64 { return e.score(scoreLoadBalance) }},
	{name: "instance.prefixMatch", typ: obsDouble, scope: scopeRouting, doc: "prefixMatchBlocks / blocks looked up (the prefix-cache-scorer value with matchLengthWeight 0)",
		num: func(e *evalEnv) float64 {
			if e.st.PrefixTotal == 0 {
				return 0
			}
			return float64(e.prefixMatch()) / float64(e.st.PrefixTotal)
		}},
}

func firstHash(r *RequestView) uint64 {
	if len(r.PrefixHashes) == 0 {
		return 0
	}
	return r.PrefixHashes[0]
}

// observableIndex maps names to positions in observables.
var observableIndex = func() map[string]int {
	m := make(map[string]int, len(observables))
	for i, o := range observables {
		m[o.name] = i
	}
	return m
}()

func kindScope(k Kind) uint8 {
	switch k {
	case KindAdmission:
		return scopeAdmission
	case KindPriority:
		return scopePriority
	case KindRouting:
		return scopeRouting
	}
	return 0
}

// Observables returns the names of the signals visible to policies of kind k, sorted.
func Observables(k Kind) []string {
	s := kindScope(k)
	var out []string
	for _, o := range observables {
		if o.scope&s != 0 {
			out = append(out, o.name)
		}
	}
	sort.Strings(out)
	return out
}
