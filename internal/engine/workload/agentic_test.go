package workload

import (
	"container/heap"
	"fmt"
	"strings"
	"testing"
)

type agRun struct {
	src    *genSource
	spec   *Spec
	wf     *workflow
	reqs   []served
	events []stepEvent
}

// runAgentic runs a one-client agentic spec through the test simulator with a service time
// that varies per request, recording every step instance start and finish.
func runAgentic(t *testing.T, s *Spec, outcome func(*Request) Outcome) *agRun {
	t.Helper()
	g, err := s.build(s.Seed)
	if err != nil {
		t.Fatal(err)
	}
	run := &agRun{spec: s, src: g}
	g.agObserver = func(ev stepEvent) { run.events = append(run.events, ev) }
	if run.wf, err = compileAgentic("test", s.Clients[0].Agentic, ""); err != nil {
		t.Fatal(err)
	}
	service := func(r *Request) int64 { return 2_000 + int64(r.InputLen)*10 + int64(r.ID%7)*3_000 }
	run.reqs = simulate(t, g.source(), service, outcome)
	return run
}

type nodeKey struct {
	session uint64
	step    string
	iter    int
}

// checkInvariants verifies INV-A1..A5 over a run.
func (run *agRun) checkInvariants(t *testing.T) {
	t.Helper()
	w := run.wf
	starts := map[nodeKey][]int64{}
	ends := map[nodeKey][]int64{}
	maxIter := map[uint64]int{}
	lastEnd := map[uint64]int64{}
	for _, ev := range run.events {
		k := nodeKey{ev.session, ev.step, ev.iter}
		if ev.end < 0 {
			starts[k] = append(starts[k], ev.start)
			continue
		}
		// INV-A5: tool latencies (and all step durations) are non-negative.
		if ev.end < ev.start {
			t.Fatalf("step %s of session %d ends at %d before its start %d", ev.step, ev.session, ev.end, ev.start)
		}
		ends[k] = append(ends[k], ev.end)
		maxIter[ev.session] = max(maxIter[ev.session], ev.iter)
		lastEnd[ev.session] = max(lastEnd[ev.session], ev.end)
	}
	byID := map[string]int{}
	for i, s := range w.steps {
		byID[s.id] = i
	}
	allEnd := func(sess uint64, step, iter int) (int64, bool) {
		e := ends[nodeKey{sess, w.steps[step].id, iter}]
		if len(e) != w.steps[step].fan {
			return 0, false
		}
		m := int64(0)
		for _, x := range e {
			m = max(m, x)
		}
		return m, true
	}
	for k, st := range starts {
		i := byID[k.step]
		s := &w.steps[i]
		// INV-A2: each (step, iteration) runs exactly once, as fan_out instances.
		if len(st) != s.fan {
			t.Fatalf("session %d step %s iteration %d started %d instances, want %d", k.session, k.step, k.iter, len(st), s.fan)
		}
		// INV-A3: loops stop at max_iterations.
		if k.iter >= w.maxIter {
			t.Fatalf("session %d ran iteration %d of %s, max_iterations %d", k.session, k.iter, k.step, w.maxIter)
		}
		// INV-A1: no step starts before all its parents finished.
		for _, p := range s.parents {
			ps := &w.steps[p]
			pit := k.iter
			switch {
			case ps.inLoop && !s.inLoop:
				pit = maxIter[k.session]
			case !ps.inLoop && s.inLoop:
				if k.iter > 0 {
					continue
				}
				pit = 0
			}
			end, ok := allEnd(k.session, p, pit)
			if !ok {
				t.Fatalf("session %d: %s started before every instance of parent %s finished", k.session, k.step, ps.id)
			}
			for _, x := range st {
				if x < end {
					t.Fatalf("session %d: %s starts at %d before parent %s ends at %d", k.session, k.step, x, ps.id, end)
				}
			}
		}
		if s.inLoop && k.iter > 0 {
			for _, li := range w.loop {
				end, ok := allEnd(k.session, li, k.iter-1)
				if !ok || st[0] < end {
					t.Fatalf("session %d: iteration %d of %s starts before iteration %d of %s ends", k.session, k.iter, k.step, k.iter-1, w.steps[li].id)
				}
			}
		}
	}
	// INV-A4: every session completes its terminal steps or was cut by the horizon.
	horizon := run.spec.Horizon
	for sess := range lastEnd {
		complete := true
		for i, s := range w.steps {
			if len(s.children) == 0 && (!s.inLoop || !hasPostLoop(w)) {
				if _, ok := allEnd(sess, i, iterOf(w, i, maxIter[sess])); !ok {
					complete = false
				}
			}
		}
		if !complete && lastEnd[sess] <= horizon {
			t.Fatalf("session %d is incomplete although its last step ended at %d, before the horizon %d", sess, lastEnd[sess], horizon)
		}
	}
}

func hasPostLoop(w *workflow) bool {
	for _, i := range w.loop {
		for _, c := range w.steps[i].children {
			if !w.steps[c].inLoop {
				return true
			}
		}
	}
	return false
}

func iterOf(w *workflow, step, last int) int {
	if w.steps[step].inLoop {
		return last
	}
	return 0
}

func TestAgenticScenariosInvariants(t *testing.T) {
	for _, name := range []string{"agentic-react", "agentic-mcts", "agentic-fork-join"} {
		t.Run(name, func(t *testing.T) {
			s, err := Scenario(name)
			if err != nil {
				t.Fatal(err)
			}
			run := runAgentic(t, s, nil)
			if len(run.reqs) < 50 {
				t.Fatalf("only %d requests", len(run.reqs))
			}
			run.checkInvariants(t)
			again := runAgentic(t, s, nil)
			if len(again.reqs) != len(run.reqs) {
				t.Fatalf("rerun with the same seed gave %d requests, first %d", len(again.reqs), len(run.reqs))
			}
			for i := range run.reqs {
				a, b := run.reqs[i], again.reqs[i]
				if a.ID != b.ID || a.Arrival != b.Arrival || a.InputLen != b.InputLen || a.Step != b.Step {
					t.Fatalf("rerun differs at request %d", i)
				}
			}
		})
	}
}

func TestAgenticReActStructure(t *testing.T) {
	s, _ := Scenario("agentic-react")
	s.Horizon = 600_000_000 // every session of the first minute finishes
	s.NumRequests = 0
	s.Clients[0].Lifecycle = &LifecycleSpec{Windows: []WindowSpec{{StartUs: 0, EndUs: 60_000_000}}}
	run := runAgentic(t, s, nil)
	run.checkInvariants(t)
	bySession := map[uint64][]served{}
	for _, r := range run.reqs {
		bySession[r.Session] = append(bySession[r.Session], r)
	}
	for id, rs := range bySession {
		if len(rs) != 11 {
			t.Fatalf("session %d issued %d LLM calls, want 5 × (reason, observe) + final-answer", id, len(rs))
		}
		var prevObs *served
		for i := range rs {
			r := &rs[i]
			if r.Round != int32(i) {
				t.Fatalf("session %d request %d has Round %d", id, i, r.Round)
			}
			if r.Step != "observe" {
				continue
			}
			// observe: accumulated context (previous observe's prompt + answer), the tool
			// output, then the new tokens.
			if prevObs != nil {
				for j, sg := range prevObs.Segments {
					if r.Segments[j] != sg {
						t.Fatalf("session %d observe %d does not carry the previous observe's prompt", id, r.Iteration)
					}
				}
				if ans := r.Segments[len(prevObs.Segments)]; ans.Length != prevObs.OutputLen {
					t.Fatalf("observe %d carries %d answer tokens, previous answer had %d", r.Iteration, ans.Length, prevObs.OutputLen)
				}
			}
			prevObs = r
		}
		if last := rs[len(rs)-1]; last.Step != "final-answer" || last.Iteration != 0 {
			t.Fatalf("session %d ends with %s/%d", id, last.Step, last.Iteration)
		}
	}
	n := int64(len(bySession))
	st := SessionReporter(run.src).AgenticStats()
	if st.Started != n || st.Completed != n || st.Aborted != 0 || st.Truncated != 0 ||
		st.Requests != 11*n || st.ToolCalls != 5*n || st.LoopIterations != 5*n {
		t.Fatalf("stats %+v for %d complete sessions", st, n)
	}
	var sum, maxE2E int64
	for _, rs := range bySession {
		e2e := rs[len(rs)-1].finish - rs[0].Arrival
		sum += e2e
		maxE2E = max(maxE2E, e2e)
	}
	if st.SessionE2ESumUs != sum || st.SessionE2EMaxUs != maxE2E {
		t.Fatalf("session E2E sum %d max %d, want %d and %d", st.SessionE2ESumUs, st.SessionE2EMaxUs, sum, maxE2E)
	}
}

func TestAgenticForkJoinTiming(t *testing.T) {
	s, _ := Scenario("agentic-fork-join")
	run := runAgentic(t, s, nil)
	run.checkInvariants(t)
	plans := map[uint64]served{}
	for _, r := range run.reqs {
		switch r.Step {
		case "plan":
			plans[r.Session] = r
		case "synthesize":
			p := plans[r.Session]
			// Three tool outputs feed the prompt; it arrives when the slowest tool finishes
			// (db_query takes at least 1 ms).
			if len(r.Segments) != 4 {
				t.Fatalf("synthesize prompt has %d segments, want 3 tool outputs + new tokens", len(r.Segments))
			}
			if r.Arrival < p.finish+1000 {
				t.Fatalf("synthesize arrives at %d, plan finished at %d", r.Arrival, p.finish)
			}
		}
	}
}

func TestAgenticFailureAbortsSession(t *testing.T) {
	s, _ := Scenario("agentic-mcts")
	dropped := map[uint64]bool{}
	run := runAgentic(t, s, func(r *Request) Outcome {
		if r.Step == "generate" && r.Session%3 == 0 {
			dropped[r.Session] = true
			return Dropped
		}
		return Completed
	})
	for _, r := range run.reqs {
		if dropped[r.Session] && (r.Step == "evaluate" || r.Step == "refine") {
			t.Fatalf("session %d continued to %s after a dropped step", r.Session, r.Step)
		}
	}
	if len(dropped) == 0 {
		t.Fatal("no session was affected")
	}
	if st := run.src.AgenticStats(); st.Aborted != int64(len(dropped)) || st.Completed+st.Aborted+st.Truncated > st.Started {
		t.Fatalf("stats %+v with %d sessions hit by drops", st, len(dropped))
	}
}

func TestAgenticRequestBudget(t *testing.T) {
	s, _ := Scenario("agentic-mcts")
	s.NumRequests = 100
	run := runAgentic(t, s, nil)
	if len(run.reqs) > 100 || len(run.reqs) < 90 {
		t.Fatalf("%d requests with num_requests 100", len(run.reqs))
	}
	// Sessions reserve 7 calls each: 14 full sessions, then one cut to the last 2 calls.
	if st := run.src.AgenticStats(); st.Started != 15 || st.Completed != 14 || st.Truncated != 1 || st.Requests != 100 {
		t.Fatalf("stats %+v", st)
	}
}

const agenticBase = `
aggregate_rate: 1
horizon: 10000000
clients:
  - id: agent
    rate_fraction: 1
    arrival: {process: poisson}
    agentic:
%s
`

func agenticSpec(body string) string {
	lines := strings.Split(strings.Trim(body, "\n"), "\n")
	for i := range lines {
		lines[i] = "      " + lines[i]
	}
	return fmt.Sprintf(agenticBase, strings.Join(lines, "\n"))
}

const llm = `{type: constant, params: {value: 10}}`

func TestAgenticValidationRules(t *testing.T) {
	cases := []struct {
		rule, body string
		want       []string
	}{
		{"1 acyclic", `steps:
  - {id: a, type: llm_call, input_distribution: ` + llm + `, output_distribution: ` + llm + `}
  - {id: b, type: llm_call, depends_on: [a, c], input_distribution: ` + llm + `, output_distribution: ` + llm + `}
  - {id: c, type: llm_call, depends_on: [b], input_distribution: ` + llm + `, output_distribution: ` + llm + `}`,
			[]string{`client "agent": agentic.steps`, "cycle", "b, c"}},
		{"2 one root", `steps:
  - {id: a, type: llm_call, input_distribution: ` + llm + `, output_distribution: ` + llm + `}
  - {id: b, type: llm_call, input_distribution: ` + llm + `, output_distribution: ` + llm + `}`,
			[]string{"exactly one root", "a, b"}},
		{"3 tool exists", `steps:
  - {id: a, type: llm_call, input_distribution: ` + llm + `, output_distribution: ` + llm + `}
  - {id: t, type: tool_call, tool: search, depends_on: [a]}`,
			[]string{`agentic.steps[t].tool`, `unknown tool "search"`}},
		{"4 fan_out", `steps:
  - {id: a, type: llm_call, fan_out: 1, input_distribution: ` + llm + `, output_distribution: ` + llm + `}`,
			[]string{`agentic.steps[a].fan_out`, ">= 2"}},
		{"5 loop connected", `loop: {over: [a, b], max_iterations: 2}
steps:
  - {id: r, type: llm_call, input_distribution: ` + llm + `, output_distribution: ` + llm + `}
  - {id: a, type: llm_call, depends_on: [r], input_distribution: ` + llm + `, output_distribution: ` + llm + `}
  - {id: b, type: llm_call, depends_on: [r], input_distribution: ` + llm + `, output_distribution: ` + llm + `}`,
			[]string{`agentic.loop.over`, "connected", `"b"`}},
		{"6 llm distributions", `steps:
  - {id: a, type: llm_call, input_distribution: ` + llm + `}`,
			[]string{`agentic.steps[a].output_distribution`, "required"}},
		{"7 tool distributions", `steps:
  - {id: a, type: llm_call, input_distribution: ` + llm + `, output_distribution: ` + llm + `}
  - {id: t, type: tool_call, tool: x, depends_on: [a], input_distribution: ` + llm + `}
tools:
  x: {latency: ` + llm + `, output_tokens: ` + llm + `}`,
			[]string{`agentic.steps[t].input_distribution`, "tool_call"}},
		{"8 accumulate in loop", `steps:
  - {id: a, type: llm_call, context_growth: accumulate, input_distribution: ` + llm + `, output_distribution: ` + llm + `}`,
			[]string{`agentic.steps[a].context_growth`, "loop.over"}},
		{"loop iterations", `loop: {over: [a], max_iterations: 0}
steps:
  - {id: a, type: llm_call, input_distribution: ` + llm + `, output_distribution: ` + llm + `}`,
			[]string{`agentic.loop.max_iterations`}},
		{"unknown dependency", `steps:
  - {id: a, type: llm_call, input_distribution: ` + llm + `, output_distribution: ` + llm + `}
  - {id: b, type: llm_call, depends_on: [z], input_distribution: ` + llm + `, output_distribution: ` + llm + `}`,
			[]string{`agentic.steps[b].depends_on`, `"z"`}},
		{"step type", `steps:
  - {id: a, type: llm, input_distribution: ` + llm + `, output_distribution: ` + llm + `}`,
			[]string{`agentic.steps[a].type`, "llm_call, tool_call"}},
		{"unknown step key", `steps:
  - {id: a, type: llm_call, fanout: 2, input_distribution: ` + llm + `, output_distribution: ` + llm + `}`,
			[]string{`steps[0] (id "a")`, `unknown key "fanout"`}},
	}
	for _, tc := range cases {
		_, err := ParseSpec([]byte(agenticSpec(tc.body)))
		if err == nil {
			t.Errorf("rule %s: no error", tc.rule)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("rule %s: error %q does not mention %q", tc.rule, err, w)
			}
		}
	}
	// Rule 9: agentic excludes reasoning and multimodal.
	base := agenticSpec(`steps:
  - {id: a, type: llm_call, input_distribution: ` + llm + `, output_distribution: ` + llm + `}`)
	for _, extra := range []string{"reasoning: {multi_turn: {max_rounds: 2}}", "multimodal: {text_distribution: " + llm + "}"} {
		y := strings.Replace(base, "    rate_fraction: 1", "    rate_fraction: 1\n    "+extra, 1)
		_, err := ParseSpec([]byte(y))
		if err == nil || !strings.Contains(err.Error(), `client "agent".agentic: cannot be combined`) {
			t.Errorf("rule 9 (%s): %v", extra, err)
		}
	}
	if _, err := ParseSpec([]byte(base)); err != nil {
		t.Fatalf("valid base spec rejected: %v", err)
	}
}

// BenchmarkAgenticReActClosedLoop measures generation cost per request of a closed-loop
// workload, including the completion callbacks that inject the following steps.
func BenchmarkAgenticReActClosedLoop(b *testing.B) {
	s, err := Scenario("agentic-react")
	if err != nil {
		b.Fatal(err)
	}
	s.Horizon = 0
	src, err := s.Source(1)
	if err != nil {
		b.Fatal(err)
	}
	react := src.(Reactive)
	var q simQueue
	seq := 0
	inject := func(r *Request) {
		seq++
		heap.Push(&q, &simEvent{t: r.Arrival, seq: seq, req: Request{ID: r.ID, Arrival: r.Arrival, OutputLen: r.OutputLen}})
	}
	var open Request
	have := src.Next(&open)
	b.ReportAllocs()
	for b.Loop() {
		// Serve the earliest request: open-loop arrival or injected step; it finishes 1 ms later.
		var r Request
		if have && (len(q) == 0 || open.Arrival <= q[0].t) {
			r = Request{ID: open.ID, Arrival: open.Arrival, OutputLen: open.OutputLen}
			have = src.Next(&open)
		} else if len(q) > 0 {
			r = heap.Pop(&q).(*simEvent).req
		} else {
			b.Fatal("workload ended")
		}
		react.Finished(r.ID, Completed, r.OutputLen, r.Arrival+1000, inject)
	}
}

// A workflow exercising a fanned-out root, a pre-loop step feeding the loop, fanned-out tool
// calls inside the loop, a loop-back dependency, early loop exit and a post-loop step.
func TestAgenticComplexWorkflowInvariants(t *testing.T) {
	s, err := ParseSpec([]byte(agenticSpec(`loop: {over: [think, search, reflect], max_iterations: 4, continue_probability: 0.5}
steps:
  - {id: draft, type: llm_call, fan_out: 3, input_distribution: ` + llm + `, output_distribution: ` + llm + `}
  - {id: merge, type: llm_call, depends_on: [draft], input_distribution: ` + llm + `, output_distribution: ` + llm + `}
  - {id: think, type: llm_call, depends_on: [merge, reflect], input_distribution: ` + llm + `, output_distribution: ` + llm + `}
  - {id: search, type: tool_call, tool: web, fan_out: 2, depends_on: [think]}
  - {id: reflect, type: llm_call, depends_on: [search], context_growth: accumulate, input_distribution: ` + llm + `, output_distribution: ` + llm + `}
  - {id: answer, type: llm_call, depends_on: [reflect], input_distribution: ` + llm + `, output_distribution: ` + llm + `}
tools:
  web: {latency: {type: exponential, params: {mean: 20000}}, output_tokens: {type: constant, params: {value: 50}}}`)))
	if err != nil {
		t.Fatal(err)
	}
	s.Horizon = 100_000_000
	s.Clients[0].Lifecycle = &LifecycleSpec{Windows: []WindowSpec{{StartUs: 0, EndUs: 60_000_000}}}
	run := runAgentic(t, s, nil)
	run.checkInvariants(t)
	iters := map[uint64]int32{}
	drafts := map[uint64][]int64{}
	for _, r := range run.reqs {
		iters[r.Session] = max(iters[r.Session], r.Iteration+1)
		if r.Step == "draft" {
			drafts[r.Session] = append(drafts[r.Session], r.Arrival)
		}
		// reflect carries both search outputs (50 tokens each) after any accumulated context.
		if r.Step == "reflect" && (r.Segments[len(r.Segments)-2].Length != 50 || r.Segments[len(r.Segments)-3].Length != 50) {
			t.Fatalf("reflect prompt %+v lacks the two tool outputs", r.Segments)
		}
	}
	hist := map[int32]int{}
	for id, n := range iters {
		hist[n]++
		if d := drafts[id]; len(d) != 3 || d[0] != d[1] || d[1] != d[2] {
			t.Fatalf("session %d drafts %v, want 3 simultaneous instances", id, d)
		}
	}
	// continue_probability 0.5: about half the sessions stop after one iteration, and some
	// reach the maximum of 4.
	if hist[1] < len(iters)/3 || hist[4] == 0 || hist[5] != 0 {
		t.Fatalf("iteration histogram %v over %d sessions", hist, len(iters))
	}
	st := run.src.AgenticStats()
	if st.Completed != int64(len(iters)) || st.ToolCalls != 2*st.LoopIterations {
		t.Fatalf("stats %+v for %d sessions", st, len(iters))
	}
}
