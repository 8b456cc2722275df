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
	"slices"
)

// Summary is a study's leaderboard: counters, the best trial, the top of the Pareto front and
// the last generations' convergence. Its size does not depend on the number of trials.
type Summary struct {
	// Created, Running, Succeeded and Failed count the study's own trials; External counts
	// finished external trials.
	Created, Running, Succeeded, Failed, External int
	// Best is the succeeded trial with the highest score (ties: the smaller name).
	Best *Trial
	// Front is the top of the Pareto front over the objectives, best score first. Trials
	// with the same objective values are one point of the front, listed once (the first in
	// score, then name, order).
	Front []Trial
	// FrontSize is the number of distinct points of the whole front.
	FrontSize int
	// Convergence summarises the last generations, oldest first.
	Convergence []GenerationStats
}

// GenerationStats summarise one generation.
type GenerationStats struct {
	// Generation is the generation number.
	Generation int
	// Evaluated and Failed count its finished trials.
	Evaluated, Failed int
	// Best and Mean are its best and mean score (HasScore is false when nothing succeeded).
	Best, Mean float64
	HasScore   bool
	// BestSoFar is the best score of this and every earlier generation (HasBestSoFar false
	// while nothing succeeded).
	BestSoFar    float64
	HasBestSoFar bool
}

// rankOrder orders trials by score (higher first), then by name.
func rankOrder(a, b *Trial) int {
	if c := cmp.Compare(b.Score, a.Score); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// summarize builds the leaderboard of trials.
func summarize(cfg Config, trials []Trial) Summary {
	var s Summary
	var done []*Trial
	gens := map[int]*GenerationStats{}
	sums := map[int]float64{}
	for i := range trials {
		t := &trials[i]
		if t.Generation >= 0 {
			s.Created++
			st := gens[t.Generation]
			if st == nil {
				st = &GenerationStats{Generation: t.Generation}
				gens[t.Generation] = st
			}
			switch t.State {
			case Pending:
				s.Running++
			case Failed:
				s.Failed++
				st.Failed++
			case Succeeded:
				s.Succeeded++
				st.Evaluated++
				sums[t.Generation] += t.Score
				if !st.HasScore || t.Score > st.Best {
					st.Best, st.HasScore = t.Score, true
				}
			}
		} else if t.State != Pending {
			s.External++
		}
		if t.State == Succeeded {
			done = append(done, t)
		}
	}
	slices.SortFunc(done, rankOrder)
	if len(done) > 0 {
		b := *done[0]
		s.Best = &b
	}

	// Pareto front over the objectives (every objective maximised), one trial per point.
	var front []*Trial
	seen := map[string]bool{}
	for _, t := range done {
		key := fmt.Sprint(t.Objectives)
		if seen[key] {
			continue
		}
		dominated := false
		for _, o := range done {
			if o != t && dominatesMax(o.Objectives, t.Objectives) {
				dominated = true
				break
			}
		}
		if !dominated {
			seen[key] = true
			front = append(front, t)
		}
	}
	s.FrontSize = len(front)
	for _, t := range front {
		if cfg.FrontSize > 0 && len(s.Front) == cfg.FrontSize {
			break
		}
		s.Front = append(s.Front, *t)
	}

	// Convergence, oldest first, the last ConvergenceSize generations.
	order := make([]int, 0, len(gens))
	for g := range gens {
		order = append(order, g)
	}
	slices.Sort(order)
	var bestSoFar float64
	have := false
	all := make([]GenerationStats, 0, len(order))
	for _, g := range order {
		st := gens[g]
		if st.Evaluated > 0 {
			st.Mean = sums[g] / float64(st.Evaluated)
			if !have || st.Best > bestSoFar {
				bestSoFar, have = st.Best, true
			}
		}
		st.BestSoFar, st.HasBestSoFar = bestSoFar, have
		all = append(all, *st)
	}
	if n := cfg.ConvergenceSize; n > 0 && len(all) > n {
		all = all[len(all)-n:]
	}
	s.Convergence = all
	return s
}

// ParetoRanks is the non-domination rank of each trial over its objectives (every objective
// maximised): 0 for the front, 1 for the front once rank 0 is removed, and so on.
func ParetoRanks(trials []Trial) []int {
	c := make([]scored, len(trials))
	for i := range trials {
		c[i] = scored{trial: &trials[i]}
	}
	ranks := make([]int, len(trials))
	for r, front := range nonDominatedFronts(c) {
		for _, i := range front {
			ranks[i] = r
		}
	}
	return ranks
}
