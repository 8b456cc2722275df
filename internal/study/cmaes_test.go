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
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// boxSpace is n float parameters on [-5, 5].
func boxSpace(n int) Space {
	s := make(Space, n)
	for i := range s {
		s[i] = Param{Path: "p.x" + string(rune('a'+i)), Kind: Float, Min: -5, Max: 5, GridPoints: 3}
	}
	return s
}

// optimum is the minimiser of the test functions: x*_i = 1.5 - 0.7 i, inside [-5, 5].
func optimum(i int) float64 { return 1.5 - 0.7*float64(i) }

// sphereN is the sphere function f(x) = sum (x_i - x*_i)^2; the score is -f.
func sphereN(v []Value) (float64, []float64) {
	f := 0.0
	for i := range v {
		d := v[i].Num - optimum(i)
		f += d * d
	}
	return -f, []float64{-f}
}

// rotation is a fixed orthogonal matrix (Gram-Schmidt of a seeded Gaussian matrix).
func rotation(n int) [][]float64 {
	r := rand.New(rand.NewPCG(7, 11))
	m := make([][]float64, n)
	for i := range m {
		m[i] = make([]float64, n)
		for j := range m[i] {
			m[i][j] = r.NormFloat64()
		}
		for k := range i {
			dot := 0.0
			for j := range n {
				dot += m[i][j] * m[k][j]
			}
			for j := range n {
				m[i][j] -= dot * m[k][j]
			}
		}
		l := norm(m[i])
		for j := range n {
			m[i][j] /= l
		}
	}
	return m
}

// rotatedEllipsoid is f(x) = sum_i 10^(4 i/(n-1)) (R (x - x*))_i^2 (condition number 10^4),
// score -f.
func rotatedEllipsoid(n int) func([]Value) (float64, []float64) {
	rot := rotation(n)
	return func(v []Value) (float64, []float64) {
		f := 0.0
		for i := range n {
			y := 0.0
			for j := range n {
				y += rot[i][j] * (v[j].Num - optimum(j))
			}
			f += math.Pow(10, 4*float64(i)/float64(n-1)) * y * y
		}
		return -f, []float64{-f}
	}
}

func cmaesConfig(t *testing.T, space Space, s Settings, budget, par int) Config {
	t.Helper()
	s.Name = NameCMAES
	if s.PopulationSize == 0 {
		s.PopulationSize = 16
	}
	alg, err := New(space, s)
	if err != nil {
		t.Fatal(err)
	}
	return Config{Study: "s", Space: space, Algorithm: alg, MaxEvaluations: budget, MaxFailures: 50, Parallelism: par, FrontSize: 10, ConvergenceSize: 20}
}

func TestCMAESStrategyConstants(t *testing.T) {
	for n, want := range map[int]int{1: 4, 2: 6, 3: 7, 5: 8, 10: 10, 16: 12} {
		if got := CMAESPopulation(n); got != want {
			t.Errorf("CMAESPopulation(%d) = %d, want %d", n, got, want)
		}
	}
	a, err := newCMAES(boxSpace(2), 1, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// lambda 6, mu 3: w_i proportional to ln(3.5) - ln(i).
	if a.lambda != 6 || a.mu != 3 || a.sigma0 != 0.25 {
		t.Fatalf("lambda %d mu %d sigma0 %v", a.lambda, a.mu, a.sigma0)
	}
	raw := []float64{math.Log(3.5), math.Log(3.5) - math.Log(2), math.Log(3.5) - math.Log(3)}
	sum := raw[0] + raw[1] + raw[2]
	sq := 0.0
	for i, w := range a.weights {
		if math.Abs(w-raw[i]/sum) > 1e-12 {
			t.Errorf("w[%d] = %v, want %v", i, w, raw[i]/sum)
		}
		sq += w * w
	}
	if math.Abs(a.mueff-1/sq) > 1e-12 || math.Abs(a.mueff-2.0286) > 1e-3 {
		t.Errorf("mueff %v", a.mueff)
	}
	if want := 2 / (3.3*3.3 + a.mueff); math.Abs(a.c1-want) > 1e-15 {
		t.Errorf("c1 %v, want %v", a.c1, want)
	}
	if want := (a.mueff + 2) / (2 + a.mueff + 5); math.Abs(a.cs-want) > 1e-15 {
		t.Errorf("cs %v, want %v", a.cs, want)
	}
}

func TestJacobiEigen(t *testing.T) {
	vals, vecs := jacobiEigen([][]float64{{2, 1}, {1, 2}})
	if math.Abs(vals[0]-1) > 1e-12 || math.Abs(vals[1]-3) > 1e-12 {
		t.Fatalf("eigenvalues %v, want [1 3]", vals)
	}
	if math.Abs(math.Abs(vecs[0][1])-math.Sqrt(0.5)) > 1e-12 || math.Abs(vecs[0][1]-vecs[1][1]) > 1e-12 {
		t.Fatalf("eigenvector of 3: %v %v", vecs[0][1], vecs[1][1])
	}
	// B diag(vals) B^T reconstructs a random symmetric matrix, and B is orthonormal.
	r := rand.New(rand.NewPCG(1, 2))
	n := 6
	s := make([][]float64, n)
	for i := range s {
		s[i] = make([]float64, n)
	}
	for i := range n {
		for j := i; j < n; j++ {
			s[i][j] = r.NormFloat64()
			s[j][i] = s[i][j]
		}
	}
	vals, b := jacobiEigen(s)
	if !slices.IsSorted(vals) {
		t.Errorf("eigenvalues not sorted: %v", vals)
	}
	for i := range n {
		for j := range n {
			rec, dot := 0.0, 0.0
			for k := range n {
				rec += b[i][k] * vals[k] * b[j][k]
				dot += b[k][i] * b[k][j]
			}
			if math.Abs(rec-s[i][j]) > 1e-10 {
				t.Errorf("reconstruction [%d][%d] = %v, want %v", i, j, rec, s[i][j])
			}
			if want := float64(boolInt(i == j)); math.Abs(dot-want) > 1e-10 {
				t.Errorf("B^T B [%d][%d] = %v", i, j, dot)
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// distance is the largest coordinate distance of values from the optimum.
func distance(v []Value) float64 {
	d := 0.0
	for i := range v {
		d = math.Max(d, math.Abs(v[i].Num-optimum(i)))
	}
	return d
}

func TestCMAESConverges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		f      func([]Value) (float64, []float64)
		budget int
		tolF   float64
	}{
		{"sphere-2d", 2, sphereN, 300, 1e-8},
		{"sphere-5d", 5, sphereN, 1000, 1e-8},
		{"rotated-ellipsoid-3d", 3, rotatedEllipsoid(3), 1500, 1e-6},
		{"rotated-ellipsoid-5d", 5, rotatedEllipsoid(5), 3000, 1e-6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cmaesConfig(t, boxSpace(tc.n), Settings{Seed: 5}, tc.budget, 64)
			ev := &fakeEvaluator{study: "s", f: tc.f}
			d, err := Run(context.Background(), cfg, ev)
			if err != nil {
				t.Fatal(err)
			}
			best := d.Summary.Best
			if best == nil || -best.Score > tc.tolF {
				t.Fatalf("f(best) = %v after %d evaluations (%s), want <= %v", -best.Score, len(ev.trials), d.Reason, tc.tolF)
			}
			first := math.Inf(-1)
			for _, tr := range ev.trials {
				if tr.Generation == 0 {
					first = math.Max(first, tr.Score)
				}
			}
			if -first < 1e3*tc.tolF {
				t.Errorf("generation 0 already reached %v", -first)
			}
			t.Logf("f(best) = %.3g, distance %.3g after %d evaluations, %s", -best.Score, distance(best.Values), len(ev.trials), d.Reason)
		})
	}
}

func TestCMAESDeterministic(t *testing.T) {
	run := func(seed int64) []Trial {
		cfg := cmaesConfig(t, boxSpace(3), Settings{Seed: seed}, 140, 7)
		ev := &fakeEvaluator{study: "s", f: rotatedEllipsoid(3)}
		if _, err := Run(context.Background(), cfg, ev); err != nil {
			t.Fatal(err)
		}
		return ev.trials
	}
	a, b := run(9), run(9)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs with the same seed differ")
	}
	if c := run(10); reflect.DeepEqual(a, c) {
		t.Fatal("runs with seeds 9 and 10 are identical")
	}
	// Generation g+1 starts only after g finished.
	for i := 1; i < len(a); i++ {
		if a[i].Generation < a[i-1].Generation {
			t.Fatal("generations interleave")
		}
	}
}

// TestCMAESResumeEqualsUninterrupted drives a study the way the operator does: every step
// builds the algorithm anew from the settings (a manager restart), reads the persisted trials
// (finished out of order, with parallelism below lambda, some failed) and plans. The trials
// equal those of an uninterrupted in-process run.
func TestCMAESResumeEqualsUninterrupted(t *testing.T) {
	space := boxSpace(4)
	s := Settings{Seed: 3, CMAESPopulation: 10, CMAESSigma: 0.3}
	fail := func(c Candidate) bool { return c.Generation%4 == 1 && c.Index == 2 }
	f := rotatedEllipsoid(4)
	budget := 200

	ref := &fakeEvaluator{study: "s", f: f, fail: fail}
	if _, err := Run(context.Background(), cmaesConfig(t, space, s, budget, 1000), ref); err != nil {
		t.Fatal(err)
	}

	var persisted []Trial
	for step := 0; ; step++ {
		cfg := cmaesConfig(t, space, s, budget, 3)
		// The trials come back from the API in any order.
		shuffled := slices.Clone(persisted)
		rand.New(rand.NewPCG(uint64(step), 0)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		d, err := Plan(cfg, shuffled)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range d.Submit {
			persisted = append(persisted, Trial{Name: Name("s", c.Generation, c.Index), Generation: c.Generation, Index: c.Index, Values: c.Values})
		}
		// Finish the newest pending trial first.
		done := false
		for i := len(persisted) - 1; i >= 0; i-- {
			if p := &persisted[i]; p.State == Pending {
				p.State = Succeeded
				if fail(Candidate{Generation: p.Generation, Index: p.Index}) {
					p.State = Failed
				} else {
					p.Score, p.Objectives = f(p.Values)
				}
				done = true
				break
			}
		}
		if !done && len(d.Submit) == 0 {
			if d.Outcome != Completed {
				t.Fatalf("stuck: %+v", d)
			}
			break
		}
		if step > 10*budget {
			t.Fatal("no end")
		}
	}
	key := func(tr Trial) string { return tr.Name }
	slices.SortFunc(persisted, func(a, b Trial) int { return strings.Compare(key(a), key(b)) })
	want := slices.Clone(ref.trials)
	slices.SortFunc(want, func(a, b Trial) int { return strings.Compare(key(a), key(b)) })
	if !reflect.DeepEqual(persisted, want) {
		t.Fatalf("resumed run differs from the uninterrupted one (%d vs %d trials)", len(persisted), len(want))
	}
}

func TestCMAESBoundsAndIntegers(t *testing.T) {
	// The optimum (7, -9) lies outside the box [-5, 5] x [-5, 5]: the search presses against
	// the corner (5, -5) and never proposes a value outside the bounds.
	space := Space{
		{Path: "p.x", Kind: Float, Min: -5, Max: 5, GridPoints: 3},
		{Path: "p.n", Kind: Int, Min: -5, Max: 5, GridPoints: 3},
	}
	f := func(v []Value) (float64, []float64) {
		s := -((v[0].Num-7)*(v[0].Num-7) + (v[1].Num+9)*(v[1].Num+9))
		return s, []float64{s}
	}
	cfg := cmaesConfig(t, space, Settings{Seed: 1}, 240, 6)
	ev := &fakeEvaluator{study: "s", f: f}
	d, err := Run(context.Background(), cfg, ev)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range ev.trials {
		x, k := tr.Values[0].Num, tr.Values[1].Num
		if x < -5 || x > 5 || k < -5 || k > 5 || k != math.Round(k) {
			t.Fatalf("%s proposes (%v, %v)", tr.Name, x, k)
		}
	}
	b := d.Summary.Best.Values
	if math.Abs(b[0].Num-5) > 1e-3 || b[1].Num != -5 {
		t.Errorf("best (%v, %v), want the corner (5, -5)", b[0].Num, b[1].Num)
	}
}

func TestCMAESConvergesAndRestarts(t *testing.T) {
	run := func(restarts int) (Decision, []Trial) {
		cfg := cmaesConfig(t, boxSpace(2), Settings{Seed: 2, CMAESRestarts: restarts}, 10000, 6)
		ev := &fakeEvaluator{study: "s", f: sphereN}
		d, err := Run(context.Background(), cfg, ev)
		if err != nil {
			t.Fatal(err)
		}
		return d, ev.trials
	}
	d0, t0 := run(0)
	if d0.Outcome != Completed || d0.Reason != ReasonConverged {
		t.Fatalf("outcome %v %s after %d evaluations, want Completed Converged", d0.Outcome, d0.Reason, len(t0))
	}
	if len(t0) >= 10000 || -d0.Summary.Best.Score > 1e-10 {
		t.Fatalf("%d evaluations, f(best) %v", len(t0), -d0.Summary.Best.Score)
	}
	d2, t2 := run(2)
	if d2.Reason != ReasonConverged || len(t2) <= len(t0) {
		t.Fatalf("with 2 restarts: %s after %d evaluations (no restart: %d)", d2.Reason, len(t2), len(t0))
	}
	// The first run is the same; the restarts add runs of their own.
	if !reflect.DeepEqual(t2[:len(t0)], t0) {
		t.Error("restarts changed the first run")
	}
	// A restarted run starts wide again: the generation after the first run spreads out.
	g := t0[len(t0)-1].Generation + 1
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, tr := range t2 {
		if tr.Generation == g {
			lo, hi = math.Min(lo, tr.Values[0].Num), math.Max(hi, tr.Values[0].Num)
		}
	}
	if hi-lo < 0.5 {
		t.Errorf("the first generation of the restart spans %v", hi-lo)
	}
}

func TestCMAESSettings(t *testing.T) {
	space := Space{
		{Path: "p.x", Kind: Float, Min: 0, Max: 1, GridPoints: 3},
		{Path: "scheduler", Kind: Choice, Choices: []string{"fcfs", "sjf"}},
	}
	_, err := New(space, Settings{Name: NameCMAES, PopulationSize: 16})
	if err == nil || !strings.Contains(err.Error(), "searchSpace[1] (scheduler)") {
		t.Fatalf("a choice parameter: %v", err)
	}
	if _, err := New(boxSpace(2), Settings{Name: NameCMAES, PopulationSize: 16, CMAESPopulation: 1}); err == nil {
		t.Fatal("populationSize 1 accepted")
	}
	alg, err := New(boxSpace(3), Settings{Name: NameCMAES, PopulationSize: 16})
	if err != nil || alg.Size(0) != 7 || !alg.Adaptive() {
		t.Fatalf("default lambda in 3 dimensions: %v %v", alg, err)
	}
	// Multi-objective trials are ranked by their score: generation 0 samples the same points
	// whatever the objectives, and the update reads only Score.
	mo := func(v []Value) (float64, []float64) {
		s, _ := sphereN(v)
		return s, []float64{-v[0].Num, v[0].Num}
	}
	a := &fakeEvaluator{study: "s", f: mo}
	b := &fakeEvaluator{study: "s", f: sphereN}
	for _, ev := range []*fakeEvaluator{a, b} {
		if _, err := Run(context.Background(), cmaesConfig(t, boxSpace(2), Settings{Seed: 4}, 60, 6), ev); err != nil {
			t.Fatal(err)
		}
	}
	for i := range a.trials {
		if !reflect.DeepEqual(a.trials[i].Values, b.trials[i].Values) {
			t.Fatal("the objectives changed the proposals")
		}
	}
}
