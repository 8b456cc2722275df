package workload

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// AgenticSpec describes an agentic workflow (a DAG of LLM and tool calls) that each session of
// a client executes. Session starts follow the client's arrival process; every later step is
// injected when its parents finish (see docs/workloads.md).
type AgenticSpec struct {
	// Workflow is a descriptive name.
	Workflow string `yaml:"workflow,omitempty" json:"workflow,omitempty"`
	// Loop repeats a connected group of steps.
	Loop *LoopSpec `yaml:"loop,omitempty" json:"loop,omitempty"`
	// Steps are the workflow's steps.
	Steps []StepSpec `yaml:"steps" json:"steps"`
	// Tools maps tool names to their latency and output-token distributions.
	Tools map[string]ToolSpec `yaml:"tools,omitempty" json:"tools,omitempty"`
}

// LoopSpec repeats the steps in Over.
type LoopSpec struct {
	// Over names the loop body's steps; their order defines which dependencies are loop-back
	// edges (a dependency on a step at the same or a later position).
	Over []string `yaml:"over" json:"over"`
	// MaxIterations bounds the number of iterations, >= 1.
	MaxIterations int `yaml:"max_iterations" json:"max_iterations"`
	// ContinueProbability is the probability of running another iteration after each one
	// below MaxIterations (default 1: always run MaxIterations).
	ContinueProbability *float64 `yaml:"continue_probability,omitempty" json:"continue_probability,omitempty"`
}

// StepSpec is one workflow step.
type StepSpec struct {
	// ID names the step, unique within the workflow.
	ID string `yaml:"id" json:"id"`
	// Type is llm_call or tool_call.
	Type string `yaml:"type" json:"type"`
	// Tool names the tool a tool_call invokes.
	Tool string `yaml:"tool,omitempty" json:"tool,omitempty"`
	// DependsOn names the steps that must finish before this one starts.
	DependsOn []string `yaml:"depends_on,omitempty" json:"depends_on,omitempty"`
	// FanOut runs this many parallel instances (>= 2 when given); children wait for all.
	FanOut int `yaml:"fan_out,omitempty" json:"fan_out,omitempty"`
	// ContextGrowth "accumulate" makes the step's prompt carry the session's accumulated
	// context (earlier accumulating prompts and their answers). Only valid inside the loop.
	ContextGrowth string `yaml:"context_growth,omitempty" json:"context_growth,omitempty"`
	// InputDist and OutputDist are the new prompt tokens and output tokens of an llm_call.
	InputDist  *DistSpec `yaml:"input_distribution,omitempty" json:"input_distribution,omitempty"`
	OutputDist *DistSpec `yaml:"output_distribution,omitempty" json:"output_distribution,omitempty"`
}

// ToolSpec gives a tool's latency (µs) and the tokens its output adds to the next prompt.
type ToolSpec struct {
	Latency      DistSpec `yaml:"latency" json:"latency"`
	OutputTokens DistSpec `yaml:"output_tokens" json:"output_tokens"`
}

type wfStep struct {
	id                  string
	tool                bool
	in, out             *sampler
	lat, tout           *sampler
	fan                 int
	inLoop, accumulate  bool
	parents, children   []int // non-loop-back edges only
	waitFirst, waitNext int   // parent instance completions awaited (first / later iterations)
}

// workflow is a validated, compiled AgenticSpec.
type workflow struct {
	steps      []wfStep
	root       int
	loop       []int // loop body steps
	entries    []int // loop steps started by an iteration boundary
	loopInst   int   // step instances per iteration
	maxIter    int
	cont       float64
	perSession int64 // most LLM requests one session can issue
}

// compileAgentic validates a against seed 003's rules 1–8 and compiles it. field names the
// client for errors, e.g. `client "react": agentic`.
func compileAgentic(field string, a *AgenticSpec, baseDir string) (*workflow, error) {
	f := field + ": agentic"
	if len(a.Steps) == 0 {
		return nil, fmt.Errorf("%s.steps: at least one step is required", f)
	}
	w := &workflow{maxIter: 1, cont: 1}
	index := map[string]int{} // lookup only
	for i := range a.Steps {
		st := &a.Steps[i]
		if st.ID == "" {
			return nil, fmt.Errorf("%s.steps[%d].id: required", f, i)
		}
		if _, dup := index[st.ID]; dup {
			return nil, fmt.Errorf("%s.steps[%s].id: duplicate step id", f, st.ID)
		}
		index[st.ID] = i
		ws, err := compileStep(f, a, st, baseDir)
		if err != nil {
			return nil, err
		}
		w.steps = append(w.steps, ws)
	}
	for _, name := range sortedKeys(a.Tools) {
		if !slices.ContainsFunc(a.Steps, func(st StepSpec) bool { return st.Tool == name }) {
			return nil, fmt.Errorf("%s.tools[%s]: defined but not used by any step", f, name)
		}
	}
	pos, err := w.setLoop(f, a.Loop, index)
	if err != nil {
		return nil, err
	}
	if err := w.link(f, a, index, pos); err != nil {
		return nil, err
	}
	if err := w.findRoot(f); err != nil {
		return nil, err
	}
	if a.Loop != nil {
		if err := w.checkLoop(f, a, index, pos); err != nil {
			return nil, err
		}
	}
	w.countWaits()
	return w, nil
}

// compileStep validates one step (rules 3, 4, 6, 7 and the step's own fields).
func compileStep(f string, a *AgenticSpec, st *StepSpec, baseDir string) (wfStep, error) {
	sf := fmt.Sprintf("%s.steps[%s]", f, st.ID)
	ws := wfStep{id: st.ID, fan: 1}
	switch {
	case st.FanOut == 1 || st.FanOut < 0:
		return ws, fmt.Errorf("%s.fan_out: must be >= 2 when given, got %d", sf, st.FanOut)
	case st.FanOut > 1:
		ws.fan = st.FanOut
	}
	switch st.ContextGrowth {
	case "":
	case "accumulate":
		ws.accumulate = true
	default:
		return ws, fmt.Errorf("%s.context_growth: unknown value %q; valid: accumulate", sf, st.ContextGrowth)
	}
	switch st.Type {
	case "llm_call":
		if st.Tool != "" {
			return ws, fmt.Errorf("%s.tool: only valid for tool_call steps", sf)
		}
		if st.InputDist == nil {
			return ws, fmt.Errorf("%s.input_distribution: required for llm_call steps", sf)
		}
		if st.OutputDist == nil {
			return ws, fmt.Errorf("%s.output_distribution: required for llm_call steps", sf)
		}
		var err error
		if ws.in, err = newSampler(sf+".input_distribution", st.InputDist, baseDir); err != nil {
			return ws, err
		}
		if ws.out, err = newSampler(sf+".output_distribution", st.OutputDist, baseDir); err != nil {
			return ws, err
		}
	case "tool_call":
		ws.tool = true
		if st.InputDist != nil {
			return ws, fmt.Errorf("%s.input_distribution: tool_call steps take no distributions (latency comes from tools)", sf)
		}
		if st.OutputDist != nil {
			return ws, fmt.Errorf("%s.output_distribution: tool_call steps take no distributions (latency comes from tools)", sf)
		}
		if st.Tool == "" {
			return ws, fmt.Errorf("%s.tool: required for tool_call steps", sf)
		}
		t, ok := a.Tools[st.Tool]
		if !ok {
			return ws, fmt.Errorf("%s.tool: unknown tool %q; defined: %s", sf, st.Tool, strings.Join(sortedKeys(a.Tools), ", "))
		}
		tf := fmt.Sprintf("%s.tools[%s]", f, st.Tool)
		var err error
		if ws.lat, err = newSampler(tf+".latency", &t.Latency, baseDir); err != nil {
			return ws, err
		}
		if ws.tout, err = newSampler(tf+".output_tokens", &t.OutputTokens, baseDir); err != nil {
			return ws, err
		}
	default:
		return ws, fmt.Errorf("%s.type: unknown step type %q; valid: llm_call, tool_call", sf, st.Type)
	}
	return ws, nil
}

// setLoop records the loop body and returns every step's position in loop.over (-1 outside).
func (w *workflow) setLoop(f string, loop *LoopSpec, index map[string]int) ([]int, error) {
	pos := make([]int, len(w.steps)) // position in loop.over, -1 outside the loop
	for i := range pos {
		pos[i] = -1
	}
	if loop != nil {
		lf := f + ".loop"
		if len(loop.Over) == 0 {
			return nil, fmt.Errorf("%s.over: at least one step is required", lf)
		}
		if loop.MaxIterations < 1 {
			return nil, fmt.Errorf("%s.max_iterations: must be >= 1, got %d", lf, loop.MaxIterations)
		}
		w.maxIter = loop.MaxIterations
		if p := loop.ContinueProbability; p != nil {
			if !(*p >= 0 && *p <= 1) {
				return nil, fmt.Errorf("%s.continue_probability: must be in [0, 1], got %g", lf, *p)
			}
			w.cont = *p
		}
		for k, name := range loop.Over {
			i, ok := index[name]
			if !ok {
				return nil, fmt.Errorf("%s.over[%d]: unknown step %q", lf, k, name)
			}
			if pos[i] >= 0 {
				return nil, fmt.Errorf("%s.over[%d]: step %q listed twice", lf, k, name)
			}
			pos[i] = k
			w.steps[i].inLoop = true
			w.loop = append(w.loop, i)
			w.loopInst += w.steps[i].fan
		}
	}
	return pos, nil
}

// link records the dependency edges, skipping loop-back edges.
func (w *workflow) link(f string, a *AgenticSpec, index map[string]int, pos []int) error {
	for i, st := range a.Steps {
		sf := fmt.Sprintf("%s.steps[%s]", f, st.ID)
		if w.steps[i].accumulate && !w.steps[i].inLoop {
			return fmt.Errorf("%s.context_growth: accumulate is only valid for steps inside loop.over", sf)
		}
		for _, d := range st.DependsOn {
			p, ok := index[d]
			if !ok {
				return fmt.Errorf("%s.depends_on: unknown step %q", sf, d)
			}
			if p == i {
				return fmt.Errorf("%s.depends_on: a step cannot depend on itself", sf)
			}
			if slices.Contains(w.steps[i].parents, p) {
				return fmt.Errorf("%s.depends_on: %q listed twice", sf, d)
			}
			if pos[p] >= 0 && pos[i] >= 0 && pos[p] >= pos[i] {
				continue // loop-back edge: the next iteration, not a dependency within one
			}
			w.steps[i].parents = append(w.steps[i].parents, p)
			w.steps[p].children = append(w.steps[p].children, i)
		}
	}
	return nil
}

// findRoot checks rules 1 (acyclic) and 2 (one root, an llm_call) and records the root.
func (w *workflow) findRoot(f string) error {
	// Rule 1: acyclic (Kahn's algorithm over the non-loop-back edges).
	indeg := make([]int, len(w.steps))
	for i := range w.steps {
		indeg[i] = len(w.steps[i].parents)
	}
	var queue, roots []int
	for i := range w.steps {
		if indeg[i] == 0 {
			queue = append(queue, i)
			roots = append(roots, i)
		}
	}
	seen := 0
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		seen++
		for _, ch := range w.steps[n].children {
			if indeg[ch]--; indeg[ch] == 0 {
				queue = append(queue, ch)
			}
		}
	}
	if seen != len(w.steps) {
		var cyc []string
		for i := range w.steps {
			if indeg[i] > 0 {
				cyc = append(cyc, w.steps[i].id)
			}
		}
		return fmt.Errorf("%s.steps: depends_on forms a cycle through %s", f, strings.Join(cyc, ", "))
	}
	// Rule 2: exactly one root.
	if len(roots) != 1 {
		var names []string
		for _, r := range roots {
			names = append(names, w.steps[r].id)
		}
		return fmt.Errorf("%s.steps: exactly one root step (without depends_on) is required, found %d: %s", f, len(roots), strings.Join(names, ", "))
	}
	w.root = roots[0]
	if w.steps[w.root].tool {
		return fmt.Errorf("%s.steps[%s].type: the root step must be an llm_call (a session starts with a request)", f, w.steps[w.root].id)
	}
	return nil
}

// countWaits computes how many parent instance completions each step awaits, the loop's
// entry steps and the most LLM requests a session can issue.
func (w *workflow) countWaits() {
	// Parent instance counts: within an iteration, every instance of a parent counts; a step
	// after the loop counts each loop parent once (the loop's end); later iterations of a loop
	// step only wait for parents inside the loop.
	for i := range w.steps {
		s := &w.steps[i]
		for _, p := range s.parents {
			ps := &w.steps[p]
			switch {
			case ps.inLoop && !s.inLoop:
				s.waitFirst++
			case !ps.inLoop && s.inLoop:
				s.waitFirst += ps.fan
			default:
				s.waitFirst += ps.fan
				s.waitNext += ps.fan
			}
		}
		if s.inLoop && s.waitNext == 0 {
			w.entries = append(w.entries, i)
		}
		if !s.tool {
			n := int64(s.fan)
			if s.inLoop {
				n *= int64(w.maxIter)
			}
			w.perSession += n
		}
	}
}

// checkLoop enforces rule 5 (the loop body is connected) and that no loop step depends on a
// step that itself runs after the loop.
func (w *workflow) checkLoop(f string, a *AgenticSpec, index map[string]int, pos []int) error {
	// Undirected connectivity over all declared edges between loop steps.
	adj := map[int][]int{} // lookup only
	for i, st := range a.Steps {
		for _, d := range st.DependsOn {
			p := index[d]
			if pos[i] >= 0 && pos[p] >= 0 {
				adj[i] = append(adj[i], p)
				adj[p] = append(adj[p], i)
			}
		}
	}
	reached := map[int]bool{w.loop[0]: true}
	stack := []int{w.loop[0]}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, m := range adj[n] {
			if !reached[m] {
				reached[m] = true
				stack = append(stack, m)
			}
		}
	}
	for _, i := range w.loop {
		if !reached[i] {
			return fmt.Errorf("%s.loop.over: steps must form a connected subgraph; %q is not connected to %q", f, w.steps[i].id, w.steps[w.loop[0]].id)
		}
	}
	// A step outside the loop that descends from the loop runs after it, so no loop step may
	// depend on it.
	after := make([]bool, len(w.steps))
	var mark func(int)
	mark = func(n int) {
		for _, c := range w.steps[n].children {
			if !w.steps[c].inLoop && !after[c] {
				after[c] = true
				mark(c)
			}
		}
	}
	for _, i := range w.loop {
		mark(i)
	}
	for _, i := range w.loop {
		for _, p := range w.steps[i].parents {
			if after[p] {
				return fmt.Errorf("%s.steps[%s].depends_on: %q runs after the loop, so a loop step cannot depend on it", f, w.steps[i].id, w.steps[p].id)
			}
		}
	}
	return nil
}

// nodeState tracks one (step, iteration) of a session.
type nodeState struct {
	waiting int
	ready   int64
	extra   []Segment // tool outputs feeding this step's prompt
	started bool
}

// agSession is one running workflow.
type agSession struct {
	c           *clientGen
	w           *workflow
	id          uint64
	allowance   int64 // requests this session may still issue (its share of num_requests)
	nodes       []nodeState
	iterDone    []int
	iterEnd     []int64
	loopIters   int
	ctx         []Segment // accumulated context
	llmSeq      int32
	aborted     bool
	terminated  bool // a step was cut by the horizon or the request budget
	outstanding int  // started step instances not yet finished
	begin       int64
	lastEnd     int64 // latest step completion (LLM or tool) so far
	stats       *AgenticStats
	buf         Request
	// obs, when set, observes every step instance start and finish (tests).
	obs func(ev stepEvent)
}

// stepEvent describes a step instance starting or finishing (used to check invariants).
type stepEvent struct {
	session        uint64
	step           string
	iter, instance int
	start, end     int64 // end = -1 for a start event
	tool           bool
}

// agInstance is the waiter for one LLM step instance.
type agInstance struct {
	s      *agSession
	step   int
	iter   int
	inst   int
	prompt []Segment // kept only for accumulating steps
	start  int64
}

func (w *workflow) node(s *agSession, step, iter int) *nodeState {
	return &s.nodes[iter*len(w.steps)+step]
}

// startAgentic starts a session at client c's arrival and emits its root request into r.
func (s *genSource) startAgentic(c *clientGen, _ *phase, r *Request) bool {
	w := c.agentic
	if s.left <= 0 {
		return false
	}
	allow := min(w.perSession, s.left)
	s.left -= allow
	iters := 1
	if w.loop != nil {
		iters = w.maxIter
	}
	ss := &agSession{c: c, w: w, id: s.newSession(), allowance: allow,
		nodes: make([]nodeState, len(w.steps)*iters), iterDone: make([]int, iters), iterEnd: make([]int64, iters),
		obs: s.agObserver, begin: c.next, lastEnd: c.next, stats: &s.agStats}
	s.agStats.Started++
	for it := range iters {
		for i := range w.steps {
			st := &w.steps[i]
			n := w.node(ss, i, it)
			if it == 0 || !st.inLoop {
				n.waiting = st.waitFirst
			} else {
				n.waiting = st.waitNext
			}
		}
	}
	emitted := false
	emit := func(req *Request, wt waiter) bool {
		if !emitted {
			emitted = true
			segs := r.Segments[:0]
			*r = *req
			r.Segments = append(segs, req.Segments...)
			r.ID = s.newID()
			s.waiting[r.ID] = wt
			return true
		}
		s.schedule(req, func(id uint64) { s.waiting[id] = wt })
		return true
	}
	ss.start(s, w.root, 0, c.next, c.rng, emit)
	return emitted
}

// start runs step i of iteration it at time t: a tool completes after its sampled latency
// (and its children start then), an LLM call issues one request per instance.
func (ss *agSession) start(s *genSource, i, it int, t int64, rr *rand.Rand, emit func(*Request, waiter) bool) {
	w, c := ss.w, ss.c
	st := &w.steps[i]
	n := w.node(ss, i, it)
	if n.started || ss.aborted {
		return
	}
	n.started = true
	if st.inLoop && it+1 > ss.loopIters {
		ss.loopIters = it + 1
		ss.stats.LoopIterations++
	}
	if st.tool {
		for k := range st.fan {
			lat := st.lat.micros(rr)
			out := st.tout.tokens(rr)
			ss.stats.ToolCalls++
			ss.stats.ToolWaitUs += lat
			ss.lastEnd = max(ss.lastEnd, t+lat)
			if ss.obs != nil {
				ss.obs(stepEvent{session: ss.id, step: st.id, iter: it, instance: k, start: t, end: -1, tool: true})
				ss.obs(stepEvent{session: ss.id, step: st.id, iter: it, instance: k, start: t, end: t + lat, tool: true})
			}
			ss.complete(s, i, it, t+lat, Segment{Key: rr.Uint64(), Length: out}, rr, emit)
		}
		return
	}
	for k := range st.fan {
		if ss.allowance <= 0 || t > s.horizon {
			ss.terminated = true
			return
		}
		r := &ss.buf
		r.Client, r.Tenant, r.Class, r.Timeout = c.client, c.tenant, c.cl, c.timeout
		r.Attrs = c.attrs
		r.Session, r.Round, r.Step, r.Iteration = ss.id, ss.llmSeq, st.id, int32(it)
		r.Arrival = t
		r.Segments = r.Segments[:0]
		if c.prefix.Length > 0 {
			r.Segments = append(r.Segments, c.prefix)
		}
		if st.accumulate {
			r.Segments = append(r.Segments, ss.ctx...)
		}
		r.Segments = append(r.Segments, n.extra...)
		r.Segments = append(r.Segments, Segment{Key: rr.Uint64(), Length: st.in.tokens(rr)})
		r.InputLen = 0
		for _, sg := range r.Segments {
			r.InputLen += sg.Length
		}
		r.OutputLen = st.out.tokens(rr)
		inst := &agInstance{s: ss, step: i, iter: it, inst: k, start: t}
		if st.accumulate {
			inst.prompt = append([]Segment(nil), r.Segments...)
		}
		ss.llmSeq++
		ss.allowance--
		ss.outstanding++
		ss.stats.Requests++
		if ss.obs != nil {
			ss.obs(stepEvent{session: ss.id, step: st.id, iter: it, instance: k, start: t, end: -1})
		}
		emit(r, inst)
	}
}

func (a *agInstance) finished(s *genSource, _ uint64, o Outcome, out int32, now int64, inject func(*Request)) {
	ss := a.s
	ss.outstanding--
	ss.lastEnd = max(ss.lastEnd, now)
	if ss.obs != nil {
		ss.obs(stepEvent{session: ss.id, step: ss.w.steps[a.step].id, iter: a.iter, instance: a.inst, start: a.start, end: now})
	}
	if o != Completed {
		if !ss.aborted {
			ss.aborted = true
			ss.stats.Aborted++
		}
		return
	}
	if a.prompt != nil {
		// The accumulated context continues from this step's prompt and answer.
		skip := 0
		if ss.c.prefix.Length > 0 {
			skip = 1
		}
		ss.ctx = append(ss.ctx[:0], a.prompt[skip:]...)
		if out > 0 {
			ss.ctx = append(ss.ctx, Segment{Key: ss.c.fol.Uint64(), Length: out})
		}
		a.prompt = nil
	}
	emit := func(r *Request, w waiter) bool { return s.injectNew(r, w, inject) }
	ss.complete(s, a.step, a.iter, now, Segment{}, ss.c.fol, emit)
	if ss.outstanding == 0 && !ss.aborted {
		// Tool calls run inside complete, so nothing can start any more: the session is over.
		if ss.terminated {
			ss.stats.Truncated++
		} else {
			ss.stats.Completed++
			e2e := ss.lastEnd - ss.begin
			ss.stats.SessionE2ESumUs += e2e
			ss.stats.SessionE2EMaxUs = max(ss.stats.SessionE2EMaxUs, e2e)
		}
	}
}

// AgenticStats summarizes the agentic sessions of a source (seed 003's agentic metrics).
// Sessions still running when the simulation stops are Started but in no other count.
type AgenticStats struct {
	// Started counts sessions; Completed ran every step; Aborted lost a step (rejected,
	// dropped, timed out); Truncated were cut by the horizon or the request budget.
	Started, Completed, Aborted, Truncated int64
	// Requests counts LLM calls issued; ToolCalls and ToolWaitUs count tool calls and their
	// total sampled latency; LoopIterations counts loop iterations started.
	Requests, ToolCalls, ToolWaitUs, LoopIterations int64
	// SessionE2ESumUs and SessionE2EMaxUs are over completed sessions, from the root's
	// arrival to the last step's completion.
	SessionE2ESumUs, SessionE2EMaxUs int64
}

// SessionReporter is implemented by sources with agentic clients.
type SessionReporter interface {
	// AgenticStats returns the session counters so far.
	AgenticStats() AgenticStats
}

// AgenticStats implements SessionReporter.
func (s *genSource) AgenticStats() AgenticStats { return s.agStats }

// complete records that one instance of step i (iteration it) finished at t, starting every
// step whose parents are now all done. toolOut (if non-empty) feeds the children's prompts.
func (ss *agSession) complete(s *genSource, i, it int, t int64, toolOut Segment, rr *rand.Rand, emit func(*Request, waiter) bool) {
	w := ss.w
	st := &w.steps[i]
	for _, ch := range st.children {
		cs := &w.steps[ch]
		if st.inLoop && !cs.inLoop {
			continue // released when the loop ends
		}
		cit := it
		if !st.inLoop && cs.inLoop {
			cit = 0
		}
		ss.release(s, ch, cit, t, toolOut, rr, emit)
	}
	if !st.inLoop {
		return
	}
	ss.iterDone[it]++
	ss.iterEnd[it] = max(ss.iterEnd[it], t)
	if ss.iterDone[it] < w.loopInst {
		return
	}
	end := ss.iterEnd[it]
	if it+1 < w.maxIter && (w.cont >= 1 || rr.Float64() < w.cont) {
		for _, e := range w.entries {
			n := w.node(ss, e, it+1)
			n.ready = max(n.ready, end)
			if n.waiting == 0 {
				ss.start(s, e, it+1, n.ready, rr, emit)
			}
		}
		return
	}
	// The loop is over: release the steps after it, once per loop parent.
	for _, li := range w.loop {
		for _, ch := range w.steps[li].children {
			if !w.steps[ch].inLoop {
				ss.release(s, ch, 0, end, Segment{}, rr, emit)
			}
		}
	}
}

// release counts one finished parent instance of step ch (iteration it) at time t.
func (ss *agSession) release(s *genSource, ch, it int, t int64, toolOut Segment, rr *rand.Rand, emit func(*Request, waiter) bool) {
	n := ss.w.node(ss, ch, it)
	n.waiting--
	n.ready = max(n.ready, t)
	if toolOut.Length > 0 {
		n.extra = append(n.extra, toolOut)
	}
	if n.waiting == 0 {
		ss.start(s, ch, it, n.ready, rr, emit)
	}
}
