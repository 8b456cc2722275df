package policy

import "fmt"

// Defaults of llm-d-router v0.10.0 that the scorers and the approximate prefix producer mirror.
const (
	// DefaultBlockSizeTokens is approx-prefix-cache-producer's blockSizeTokens.
	DefaultBlockSizeTokens = 16
	// MinBlockSizeTokens is the floor llm-d applies to the router's hashing block size.
	MinBlockSizeTokens = 64
	// DefaultMaxPrefixBlocks is maxPrefixBlocksToMatch (used only when the token cap is 0).
	DefaultMaxPrefixBlocks = 2048
	// DefaultMaxPrefixTokens is maxPrefixTokensToMatch.
	DefaultMaxPrefixTokens = 131072
	// DefaultLRUCapacityPerServer is lruCapacityPerServer (blocks remembered per instance).
	DefaultLRUCapacityPerServer = 31250
	// DefaultLoadAwareThreshold is load-aware-scorer's threshold (waiting requests).
	DefaultLoadAwareThreshold = 128
	// DefaultQueueThresholdTokens is token-load-scorer's queueThresholdTokens.
	DefaultQueueThresholdTokens = 4194304
	// DefaultNoHitLRUSize is no-hit-lru-scorer's lruSize.
	DefaultNoHitLRUSize = 1024
	// DefaultMatchLengthScaleTokens is prefix-cache-scorer's matchLengthScaleTokens.
	DefaultMatchLengthScaleTokens = 8192
)

// Scorer names (llm-d plugin types) and the BLIS names accepted as aliases.
const (
	ScorerQueue        = "queue-scorer"
	ScorerKVCache      = "kv-cache-utilization-scorer"
	ScorerPrefixCache  = "prefix-cache-scorer"
	ScorerLoadAware    = "load-aware-scorer"
	ScorerActive       = "active-request-scorer"
	ScorerTokenLoad    = "token-load-scorer"
	ScorerNoHitLRU     = "no-hit-lru-scorer"
	ScorerRunning      = "running-requests-size-scorer"
	ScorerLoadBalance  = "load-balance" // BLIS-native, no llm-d equivalent
	scorerPreciseAlias = "precise-prefix-cache"
)

// scorerAliases maps BLIS scorer names to llm-d plugin types.
var scorerAliases = map[string]string{
	"queue-depth":       ScorerQueue,
	"kv-utilization":    ScorerKVCache,
	"prefix-affinity":   ScorerPrefixCache,
	scorerPreciseAlias:  ScorerPrefixCache,
	"no-hit-lru":        ScorerNoHitLRU,
	"load-aware":        ScorerLoadAware,
	"active-requests":   ScorerActive,
	"inflight-requests": ScorerActive,
	"running-requests":  ScorerRunning,
	"token-load":        ScorerTokenLoad,
}

// ScorerNames lists the accepted scorer names: llm-d types first, then BLIS aliases.
func ScorerNames() []string {
	return []string{ScorerQueue, ScorerKVCache, ScorerPrefixCache, ScorerLoadAware, ScorerActive,
		ScorerTokenLoad, ScorerNoHitLRU, ScorerRunning, ScorerLoadBalance,
		"queue-depth", "kv-utilization", "prefix-affinity", scorerPreciseAlias, "no-hit-lru",
		"load-aware", "active-requests", "inflight-requests", "running-requests", "token-load"}
}

// CanonicalScorer resolves a scorer name or alias to its llm-d plugin type.
func CanonicalScorer(name string) (string, bool) {
	if c, ok := scorerAliases[name]; ok {
		return c, true
	}
	switch name {
	case ScorerQueue, ScorerKVCache, ScorerPrefixCache, ScorerLoadAware, ScorerActive,
		ScorerTokenLoad, ScorerNoHitLRU, ScorerRunning, ScorerLoadBalance:
		return name, true
	}
	return "", false
}

// PreciseMatcher reports an instance's real prefix-cache content, for prefix-cache-scorer with
// the precise producer (BLIS's precise-prefix-cache). The simulator answers from the instance's
// KV cache: matched is the number of leading prompt blocks cached there, total the number of
// full prompt blocks, blockSize the instance's KV block size in tokens.
type PreciseMatcher interface {
	CachedPrefix(instance int, req *RequestView) (matched, total, blockSize int32)
}

// scoreCtx is what a scorer sees for one decision.
type scoreCtx struct {
	req       *RequestView
	st        *RouterState
	snaps     []InstanceSnapshot
	now       int64
	blockSize int32 // router hashing block size
	cold      bool  // no instance matched a prefix block
	precise   PreciseMatcher
}

// scorer computes one dimension of the weighted score; values are in [0, 1] (load-aware in
// [0, 0.5]). Implementations write one value per instance and must not allocate.
type scorer interface {
	score(c *scoreCtx, out []float64)
}

// committer is implemented by scorers that learn from the routing outcome.
type committer interface {
	commit(c *scoreCtx, target int)
}

// queueScorer is llm-d's queue-scorer: min-max normalised waiting queue, shortest = 1, all
// equal = 1.
type queueScorer struct{}

func (queueScorer) score(c *scoreCtx, out []float64) {
	lo, hi := c.snaps[0].QueueDepth, c.snaps[0].QueueDepth
	for i := range c.snaps {
		q := c.snaps[i].QueueDepth
		lo, hi = min(lo, q), max(hi, q)
	}
	for i := range c.snaps {
		if hi == lo {
			out[i] = 1
			continue
		}
		out[i] = float64(hi-c.snaps[i].QueueDepth) / float64(hi-lo)
	}
}

// runningScorer is llm-d's running-requests-size-scorer: min-max normalised running batch.
type runningScorer struct{}

func (runningScorer) score(c *scoreCtx, out []float64) {
	lo, hi := c.snaps[0].BatchSize, c.snaps[0].BatchSize
	for i := range c.snaps {
		b := c.snaps[i].BatchSize
		lo, hi = min(lo, b), max(hi, b)
	}
	for i := range c.snaps {
		if hi == lo {
			out[i] = 1
			continue
		}
		out[i] = float64(hi-c.snaps[i].BatchSize) / float64(hi-lo)
	}
}

// kvScorer is llm-d's kv-cache-utilization-scorer: 1 - KV usage.
type kvScorer struct{}

func (kvScorer) score(c *scoreCtx, out []float64) {
	for i := range c.snaps {
		out[i] = 1 - c.snaps[i].KVUtilization
	}
}

// loadAwareScorer is llm-d's load-aware-scorer: 0.5 for an empty queue, then
// 0.5·(1 − min(waiting, threshold)/threshold).
type loadAwareScorer struct{ threshold float64 }

func (s loadAwareScorer) score(c *scoreCtx, out []float64) {
	for i := range c.snaps {
		w := float64(c.snaps[i].QueueDepth)
		if w == 0 {
			out[i] = 0.5
			continue
		}
		w = min(w, s.threshold)
		out[i] = 0.5 * (1.0 - w/s.threshold)
	}
}

// loadBalanceScorer is BLIS's load-balance scorer: 1/(1 + EffectiveLoad).
type loadBalanceScorer struct{}

func (loadBalanceScorer) score(c *scoreCtx, out []float64) {
	for i := range c.snaps {
		out[i] = 1 / (1 + float64(c.snaps[i].EffectiveLoad()))
	}
}

// activeScorer is llm-d's active-request-scorer over the router's own in-flight request
// counts: count <= idleThreshold scores 1, otherwise (max − count)/max · maxBusyScore.
type activeScorer struct {
	idle    int32
	maxBusy float64
}

func (s activeScorer) score(c *scoreCtx, out []float64) {
	var hi int32
	for i := range c.snaps {
		hi = max(hi, c.st.Loads[i].ActiveRequests)
	}
	for i := range c.snaps {
		n := c.st.Loads[i].ActiveRequests
		if n <= s.idle {
			out[i] = 1
			continue
		}
		out[i] = float64(hi-n) / float64(hi) * s.maxBusy
	}
}

// tokenLoadScorer is llm-d's token-load-scorer: in-flight uncached prompt tokens plus the
// incoming request's uncached prompt tokens on the instance, 1 − min(load, T)/T.
type tokenLoadScorer struct{ threshold float64 }

func (s tokenLoadScorer) score(c *scoreCtx, out []float64) {
	for i := range c.snaps {
		load := float64(c.st.Loads[i].InFlightTokens + uncachedTokens(c, i))
		if load <= 0 {
			out[i] = 1
			continue
		}
		load = min(load, s.threshold)
		out[i] = 1.0 - load/s.threshold
	}
}

// uncachedTokens is the prompt tokens of the current request that instance i is not predicted
// to hold: input − min(matched blocks × block size, input).
func uncachedTokens(c *scoreCtx, i int) int64 {
	in := int64(c.req.InputTokens)
	cached := int64(0)
	if len(c.st.PrefixMatch) > i {
		cached = min(int64(c.st.PrefixMatch[i])*int64(c.blockSize), in)
	}
	return in - cached
}

// prefixScorer is llm-d's prefix-cache-scorer:
// w·min(1, matched·blockSize/scale)² + (1 − w)·matched/total, 0 when total is 0.
type prefixScorer struct {
	weight  float64 // matchLengthWeight
	scale   float64 // matchLengthScaleTokens
	precise bool
}

func (s prefixScorer) score(c *scoreCtx, out []float64) {
	for i := range c.snaps {
		var matched, total, bs int32
		if s.precise {
			matched, total, bs = c.precise.CachedPrefix(i, c.req)
		} else {
			matched, total, bs = c.st.PrefixMatch[i], c.st.PrefixTotal, c.blockSize
		}
		if total == 0 {
			out[i] = 0
			continue
		}
		ratio := float64(matched) / float64(total)
		length := 0.0
		if s.weight > 0 && bs > 0 && s.scale > 0 {
			length = min(1.0, float64(matched)*float64(bs)/s.scale)
			length *= length
		}
		out[i] = s.weight*length + (1.0-s.weight)*ratio
	}
}

// noHitLRUScorer is llm-d's no-hit-lru-scorer. For a request with a cache hit somewhere every
// instance scores 0.5. For a cold request, instances that never received a cold request score
// 1 − k/(n−1) (k-th such instance in index order), then instances in least-recently-used order
// continue the ranking; scores are clamped at 0. The routed instance of a cold request moves to
// the most recent position of an LRU bounded by lruSize.
type noHitLRUScorer struct {
	size  int
	order []int32 // oldest first
	pos   []int32 // scratch: position in order per instance, -1 = never used
}

func (s *noHitLRUScorer) score(c *scoreCtx, out []float64) {
	n := len(c.snaps)
	if !c.cold {
		for i := range out[:n] {
			out[i] = 0.5
		}
		return
	}
	if n == 1 {
		out[0] = 1
		return
	}
	if cap(s.pos) < n {
		s.pos = make([]int32, n)
	}
	s.pos = s.pos[:n]
	for i := range s.pos {
		s.pos[i] = -1
	}
	for p, inst := range s.order {
		if int(inst) < n {
			s.pos[inst] = int32(p)
		}
	}
	never := 0
	for i := 0; i < n; i++ {
		if s.pos[i] < 0 {
			out[i] = 1.0 - float64(never)/float64(n-1)
			never++
		}
	}
	for i := 0; i < n; i++ {
		if s.pos[i] >= 0 {
			rank := never + int(s.pos[i])
			out[i] = max(0, 1.0-float64(rank)/float64(n-1))
		}
	}
}

func (s *noHitLRUScorer) commit(c *scoreCtx, target int) {
	if !c.cold {
		return
	}
	for p, inst := range s.order {
		if int(inst) == target {
			copy(s.order[p:], s.order[p+1:])
			s.order = s.order[:len(s.order)-1]
			break
		}
	}
	s.order = append(s.order, int32(target))
	if len(s.order) > s.size {
		copy(s.order, s.order[1:])
		s.order = s.order[:len(s.order)-1]
	}
}

// newScorer builds the scorer named by its canonical type (alias is the name as written, which
// selects the precise producer for BLIS's precise-prefix-cache).
func newScorer(canonical, alias string, r *paramReader) (scorer, error) {
	switch canonical {
	case ScorerQueue:
		return queueScorer{}, nil
	case ScorerRunning:
		return runningScorer{}, nil
	case ScorerKVCache:
		return kvScorer{}, nil
	case ScorerLoadBalance:
		return loadBalanceScorer{}, nil
	case ScorerLoadAware:
		t := r.int("threshold", DefaultLoadAwareThreshold)
		if t <= 0 {
			t = DefaultLoadAwareThreshold // llm-d falls back to the default
		}
		return loadAwareScorer{threshold: float64(t)}, nil
	case ScorerActive:
		idle := r.int("idleThreshold", 0)
		busy := r.float("maxBusyScore", 1.0)
		if idle < 0 {
			idle = 0
		}
		if busy < 0 || busy > 1 {
			return nil, fmt.Errorf("maxBusyScore must be in [0, 1], got %v", busy)
		}
		return activeScorer{idle: int32(idle), maxBusy: busy}, nil
	case ScorerTokenLoad:
		t := r.int("queueThresholdTokens", DefaultQueueThresholdTokens)
		if t <= 0 {
			t = DefaultQueueThresholdTokens
		}
		return tokenLoadScorer{threshold: float64(t)}, nil
	case ScorerPrefixCache:
		w := r.float("matchLengthWeight", 0)
		scale := r.int("matchLengthScaleTokens", DefaultMatchLengthScaleTokens)
		producer := r.str("prefixMatchInfoProducerName", "approx-prefix-cache-producer",
			"approx-prefix-cache-producer", "precise-prefix-cache-producer")
		if w < 0 || w > 1 {
			return nil, fmt.Errorf("matchLengthWeight must be in [0, 1], got %v", w)
		}
		if scale <= 0 {
			return nil, fmt.Errorf("matchLengthScaleTokens must be > 0, got %d", scale)
		}
		precise := alias == scorerPreciseAlias || producer == "precise-prefix-cache-producer"
		return prefixScorer{weight: w, scale: float64(scale), precise: precise}, nil
	case ScorerNoHitLRU:
		size := r.int("lruSize", DefaultNoHitLRUSize)
		if size <= 0 {
			size = DefaultNoHitLRUSize
		}
		return &noHitLRUScorer{size: int(size)}, nil
	}
	return nil, fmt.Errorf("unknown scorer %q", canonical)
}
