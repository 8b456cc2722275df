package export

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/inference-sim/blis-operator/internal/engine/export/llmd"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

// Producer names of prefix-cache-scorer's prefixMatchInfoProducerName.
const (
	approxProducer  = "approx-prefix-cache-producer"
	preciseProducer = "precise-prefix-cache-producer"
	// preciseAlias is BLIS's scorer name selecting the precise producer.
	preciseAlias = "precise-prefix-cache"
)

// scorerOut is one scorer of the exported profile.
type scorerOut struct {
	typ     string
	params  any
	weight  float64
	precise bool
}

// routing maps the routing stage to a scheduling profile (two for P/D) with scorers, weights
// and a picker, plus the prefix producers the scorers need.
func (bd *builder) routing() error {
	const stage = "routing"
	r := &bd.b.Routing
	name := stagePolicy(r.Policy, r.Tree, r.CEL, "round-robin")
	if r.LatencyUs > 0 {
		bd.note(stage, "routing decision latency %d µs is a property of the simulated router, not a setting", r.LatencyUs)
	}
	var specs []policy.ScorerSpec
	picker := "max-score-picker"
	switch name {
	case policy.PolicyTree:
		return refuse(stage, "decision-tree routing has no llm-d equivalent (a profile is a weighted sum of scorers)")
	case policy.PolicyCEL:
		var constant float64
		var err error
		specs, constant, err = linearCEL(r.CEL)
		if err != nil {
			return refuse(stage, "the CEL expression is not a weighted sum of score.* signals (%v), so no llm-d profile computes it", err)
		}
		if constant != 0 && str(r.Params, "picker", "") == "weighted-random" {
			if err := bd.approx(stage, "the constant term %g of the CEL score is dropped; it changes weighted-random picking", constant); err != nil {
				return err
			}
		}
	case "round-robin":
		picker = "random-picker"
		if err := bd.approx(stage, "round-robin: llm-d has no round-robin picker; random-picker (uniform) is the nearest"); err != nil {
			return err
		}
	case "least-loaded":
		switch sig := str(r.Params, "signal", "effective-load"); sig {
		case "queue-depth":
			specs = []policy.ScorerSpec{{Name: policy.ScorerQueue, Weight: 1}}
		case "kv-utilization":
			specs = []policy.ScorerSpec{{Name: policy.ScorerKVCache, Weight: 1}}
		case "in-flight":
			specs = []policy.ScorerSpec{{Name: policy.ScorerActive, Weight: 1}}
			if err := bd.approx(stage, "least-loaded by in-flight requests: active-request-scorer (the router's own in-flight count) with max-score-picker; ties are broken at random, not by lowest index"); err != nil {
				return err
			}
		default:
			specs = []policy.ScorerSpec{{Name: policy.ScorerActive, Weight: 1}}
			if err := bd.approx(stage, "least-loaded by effective load (queue + batch + in-flight): no llm-d scorer reads that sum; active-request-scorer (requests dispatched and not finished) is the nearest"); err != nil {
				return err
			}
		}
		if sig := str(r.Params, "signal", ""); sig == "queue-depth" || sig == "kv-utilization" {
			if err := bd.approx(stage, "least-loaded by %s: the matching scorer with max-score-picker picks the same endpoint except on ties, which llm-d breaks at random instead of by lowest index", sig); err != nil {
				return err
			}
		}
	case "always-busiest":
		return refuse(stage, "always-busiest is a pathological baseline")
	case "weighted-scoring", "weighted":
		specs = r.Scorers
		if len(specs) == 0 {
			specs = policy.DefaultScorers()
		}
	case "prefix-affinity":
		specs = []policy.ScorerSpec{{Name: policy.ScorerPrefixCache, Weight: num(r.Params, "prefix_weight", 5)},
			{Name: policy.ScorerQueue, Weight: num(r.Params, "queue_weight", 1)}}
	default:
		return fmt.Errorf("export: routing policy %q is not known", name)
	}
	if name != "round-robin" && name != "least-loaded" {
		switch strings.TrimSuffix(str(r.Params, "picker", "max-score"), "-picker") {
		case "random":
			picker = "random-picker"
		case "weighted-random":
			picker = "weighted-random-picker"
		}
		if picker == "max-score-picker" && str(r.Params, "tie_break", "random") == "lowest" {
			if err := bd.approx(stage, "ties between equal scores go to a random endpoint in llm-d (max-score-picker shuffles), not to the lowest index"); err != nil {
				return err
			}
		}
	}
	scorers, err := bd.scorers(specs)
	if err != nil {
		return err
	}
	return bd.profiles(scorers, picker)
}

// scorers converts the bundle's scorer specs to llm-d scorer plugins.
func (bd *builder) scorers(specs []policy.ScorerSpec) ([]scorerOut, error) {
	const stage = "routing"
	var out []scorerOut
	usesApproxIndex := false
	for _, sp := range specs {
		canon, ok := policy.CanonicalScorer(sp.Name)
		if !ok {
			return nil, fmt.Errorf("export: routing: unknown scorer %q", sp.Name)
		}
		if sp.Weight == 0 {
			continue // contributes nothing in either system
		}
		s := scorerOut{typ: canon, weight: sp.Weight}
		if canon == policy.ScorerLoadBalance {
			s.typ, s.weight = policy.ScorerLoadAware, 2*sp.Weight
			if err := bd.approx(stage, "load-balance (1/(1+queue+batch+in-flight)) has no llm-d scorer; load-aware-scorer (0.5·(1−queue/128), range [0, 0.5]) with weight %g (twice %g, to keep the range) is the nearest", s.weight, sp.Weight); err != nil {
				return nil, err
			}
			out = append(out, s)
			continue
		}
		schema, _, _ := llmd.DecodeParams(&llmd.Plugin{Type: s.typ})
		if len(sp.Params) > 0 {
			raw, err := json.Marshal(sp.Params)
			if err != nil {
				return nil, fmt.Errorf("export: routing: scorer %q parameters: %w", sp.Name, err)
			}
			v, _, err := llmd.DecodeParams(&llmd.Plugin{Type: s.typ, Parameters: json.RawMessage(raw)})
			if err != nil {
				return nil, fmt.Errorf("export: routing: scorer %q parameters are not llm-d's: %w", sp.Name, err)
			}
			schema = v
		}
		if pc, ok := schema.(*llmd.PrefixCacheScorerParams); ok {
			s.precise = sp.Name == preciseAlias || pc.PrefixMatchInfoProducerName == preciseProducer
			if pc.PrefixMatchInfoProducerName == approxProducer {
				pc.PrefixMatchInfoProducerName = "" // the default
			}
			if s.precise {
				pc.PrefixMatchInfoProducerName = preciseProducer
			}
		}
		if !s.precise && (canon == policy.ScorerPrefixCache || canon == policy.ScorerNoHitLRU || canon == policy.ScorerTokenLoad) {
			usesApproxIndex = true
		}
		if _, none := schema.(*llmd.NoParams); !none && !isZeroParams(schema) {
			s.params = schema
			if canon == policy.ScorerPrefixCache && !s.precise && !bd.t.AtLeast("llm-d-v0.9") {
				// GIE v1.5's prefix-cache-scorer factory ignored its parameters.
				if err := bd.approx(stage, "%s ignores prefix-cache-scorer parameters; the scorer runs with matchLengthWeight 0", bd.t.Name); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, s)
	}
	if usesApproxIndex {
		if pc := bd.b.Routing.PrefixCache; pc != nil && *pc != (policy.PrefixCacheSpec{}) {
			bd.addPlugin(approxProducer, &llmd.ApproxPrefixCacheProducerParams{AutoTune: pc.AutoTune, BlockSizeTokens: pc.BlockSizeTokens,
				MaxPrefixBlocksToMatch: pc.MaxPrefixBlocksToMatch, MaxPrefixTokensToMatch: pc.MaxPrefixTokensToMatch,
				LRUCapacityPerServer: pc.LRUCapacityPerServer})
		}
	}
	for i := range out {
		if out[i].precise {
			bd.precisePrefix(&out[i])
			break
		}
	}
	return out, nil
}

// isZeroParams reports whether a parameter struct has every key unset.
func isZeroParams(v any) bool {
	b, err := json.Marshal(v)
	return err == nil && string(b) == "{}"
}

// precisePrefix wires the precise prefix producer: vLLM's KV events feed an index the
// prefix-cache-scorer reads. v0.10 and later use the producer plus the notification source;
// older lines the (since deprecated) precise-prefix-cache-scorer wrapper.
func (bd *builder) precisePrefix(s *scorerOut) {
	bd.precise = true
	tpc := &llmd.TokenProcessorConfig{HashSeed: preciseHashSeed}
	switch {
	case bd.engine != nil:
		tpc.BlockSizeTokens = ptr(int(bd.engine.BlockSize))
	case bd.in.Cluster.Engine.BlockSize > 0:
		tpc.BlockSizeTokens = ptr(int(bd.in.Cluster.Engine.BlockSize))
	default:
		bd.note("routing", "no model given: set the precise producer's tokenProcessorConfig.blockSizeTokens to vLLM's --block-size")
	}
	if !bd.t.AtLeast("llm-d-v0.10") {
		if tpc.BlockSizeTokens != nil {
			tpc.BlockSize, tpc.BlockSizeTokens = tpc.BlockSizeTokens, nil
		}
		s.typ = "precise-prefix-cache-scorer"
		s.params = &llmd.PrecisePrefixCacheParams{TokenProcessorConfig: tpc}
		return
	}
	bd.note("routing", "the precise producer tokenizes prompts with the auto-created token-producer; configure token-producer (modelName, tokenizer endpoint) for the deployment as llm-d-router's epp-precise-prefix-cache-config.yaml does")
	bd.addPlugin(preciseProducer, &llmd.PrecisePrefixCacheParams{TokenProcessorConfig: tpc})
	bd.addPlugin("endpoint-notification-source", nil)
	bd.addPlugin("metrics-data-source", nil)
	bd.addPlugin("core-metrics-extractor", nil)
	bd.cfg.DataLayer = &llmd.DataLayer{Sources: []llmd.DataSource{
		{PluginRef: "metrics-data-source", Extractors: []llmd.PluginRef{{PluginRef: "core-metrics-extractor"}}},
		{PluginRef: "endpoint-notification-source", Extractors: []llmd.PluginRef{{PluginRef: preciseProducer}}},
	}}
}

// preciseHashSeed is written both as the precise producer's hashSeed and as the model
// servers' PYTHONHASHSEED: the router and vLLM must hash blocks identically.
const preciseHashSeed = "42"

// profiles writes the scheduling profiles: one (with single-profile-handler) for a monolithic
// pool, prefill and decode profiles with disagg-profile-handler and its decider for P/D.
func (bd *builder) profiles(scorers []scorerOut, picker string) error {
	names := make([]string, len(scorers))
	for i, s := range scorers {
		names[i] = bd.addPlugin(s.typ, s.params)
	}
	pick := bd.addPlugin(picker, nil)
	profile := func(name, filter string) llmd.SchedulingProfile {
		sp := llmd.SchedulingProfile{Name: name, Plugins: []llmd.ProfilePlugin{{PluginRef: filter}}}
		for i, s := range scorers {
			sp.Plugins = append(sp.Plugins, llmd.ProfilePlugin{PluginRef: names[i], Weight: ptr(s.weight)})
		}
		sp.Plugins = append(sp.Plugins, llmd.ProfilePlugin{PluginRef: pick})
		return sp
	}
	if !bd.pd {
		bd.addPlugin("decode-filter", nil)
		bd.addPlugin("single-profile-handler", nil)
		bd.cfg.SchedulingProfiles = []llmd.SchedulingProfile{profile("default", "decode-filter")}
		return nil
	}
	const stage = "disaggregation"
	if err := bd.needsV09(stage, "prefill/decode disaggregation (disagg-profile-handler)"); err != nil {
		return err
	}
	bd.addPlugin("prefill-filter", nil)
	bd.addPlugin("decode-filter", nil)
	d := bd.in.Cluster.Disaggregation
	if d == nil {
		d = &Disaggregation{Decider: DeciderAlways}
	}
	handler := &llmd.DisaggProfileHandlerParams{}
	switch d.Decider {
	case DeciderAlways:
		handler.Deciders = &llmd.DisaggDeciders{Prefill: bd.addPlugin("always-disagg-pd-decider", nil)}
	case DeciderNever:
		bd.note(stage, "decider never: disagg-profile-handler without a prefill decider sends every request to a decode endpoint")
	case DeciderPrefixThreshold:
		handler.Deciders = &llmd.DisaggDeciders{Prefill: bd.addPlugin("prefix-based-pd-decider",
			&llmd.PrefixBasedPDDeciderParams{NonCachedTokens: ptr(int(d.Threshold) + 1)})}
	case DeciderPromptLength:
		params := &llmd.PrefixBasedPDDeciderParams{NonCachedTokens: ptr(1), PromptTokens: ptr(int(d.Threshold) + 1)}
		msg := "prompt-length decider: prefix-based-pd-decider with promptTokens %d and nonCachedTokens 1 (a prompt fully cached on the decode endpoint is not disaggregated)"
		if !bd.t.AtLeast("llm-d-v0.10") {
			params = &llmd.PrefixBasedPDDeciderParams{NonCachedTokens: ptr(int(d.Threshold) + 1)}
			msg = "prompt-length decider: %s has no prompt-length gate (promptTokens is v0.10); prefix-based-pd-decider with nonCachedTokens %d counts uncached tokens only"
			if err := bd.approx(stage, msg, bd.t.Name, int(d.Threshold)+1); err != nil {
				return err
			}
		} else if err := bd.approx(stage, msg, int(d.Threshold)+1); err != nil {
			return err
		}
		handler.Deciders = &llmd.DisaggDeciders{Prefill: bd.addPlugin("prefix-based-pd-decider", params)}
	}
	if d.TransferBandwidthGBps > 0 || d.TransferBaseLatencyUs > 0 {
		bd.note(stage, "KV transfer bandwidth and latency are modelled by the simulator; in llm-d they are the network's (NixlConnector)")
	}
	bd.addPlugin("disagg-profile-handler", handler)
	bd.cfg.SchedulingProfiles = []llmd.SchedulingProfile{profile("prefill", "prefill-filter"), profile("decode", "decode-filter")}
	return nil
}

// celSignals maps the CEL observables that are llm-d scorer values to scorer names.
var celSignals = map[string]string{
	"score.queue":              policy.ScorerQueue,
	"score.kvCacheUtilization": policy.ScorerKVCache,
	"score.prefixCache":        policy.ScorerPrefixCache,
	"instance.prefixMatch":     policy.ScorerPrefixCache,
	"score.loadAware":          policy.ScorerLoadAware,
	"score.activeRequest":      policy.ScorerActive,
	"score.tokenLoad":          policy.ScorerTokenLoad,
	"score.runningRequests":    policy.ScorerRunning,
	"score.loadBalance":        policy.ScorerLoadBalance,
}

// linear is c0 + Σ coef[signal]·signal.
type linear struct {
	c     float64
	terms map[string]float64
	order []string
}

func (l *linear) isConst() bool { return len(l.order) == 0 }

func (l *linear) scale(k float64) {
	l.c *= k
	for s := range l.terms {
		l.terms[s] *= k
	}
}

func (l *linear) add(o *linear, sign float64) {
	l.c += sign * o.c
	for _, s := range o.order {
		if _, ok := l.terms[s]; !ok {
			l.order = append(l.order, s)
		}
		l.terms[s] += sign * o.terms[s]
	}
}

// linearCEL reads a CEL routing expression that is a linear combination of llm-d scorer
// values (numbers, score.* signals, + − * / and parentheses) and returns the equivalent
// weighted scorers in order of first appearance, and the constant term.
func linearCEL(expr string) ([]policy.ScorerSpec, float64, error) {
	p := &celParser{src: expr}
	p.next()
	l, err := p.expr()
	if err != nil {
		return nil, 0, err
	}
	if p.tok != "" {
		return nil, 0, fmt.Errorf("unexpected %q", p.tok)
	}
	var specs []policy.ScorerSpec
	idx := map[string]int{}
	for _, sig := range l.order {
		name := celSignals[sig]
		if i, ok := idx[name]; ok {
			specs[i].Weight += l.terms[sig]
			continue
		}
		idx[name] = len(specs)
		specs = append(specs, policy.ScorerSpec{Name: name, Weight: l.terms[sig]})
	}
	return specs, l.c, nil
}

// celParser is a recursive-descent parser for the linear subset of CEL.
type celParser struct {
	src string
	pos int
	tok string
}

func (p *celParser) next() {
	for p.pos < len(p.src) && strings.ContainsRune(" \t\r\n", rune(p.src[p.pos])) {
		p.pos++
	}
	if p.pos >= len(p.src) {
		p.tok = ""
		return
	}
	start := p.pos
	c := p.src[p.pos]
	switch {
	case strings.ContainsRune("+-*/()", rune(c)):
		p.pos++
	case c >= '0' && c <= '9' || c == '.':
		for p.pos < len(p.src) && (p.src[p.pos] >= '0' && p.src[p.pos] <= '9' || strings.ContainsRune(".eE", rune(p.src[p.pos])) ||
			(p.src[p.pos] == '-' || p.src[p.pos] == '+') && (p.src[p.pos-1] == 'e' || p.src[p.pos-1] == 'E')) {
			p.pos++
		}
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		for p.pos < len(p.src) && (p.src[p.pos] == '_' || p.src[p.pos] == '.' || p.src[p.pos] >= 'a' && p.src[p.pos] <= 'z' ||
			p.src[p.pos] >= 'A' && p.src[p.pos] <= 'Z' || p.src[p.pos] >= '0' && p.src[p.pos] <= '9') {
			p.pos++
		}
	default:
		p.pos++
	}
	p.tok = p.src[start:p.pos]
}

func (p *celParser) expr() (*linear, error) {
	sign := 1.0
	if p.tok == "-" || p.tok == "+" {
		if p.tok == "-" {
			sign = -1
		}
		p.next()
	}
	l, err := p.term()
	if err != nil {
		return nil, err
	}
	l.scale(sign)
	for p.tok == "+" || p.tok == "-" {
		s := 1.0
		if p.tok == "-" {
			s = -1
		}
		p.next()
		r, err := p.term()
		if err != nil {
			return nil, err
		}
		l.add(r, s)
	}
	return l, nil
}

func (p *celParser) term() (*linear, error) {
	l, err := p.factor()
	if err != nil {
		return nil, err
	}
	for p.tok == "*" || p.tok == "/" {
		op := p.tok
		p.next()
		r, err := p.factor()
		if err != nil {
			return nil, err
		}
		switch {
		case op == "/" && r.isConst() && r.c != 0:
			l.scale(1 / r.c)
		case op == "/":
			return nil, fmt.Errorf("division by a signal or by zero")
		case r.isConst():
			l.scale(r.c)
		case l.isConst():
			r.scale(l.c)
			l = r
		default:
			return nil, fmt.Errorf("product of two signals")
		}
	}
	return l, nil
}

func (p *celParser) factor() (*linear, error) {
	tok := p.tok
	switch tok {
	case "(":
		p.next()
		l, err := p.expr()
		if err != nil {
			return nil, err
		}
		if p.tok != ")" {
			return nil, fmt.Errorf("missing )")
		}
		p.next()
		return l, nil
	case "-":
		p.next()
		l, err := p.factor()
		if err != nil {
			return nil, err
		}
		l.scale(-1)
		return l, nil
	case "":
		return nil, fmt.Errorf("unexpected end of expression")
	}
	if v, err := strconv.ParseFloat(tok, 64); err == nil {
		p.next()
		return &linear{c: v, terms: map[string]float64{}}, nil
	}
	if strings.HasPrefix(tok, "double") || strings.HasPrefix(tok, "int") {
		return nil, fmt.Errorf("function %q", tok)
	}
	if _, ok := celSignals[tok]; ok {
		p.next()
		if p.tok == "(" {
			return nil, fmt.Errorf("call of %q", tok)
		}
		return &linear{terms: map[string]float64{tok: 1}, order: []string{tok}}, nil
	}
	return nil, fmt.Errorf("%q is not an llm-d scorer value", tok)
}
