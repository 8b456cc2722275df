/*
Copyright 2026 The blis-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package study

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestParsePath(t *testing.T) {
	segs, err := ParsePath("routing.scorers[name=queue-scorer].weight")
	if err != nil {
		t.Fatal(err)
	}
	want := []Segment{{Field: "routing"}, {Field: "scorers", HasSelector: true, Key: "name", Match: "queue-scorer"}, {Field: "weight"}}
	if !reflect.DeepEqual(segs, want) {
		t.Fatalf("got %+v", segs)
	}
	segs, err = ParsePath("nodePools[1].costPerHour")
	if err != nil || segs[0].Index != 1 || segs[0].Key != "" || !segs[0].HasSelector {
		t.Fatalf("index selector: %+v %v", segs, err)
	}
	if segs, err := ParsePath("a[k=v.1].b"); err != nil || segs[0].Match != "v.1" {
		t.Fatalf("dotted selector value: %+v %v", segs, err)
	}
	for _, bad := range []string{"", "a..b", "a.", ".a", "a[", "a[x]", "a[k=]", "a.b[0]", "a[0]b"} {
		if _, err := ParsePath(bad); err == nil {
			t.Errorf("ParsePath(%q) accepted", bad)
		}
	}
}

func TestPatch(t *testing.T) {
	var doc map[string]any
	base := `{"routing":{"policy":"weighted","scorers":[{"name":"queue-scorer","weight":1},{"name":"kv-cache-utilization-scorer","weight":2}]},
	 "admission":{"policy":"token-bucket","options":{"cost":"request"}},"scheduler":"fcfs"}`
	if err := json.Unmarshal([]byte(base), &doc); err != nil {
		t.Fatal(err)
	}
	must := func(path string, v Value) {
		t.Helper()
		if err := Patch(doc, path, v); err != nil {
			t.Fatal(err)
		}
	}
	must("routing.scorers[name=kv-cache-utilization-scorer].weight", Value{Num: 0.25})
	must("admission.parameters.refill_rate", Value{Num: 400})
	must("scheduler", Value{Str: "sjf", IsStr: true})
	must("admission.options.cost", Value{Num: 3})
	must("routing.scorers[0].weight", Value{Str: "5", IsStr: true})
	got, _ := json.Marshal(doc)
	for _, want := range []string{`"weight":0.25`, `"refill_rate":400`, `"scheduler":"sjf"`, `"cost":"3"`, `{"name":"queue-scorer","weight":5}`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("patched doc %s lacks %s", got, want)
		}
	}
	for path, msg := range map[string]string{
		"routing.scorers[name=load-aware-scorer].weight": "no element",
		"routing.scorers[7].weight":                      "no index 7",
		"routing.policy.x":                               "not an object",
		"routing.scorers":                                "object or a list",
	} {
		if err := Patch(doc, path, Value{Num: 1}); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("Patch(%s) = %v, want an error with %q", path, err, msg)
		}
	}
	if err := Patch(doc, "routing.scorers[0].weight", Value{Str: "heavy", IsStr: true}); err == nil {
		t.Error("a non-numeric choice was written into a number field")
	}
	if v, ok, err := Lookup(doc, "routing.scorers[name=queue-scorer].weight"); err != nil || !ok || v != int64(5) {
		t.Errorf("Lookup = %v %v %v", v, ok, err)
	}
}

func TestDecodeEncode(t *testing.T) {
	p := Param{Path: "x", Kind: Float, Min: 1, Max: 1000, Log: true, GridPoints: 4}
	if v := p.Decode(0.5); math.Abs(v.Num-31.6228) > 1e-3 {
		t.Errorf("log midpoint = %v", v.Num)
	}
	u, ok := p.Encode(Value{Num: 10})
	if !ok || math.Abs(u-1.0/3) > 1e-9 {
		t.Errorf("Encode(10) = %v %v", u, ok)
	}
	if got := len(p.gridValues()); got != 4 {
		t.Errorf("%d grid values", got)
	}
	i := Param{Path: "n", Kind: Int, Min: 1, Max: 3, GridPoints: 5}
	if got := len(i.gridValues()); got != 3 {
		t.Errorf("an int range of 3 values has %d grid values", got)
	}
	c := Param{Path: "c", Kind: Choice, Choices: []string{"a", "b", "c"}}
	for k, want := range []string{"a", "b", "c"} {
		u, _ := c.Encode(Value{Str: want, IsStr: true})
		if got := c.Decode(u); got.Str != want {
			t.Errorf("choice %d round trip: %v", k, got)
		}
	}
}

// sphere is a synthetic objective: the score peaks at (0.7, 0.2) in value space.
func sphere(v []Value) (float64, []float64) {
	dx, dy := v[0].Num-0.7, v[1].Num-0.2
	s := 1 / (1 + 10*(dx*dx+dy*dy))
	return s, []float64{s}
}

// twoObjectives trades x against y: f1 = x, f2 = 1 - x^2 + y/10 (y only helps f2).
func twoObjectives(v []Value) (float64, []float64) {
	f1, f2 := v[0].Num, 1-v[0].Num*v[0].Num+v[1].Num/10
	return (f1 + f2) / 2, []float64{f1, f2}
}

// fakeEvaluator finishes every submitted candidate at once with score f; candidates whose
// index is in failIdx fail.
type fakeEvaluator struct {
	study  string
	f      func([]Value) (float64, []float64)
	trials []Trial
	fail   func(Candidate) bool
}

func (e *fakeEvaluator) Submit(_ context.Context, cands []Candidate) error {
	for _, c := range cands {
		t := Trial{Name: Name(e.study, c.Generation, c.Index), Generation: c.Generation, Index: c.Index, Values: c.Values, State: Succeeded}
		if e.fail != nil && e.fail(c) {
			t.State = Failed
		} else {
			t.Score, t.Objectives = e.f(c.Values)
		}
		e.trials = append(e.trials, t)
	}
	return nil
}

func (e *fakeEvaluator) Results(context.Context) ([]Trial, error) { return e.trials, nil }

func unitSpace() Space {
	return Space{
		{Path: "a.x", Kind: Float, Min: 0, Max: 1, GridPoints: 3},
		{Path: "a.y", Kind: Float, Min: 0, Max: 1, GridPoints: 3},
	}
}

func config(t *testing.T, s Settings, budget, par int) Config {
	t.Helper()
	alg, err := New(unitSpace(), s)
	if err != nil {
		t.Fatal(err)
	}
	return Config{Study: "s", Space: unitSpace(), Algorithm: alg, MaxEvaluations: budget, MaxFailures: 5, Parallelism: par, FrontSize: 10, ConvergenceSize: 20}
}

func TestGridRunsEveryPointOnce(t *testing.T) {
	cfg := config(t, Settings{Name: NameGrid, PopulationSize: 4}, 100, 3)
	ev := &fakeEvaluator{study: "s", f: sphere}
	d, err := Run(context.Background(), cfg, ev)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != Completed || d.Reason != ReasonSearchSpaceExhausted {
		t.Fatalf("outcome %v %s", d.Outcome, d.Reason)
	}
	if len(ev.trials) != 9 || d.Summary.Created != 9 || d.Summary.Succeeded != 9 {
		t.Fatalf("%d trials, summary %+v", len(ev.trials), d.Summary)
	}
	seen := map[string]bool{}
	for _, tr := range ev.trials {
		key := tr.Values[0].String() + "," + tr.Values[1].String()
		if seen[key] {
			t.Errorf("grid point %s evaluated twice", key)
		}
		seen[key] = true
	}
	if ev.trials[0].Values[0].Num != 0 || ev.trials[1].Values[1].Num != 0.5 || ev.trials[8].Values[0].Num != 1 {
		t.Errorf("grid order: %v %v %v", ev.trials[0].Values, ev.trials[1].Values, ev.trials[8].Values)
	}
	if d.Summary.Best == nil || d.Summary.Best.Values[0].Num != 0.5 || d.Summary.Best.Values[1].Num != 0 {
		t.Errorf("best %+v, want (0.5, 0) (closest grid point to (0.7, 0.2))", d.Summary.Best)
	}
	if len(d.Summary.Convergence) != 3 {
		t.Errorf("convergence has %d generations, want 3", len(d.Summary.Convergence))
	}
}

func TestPlanRespectsParallelismAndBudget(t *testing.T) {
	cfg := config(t, Settings{Name: NameRandom, Seed: 3, PopulationSize: 4}, 10, 3)
	d, err := Plan(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Submit) != 3 {
		t.Fatalf("submitted %d with parallelism 3", len(d.Submit))
	}
	// Three pending trials: nothing more until one finishes.
	var trials []Trial
	for _, c := range d.Submit {
		trials = append(trials, Trial{Name: Name("s", c.Generation, c.Index), Generation: c.Generation, Index: c.Index, Values: c.Values})
	}
	d2, _ := Plan(cfg, trials)
	if len(d2.Submit) != 0 || d2.Outcome != Running {
		t.Fatalf("with 3 pending: %d submitted, outcome %v", len(d2.Submit), d2.Outcome)
	}
	trials[1].State, trials[1].Score = Succeeded, 0.5
	d3, _ := Plan(cfg, trials)
	if len(d3.Submit) != 1 || d3.Submit[0].Generation != 0 || d3.Submit[0].Index != 3 {
		t.Fatalf("after one finished: %+v", d3.Submit)
	}
	// The proposals do not depend on the order trials are given in.
	rev := []Trial{trials[2], trials[1], trials[0]}
	d4, _ := Plan(cfg, rev)
	if !reflect.DeepEqual(d3.Submit, d4.Submit) {
		t.Error("plan depends on trial order")
	}

	ev := &fakeEvaluator{study: "s", f: sphere}
	final, err := Run(context.Background(), cfg, ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.trials) != 10 || final.Reason != ReasonBudgetExhausted {
		t.Fatalf("%d trials, reason %s", len(ev.trials), final.Reason)
	}
}

func TestTooManyFailures(t *testing.T) {
	cfg := config(t, Settings{Name: NameRandom, Seed: 3, PopulationSize: 4}, 50, 2)
	ev := &fakeEvaluator{study: "s", f: sphere, fail: func(c Candidate) bool { return c.Index%2 == 0 }}
	d, err := Run(context.Background(), cfg, ev)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != FailedOutcome || d.Reason != ReasonTooManyFailures || d.Summary.Failed != 5 {
		t.Fatalf("outcome %v %s, failed %d", d.Outcome, d.Reason, d.Summary.Failed)
	}
}

func TestEvolutionImprovesDeterministically(t *testing.T) {
	run := func() ([]Trial, Decision) {
		cfg := config(t, Settings{Name: NameEvolution, Seed: 42, PopulationSize: 8, Parents: 2}, 96, 8)
		ev := &fakeEvaluator{study: "s", f: sphere}
		d, err := Run(context.Background(), cfg, ev)
		if err != nil {
			t.Fatal(err)
		}
		return ev.trials, d
	}
	a, d := run()
	b, _ := run()
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs with the same seed differ")
	}
	first := d.Summary.Convergence[0]
	if d.Summary.Best.Score <= first.Best || d.Summary.Best.Score < 0.99 {
		t.Errorf("best %v after 12 generations (generation 0 best %v); want >= 0.99", d.Summary.Best.Score, first.Best)
	}
	// Generation g+1 starts only after g finished: every trial of g precedes every trial of g+1.
	for i := 1; i < len(a); i++ {
		if a[i].Generation < a[i-1].Generation {
			t.Fatal("generations interleave")
		}
	}
}

func TestNSGA2SpreadsAlongTheFront(t *testing.T) {
	cfg := config(t, Settings{Name: NameNSGA2, Seed: 7, PopulationSize: 12}, 120, 12)
	ev := &fakeEvaluator{study: "s", f: twoObjectives}
	d, err := Run(context.Background(), cfg, ev)
	if err != nil {
		t.Fatal(err)
	}
	if d.Summary.FrontSize < 5 {
		t.Fatalf("front of %d after 10 generations", d.Summary.FrontSize)
	}
	// The true front has y = 1; the final population's front members should be close to it.
	var ys float64
	for _, tr := range d.Summary.Front {
		ys += tr.Values[1].Num
	}
	if mean := ys / float64(len(d.Summary.Front)); mean < 0.8 {
		t.Errorf("mean y on the front is %v, want >= 0.8", mean)
	}
	for i, tr := range d.Summary.Front {
		for j, o := range d.Summary.Front {
			if i != j && dominatesMax(o.Objectives, tr.Objectives) {
				t.Fatalf("front member %s is dominated by %s", tr.Name, o.Name)
			}
		}
	}
}

func TestSpaceValidate(t *testing.T) {
	bad := []Space{
		{},
		{{Path: "a", Kind: Float, Min: 1, Max: 1, GridPoints: 2}},
		{{Path: "a", Kind: Float, Min: 0, Max: 1, Log: true, GridPoints: 2}},
		{{Path: "a", Kind: Int, Min: 0.5, Max: 3, GridPoints: 2}},
		{{Path: "a", Kind: Choice}},
		{{Path: "a..b", Kind: Choice, Choices: []string{"x"}}},
		{{Path: "a", Kind: Choice, Choices: []string{"x"}}, {Path: "a", Kind: Choice, Choices: []string{"y"}}},
	}
	for i, s := range bad {
		if err := s.Validate(); err == nil {
			t.Errorf("space %d accepted", i)
		}
	}
}

func TestParetoRanks(t *testing.T) {
	trials := []Trial{
		{Name: "a", Objectives: []float64{1, 0}},
		{Name: "b", Objectives: []float64{0, 1}},
		{Name: "c", Objectives: []float64{0.5, 0.5}},
		{Name: "d", Objectives: []float64{0.4, 0.4}},
		{Name: "e", Objectives: []float64{0.1, 0.1}},
	}
	if got := ParetoRanks(trials); !reflect.DeepEqual(got, []int{0, 0, 0, 1, 2}) {
		t.Errorf("ranks %v", got)
	}
	// A duplicate point is listed once on the front.
	trials = append(trials, Trial{Name: "f", Objectives: []float64{0.5, 0.5}, State: Succeeded})
	for i := range trials {
		trials[i].State, trials[i].Generation = Succeeded, 0
		trials[i].Score = (trials[i].Objectives[0] + trials[i].Objectives[1]) / 2
	}
	s := summarize(Config{FrontSize: 10}, trials)
	var names []string
	for _, tr := range s.Front {
		names = append(names, tr.Name)
	}
	if s.FrontSize != 3 || !reflect.DeepEqual(names, []string{"a", "b", "c"}) {
		t.Errorf("front %v (size %d), want [a b c] (c and f are one point)", names, s.FrontSize)
	}
}
