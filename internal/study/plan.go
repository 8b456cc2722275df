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
	"context"
	"errors"
	"fmt"
	"slices"
)

// State is the state of a trial.
type State int

// The trial states.
const (
	// Pending: created, not finished.
	Pending State = iota
	// Succeeded: finished with a result.
	Succeeded
	// Failed: finished without a result.
	Failed
)

// External is the Generation of a trial the study did not propose (an Evaluation another
// client created with the study's label).
const External = -1

// Trial is one evaluated (or evaluating) candidate.
type Trial struct {
	// Name identifies the trial (the Evaluation's name).
	Name string
	// Generation and Index place the trial in the search; Generation is External for trials
	// the study did not propose.
	Generation, Index int
	// Values are the parameter values, one per dimension of the space (nil for an external
	// trial whose values are unknown).
	Values []Value
	// State is Pending, Succeeded or Failed.
	State State
	// Score is the scalar fitness score (higher is better), when Succeeded.
	Score float64
	// Objectives are the normalised objective values (higher is better), when Succeeded.
	Objectives []float64
	// Ref is kept with the trial for the caller (the name of the trial's PolicyBundle).
	Ref string
}

// Candidate is a trial to create.
type Candidate struct {
	// Generation and Index place the candidate in the search.
	Generation, Index int
	// Values are the parameter values.
	Values []Value
}

// Name is the deterministic name of candidate (generation g, index k) of a study.
func Name(study string, g, k int) string {
	return fmt.Sprintf("%s-g%03d-%03d", study, g, k)
}

// Config is a study as the planner sees it.
type Config struct {
	// Study is the study's name (the prefix of the trials' names).
	Study string
	// Space is the search space.
	Space Space
	// Algorithm proposes the candidates.
	Algorithm Algorithm
	// MaxEvaluations bounds the trials the study creates.
	MaxEvaluations int
	// MaxFailures ends the study when this many of its trials failed.
	MaxFailures int
	// Parallelism bounds the study's pending trials.
	Parallelism int
	// FrontSize bounds Summary.Front; ConvergenceSize bounds Summary.Convergence.
	FrontSize, ConvergenceSize int
}

// Outcome is where a study stands.
type Outcome int

// The outcomes.
const (
	// Running: trials are pending or to be created.
	Running Outcome = iota
	// Completed: the budget is spent or the search space exhausted, and nothing is pending.
	Completed
	// FailedOutcome: too many trials failed.
	FailedOutcome
)

// The reasons of a Completed or FailedOutcome decision.
const (
	ReasonBudgetExhausted      = "BudgetExhausted"
	ReasonSearchSpaceExhausted = "SearchSpaceExhausted"
	ReasonTooManyFailures      = "TooManyFailures"
	// ReasonConverged is the reason of a study whose algorithm (a Converger) ended the
	// search from its results.
	ReasonConverged = "Converged"
	// ReasonLeaderboardOnly is the reason of a Running study that creates nothing
	// (MaxEvaluations 0) and only ranks external trials.
	ReasonLeaderboardOnly = "LeaderboardOnly"
)

// Decision is what the planner decided from the trials so far.
type Decision struct {
	// Submit are the candidates to create now, in (generation, index) order.
	Submit []Candidate
	// Outcome is Running, Completed or FailedOutcome, with Reason and Message.
	Outcome Outcome
	Reason  string
	Message string
	// Generations is the number of generations proposed so far.
	Generations int
	// Summary is the leaderboard.
	Summary Summary
}

// Plan decides, from every trial the study has (its own and external ones, in any order),
// which candidates to create next and whether the study has ended. It is a pure function of
// cfg and the trials.
func Plan(cfg Config, trials []Trial) (Decision, error) {
	if cfg.Algorithm == nil && cfg.MaxEvaluations > 0 {
		return Decision{}, errors.New("study: no algorithm")
	}
	var own []Trial
	pending, failed := 0, 0
	for _, t := range trials {
		if t.Generation < 0 {
			continue
		}
		if t.Values != nil && len(t.Values) != len(cfg.Space) {
			return Decision{}, fmt.Errorf("study: trial %s has %d values for %d parameters", t.Name, len(t.Values), len(cfg.Space))
		}
		own = append(own, t)
		switch t.State {
		case Pending:
			pending++
		case Failed:
			failed++
		}
	}
	byGen := map[int]map[int]*Trial{}
	for i := range own {
		t := &own[i]
		if byGen[t.Generation] == nil {
			byGen[t.Generation] = map[int]*Trial{}
		}
		byGen[t.Generation][t.Index] = t
	}
	d := Decision{}
	created := len(own)
	if cfg.MaxEvaluations == 0 && (created == 0 || cfg.Algorithm == nil) {
		d.Outcome, d.Reason = Running, ReasonLeaderboardOnly
		d.Summary = summarize(cfg, trials)
		d.Message = fmt.Sprintf("leaderboard only: %d Evaluations of other clients ranked", d.Summary.External)
		return d, nil
	}
	if cfg.MaxFailures > 0 && failed >= cfg.MaxFailures {
		d.Outcome, d.Reason = FailedOutcome, ReasonTooManyFailures
		d.Message = fmt.Sprintf("%d of the study's Evaluations failed (maxFailures %d)", failed, cfg.MaxFailures)
		d.Generations = generationsOf(byGen)
		d.Summary = summarize(cfg, trials)
		return d, nil
	}

	exhausted, converged := false, false
	var history [][]Trial
	for g := 0; ; g++ {
		size := cfg.Algorithm.Size(g)
		if size == 0 {
			exhausted = true
			break
		}
		existing := byGen[g]
		if cfg.Algorithm.Adaptive() && g > 0 && !finished(byGen[g-1], cfg.Algorithm.Size(g-1)) {
			break
		}
		if c, ok := cfg.Algorithm.(Converger); ok && len(existing) == 0 && c.Converged(g, history) {
			converged = true
			break
		}
		if len(existing) < size {
			pts := cfg.Algorithm.Propose(g, history)
			for k, pt := range pts {
				if _, ok := existing[k]; ok {
					continue
				}
				if created+len(d.Submit) >= cfg.MaxEvaluations || pending+len(d.Submit) >= cfg.Parallelism {
					break
				}
				d.Submit = append(d.Submit, Candidate{Generation: g, Index: k, Values: cfg.Space.Decode(pt)})
			}
		}
		d.Generations = g + 1
		if created+len(d.Submit) >= cfg.MaxEvaluations || pending+len(d.Submit) >= cfg.Parallelism {
			break
		}
		if cfg.Algorithm.Adaptive() {
			history = append(history, genTrials(byGen[g]))
		}
	}
	d.Generations = max(d.Generations, generationsOf(byGen))
	d.Summary = summarize(cfg, trials)
	if len(d.Submit) == 0 && pending == 0 {
		switch {
		case created >= cfg.MaxEvaluations:
			d.Outcome, d.Reason = Completed, ReasonBudgetExhausted
			d.Message = fmt.Sprintf("all %d Evaluations of the budget finished", created)
		case exhausted:
			d.Outcome, d.Reason = Completed, ReasonSearchSpaceExhausted
			d.Message = fmt.Sprintf("the search space is exhausted after %d Evaluations", created)
		case converged:
			d.Outcome, d.Reason = Completed, ReasonConverged
			d.Message = fmt.Sprintf("the search converged after %d Evaluations", created)
		}
	}
	if d.Outcome == Running {
		d.Message = fmt.Sprintf("%d Evaluations created of %d, %d running, %d to create", created, cfg.MaxEvaluations, pending, len(d.Submit))
	}
	return d, nil
}

// finished reports whether a generation of size trials has all been created and finished.
func finished(gen map[int]*Trial, size int) bool {
	if len(gen) < size {
		return false
	}
	for _, t := range gen {
		if t.State == Pending {
			return false
		}
	}
	return true
}

// genTrials returns a generation's trials sorted by index.
func genTrials(gen map[int]*Trial) []Trial {
	out := make([]Trial, 0, len(gen))
	for _, t := range gen {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b Trial) int { return cmp.Compare(a.Index, b.Index) })
	return out
}

func generationsOf(byGen map[int]map[int]*Trial) int {
	n := 0
	for g := range byGen {
		n = max(n, g+1)
	}
	return n
}

// Evaluator runs trials: the operator's creates Evaluations in the cluster, the CLI's runs
// them in-process.
type Evaluator interface {
	// Submit starts the candidates; starting a candidate that already exists is not an error.
	Submit(ctx context.Context, cands []Candidate) error
	// Results returns every trial of the study, in any order.
	Results(ctx context.Context) ([]Trial, error)
}

// Step is one round of a study: read the trials, plan, submit.
func Step(ctx context.Context, cfg Config, ev Evaluator) (Decision, error) {
	trials, err := ev.Results(ctx)
	if err != nil {
		return Decision{}, err
	}
	d, err := Plan(cfg, trials)
	if err != nil {
		return Decision{}, err
	}
	if len(d.Submit) > 0 {
		if err := ev.Submit(ctx, d.Submit); err != nil {
			return d, err
		}
	}
	return d, nil
}

// Run steps a study until it ends, for an Evaluator whose Submit finishes the trials it
// starts (the in-process one). It returns the final decision.
func Run(ctx context.Context, cfg Config, ev Evaluator) (Decision, error) {
	for {
		if err := ctx.Err(); err != nil {
			return Decision{}, err
		}
		d, err := Step(ctx, cfg, ev)
		if err != nil {
			return d, err
		}
		if len(d.Submit) == 0 {
			if d.Outcome == Running {
				return d, errors.New("study: the evaluator left trials unfinished")
			}
			return d, nil
		}
	}
}
