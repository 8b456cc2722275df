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
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
)

// Algorithm proposes the candidates of each generation.
type Algorithm interface {
	// Adaptive reports whether a generation depends on the results of earlier ones; the
	// planner then proposes generation g only when every trial of g-1 has finished.
	Adaptive() bool
	// Size is the number of candidates of generation g; 0 means the search has no more.
	Size(g int) int
	// Propose returns the Size(g) candidates of generation g. history holds the trials of
	// generations 0..g-1 (history[h] sorted by index); a non-adaptive algorithm ignores it.
	Propose(g int, history [][]Trial) []Point
}

// Converger is implemented by an adaptive algorithm that can end the search from its results:
// when Converged(g, history) is true before generation g is proposed, the study completes
// with reason Converged.
type Converger interface {
	// Converged reports whether the search has converged after the generations in history.
	Converged(g int, history [][]Trial) bool
}

// Settings configure an algorithm.
type Settings struct {
	// Name is grid, random, nsga2, evolution or cmaes.
	Name string
	// Seed drives every random choice.
	Seed int64
	// PopulationSize is the number of candidates per generation.
	PopulationSize int
	// Parents is mu of the evolution strategy (0 = PopulationSize/4, at least 1).
	Parents int
	// MutationRate is the probability that a dimension of an offspring mutates (0 = 1/d).
	MutationRate float64
	// InitialStep is the evolution strategy's initial step size, as a fraction of each
	// parameter's range (0 = 0.2).
	InitialStep float64
	// CMAESPopulation is lambda of CMA-ES (0 = CMAESPopulation of the space's dimension).
	CMAESPopulation int
	// CMAESSigma is CMA-ES's initial step size sigma0 as a fraction of each parameter's range
	// (0 = 0.25).
	CMAESSigma float64
	// CMAESRestarts is the number of times CMA-ES starts a new run after one ended.
	CMAESRestarts int
}

// The algorithm names.
const (
	NameGrid      = "grid"
	NameRandom    = "random"
	NameNSGA2     = "nsga2"
	NameEvolution = "evolution"
	NameCMAES     = "cmaes"
)

// New builds the algorithm of settings s over space.
func New(space Space, s Settings) (Algorithm, error) {
	if s.PopulationSize < 1 {
		return nil, fmt.Errorf("populationSize must be >= 1, got %d", s.PopulationSize)
	}
	rate := s.MutationRate
	if rate <= 0 || rate > 1 {
		rate = 1 / float64(len(space))
	}
	switch s.Name {
	case NameGrid:
		return newGrid(space, s.PopulationSize), nil
	case NameRandom, "":
		return &random{space: space, seed: s.Seed, pop: s.PopulationSize}, nil
	case NameNSGA2:
		if s.PopulationSize < 2 {
			return nil, fmt.Errorf("nsga2 needs populationSize >= 2, got %d", s.PopulationSize)
		}
		return &nsga2{space: space, seed: s.Seed, pop: s.PopulationSize, rate: rate}, nil
	case NameEvolution:
		mu := s.Parents
		if mu <= 0 {
			mu = max(1, s.PopulationSize/4)
		}
		if mu > s.PopulationSize {
			return nil, fmt.Errorf("parents (%d) must not exceed populationSize (%d)", mu, s.PopulationSize)
		}
		step := s.InitialStep
		if step <= 0 || step > 1 {
			step = 0.2
		}
		return &evolution{space: space, seed: s.Seed, lambda: s.PopulationSize, mu: mu, rate: rate, step: step}, nil
	case NameCMAES:
		return newCMAES(space, s.Seed, s.CMAESPopulation, s.CMAESSigma, s.CMAESRestarts)
	}
	return nil, fmt.Errorf("unknown algorithm %q (grid, random, nsga2, evolution, cmaes)", s.Name)
}

// rngFor is the random source of one generation of one algorithm: seeded by the study seed,
// with a stream derived from the algorithm and the generation, so generations are independent
// of each other and of the order anything else happens in.
func rngFor(seed int64, algorithm string, g int) *rand.Rand {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", algorithm, g)
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

func randomPoint(r *rand.Rand, d int) Point {
	pt := make(Point, d)
	for i := range pt {
		pt[i] = r.Float64()
	}
	return pt
}

// grid enumerates the Cartesian product of the parameters' grid values, the last parameter
// varying fastest, PopulationSize candidates per generation.
type grid struct {
	values [][]float64
	total  int
	pop    int
}

func newGrid(space Space, pop int) *grid {
	g := &grid{pop: pop, total: 1}
	for i := range space {
		v := space[i].gridValues()
		g.values = append(g.values, v)
		if g.total > math.MaxInt32/len(v) {
			g.total = math.MaxInt32
		} else {
			g.total *= len(v)
		}
	}
	return g
}

func (g *grid) Adaptive() bool { return false }

func (g *grid) Size(gen int) int {
	return max(0, min(g.pop, g.total-gen*g.pop))
}

func (g *grid) Propose(gen int, _ [][]Trial) []Point {
	n := g.Size(gen)
	out := make([]Point, n)
	for k := range n {
		idx := gen*g.pop + k
		pt := make(Point, len(g.values))
		for i := len(g.values) - 1; i >= 0; i-- {
			vs := g.values[i]
			pt[i] = vs[idx%len(vs)]
			idx /= len(vs)
		}
		out[k] = pt
	}
	return out
}

// random samples every candidate independently and uniformly in unit coordinates (so
// log-uniformly for logScale parameters).
type random struct {
	space Space
	seed  int64
	pop   int
}

func (r *random) Adaptive() bool { return false }
func (r *random) Size(int) int   { return r.pop }

func (r *random) Propose(g int, _ [][]Trial) []Point {
	rng := rngFor(r.seed, NameRandom, g)
	out := make([]Point, r.pop)
	for k := range out {
		out[k] = randomPoint(rng, len(r.space))
	}
	return out
}

// scored is a finished trial with its point, for the adaptive algorithms.
type scored struct {
	trial *Trial
	point Point
}

// successes returns the succeeded trials of one generation whose values belong to the space.
func successes(space Space, gen []Trial) []scored {
	var out []scored
	for i := range gen {
		t := &gen[i]
		if t.State != Succeeded {
			continue
		}
		pt, ok := space.Encode(t.Values)
		if !ok {
			continue
		}
		out = append(out, scored{trial: t, point: pt})
	}
	return out
}

// nsga2 is Deb et al.'s NSGA-II: the population is the best PopulationSize of parents and
// offspring by non-domination rank, then crowding distance; offspring come from binary
// tournaments, simulated binary crossover (eta 15) and polynomial mutation (eta 20) in unit
// coordinates. Every objective is maximised (fitness values are higher-is-better).
type nsga2 struct {
	space Space
	seed  int64
	pop   int
	rate  float64
}

func (a *nsga2) Adaptive() bool { return true }
func (a *nsga2) Size(int) int   { return a.pop }

// population replays the selection over the history: P0 is generation 0's successes, and Ph
// the best pop of P(h-1) and generation h.
func (a *nsga2) population(history [][]Trial) ([]scored, []int, []float64) {
	var pop []scored
	var ranks []int
	var crowd []float64
	for _, gen := range history {
		pop, ranks, crowd = a.selectBest(append(slices.Clone(pop), successes(a.space, gen)...))
	}
	return pop, ranks, crowd
}

// selectBest keeps the best a.pop of cands, returning them with their rank and crowding
// distance.
func (a *nsga2) selectBest(cands []scored) ([]scored, []int, []float64) {
	if len(cands) == 0 {
		return nil, nil, nil
	}
	fronts := nonDominatedFronts(cands)
	var out []scored
	var ranks []int
	var crowd []float64
	for r, front := range fronts {
		members := make([]scored, len(front))
		for i, idx := range front {
			members[i] = cands[idx]
		}
		d := crowding(members)
		order := make([]int, len(members))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(x, y int) int {
			if c := cmp.Compare(d[y], d[x]); c != 0 {
				return c
			}
			return cmp.Compare(members[x].trial.Name, members[y].trial.Name)
		})
		for _, i := range order {
			if len(out) == a.pop {
				return out, ranks, crowd
			}
			out = append(out, members[i])
			ranks = append(ranks, r)
			crowd = append(crowd, d[i])
		}
	}
	return out, ranks, crowd
}

// nonDominatedFronts sorts candidates into fronts (indexes, ascending within a front).
func nonDominatedFronts(c []scored) [][]int {
	n := len(c)
	dominatedBy := make([]int, n)
	dominates := make([][]int, n)
	for i := range n {
		for j := range n {
			if i != j && dominatesMax(c[i].trial.Objectives, c[j].trial.Objectives) {
				dominates[i] = append(dominates[i], j)
				dominatedBy[j]++
			}
		}
	}
	var fronts [][]int
	var front []int
	for i := range n {
		if dominatedBy[i] == 0 {
			front = append(front, i)
		}
	}
	for len(front) > 0 {
		fronts = append(fronts, front)
		var next []int
		for _, i := range front {
			for _, j := range dominates[i] {
				dominatedBy[j]--
				if dominatedBy[j] == 0 {
					next = append(next, j)
				}
			}
		}
		slices.Sort(next)
		front = next
	}
	return fronts
}

// dominatesMax reports whether a dominates b when every objective is maximised; missing
// values count as 0.
func dominatesMax(a, b []float64) bool {
	n := max(len(a), len(b))
	better := false
	for i := range n {
		x, y := at(a, i), at(b, i)
		if x < y {
			return false
		}
		if x > y {
			better = true
		}
	}
	return better
}

func at(v []float64, i int) float64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// crowding is the crowding distance of each member of one front (infinite at the extremes).
func crowding(members []scored) []float64 {
	n := len(members)
	d := make([]float64, n)
	if n <= 2 {
		for i := range d {
			d[i] = math.Inf(1)
		}
		return d
	}
	m := 0
	for _, s := range members {
		m = max(m, len(s.trial.Objectives))
	}
	order := make([]int, n)
	for k := range m {
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(x, y int) int {
			if c := cmp.Compare(at(members[x].trial.Objectives, k), at(members[y].trial.Objectives, k)); c != 0 {
				return c
			}
			return cmp.Compare(members[x].trial.Name, members[y].trial.Name)
		})
		lo, hi := at(members[order[0]].trial.Objectives, k), at(members[order[n-1]].trial.Objectives, k)
		d[order[0]], d[order[n-1]] = math.Inf(1), math.Inf(1)
		if hi == lo {
			continue
		}
		for i := 1; i < n-1; i++ {
			d[order[i]] += (at(members[order[i+1]].trial.Objectives, k) - at(members[order[i-1]].trial.Objectives, k)) / (hi - lo)
		}
	}
	return d
}

func (a *nsga2) Propose(g int, history [][]Trial) []Point {
	rng := rngFor(a.seed, NameNSGA2, g)
	d := len(a.space)
	out := make([]Point, 0, a.pop)
	pop, ranks, crowd := a.population(history)
	if len(pop) == 0 {
		for range a.pop {
			out = append(out, randomPoint(rng, d))
		}
		return out
	}
	tournament := func() Point {
		i, j := rng.IntN(len(pop)), rng.IntN(len(pop))
		if ranks[j] < ranks[i] || (ranks[j] == ranks[i] && crowd[j] > crowd[i]) {
			i = j
		}
		return pop[i].point
	}
	for len(out) < a.pop {
		c1, c2 := sbx(rng, tournament(), tournament(), 15)
		for _, c := range []Point{c1, c2} {
			if len(out) == a.pop {
				break
			}
			polynomialMutation(rng, c, a.rate, 20)
			out = append(out, c)
		}
	}
	return out
}

// sbx is simulated binary crossover with distribution index eta on [0, 1] coordinates (each
// dimension crosses with probability 0.5, the pair with probability 0.9).
func sbx(rng *rand.Rand, p1, p2 Point, eta float64) (Point, Point) {
	c1, c2 := slices.Clone(p1), slices.Clone(p2)
	if rng.Float64() > 0.9 {
		return c1, c2
	}
	for i := range c1 {
		u := rng.Float64()
		if rng.Float64() > 0.5 || math.Abs(p1[i]-p2[i]) < 1e-12 {
			continue
		}
		var beta float64
		if u <= 0.5 {
			beta = math.Pow(2*u, 1/(eta+1))
		} else {
			beta = math.Pow(1/(2*(1-u)), 1/(eta+1))
		}
		c1[i] = clamp01(0.5 * ((1+beta)*p1[i] + (1-beta)*p2[i]))
		c2[i] = clamp01(0.5 * ((1-beta)*p1[i] + (1+beta)*p2[i]))
	}
	return c1, c2
}

// polynomialMutation mutates each coordinate with probability rate (distribution index eta).
func polynomialMutation(rng *rand.Rand, c Point, rate, eta float64) {
	for i := range c {
		u := rng.Float64()
		if rng.Float64() >= rate {
			continue
		}
		var delta float64
		if u < 0.5 {
			delta = math.Pow(2*u, 1/(eta+1)) - 1
		} else {
			delta = 1 - math.Pow(2*(1-u), 1/(eta+1))
		}
		c[i] = clamp01(c[i] + delta)
	}
}

// evolution is a (mu+lambda) evolution strategy on the fitness score: the mu best of parents
// and offspring survive; each offspring is a parent (round robin, best first) with Gaussian
// noise on each coordinate (with probability rate, at least one coordinate). The step size
// follows Rechenberg's one-fifth rule: it grows by 1/0.85 after a generation where more than
// a fifth of the offspring beat the best parent, and shrinks by 0.85 otherwise.
type evolution struct {
	space  Space
	seed   int64
	lambda int
	mu     int
	rate   float64
	step   float64
}

func (a *evolution) Adaptive() bool { return true }
func (a *evolution) Size(int) int   { return a.lambda }

// better orders trials by score, higher first, then by name.
func better(x, y scored) int {
	if c := cmp.Compare(y.trial.Score, x.trial.Score); c != 0 {
		return c
	}
	return cmp.Compare(x.trial.Name, y.trial.Name)
}

// state replays the strategy over the history: the parents after the last generation and the
// current step size.
func (a *evolution) state(history [][]Trial) ([]scored, float64) {
	var parents []scored
	step := a.step
	for h, gen := range history {
		kids := successes(a.space, gen)
		if h > 0 && len(parents) > 0 {
			wins := 0
			for _, k := range kids {
				if k.trial.Score > parents[0].trial.Score {
					wins++
				}
			}
			if len(gen) > 0 && float64(wins) > float64(len(gen))/5 {
				step /= 0.85
			} else {
				step *= 0.85
			}
			step = math.Max(1e-3, math.Min(0.5, step))
		}
		all := append(slices.Clone(parents), kids...)
		slices.SortStableFunc(all, better)
		parents = all[:min(a.mu, len(all))]
	}
	return parents, step
}

func (a *evolution) Propose(g int, history [][]Trial) []Point {
	rng := rngFor(a.seed, NameEvolution, g)
	d := len(a.space)
	out := make([]Point, 0, a.lambda)
	parents, step := a.state(history)
	if len(parents) == 0 {
		for range a.lambda {
			out = append(out, randomPoint(rng, d))
		}
		return out
	}
	for k := range a.lambda {
		c := slices.Clone(parents[k%len(parents)].point)
		forced := rng.IntN(d)
		for i := range c {
			z := rng.NormFloat64()
			if i != forced && rng.Float64() >= a.rate {
				continue
			}
			c[i] = reflect01(c[i] + step*z)
		}
		out = append(out, c)
	}
	return out
}

// reflect01 folds x back into [0, 1] at the bounds.
func reflect01(x float64) float64 {
	for x < 0 || x > 1 {
		if x < 0 {
			x = -x
		}
		if x > 1 {
			x = 2 - x
		}
	}
	return x
}
