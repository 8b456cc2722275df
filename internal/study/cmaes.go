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
	"cmp"
	"fmt"
	"math"
	"slices"
)

// cmaes is the covariance matrix adaptation evolution strategy, (mu/mu_w, lambda)-CMA-ES with
// cumulative step-size adaptation, rank-one and rank-mu covariance updates and the default
// strategy parameters of N. Hansen, "The CMA Evolution Strategy: A Tutorial",
// arXiv:1604.00772 (Table 1 and Appendix A; positive recombination weights only). It
// maximises the fitness score over the space's unit cube [0, 1]^n (log-scaled parameters in
// log coordinates; int parameters are rounded when a point is decoded).
//
// The strategy keeps no state between calls: its state (mean, step size, evolution paths,
// covariance matrix) is replayed from the evaluated trials of earlier generations, the
// persisted Evaluations, so a restarted manager continues exactly where it left off. The
// update reads each trial's point back from its values, so rounding and bound handling are
// part of what the strategy learns from.
//
// Bounds: a sample outside the unit cube is redrawn (up to cmaesResamples times, from the
// generation's own random stream) and otherwise projected onto the cube. Because the
// projected point, not the sample, is evaluated, its step enters the update with Hansen's
// clipping for injected solutions (N. Hansen, "Injecting External Solutions Into CMA-ES",
// arXiv:1110.4181): y is shortened to a Mahalanobis length of at most sqrt(n) + 2n/(n+2).
//
// Termination and restarts: a run ends when sigma times the largest coordinate spread falls
// below cmaesTolX, when the best scores of the last 10 + ceil(30n/lambda) generations and the
// scores of the last generation span less than cmaesTolFun, or when the condition number of
// the covariance exceeds cmaesMaxCondition. A new run then starts, with the same lambda and
// initial step size, from a mean drawn uniformly in the cube, up to restarts times; after the
// last run ends the search is converged (see Converger).
type cmaes struct {
	space    Space
	seed     int64
	lambda   int
	sigma0   float64
	restarts int

	// Strategy constants (Hansen's Table 1).
	n                     int
	mu                    int
	weights               []float64
	mueff                 float64
	cs, ds, cc, c1, cmu   float64
	chiN, yMax            float64
	stagnation            int
	tolX, tolFun, maxCond float64
}

// The termination thresholds of a CMA-ES run and its bound handling.
const (
	// cmaesTolX ends a run when sigma * max(sqrt(C_ii), |pc_i|) falls below it (unit
	// coordinates, a millionth of each range: below the 6 significant digits of a value).
	cmaesTolX = 1e-6
	// cmaesTolFun ends a run when recent best scores and the last generation's scores span
	// less than it.
	cmaesTolFun = 1e-12
	// cmaesMaxCondition ends a run when the covariance matrix is this ill-conditioned.
	cmaesMaxCondition = 1e14
	// cmaesResamples is the number of redraws of a sample outside the unit cube.
	cmaesResamples = 10
)

// CMAESPopulation is the default population size of CMA-ES in n dimensions, 4 + floor(3 ln n).
func CMAESPopulation(n int) int {
	return 4 + int(math.Floor(3*math.Log(float64(max(1, n)))))
}

// newCMAES builds the strategy; lambda 0 means CMAESPopulation, sigma0 outside (0, 1] means
// 0.25 (a quarter of each range).
func newCMAES(space Space, seed int64, lambda int, sigma0 float64, restarts int) (*cmaes, error) {
	for i, p := range space {
		if p.Kind == Choice {
			return nil, fmt.Errorf("searchSpace[%d] (%s): cmaes searches float and int parameters only, not choice parameters", i, p.Path)
		}
	}
	n := len(space)
	if n == 0 {
		return nil, fmt.Errorf("cmaes needs at least one parameter")
	}
	if lambda == 0 {
		lambda = CMAESPopulation(n)
	}
	if lambda < 2 {
		return nil, fmt.Errorf("cmaes needs populationSize >= 2, got %d", lambda)
	}
	if restarts < 0 {
		return nil, fmt.Errorf("cmaes restarts must be >= 0, got %d", restarts)
	}
	if !(sigma0 > 0 && sigma0 <= 1) {
		sigma0 = 0.25
	}
	a := &cmaes{space: space, seed: seed, lambda: lambda, sigma0: sigma0, restarts: restarts, n: n,
		tolX: cmaesTolX, tolFun: cmaesTolFun, maxCond: cmaesMaxCondition}
	fn := float64(n)
	a.mu = lambda / 2
	a.weights = make([]float64, a.mu)
	sum := 0.0
	for i := range a.weights {
		a.weights[i] = math.Log(float64(lambda+1)/2) - math.Log(float64(i+1))
		sum += a.weights[i]
	}
	sq := 0.0
	for i := range a.weights {
		a.weights[i] /= sum
		sq += a.weights[i] * a.weights[i]
	}
	a.mueff = 1 / sq
	a.cs = (a.mueff + 2) / (fn + a.mueff + 5)
	a.ds = 1 + 2*math.Max(0, math.Sqrt((a.mueff-1)/(fn+1))-1) + a.cs
	a.cc = (4 + a.mueff/fn) / (fn + 4 + 2*a.mueff/fn)
	a.c1 = 2 / ((fn+1.3)*(fn+1.3) + a.mueff)
	a.cmu = math.Min(1-a.c1, 2*(a.mueff-2+1/a.mueff)/((fn+2)*(fn+2)+a.mueff))
	a.chiN = math.Sqrt(fn) * (1 - 1/(4*fn) + 1/(21*fn*fn))
	a.yMax = math.Sqrt(fn) + 2*fn/(fn+2)
	a.stagnation = 10 + int(math.Ceil(30*fn/float64(lambda)))
	return a, nil
}

func (a *cmaes) Adaptive() bool { return true }
func (a *cmaes) Size(int) int   { return a.lambda }

// cmaesState is the state of one CMA-ES run before a generation.
type cmaesState struct {
	run   int // restarts so far
	gens  int // generations of this run
	mean  []float64
	sigma float64
	pc    []float64
	ps    []float64
	c     [][]float64 // covariance matrix
	b     [][]float64 // eigenvectors of c (columns)
	d     []float64   // square roots of the eigenvalues of c
	bests []float64   // best score of each generation of this run
	ended bool        // the last run ended and no restart is left
}

// start begins run r: at the centre of the cube for the first run, at a uniform point
// otherwise.
func (a *cmaes) start(r int) *cmaesState {
	st := &cmaesState{run: r, sigma: a.sigma0, pc: make([]float64, a.n), ps: make([]float64, a.n)}
	if r == 0 {
		st.mean = make([]float64, a.n)
		for i := range st.mean {
			st.mean[i] = 0.5
		}
	} else {
		st.mean = randomPoint(rngFor(a.seed, NameCMAES+"/restart", r), a.n)
	}
	st.c = identity(a.n)
	st.b = identity(a.n)
	st.d = make([]float64, a.n)
	for i := range st.d {
		st.d[i] = 1
	}
	return st
}

// state replays the strategy over the history: the state before generation len(history).
func (a *cmaes) state(history [][]Trial) *cmaesState {
	st := a.start(0)
	for _, gen := range history {
		if st.ended {
			break
		}
		a.tell(st, successes(a.space, gen))
		if reason := a.stop(st); reason != "" {
			if st.run < a.restarts {
				st = a.start(st.run + 1)
			} else {
				st.ended = true
			}
		}
	}
	return st
}

// tell updates st with one generation's successes (Hansen's tutorial, Appendix A).
func (a *cmaes) tell(st *cmaesState, kids []scored) {
	st.gens++
	if len(kids) == 0 {
		st.bests = append(st.bests, math.Inf(-1))
		return
	}
	slices.SortStableFunc(kids, better)
	st.bests = append(st.bests, kids[0].trial.Score)
	n := a.n
	// y_i = (x_i - m) / sigma, clipped to a Mahalanobis length of yMax.
	k := min(a.mu, len(kids))
	ys := make([][]float64, k)
	for i := range k {
		y := make([]float64, n)
		for j := range y {
			y[j] = (kids[i].point[j] - st.mean[j]) / st.sigma
		}
		if l := norm(a.invSqrtC(st, y)); l > a.yMax {
			for j := range y {
				y[j] *= a.yMax / l
			}
		}
		ys[i] = y
	}
	w := slices.Clone(a.weights[:k])
	wsum := 0.0
	for _, v := range w {
		wsum += v
	}
	for i := range w {
		w[i] /= wsum
	}
	yw := make([]float64, n)
	for i := range k {
		for j := range yw {
			yw[j] += w[i] * ys[i][j]
		}
	}
	for j := range st.mean {
		st.mean[j] += st.sigma * yw[j]
	}
	// Step-size control.
	zw := a.invSqrtC(st, yw)
	f := math.Sqrt(a.cs * (2 - a.cs) * a.mueff)
	for j := range st.ps {
		st.ps[j] = (1-a.cs)*st.ps[j] + f*zw[j]
	}
	psn := norm(st.ps)
	hs := 0.0
	if psn/math.Sqrt(1-math.Pow(1-a.cs, 2*float64(st.gens))) < (1.4+2/(float64(n)+1))*a.chiN {
		hs = 1
	}
	fc := math.Sqrt(a.cc * (2 - a.cc) * a.mueff)
	for j := range st.pc {
		st.pc[j] = (1-a.cc)*st.pc[j] + hs*fc*yw[j]
	}
	// Covariance matrix adaptation (sum of w is 1).
	delta := (1 - hs) * a.cc * (2 - a.cc)
	decay := 1 + a.c1*delta - a.c1 - a.cmu
	for r := range n {
		for c := range n {
			v := decay*st.c[r][c] + a.c1*st.pc[r]*st.pc[c]
			for i := range k {
				v += a.cmu * w[i] * ys[i][r] * ys[i][c]
			}
			st.c[r][c] = v
		}
	}
	st.sigma *= math.Exp((a.cs / a.ds) * (psn/a.chiN - 1))
	st.sigma = math.Min(st.sigma, 1e3)
	// Keep C symmetric and decompose it.
	for r := range n {
		for c := r + 1; c < n; c++ {
			v := (st.c[r][c] + st.c[c][r]) / 2
			st.c[r][c], st.c[c][r] = v, v
		}
	}
	vals, vecs := jacobiEigen(st.c)
	st.b = vecs
	for i := range vals {
		st.d[i] = math.Sqrt(math.Max(vals[i], 1e-300))
	}
}

// stop returns why the current run ended, or "".
func (a *cmaes) stop(st *cmaesState) string {
	spread := 0.0
	for i := range a.n {
		spread = math.Max(spread, math.Max(math.Sqrt(st.c[i][i]), math.Abs(st.pc[i])))
	}
	if st.sigma*spread < a.tolX {
		return "TolX"
	}
	dmax, dmin := slices.Max(st.d), slices.Min(st.d)
	if dmin <= 0 || (dmax/dmin)*(dmax/dmin) > a.maxCond {
		return "ConditionCov"
	}
	if len(st.bests) >= a.stagnation {
		recent := st.bests[len(st.bests)-a.stagnation:]
		lo, hi := slices.Min(recent), slices.Max(recent)
		if !math.IsInf(lo, 0) && hi-lo < a.tolFun {
			return "TolFun"
		}
	}
	return ""
}

// invSqrtC returns C^(-1/2) y = B D^-1 B^T y.
func (a *cmaes) invSqrtC(st *cmaesState, y []float64) []float64 {
	n := a.n
	t := make([]float64, n)
	for i := range n {
		s := 0.0
		for j := range n {
			s += st.b[j][i] * y[j]
		}
		t[i] = s / st.d[i]
	}
	out := make([]float64, n)
	for i := range n {
		s := 0.0
		for j := range n {
			s += st.b[i][j] * t[j]
		}
		out[i] = s
	}
	return out
}

// Converged reports whether the last run has ended and no restart is left: the planner then
// proposes nothing more.
func (a *cmaes) Converged(_ int, history [][]Trial) bool {
	return a.state(history).ended
}

// Propose samples lambda points x = m + sigma B D z, z ~ N(0, I), from the replayed state,
// each from generation g's own random stream.
func (a *cmaes) Propose(g int, history [][]Trial) []Point {
	st := a.state(history)
	rng := rngFor(a.seed, NameCMAES, g)
	n := a.n
	out := make([]Point, 0, a.lambda)
	for range a.lambda {
		var x Point
		for try := 0; try <= cmaesResamples; try++ {
			z := make([]float64, n)
			for i := range z {
				z[i] = st.d[i] * rng.NormFloat64()
			}
			x = make(Point, n)
			inside := true
			for i := range x {
				s := 0.0
				for j := range n {
					s += st.b[i][j] * z[j]
				}
				x[i] = st.mean[i] + st.sigma*s
				if !(x[i] >= 0 && x[i] <= 1) {
					inside = false
				}
			}
			if inside {
				break
			}
		}
		for i := range x {
			x[i] = clamp01(x[i])
		}
		out = append(out, x)
	}
	return out
}

func identity(n int) [][]float64 {
	m := make([][]float64, n)
	for i := range m {
		m[i] = make([]float64, n)
		m[i][i] = 1
	}
	return m
}

func norm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// jacobiEigen returns the eigenvalues and eigenvectors (columns) of the symmetric matrix s by
// the cyclic Jacobi method, sorted by eigenvalue. It is deterministic and exact enough for the
// small matrices of a search space (at most a few dozen dimensions).
func jacobiEigen(s [][]float64) ([]float64, [][]float64) {
	n := len(s)
	a := make([][]float64, n)
	for i := range a {
		a[i] = slices.Clone(s[i])
	}
	v := identity(n)
	total := 0.0
	for p := range n {
		for q := range n {
			total += a[p][q] * a[p][q]
		}
	}
	for sweep := 0; sweep < 100; sweep++ {
		// Stop when the off-diagonal part is negligible against the whole matrix (relative
		// 1e-15 in Frobenius norm), so tiny and large covariances are decomposed alike.
		off := 0.0
		for p := range n {
			for q := p + 1; q < n; q++ {
				off += a[p][q] * a[p][q]
			}
		}
		if off <= 1e-30*total {
			break
		}
		for p := range n {
			for q := p + 1; q < n; q++ {
				if a[p][q] == 0 {
					continue
				}
				theta := (a[q][q] - a[p][p]) / (2 * a[p][q])
				t := math.Copysign(1, theta) / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				c := 1 / math.Sqrt(t*t+1)
				sn := t * c
				for k := range n {
					akp, akq := a[k][p], a[k][q]
					a[k][p] = c*akp - sn*akq
					a[k][q] = sn*akp + c*akq
				}
				for k := range n {
					apk, aqk := a[p][k], a[q][k]
					a[p][k] = c*apk - sn*aqk
					a[q][k] = sn*apk + c*aqk
				}
				for k := range n {
					vkp, vkq := v[k][p], v[k][q]
					v[k][p] = c*vkp - sn*vkq
					v[k][q] = sn*vkp + c*vkq
				}
			}
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(a[x][x], a[y][y]) })
	vals := make([]float64, n)
	vecs := identity(n)
	for k, i := range order {
		vals[k] = a[i][i]
		for r := range n {
			vecs[r][k] = v[r][i]
		}
	}
	return vals, vecs
}
