package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// DefaultTopK is the number of candidates a routing decision reports.
const DefaultTopK = 3

// Picker names (llm-d plugin types without the "-picker" suffix also accepted).
const (
	PickerMaxScore       = "max-score"
	PickerRandom         = "random"
	PickerWeightedRandom = "weighted-random"
)

type roundRobin struct{ next int }

func (p *roundRobin) Route(_ *RequestView, _ *RouterState, snaps []InstanceSnapshot, _ int64) RoutingDecision {
	i := p.next % len(snaps)
	p.next = i + 1
	return RoutingDecision{Target: int32(i), Reason: "round-robin"}
}

// loadSignal selects the load measure of least-loaded and always-busiest.
type loadSignal int8

const (
	signalEffective loadSignal = iota
	signalInFlight
	signalQueue
	signalKV
)

func (s loadSignal) of(x *InstanceSnapshot) float64 {
	switch s {
	case signalInFlight:
		return float64(x.InFlightRequests)
	case signalQueue:
		return float64(x.QueueDepth)
	case signalKV:
		return x.KVUtilization
	}
	return float64(x.EffectiveLoad())
}

// extremeLoad routes to the least (or, pathologically, the most) loaded instance; ties go to
// the lowest index (seed 001 §E.4).
type extremeLoad struct {
	signal  loadSignal
	busiest bool
	reason  string
}

func (p *extremeLoad) Route(_ *RequestView, _ *RouterState, snaps []InstanceSnapshot, _ int64) RoutingDecision {
	best, bv := 0, p.signal.of(&snaps[0])
	for i := 1; i < len(snaps); i++ {
		v := p.signal.of(&snaps[i])
		if (!p.busiest && v < bv) || (p.busiest && v > bv) {
			best, bv = i, v
		}
	}
	return RoutingDecision{Target: int32(best), Reason: p.reason}
}

// pickerKind is how a scoring router turns scores into a target.
type pickerKind int8

const (
	pickMax pickerKind = iota
	pickRandom
	pickWeightedRandom
)

// scoringRouter scores every instance with weighted scorers (llm-d's scheduling profile) and
// picks a target. CEL and decision-tree routing are scoring routers with one scorer. All
// buffers are allocated at build time, so a decision does not allocate.
type scoringRouter struct {
	names     []string
	scorers   []scorer
	weights   []float64
	cols      [][]float64
	totals    []float64
	pick      pickerKind
	lowestTie bool
	rng       *rand.Rand
	topK      int
	cands     []CandidateScore
	breakdown []float64
	reason    string
	ctx       scoreCtx
	prefix    bool // needs the shadow prefix index
}

func newScoringRouter(n int, names []string, scorers []scorer, weights []float64, rng *rand.Rand, reason string) *scoringRouter {
	p := &scoringRouter{names: names, scorers: scorers, weights: weights, rng: rng, topK: DefaultTopK, reason: reason}
	p.cols = make([][]float64, len(scorers))
	for i := range p.cols {
		p.cols[i] = make([]float64, n)
	}
	p.totals = make([]float64, n)
	p.cands = make([]CandidateScore, 0, p.topK)
	p.breakdown = make([]float64, p.topK*len(scorers))
	return p
}

// configurePicker reads the picker parameters shared by every scoring router.
func (p *scoringRouter) configurePicker(r *paramReader) {
	switch strings.TrimSuffix(r.str("picker", PickerMaxScore, PickerMaxScore, PickerRandom, PickerWeightedRandom,
		"max-score-picker", "random-picker", "weighted-random-picker"), "-picker") {
	case PickerRandom:
		p.pick = pickRandom
	case PickerWeightedRandom:
		p.pick = pickWeightedRandom
	default:
		p.pick = pickMax
	}
	p.lowestTie = r.str("tie_break", "random", "random", "lowest") == "lowest"
}

func (p *scoringRouter) Route(req *RequestView, st *RouterState, snaps []InstanceSnapshot, now int64) RoutingDecision {
	n := len(snaps)
	c := &p.ctx
	c.req, c.st, c.snaps, c.now = req, st, snaps, now
	c.cold = true
	for i := 0; i < n && i < len(st.PrefixMatch); i++ {
		if st.PrefixMatch[i] > 0 {
			c.cold = false
			break
		}
	}
	totals := p.totals[:n]
	for i := range totals {
		totals[i] = 0
	}
	for s, sc := range p.scorers {
		col := p.cols[s][:n]
		sc.score(c, col)
		w := p.weights[s]
		for i, v := range col {
			totals[i] += w * v
		}
	}
	target := p.choose(totals)
	p.fillCandidates(totals)
	return RoutingDecision{Target: int32(target), Reason: p.reason, Scores: totals, Candidates: p.cands}
}

// commit lets stateful scorers learn the outcome of the decision just made.
func (p *scoringRouter) commit(target int) {
	for _, sc := range p.scorers {
		if cm, ok := sc.(committer); ok {
			cm.commit(&p.ctx, target)
		}
	}
}

func finite(v float64) float64 {
	if math.IsNaN(v) {
		return math.Inf(-1)
	}
	return v
}

func (p *scoringRouter) choose(totals []float64) int {
	n := len(totals)
	switch p.pick {
	case pickRandom:
		return p.rng.IntN(n)
	case pickWeightedRandom:
		// Sampling proportional to score: the single-pick case of llm-d's A-Res sampling,
		// done with a cumulative sum so that no transcendental function is involved.
		var sum float64
		for _, v := range totals {
			if v = finite(v); v > 0 {
				sum += v
			}
		}
		if sum <= 0 || math.IsInf(sum, 0) {
			return p.rng.IntN(n)
		}
		x := p.rng.Float64() * sum
		last := 0
		for i, v := range totals {
			if v = finite(v); v > 0 {
				last = i
				if x < v {
					return i
				}
				x -= v
			}
		}
		return last
	}
	best, bv, ties := 0, finite(totals[0]), 1
	for i := 1; i < n; i++ {
		v := finite(totals[i])
		switch {
		case v > bv:
			best, bv, ties = i, v, 1
		case v == bv && !p.lowestTie:
			// Uniform choice among equal maxima with the router's seeded stream, as llm-d's
			// max-score picker shuffles before sorting.
			ties++
			if p.rng.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return best
}

// fillCandidates keeps the topK instances by score (ties by lower index), with breakdowns.
func (p *scoringRouter) fillCandidates(totals []float64) {
	p.cands = p.cands[:0]
	for i, v := range totals {
		v = finite(v)
		pos := len(p.cands)
		for pos > 0 && finite(p.cands[pos-1].Score) < v {
			pos--
		}
		if pos >= p.topK {
			continue
		}
		if len(p.cands) < p.topK {
			p.cands = append(p.cands, CandidateScore{})
		}
		copy(p.cands[pos+1:], p.cands[pos:len(p.cands)-1])
		p.cands[pos] = CandidateScore{Instance: int32(i), Score: totals[i]}
	}
	k := len(p.scorers)
	for j := range p.cands {
		b := p.breakdown[j*k : (j+1)*k]
		for s := range p.scorers {
			b[s] = p.cols[s][p.cands[j].Instance]
		}
		p.cands[j].Breakdown = b
	}
}

// ScorerSpec is one weighted scorer of a weighted-scoring routing policy.
type ScorerSpec struct {
	// Name is an llm-d scorer type or a BLIS alias.
	Name string `yaml:"name" json:"name"`
	// Weight multiplies the scorer's value; llm-d leaves weights unnormalised.
	Weight float64 `yaml:"weight" json:"weight"`
	// Params are the scorer's llm-d parameters (for example threshold for load-aware-scorer).
	Params Params `yaml:"params,omitempty" json:"params,omitempty"`
}

// DefaultScorers is llm-d's default profile: queue-scorer 2, kv-cache-utilization-scorer 2,
// prefix-cache-scorer 3.
func DefaultScorers() []ScorerSpec {
	return []ScorerSpec{{Name: ScorerQueue, Weight: 2}, {Name: ScorerKVCache, Weight: 2}, {Name: ScorerPrefixCache, Weight: 3}}
}

func buildWeighted(specs []ScorerSpec, c *buildCtx, reason string) (*scoringRouter, error) {
	if len(specs) == 0 {
		return nil, fmt.Errorf("weighted scoring needs at least one scorer")
	}
	names := make([]string, len(specs))
	scorers := make([]scorer, len(specs))
	weights := make([]float64, len(specs))
	seen := map[string]bool{}
	prefix := false
	for i, sp := range specs {
		canon, ok := CanonicalScorer(sp.Name)
		if !ok {
			return nil, fmt.Errorf("scorers[%d]: unknown scorer %q (known: %s)", i, sp.Name, strings.Join(ScorerNames(), ", "))
		}
		if math.IsNaN(sp.Weight) || math.IsInf(sp.Weight, 0) {
			return nil, fmt.Errorf("scorers[%d] %q: weight must be finite, got %v", i, sp.Name, sp.Weight)
		}
		key := canon
		if sp.Name == scorerPreciseAlias {
			key = sp.Name
		}
		if seen[key] {
			return nil, fmt.Errorf("scorers[%d]: duplicate scorer %q", i, sp.Name)
		}
		seen[key] = true
		pr := newParamReader(sp.Params)
		s, err := newScorer(canon, sp.Name, pr)
		if err == nil {
			err = pr.done()
		}
		if err != nil {
			return nil, fmt.Errorf("scorers[%d] %q: %w", i, sp.Name, err)
		}
		if ps, ok := s.(prefixScorer); ok && ps.precise {
			if c.precise == nil {
				return nil, fmt.Errorf("scorers[%d] %q: the precise prefix producer needs the simulator's cache view (BuildEnv.Precise)", i, sp.Name)
			}
		} else if canon == ScorerPrefixCache || canon == ScorerNoHitLRU || canon == ScorerTokenLoad {
			prefix = true
		}
		names[i], scorers[i], weights[i] = canon, s, sp.Weight
		if sp.Name == scorerPreciseAlias {
			names[i] = canon + "(precise)"
		}
	}
	p := newScoringRouter(c.instances, names, scorers, weights, c.rng, reason)
	p.prefix = prefix
	p.ctx.precise = c.precise
	return p, nil
}

func buildRoutingTemplate(name string, r *paramReader, c *buildCtx, specs []ScorerSpec) (RoutingPolicy, error) {
	switch name {
	case "round-robin":
		return &roundRobin{}, nil
	case "least-loaded", "always-busiest":
		sig := r.str("signal", "effective-load", "effective-load", "in-flight", "queue-depth", "kv-utilization")
		p := &extremeLoad{busiest: name == "always-busiest", reason: name}
		switch sig {
		case "in-flight":
			p.signal = signalInFlight
		case "queue-depth":
			p.signal = signalQueue
		case "kv-utilization":
			p.signal = signalKV
		}
		return p, nil
	case "weighted-scoring", "weighted":
		if len(specs) == 0 {
			specs = DefaultScorers()
		}
		p, err := buildWeighted(specs, c, "weighted-scoring")
		if err != nil {
			return nil, err
		}
		p.configurePicker(r)
		return p, nil
	case "prefix-affinity":
		// llm-d's mapping of prefix affinity: a dominant prefix-cache-scorer with a load
		// scorer to break ties between equally warm instances.
		pw := r.float("prefix_weight", 5)
		lw := r.float("queue_weight", 1)
		specs := []ScorerSpec{{Name: ScorerPrefixCache, Weight: pw}, {Name: ScorerQueue, Weight: lw}}
		p, err := buildWeighted(specs, c, "prefix-affinity")
		if err != nil {
			return nil, err
		}
		p.configurePicker(r)
		return p, nil
	}
	return nil, errUnknownTemplate
}
