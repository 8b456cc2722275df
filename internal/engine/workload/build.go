package workload

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/inference-sim/blis-operator/internal/engine/rng"
)

// DefaultPrefixLength is BLIS's prefix length for a prefix group without prefix_length.
const DefaultPrefixLength = 50

// maxPopulation bounds a cohort's population (and so the number of generated clients).
const maxPopulation = 100_000

// member is one client after cohort and inference-perf expansion.
type member struct {
	field   string // how errors name it
	c       ClientSpec
	factors []factor
	spike   *SpikeSpec // cohort spike (with trace_rate), resolved once the base rate is known
	pop     int        // cohort population the spike rate is split across
}

// Source returns the spec's request source. All randomness derives from seed (pass s.Seed to
// use the file's own seed); each client draws from its own stream "workload/client/<id>", so
// adding a client never changes the others' requests. The source implements Reactive when a
// client has closed-loop sessions, concurrency or an agentic workflow.
func (s *Spec) Source(seed int64) (Source, error) {
	g, err := s.build(seed)
	if err != nil {
		return nil, err
	}
	return g.source(), nil
}

func (s *Spec) expand() ([]member, error) {
	var ms []member
	for i := range s.Clients {
		ms = append(ms, member{field: clientField(i, s.Clients[i].ID), c: s.Clients[i]})
	}
	for i := range s.Cohorts {
		co := &s.Cohorts[i]
		f := cohortField(i, co.ID)
		if co.ID == "" {
			return nil, fmt.Errorf("%s.id: required for cohorts (member ids derive from it)", f)
		}
		if co.Population < 1 || co.Population > maxPopulation {
			return nil, fmt.Errorf("%s.population: must be in [1, %d], got %d", f, maxPopulation, co.Population)
		}
		if !(co.RateFraction > 0) || math.IsInf(co.RateFraction, 0) {
			return nil, fmt.Errorf("%s.rate_fraction: must be a finite number > 0, got %g", f, co.RateFraction)
		}
		switch co.PrefixSharing {
		case "", "shared", "per_member":
		default:
			return nil, fmt.Errorf("%s.prefix_sharing: unknown value %q; valid: shared, per_member", f, co.PrefixSharing)
		}
		var factors []factor
		var spike *SpikeSpec
		if d := co.Diurnal; d != nil {
			if !(d.PeakHour >= 0 && d.PeakHour < 24) {
				return nil, fmt.Errorf("%s.diurnal.peak_hour: must be in [0, 24), got %g", f, d.PeakHour)
			}
			if !(d.PeakToTroughRatio >= 1) || math.IsInf(d.PeakToTroughRatio, 0) {
				return nil, fmt.Errorf("%s.diurnal.peak_to_trough_ratio: must be a finite number >= 1, got %g", f, d.PeakToTroughRatio)
			}
			factors = append(factors, newDiurnal(86_400e6, d.PeakToTroughRatio, d.PeakHour*3600e6))
		}
		if sp := co.Spike; sp != nil {
			if sp.StartTimeUs < 0 {
				return nil, fmt.Errorf("%s.spike.start_time_us: must be >= 0, got %d", f, sp.StartTimeUs)
			}
			if sp.DurationUs <= 0 {
				return nil, fmt.Errorf("%s.spike.duration_us: must be > 0, got %d", f, sp.DurationUs)
			}
			if sp.TraceRate != nil {
				if !(*sp.TraceRate >= 0) || math.IsInf(*sp.TraceRate, 0) {
					return nil, fmt.Errorf("%s.spike.trace_rate: must be a finite number >= 0, got %g", f, *sp.TraceRate)
				}
				spike = sp
			} else {
				factors = append(factors, &windowFactor{start: float64(sp.StartTimeUs), end: float64(sp.StartTimeUs + sp.DurationUs), mult: 1, exclusive: true})
			}
		}
		if d := co.Drain; d != nil {
			if d.StartTimeUs < 0 {
				return nil, fmt.Errorf("%s.drain.start_time_us: must be >= 0, got %d", f, d.StartTimeUs)
			}
			if d.RampDurationUs < 0 {
				return nil, fmt.Errorf("%s.drain.ramp_duration_us: must be >= 0, got %d", f, d.RampDurationUs)
			}
			factors = append(factors, &drainFactor{start: float64(d.StartTimeUs), ramp: float64(d.RampDurationUs)})
		}
		for k := range co.Population {
			c := ClientSpec{
				ID: fmt.Sprintf("%s-%d", co.ID, k), TenantID: co.TenantID, SLOClass: co.SLOClass,
				Model: co.Model, Adapter: co.Adapter, RateFraction: co.RateFraction / float64(co.Population),
				Arrival: co.Arrival, InputDist: co.InputDist, OutputDist: co.OutputDist,
				PrefixGroup: co.PrefixGroup, PrefixLength: co.PrefixLength, Streaming: co.Streaming,
				Network: co.Network, Multimodal: co.Multimodal, Reasoning: co.Reasoning,
				Timeout: co.Timeout, SLOTargetUs: co.SLOTargetUs, ClosedLoop: co.ClosedLoop,
			}
			if co.PrefixSharing == "per_member" && co.PrefixGroup != "" {
				c.PrefixGroup = fmt.Sprintf("%s-%d", co.PrefixGroup, k)
			}
			ms = append(ms, member{field: fmt.Sprintf("%s member %d", f, k), c: c, factors: factors, spike: spike, pop: co.Population})
		}
	}
	if ip := s.InferencePerf; ip != nil {
		ipm, err := expandInferencePerf(ip)
		if err != nil {
			return nil, err
		}
		ms = append(ms, ipm...)
	}
	return ms, nil
}

// expandInferencePerf turns stages × system prompts × users into clients: each stage's
// clients are active only in that stage's window and share its rate equally; users of one
// system prompt share its prefix group across stages.
func expandInferencePerf(ip *InferencePerfSpec) ([]member, error) {
	sp := ip.SharedPrefix
	switch {
	case len(ip.Stages) == 0:
		return nil, errors.New("inference_perf.stages: at least one stage is required")
	case sp == nil:
		return nil, errors.New("inference_perf.shared_prefix: required")
	case sp.NumUniqueSystemPrompts < 1:
		return nil, fmt.Errorf("inference_perf.shared_prefix.num_unique_system_prompts: must be >= 1, got %d", sp.NumUniqueSystemPrompts)
	case sp.NumUsersPerSystemPrompt < 1:
		return nil, fmt.Errorf("inference_perf.shared_prefix.num_users_per_system_prompt: must be >= 1, got %d", sp.NumUsersPerSystemPrompt)
	case sp.SystemPromptLen < 0:
		return nil, fmt.Errorf("inference_perf.shared_prefix.system_prompt_len: must be >= 0, got %d", sp.SystemPromptLen)
	case sp.QuestionLen < 1:
		return nil, fmt.Errorf("inference_perf.shared_prefix.question_len: must be >= 1, got %d", sp.QuestionLen)
	case sp.OutputLen < 1:
		return nil, fmt.Errorf("inference_perf.shared_prefix.output_len: must be >= 1, got %d", sp.OutputLen)
	}
	n := sp.NumUniqueSystemPrompts * sp.NumUsersPerSystemPrompt
	if n*len(ip.Stages) > maxPopulation {
		return nil, fmt.Errorf("inference_perf: %d clients exceed the limit of %d", n*len(ip.Stages), maxPopulation)
	}
	var ms []member
	start := 0.0
	for si, st := range ip.Stages {
		f := fmt.Sprintf("inference_perf.stages[%d]", si)
		if !(st.Rate > 0) || math.IsInf(st.Rate, 0) {
			return nil, fmt.Errorf("%s.rate: must be a finite number > 0, got %g", f, st.Rate)
		}
		if !(st.Duration > 0) || math.IsInf(st.Duration, 0) {
			return nil, fmt.Errorf("%s.duration: must be a finite number of seconds > 0, got %g", f, st.Duration)
		}
		end := start + st.Duration*1e6
		rate := st.Rate / float64(n)
		for p := range sp.NumUniqueSystemPrompts {
			for u := range sp.NumUsersPerSystemPrompt {
				c := ClientSpec{
					ID:           fmt.Sprintf("inference-perf-s%d-p%d-u%d", si, p, u),
					RateFraction: 1,
					Arrival:      ArrivalSpec{Process: "poisson"},
					InputDist:    &DistSpec{Type: "constant", Params: map[string]float64{"value": float64(sp.QuestionLen)}},
					OutputDist:   &DistSpec{Type: "constant", Params: map[string]float64{"value": float64(sp.OutputLen)}},
					Lifecycle:    &LifecycleSpec{Windows: []WindowSpec{{StartUs: int64(start), EndUs: int64(end), TraceRate: &rate}}},
				}
				if sp.SystemPromptLen > 0 {
					c.PrefixGroup = fmt.Sprintf("inference-perf-system-prompt-%d", p)
					c.PrefixLength = sp.SystemPromptLen
				}
				if sp.EnableMultiTurnChat {
					c.Reasoning = &ReasoningSpec{MultiTurn: &MultiTurnSpec{ContextGrowth: "accumulate", SingleSession: true}}
				}
				ms = append(ms, member{field: fmt.Sprintf("%s client %q", f, c.ID), c: c})
			}
		}
		start = end
	}
	return ms, nil
}

// EffectiveHorizon is the time after which the spec generates no arrivals, in µs: horizon,
// or for an inference_perf spec without one the end of its last stage (0 = none).
func (s *Spec) EffectiveHorizon() int64 {
	if s.Horizon > 0 || s.InferencePerf == nil {
		return s.Horizon
	}
	t := 0.0
	for _, st := range s.InferencePerf.Stages {
		t += st.Duration * 1e6
	}
	return int64(t)
}

type tableBuilder struct {
	t   *Tables
	idx map[string]int32 // lookup only
}

func newTableBuilder(t *Tables) *tableBuilder {
	return &tableBuilder{t: t, idx: map[string]int32{"c\x00" + t.Clients[0]: 0, "t\x00" + t.Tenants[0]: 0, "s\x00" + t.SLOClasses[0]: 0}}
}

func (b *tableBuilder) add(tbl *[]string, kind, name string) int32 {
	key := kind + "\x00" + name
	if i, ok := b.idx[key]; ok {
		return i
	}
	*tbl = append(*tbl, name)
	i := int32(len(*tbl) - 1)
	b.idx[key] = i
	return i
}

func (s *Spec) build(seed int64) (*genSource, error) {
	if err := s.checkTop(); err != nil {
		return nil, err
	}
	ms, err := s.expand()
	if err != nil {
		return nil, err
	}
	tables := defaultTables()
	tb := newTableBuilder(&tables)
	ids := map[string]string{} // lookup only: id → field of its first use
	for i := range ms {
		m := &ms[i]
		if m.c.ID == "" {
			m.c.ID = fmt.Sprintf("client-%d", i)
		}
		if prev, dup := ids[m.c.ID]; dup {
			return nil, fmt.Errorf("%s.id: duplicate client id %q (also used by %s)", m.field, m.c.ID, prev)
		}
		ids[m.c.ID] = m.field
	}
	rates, err := s.baseRates(ms)
	if err != nil {
		return nil, err
	}
	groupLen := prefixGroupLengths(ms)
	var gens []*clientGen
	for i := range ms {
		g, err := s.buildClient(&ms[i], rates[i], groupLen, seed, tb)
		if err != nil {
			return nil, err
		}
		gens = append(gens, g)
	}
	return newGenSource(tables, gens, s.NumRequests, s.EffectiveHorizon()), nil
}

// prefixGroupLengths gives each prefix group the prefix_length of its first client that sets
// one (as BLIS), or DefaultPrefixLength.
func prefixGroupLengths(ms []member) map[string]int32 {
	out := map[string]int32{} // lookup only
	for _, m := range ms {
		if m.c.PrefixGroup == "" {
			continue
		}
		if _, ok := out[m.c.PrefixGroup]; !ok && m.c.PrefixLength > 0 {
			out[m.c.PrefixGroup] = int32(m.c.PrefixLength)
		}
	}
	for _, m := range ms {
		if _, ok := out[m.c.PrefixGroup]; m.c.PrefixGroup != "" && !ok {
			out[m.c.PrefixGroup] = DefaultPrefixLength
		}
	}
	return out
}

// baseRates splits aggregate_rate between rate-based clients in proportion to rate_fraction,
// as BLIS: over all clients, or, when some client has lifecycle windows, over the clients
// whose activity overlaps.
func (s *Spec) baseRates(ms []member) ([]float64, error) {
	rates := make([]float64, len(ms))
	lifecycle := false
	for _, m := range ms {
		lifecycle = lifecycle || (m.c.Lifecycle != nil && len(m.c.Lifecycle.Windows) > 0)
	}
	needsAggregate := func(m *member) bool {
		if m.c.Concurrency > 0 {
			return false
		}
		if m.c.Lifecycle != nil && len(m.c.Lifecycle.Windows) > 0 {
			for _, w := range m.c.Lifecycle.Windows {
				if w.TraceRate == nil {
					return true
				}
			}
			return false
		}
		return true
	}
	for i := range ms {
		m := &ms[i]
		if m.c.Concurrency > 0 {
			if m.c.RateFraction != 0 {
				return nil, fmt.Errorf("%s.rate_fraction: concurrency and rate_fraction are mutually exclusive", m.field)
			}
			continue
		}
		if !needsAggregate(m) {
			continue
		}
		if !(m.c.RateFraction > 0) || math.IsInf(m.c.RateFraction, 0) {
			return nil, fmt.Errorf("%s.rate_fraction: must be a finite number > 0, got %g", m.field, m.c.RateFraction)
		}
		if !(s.AggregateRate > 0) {
			return nil, fmt.Errorf("aggregate_rate: must be > 0 (%s has rate_fraction and windows without trace_rate)", m.field)
		}
	}
	for i := range ms {
		if !needsAggregate(&ms[i]) {
			continue
		}
		total := 0.0
		for j := range ms {
			if needsAggregate(&ms[j]) && (!lifecycle || overlaps(&ms[i].c, &ms[j].c)) {
				total += ms[j].c.RateFraction
			}
		}
		rates[i] = s.AggregateRate * ms[i].c.RateFraction / total
	}
	return rates, nil
}

func windowsOf(c *ClientSpec) [][2]int64 {
	if c.Lifecycle == nil || len(c.Lifecycle.Windows) == 0 {
		return [][2]int64{{0, math.MaxInt64}}
	}
	var out [][2]int64
	for _, w := range c.Lifecycle.Windows {
		out = append(out, [2]int64{w.StartUs, w.EndUs})
	}
	return out
}

func overlaps(a, b *ClientSpec) bool {
	for _, x := range windowsOf(a) {
		for _, y := range windowsOf(b) {
			if x[0] < y[1] && y[0] < x[1] {
				return true
			}
		}
	}
	return false
}

func (s *Spec) buildClient(m *member, base float64, groupLen map[string]int32, seed int64, tb *tableBuilder) (*clientGen, error) {
	c, f := &m.c, m.field
	if err := checkClient(c, f); err != nil {
		return nil, err
	}
	g := &clientGen{name: c.ID}
	g.rng, g.fol = clientStream(seed, c.ID)
	g.client = tb.add(&tb.t.Clients, "c", c.ID)
	g.tenant = tb.add(&tb.t.Tenants, "t", c.TenantID)
	class := c.SLOClass
	if class == "" {
		class = classStandard
	}
	g.cl = tb.add(&tb.t.SLOClasses, "s", class)
	if c.Timeout != nil {
		switch {
		case *c.Timeout < 0:
			return nil, fmt.Errorf("%s.timeout: must be >= 0, got %d", f, *c.Timeout)
		case *c.Timeout == 0:
			g.timeout = NoTimeout
		default:
			g.timeout = *c.Timeout
		}
	}
	g.attrs = clientAttrs(c, tb)
	if c.PrefixGroup != "" {
		n := groupLen[c.PrefixGroup]
		if c.PrefixLength > 0 {
			n = int32(c.PrefixLength)
		}
		g.prefix = Segment{Key: PrefixKey(c.PrefixGroup), Length: n}
	}

	in, out, err := s.setContent(g, c, f)
	if err != nil {
		return nil, err
	}
	if err := s.setTurns(g, c, f); err != nil {
		return nil, err
	}
	if err := s.setPhases(g, m, base, in, out); err != nil {
		return nil, err
	}
	return g, nil
}

// checkClient validates the client's scalar fields.
func checkClient(c *ClientSpec, f string) error {
	if c.SLOClass != "" && !oneOf(c.SLOClass, SLOClasses) {
		return fmt.Errorf("%s.slo_class: unknown SLO class %q; valid: %s", f, c.SLOClass, strings.Join(SLOClasses, ", "))
	}
	if c.Concurrency < 0 {
		return fmt.Errorf("%s.concurrency: must be >= 0, got %d", f, c.Concurrency)
	}
	if c.ThinkTimeUs < 0 {
		return fmt.Errorf("%s.think_time_us: must be >= 0, got %d", f, c.ThinkTimeUs)
	}
	if c.ThinkTimeUs > 0 && c.Concurrency == 0 {
		return fmt.Errorf("%s.think_time_us: only applies to concurrency clients (multi-turn sessions use reasoning.multi_turn.think_time_us)", f)
	}
	if c.PrefixLength < 0 || c.PrefixLength > maxTokens {
		return fmt.Errorf("%s.prefix_length: must be in [0, %d], got %d", f, maxTokens, c.PrefixLength)
	}
	if c.PrefixLength > 0 && c.PrefixGroup == "" {
		return fmt.Errorf("%s.prefix_length: requires prefix_group (the group names the shared content)", f)
	}
	if c.SLOTargetUs < 0 {
		return fmt.Errorf("%s.slo_target_us: must be >= 0, got %d", f, c.SLOTargetUs)
	}
	if c.Network != nil && (c.Network.RTTMs < 0 || c.Network.BandwidthMbps < 0) {
		return fmt.Errorf("%s.network: rtt_ms and bandwidth_mbps must be >= 0", f)
	}
	return nil
}

// setContent configures what the client sends: an agentic workflow, a multimodal mix or
// plain length distributions. It returns the client's input and output samplers.
func (s *Spec) setContent(g *clientGen, c *ClientSpec, f string) (in, out *sampler, err error) {
	switch {
	case c.Agentic != nil:
		if c.Reasoning != nil {
			return nil, nil, fmt.Errorf("%s.agentic: cannot be combined with reasoning", f)
		}
		if c.Multimodal != nil {
			return nil, nil, fmt.Errorf("%s.agentic: cannot be combined with multimodal", f)
		}
		if c.Concurrency > 0 {
			return nil, nil, fmt.Errorf("%s.agentic: cannot be combined with concurrency", f)
		}
		if c.InputDist != nil || c.OutputDist != nil {
			return nil, nil, fmt.Errorf("%s.input_distribution: agentic clients take their distributions from their steps", f)
		}
		if g.agentic, err = compileAgentic(f, c.Agentic, s.baseDir); err != nil {
			return nil, nil, err
		}
	default:
		if c.Multimodal != nil {
			if c.InputDist != nil {
				return nil, nil, fmt.Errorf("%s.input_distribution: multimodal clients compose their prompt from multimodal.text_distribution and the media distributions", f)
			}
			if g.mm, err = buildMediaMix(f+".multimodal", c.Multimodal, s.baseDir); err != nil {
				return nil, nil, err
			}
		} else if in, err = newSampler(f+".input_distribution", c.InputDist, s.baseDir); err != nil {
			return nil, nil, err
		}
		if out, err = newSampler(f+".output_distribution", c.OutputDist, s.baseDir); err != nil {
			return nil, nil, err
		}
	}
	return in, out, nil
}

// setTurns configures reasoning and multi-turn conversations.
func (s *Spec) setTurns(g *clientGen, c *ClientSpec, f string) error {
	var err error
	if r := c.Reasoning; r != nil {
		if r.ReasonRatioDist != nil {
			if g.reason, err = newSampler(f+".reasoning.reason_ratio_distribution", r.ReasonRatioDist, s.baseDir); err != nil {
				return err
			}
		}
		if mt := r.MultiTurn; mt != nil {
			mf := f + ".reasoning.multi_turn"
			if mt.MaxRounds < 1 && !mt.SingleSession {
				return fmt.Errorf("%s.max_rounds: must be >= 1, got %d", mf, mt.MaxRounds)
			}
			if mt.MaxRounds < 0 {
				return fmt.Errorf("%s.max_rounds: must be >= 0, got %d", mf, mt.MaxRounds)
			}
			if mt.ThinkTimeUs < 0 {
				return fmt.Errorf("%s.think_time_us: must be >= 0, got %d", mf, mt.ThinkTimeUs)
			}
			if mt.ContextGrowth != "" && mt.ContextGrowth != "accumulate" {
				return fmt.Errorf("%s.context_growth: unknown value %q; valid: accumulate", mf, mt.ContextGrowth)
			}
			if c.Concurrency > 0 {
				return fmt.Errorf("%s: multi-turn sessions cannot be combined with concurrency", mf)
			}
			g.mt = &multiTurn{maxRounds: int32(mt.MaxRounds), think: mt.ThinkTimeUs,
				accumulate: mt.ContextGrowth == "accumulate", single: mt.SingleSession,
				closed: c.ClosedLoop == nil || *c.ClosedLoop}
		}
	}
	if c.ClosedLoop != nil && g.mt == nil {
		return fmt.Errorf("%s.closed_loop: only applies to multi-turn clients", f)
	}
	return nil
}

// setPhases configures when the client sends: closed-loop users, or its arrival process,
// rate profile and lifecycle windows.
func (s *Spec) setPhases(g *clientGen, m *member, base float64, in, out *sampler) error {
	c, f := &m.c, m.field
	if c.Concurrency > 0 {
		if c.Lifecycle != nil {
			return fmt.Errorf("%s.lifecycle: concurrency clients run from time 0 and take no windows", f)
		}
		if c.Arrival.Process != "" {
			return fmt.Errorf("%s.arrival: concurrency clients are closed loop and take no arrival process", f)
		}
		g.conc, g.think = c.Concurrency, c.ThinkTimeUs
		g.phases = []phase{{end: math.Inf(1), in: in, out: out}}
		return nil
	}
	proc, pf, err := newProcess(f+".arrival", &c.Arrival)
	if err != nil {
		return err
	}
	prof := append(profile(nil), m.factors...)
	if pf != nil {
		prof = append(prof, pf)
	}
	if m.spike != nil && base > 0 {
		mult := *m.spike.TraceRate / float64(m.pop) / base
		prof = append(prof, &windowFactor{start: float64(m.spike.StartTimeUs), end: float64(m.spike.StartTimeUs + m.spike.DurationUs), mult: mult})
	}
	if c.Lifecycle == nil || len(c.Lifecycle.Windows) == 0 {
		if c.Lifecycle != nil {
			return fmt.Errorf("%s.lifecycle.windows: at least one window is required", f)
		}
		g.phases = []phase{{end: math.Inf(1), rate: base, proc: proc, prof: prof, in: in, out: out}}
		return nil
	}
	// Windows are taken in time order (the file may list them in any order); the errors
	// name each window by its position in the file.
	order := make([]int, len(c.Lifecycle.Windows))
	for k := range order {
		order[k] = k
	}
	sort.SliceStable(order, func(i, j int) bool {
		return c.Lifecycle.Windows[order[i]].StartUs < c.Lifecycle.Windows[order[j]].StartUs
	})
	prevEnd, prevK := int64(math.MinInt64), -1
	for _, k := range order {
		w := c.Lifecycle.Windows[k]
		wf := fmt.Sprintf("%s.lifecycle.windows[%d]", f, k)
		if w.StartUs < 0 || w.EndUs <= w.StartUs {
			return fmt.Errorf("%s: need 0 <= start_us < end_us, got [%d, %d)", wf, w.StartUs, w.EndUs)
		}
		if w.StartUs < prevEnd {
			return fmt.Errorf("%s.start_us: overlaps windows[%d], which ends at %d", wf, prevK, prevEnd)
		}
		prevEnd, prevK = w.EndUs, k
		ph := phase{start: float64(w.StartUs), end: float64(w.EndUs), rate: base, proc: proc, prof: prof, in: in, out: out}
		if w.TraceRate != nil {
			if !(*w.TraceRate >= 0) || math.IsInf(*w.TraceRate, 0) {
				return fmt.Errorf("%s.trace_rate: must be a finite number >= 0, got %g", wf, *w.TraceRate)
			}
			ph.rate = *w.TraceRate
		}
		// Every window gets its own process, so stateful processes restart with the window.
		a := &c.Arrival
		if w.Arrival != nil {
			a = w.Arrival
		}
		wp, wfac, err := newProcess(wf+".arrival", a)
		if err != nil {
			return err
		}
		ph.proc = wp
		ph.prof = append(profile(nil), m.factors...)
		if wfac != nil {
			ph.prof = append(ph.prof, wfac)
		}
		if w.InputDist != nil {
			if g.mm != nil || g.agentic != nil {
				return fmt.Errorf("%s.input_distribution: not valid for multimodal or agentic clients", wf)
			}
			if ph.in, err = newSampler(wf+".input_distribution", w.InputDist, s.baseDir); err != nil {
				return err
			}
		}
		if w.OutputDist != nil {
			if g.agentic != nil {
				return fmt.Errorf("%s.output_distribution: not valid for agentic clients", wf)
			}
			if ph.out, err = newSampler(wf+".output_distribution", w.OutputDist, s.baseDir); err != nil {
				return err
			}
		}
		g.phases = append(g.phases, ph)
	}
	return nil
}

func buildMediaMix(f string, m *MultimodalSpec, baseDir string) (*mediaMix, error) {
	mm := &mediaMix{}
	var err error
	if m.TextDist != nil {
		if mm.text, err = newSampler(f+".text_distribution", m.TextDist, baseDir); err != nil {
			return nil, err
		}
	}
	for _, md := range []struct {
		name        string
		size, count *DistSpec
	}{{"image", m.ImageDist, m.ImageCountDist}, {"audio", m.AudioDist, m.AudioCountDist}, {"video", m.VideoDist, m.VideoCountDist}} {
		if md.size == nil {
			if md.count != nil {
				return nil, fmt.Errorf("%s.%s_count_distribution: requires %s_distribution", f, md.name, md.name)
			}
			continue
		}
		sz, err := newSampler(f+"."+md.name+"_distribution", md.size, baseDir)
		if err != nil {
			return nil, err
		}
		var cnt *sampler
		if md.count != nil {
			if cnt, err = newSampler(f+"."+md.name+"_count_distribution", md.count, baseDir); err != nil {
				return nil, err
			}
		}
		mm.size = append(mm.size, sz)
		mm.counts = append(mm.counts, cnt)
	}
	if mm.text == nil && len(mm.size) == 0 {
		return nil, fmt.Errorf("%s: at least one of text_distribution, image_distribution, audio_distribution, video_distribution is required", f)
	}
	return mm, nil
}

// PrefixKey is the segment key of a prefix group's shared content. Two clients naming the
// same group share it, whatever workload or scenario they come from.
func PrefixKey(group string) uint64 { return rng.FNV1a("workload/prefix/" + group) }

// clientAttrs builds the attributes every request of client c carries, registering its model
// and adapter names in the tables (which stay nil while no client names one).
func clientAttrs(c *ClientSpec, tb *tableBuilder) Attrs {
	a := Attrs{Streaming: c.Streaming, SLOTarget: c.SLOTargetUs}
	if c.Model != "" {
		a.Model = tb.addOptional(&tb.t.Models, "m", c.Model)
	}
	if c.Adapter != "" {
		a.Adapter = tb.addOptional(&tb.t.Adapters, "a", c.Adapter)
	}
	if n := c.Network; n != nil {
		a.RTT = int64(math.Round(n.RTTMs * 1000))
		a.BandwidthMbps = n.BandwidthMbps
	}
	return a
}

// addOptional adds name to a table whose index 0 is "" (none), creating that entry first.
func (b *tableBuilder) addOptional(tbl *[]string, kind, name string) int32 {
	if len(*tbl) == 0 {
		*tbl = append(*tbl, "")
	}
	return b.add(tbl, kind, name)
}
