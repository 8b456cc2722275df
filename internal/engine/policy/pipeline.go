package policy

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/inference-sim/blis-operator/internal/engine/rng"
)

var errUnknownTemplate = errors.New("unknown template")

// Template names per kind, for validation messages and documentation.
var (
	AdmissionTemplates = []string{"always-admit", "token-bucket", "rate-limit", "tenant-quota", "reject-all", "tier-shed", "gaie-legacy"}
	PriorityTemplates  = []string{"constant", "slo-based", "tenant-priority", "deadline-aware", "inverted-slo"}
	RoutingTemplates   = []string{"round-robin", "least-loaded", "weighted-scoring", "weighted", "prefix-affinity", "always-busiest"}
)

// InstanceInfo is the static description of one instance the router may need.
type InstanceInfo struct {
	// TotalKVBlocks is the instance's KV capacity in blocks (llm-d's autoTune reads it as the
	// prefix index capacity).
	TotalKVBlocks int64
	// BlockSize is the instance's KV block size in tokens (autoTune's hashing block size).
	BlockSize int32
}

// BuildEnv is what Build needs to know about the run.
type BuildEnv struct {
	// Instances describes the routable instances, indexed by instance.
	Instances []InstanceInfo
	// TenantNames and ClassNames name the workload's tenant and SLO-class indices.
	TenantNames, ClassNames []string
	// RNG is the run's router stream; nil derives the "router" stream of seed 0.
	RNG *rand.Rand
	// Precise gives the precise prefix producer the instances' real caches (optional).
	Precise PreciseMatcher
	// RateWindowUs is the sliding window of recent rates (0 = DefaultRateWindow).
	RateWindowUs int64

	validateOnly bool
}

// buildCtx is shared by the template builders.
type buildCtx struct {
	instances     int
	rng           *rand.Rand
	precise       PreciseMatcher
	tenantNames   []string
	classNames    []string
	tenantBudgets map[string]float64
	sloPriorities map[string]int
	sloTargets    map[string]int64
	slo           *sloTable
	celErrors     *int64
}

// Stats counts noteworthy pipeline events.
type Stats struct {
	// CELErrors counts CEL evaluations that failed at run time (each fell back: reject,
	// priority 0, or score −Inf).
	CELErrors int64
	// Delayed counts admission DELAY verdicts.
	Delayed int64
}

// Pipeline is one run's control plane: fresh policy instances built from a Bundle, the router
// state they share, and the instance scheduler and preemption orderings.
type Pipeline struct {
	admission  AdmissionPolicy
	priority   PriorityPolicy
	routing    RoutingPolicy
	scorer     *scoringRouter // routing as a scoring router, when it is one
	scheduler  Scheduler
	preemption Preemption
	state      *RouterState
	obs        ObservabilityConfig

	admissionLatency, routingLatency int64
	blockSize                        int32
	maxBlocks                        int
	n                                int
	stats                            Stats
	names                            [3]string
}

// Build instantiates fresh policies from b for one run. It validates everything first, so a
// bad bundle fails before the simulation starts.
func Build(b *Bundle, env BuildEnv) (*Pipeline, error) {
	if b == nil {
		b = &Bundle{}
	}
	n := len(env.Instances)
	if n == 0 {
		return nil, errors.New("policy pipeline: at least one instance is required")
	}
	if err := b.validateInfra(); err != nil {
		return nil, err
	}
	for _, names := range [][]string{env.TenantNames, env.ClassNames} {
		for _, s := range names {
			if len(s) > maxCELString {
				return nil, fmt.Errorf("policy pipeline: name %.20q... longer than %d bytes", s, maxCELString)
			}
		}
	}
	r := env.RNG
	if r == nil {
		r = rng.Derive(0, rng.Router)
	}
	p := &Pipeline{n: n, state: NewRouterState(n, env.TenantNames, env.RateWindowUs)}
	c := &buildCtx{
		instances: n, rng: r, precise: env.Precise,
		tenantNames: env.TenantNames, classNames: env.ClassNames,
		tenantBudgets: b.TenantBudgets, sloPriorities: b.Admission.SLOPriorities, sloTargets: b.Admission.SLOTargets,
		celErrors: &p.stats.CELErrors,
	}
	if env.validateOnly && c.precise == nil {
		c.precise = noPrecise{}
	}
	c.slo = newSLOTable(env.ClassNames, b.Admission.SLOPriorities)
	var err error
	if p.admission, p.names[0], err = buildAdmission(&b.Admission, c); err != nil {
		return nil, err
	}
	if p.priority, p.names[1], err = buildPriority(&b.Priority, c); err != nil {
		return nil, err
	}
	if p.routing, p.names[2], err = buildRouting(&b.Routing, c); err != nil {
		return nil, err
	}
	if s, ok := p.routing.(*scoringRouter); ok {
		p.scorer = s
		if s.prefix {
			if err := p.setupPrefix(b.Routing.PrefixCache, env.Instances); err != nil {
				return nil, err
			}
		}
	}
	if p.scheduler, err = NewScheduler(b.Scheduler, b.SchedulerParams); err != nil {
		return nil, err
	}
	if p.preemption, err = NewPreemption(b.Preemption.Policy); err != nil {
		return nil, err
	}
	p.obs = DefaultObservability()
	if b.Observability != nil {
		if err := b.Observability.Validate(); err != nil {
			return nil, err
		}
		p.obs = b.Observability.withDefaults()
	}
	p.admissionLatency, p.routingLatency = b.Admission.LatencyUs, b.Routing.LatencyUs
	return p, nil
}

// needsPrefixIndex reports whether an expression or observable name reads the router's prefix
// index (directly, or through the prefix-cache or token-load scorer values).
func needsPrefixIndex(text string) bool {
	return strings.Contains(text, "instance.prefix") || strings.Contains(text, "score.prefixCache") ||
		strings.Contains(text, "score.tokenLoad")
}

// noPrecise stands in for the simulator's cache view while a bundle is only validated.
type noPrecise struct{}

func (noPrecise) CachedPrefix(int, *RequestView) (int32, int32, int32) { return 0, 0, 0 }

// setupPrefix creates the shadow prefix index with llm-d's approx-prefix-cache-producer rules:
// with autoTune the hashing block size is the instances' KV block size and the per-instance
// capacity their KV block count; otherwise blockSizeTokens and lruCapacityPerServer. The block
// size is floored at 64 tokens; the number of blocks matched is capped by
// maxPrefixTokensToMatch / blockSize, or maxPrefixBlocksToMatch when the token cap is 0
// (both 0 = unlimited).
func (p *Pipeline) setupPrefix(spec *PrefixCacheSpec, inst []InstanceInfo) error {
	var s PrefixCacheSpec
	if spec != nil {
		s = *spec
	}
	get := func(v *int, def int) int {
		if v == nil {
			return def
		}
		return *v
	}
	autoTune := s.AutoTune == nil || *s.AutoTune
	bs := get(s.BlockSizeTokens, DefaultBlockSizeTokens)
	maxBlocks := get(s.MaxPrefixBlocksToMatch, DefaultMaxPrefixBlocks)
	maxTokens := get(s.MaxPrefixTokensToMatch, DefaultMaxPrefixTokens)
	lru := get(s.LRUCapacityPerServer, DefaultLRUCapacityPerServer)
	switch {
	case !autoTune && bs <= 0:
		return fmt.Errorf("routing.prefix_cache.blockSizeTokens must be > 0 when autoTune is false, got %d", bs)
	case maxBlocks < 0:
		return fmt.Errorf("routing.prefix_cache.maxPrefixBlocksToMatch must be >= 0, got %d", maxBlocks)
	case maxTokens < 0:
		return fmt.Errorf("routing.prefix_cache.maxPrefixTokensToMatch must be >= 0, got %d", maxTokens)
	}
	if autoTune && inst[0].BlockSize > 0 {
		bs = int(inst[0].BlockSize)
	}
	bs = max(bs, MinBlockSizeTokens)
	caps := make([]int, len(inst))
	for i, in := range inst {
		switch {
		case autoTune && in.TotalKVBlocks > 0:
			caps[i] = int(in.TotalKVBlocks)
		case lru > 0:
			caps[i] = lru
		default:
			caps[i] = DefaultLRUCapacityPerServer
		}
	}
	p.blockSize = int32(bs)
	switch {
	case maxTokens > 0:
		p.maxBlocks = maxTokens / bs
	case maxBlocks > 0:
		p.maxBlocks = maxBlocks
	default:
		p.maxBlocks = -1
	}
	p.state.Prefix = NewPrefixIndex(caps)
	p.scorer.ctx.blockSize = p.blockSize
	return nil
}

func policyWhere(k Kind, name string) string { return fmt.Sprintf("%s policy %q", k, name) }

// representation resolves which of template, tree and CEL a stage uses.
func representation(k Kind, policy string, tree *TreeNode, expr string, def string) (string, error) {
	switch {
	case tree != nil && expr != "":
		return "", fmt.Errorf("%s policy: set either tree or cel, not both", k)
	case tree != nil:
		if policy != "" && policy != PolicyTree {
			return "", fmt.Errorf("%s policy %q: a tree needs policy %q (or none)", k, policy, PolicyTree)
		}
		return PolicyTree, nil
	case expr != "":
		if policy != "" && policy != PolicyCEL {
			return "", fmt.Errorf("%s policy %q: a cel expression needs policy %q (or none)", k, policy, PolicyCEL)
		}
		return PolicyCEL, nil
	case policy == PolicyTree:
		return "", fmt.Errorf("%s policy %q: field tree is required", k, policy)
	case policy == PolicyCEL:
		return "", fmt.Errorf("%s policy %q: field cel is required", k, policy)
	case policy == "":
		return def, nil
	}
	return policy, nil
}

func buildCELProgram(k Kind, expr string, r *paramReader) (*celProgram, error) {
	limit := r.int("cost_limit", DefaultCELCostLimit)
	if limit <= 0 {
		return nil, fmt.Errorf("parameter \"cost_limit\": must be > 0, got %d", limit)
	}
	prog, err := compileCEL(k, expr, uint64(limit))
	if err != nil {
		return nil, fmt.Errorf("field cel: %w", err)
	}
	return prog, nil
}

func buildAdmission(s *AdmissionSpec, c *buildCtx) (AdmissionPolicy, string, error) {
	name, err := representation(KindAdmission, s.Policy, s.Tree, s.CEL, "always-admit")
	if err != nil {
		return nil, "", err
	}
	r := newParamReader(s.EffectiveParams())
	var pol AdmissionPolicy
	switch name {
	case PolicyCEL:
		var prog *celProgram
		if prog, err = buildCELProgram(KindAdmission, s.CEL, r); err == nil {
			pol = &celAdmission{p: prog, delay: r.int("delay_us", 0), errors: c.celErrors}
		}
	case PolicyTree:
		var t *compiledTree
		if t, err = compileTree(KindAdmission, s.Tree); err == nil {
			pol = &treeAdmission{t: t}
		}
	default:
		pol, err = buildAdmissionTemplate(name, r, c)
		if errors.Is(err, errUnknownTemplate) {
			return nil, "", fmt.Errorf("unknown admission policy %q (known: %s, %s, %s)", name,
				strings.Join(AdmissionTemplates, ", "), PolicyTree, PolicyCEL)
		}
	}
	if err == nil {
		err = r.done()
	}
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", policyWhere(KindAdmission, name), err)
	}
	return pol, name, nil
}

func buildPriority(s *PrioritySpec, c *buildCtx) (PriorityPolicy, string, error) {
	name, err := representation(KindPriority, s.Policy, s.Tree, s.CEL, "constant")
	if err != nil {
		return nil, "", err
	}
	r := newParamReader(s.Params)
	var pol PriorityPolicy
	switch name {
	case PolicyCEL:
		var prog *celProgram
		if prog, err = buildCELProgram(KindPriority, s.CEL, r); err == nil {
			pol = &celPriority{p: prog, errors: c.celErrors}
		}
	case PolicyTree:
		var t *compiledTree
		if t, err = compileTree(KindPriority, s.Tree); err == nil {
			pol = &treePriority{t: t}
		}
	default:
		pol, err = buildPriorityTemplate(name, r, c)
		if errors.Is(err, errUnknownTemplate) {
			return nil, "", fmt.Errorf("unknown priority policy %q (known: %s, %s, %s)", name,
				strings.Join(PriorityTemplates, ", "), PolicyTree, PolicyCEL)
		}
	}
	if err == nil {
		err = r.done()
	}
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", policyWhere(KindPriority, name), err)
	}
	return pol, name, nil
}

func buildRouting(s *RoutingSpec, c *buildCtx) (RoutingPolicy, string, error) {
	name, err := representation(KindRouting, s.Policy, s.Tree, s.CEL, "round-robin")
	if err != nil {
		return nil, "", err
	}
	r := newParamReader(s.Params)
	var pol RoutingPolicy
	switch name {
	case PolicyCEL:
		var prog *celProgram
		if prog, err = buildCELProgram(KindRouting, s.CEL, r); err == nil {
			sr := newScoringRouter(c.instances, []string{PolicyCEL}, []scorer{&celScorer{p: prog, errors: c.celErrors, cache: newScoreCache(c.instances)}}, []float64{1}, c.rng, PolicyCEL)
			sr.prefix = needsPrefixIndex(s.CEL)
			sr.configurePicker(r)
			pol = sr
		}
	case PolicyTree:
		var t *compiledTree
		if t, err = compileTree(KindRouting, s.Tree); err == nil {
			sr := newScoringRouter(c.instances, []string{"decision-tree"}, []scorer{&treeScorer{t: t, cache: newScoreCache(c.instances)}}, []float64{1}, c.rng, "decision-tree")
			sr.prefix = t.usesPrefix()
			sr.configurePicker(r)
			pol = sr
		}
	default:
		pol, err = buildRoutingTemplate(name, r, c, s.Scorers)
		if errors.Is(err, errUnknownTemplate) {
			return nil, "", fmt.Errorf("unknown routing policy %q (known: %s, %s, %s)", name,
				strings.Join(RoutingTemplates, ", "), PolicyTree, PolicyCEL)
		}
	}
	if err == nil {
		err = r.done()
	}
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", policyWhere(KindRouting, name), err)
	}
	return pol, name, nil
}

// Names returns the admission, priority and routing policy names in use.
func (p *Pipeline) Names() (admission, priority, routing string) {
	return p.names[0], p.names[1], p.names[2]
}

// State returns the router state shared by the policies.
func (p *Pipeline) State() *RouterState { return p.state }

// Stats returns the pipeline's counters.
func (p *Pipeline) Stats() Stats { return p.stats }

// AdmissionLatency and RoutingLatency are the decision latencies (µs) the simulator inserts
// between arrival and admission, and between admission and routing.
func (p *Pipeline) AdmissionLatency() int64 { return p.admissionLatency }

// RoutingLatency is the delay (µs) between the admission decision and the routing decision.
func (p *Pipeline) RoutingLatency() int64 { return p.routingLatency }

// Observability returns the snapshot staleness configuration (defaults filled in).
func (p *Pipeline) Observability() ObservabilityConfig { return p.obs }

// Scheduler returns the instance scheduler ordering.
func (p *Pipeline) Scheduler() Scheduler { return p.scheduler }

// Preemption returns the preemption victim ordering.
func (p *Pipeline) Preemption() Preemption { return p.preemption }

// PrefixBlockSize is the block size (tokens) of the hashes RequestView.PrefixHashes must hold,
// or 0 when no policy uses prefix hashes (the simulator may then skip hashing).
func (p *Pipeline) PrefixBlockSize() int32 { return p.blockSize }

// MaxPrefixBlocks is the number of leading blocks the router looks at (-1 = all). The
// simulator may hash only that many; longer hash lists are truncated here.
func (p *Pipeline) MaxPrefixBlocks() int { return p.maxBlocks }

// ScorerNames returns the scorer names of the routing policy, in Breakdown order.
func (p *Pipeline) ScorerNames() []string {
	if p.scorer == nil {
		return nil
	}
	return p.scorer.names
}

// Arrive records a request's arrival at the router (rates and counts). Call it once per
// request, at its cluster arrival, before the admission decision.
func (p *Pipeline) Arrive(r *RequestView, now int64) { p.state.arrive(r.Tenant, now) }

// Admit runs the admission policy. On Delay it increments r.Attempt; the simulator asks again
// after Delay µs with the same view.
func (p *Pipeline) Admit(r *RequestView, snaps []InstanceSnapshot, now int64) AdmissionDecision {
	p.state.Clock = now
	d := p.admission.Decide(r, p.state, snaps, now)
	switch d.Action {
	case Admit:
		p.state.Global.Admitted++
	case Reject:
		p.state.Global.Rejected++
	case Delay:
		p.stats.Delayed++
		r.Attempt++
	}
	return d
}

// Prioritize runs the priority policy and stores the score in r.Priority.
func (p *Pipeline) Prioritize(r *RequestView, snaps []InstanceSnapshot, now int64) PriorityDecision {
	p.state.Clock = now
	d := p.priority.Compute(r, p.state, snaps, now)
	r.Priority = d.Score
	return d
}

// Route runs the routing policy and dispatches the request in the router's books: the shadow
// prefix index learns the prompt's blocks on the target, stateful scorers learn the outcome,
// and the target's and tenant's in-flight counts grow. snaps must hold one snapshot per
// instance, indexed by instance. The decision's Ticket must be handed back to Finished.
func (p *Pipeline) Route(r *RequestView, snaps []InstanceSnapshot, now int64) RoutingDecision {
	if len(snaps) != p.n {
		panic(fmt.Sprintf("policy: Route got %d snapshots for a pipeline built for %d instances", len(snaps), p.n))
	}
	st := p.state
	st.Clock = now
	hashes := r.PrefixHashes
	if p.maxBlocks >= 0 && len(hashes) > p.maxBlocks {
		hashes = hashes[:p.maxBlocks]
	}
	cold := true
	if st.Prefix != nil {
		cold = !st.Prefix.Match(hashes, st.PrefixMatch)
		st.PrefixTotal = int32(len(hashes))
	}
	d := p.routing.Route(r, st, snaps, now)
	t := int(d.Target)
	if t < 0 || t >= p.n {
		panic(fmt.Sprintf("policy: routing policy %q chose instance %d of %d", p.names[2], t, p.n))
	}
	tokens := int64(r.InputTokens)
	if st.Prefix != nil {
		tokens -= min(int64(st.PrefixMatch[t])*int64(p.blockSize), tokens)
		st.Prefix.Add(t, hashes)
	}
	if p.scorer != nil {
		p.scorer.commit(t)
	}
	st.Loads[t].ActiveRequests++
	st.Loads[t].InFlightTokens += tokens
	st.Tenant(r.Tenant).ActiveRequests++
	st.Global.InFlight++
	d.Ticket = Ticket{Instance: int32(t), Tenant: r.Tenant, Tokens: tokens, Cold: cold}
	return d
}

// FirstToken releases the prompt-token load of a streaming request when its first output
// token leaves the instance (llm-d's in-flight load producer). Safe to call more than once.
func (p *Pipeline) FirstToken(t *Ticket) {
	if t.Instance < 0 || t.TokensReleased {
		return
	}
	p.state.Loads[t.Instance].InFlightTokens -= t.Tokens
	t.TokensReleased = true
}

// Finished releases everything a dispatched request holds in the router's books: call it
// exactly when the request leaves the instance (completed, timed out or dropped). Safe to
// call more than once.
func (p *Pipeline) Finished(t *Ticket, now int64) {
	if t.Instance < 0 || t.Released {
		return
	}
	p.FirstToken(t)
	st := p.state
	st.Clock = now
	st.Loads[t.Instance].ActiveRequests--
	st.Tenant(t.Tenant).ActiveRequests--
	st.Global.InFlight--
	st.Global.Completed++
	st.Global.completions.add(now)
	t.Released = true
}

// ResetInstance forgets the router's prefix knowledge of instance i (it restarted or left).
func (p *Pipeline) ResetInstance(i int) {
	if p.state.Prefix != nil {
		p.state.Prefix.Reset(i)
	}
}
