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

package binding

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/export"
	"github.com/inference-sim/blis-operator/internal/evaluation"
	"github.com/inference-sim/blis-operator/internal/promote"
	"github.com/inference-sim/blis-operator/internal/study"
)

// Export renders the policy and cluster of a resolved evaluation as llm-d configuration for
// target (empty: the exporter's default), through promote.Export (the mapping `blis export`
// and the operator's promotion use): pools, disaggregation, KV offload and autoscaling bounds
// come from cluster, the SLO classes from the evaluation's workload.
func Export(res *evaluation.Resolved, cluster *blisv1alpha1.SimulatedClusterSpec, target string) (*export.Result, error) {
	return promote.Export(res, cluster, export.Options{Target: target})
}

// Local runs a study's candidates in-process: it resolves each candidate (the base bundle
// patched with its values) against the study's cluster and workload from the manifests and
// simulates it with internal/evaluation, several candidates at once. Its trials and names are
// those the operator's children would have, so the study's status is the same.
type Local struct {
	// Study is the study being run.
	Study *blisv1alpha1.PolicyStudy
	// Base is the base bundle spec (nil: the default policies).
	Base *blisv1alpha1.PolicyBundleSpec
	// Inputs gives the cluster, workload and ConfigMaps (Spec and Name are set per candidate).
	Inputs evaluation.Inputs
	// Space is the study's search space.
	Space study.Space
	// Workers bounds the candidates simulated at once (0 = the number of CPUs).
	Workers int
	// Progress, when set, is called after each candidate finishes.
	Progress func(t study.Trial)
	// Observe, when set, receives the Evaluation status of each candidate that ran
	// (for reports that show metrics), from the worker that ran it.
	Observe func(name string, st *blisv1alpha1.EvaluationStatus)

	mu     sync.Mutex
	trials []study.Trial
	// byHash reuses the status of a candidate with the same input hash (as the operator
	// reuses a Succeeded Evaluation's result).
	byHash map[string]*blisv1alpha1.EvaluationStatus
}

// Submit runs the candidates and records their trials.
func (l *Local) Submit(ctx context.Context, cands []study.Candidate) error {
	workers := l.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(cands))
	out := make([]study.Trial, len(cands))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = l.run(ctx, cands[i])
				if l.Progress != nil {
					l.Progress(out[i])
				}
			}
		}()
	}
	for i := range cands {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	l.trials = append(l.trials, out...)
	l.mu.Unlock()
	return nil
}

// run evaluates one candidate; a candidate that fails to resolve or run is a Failed trial.
func (l *Local) run(ctx context.Context, c study.Candidate) study.Trial {
	name := study.Name(l.Study.Name, c.Generation, c.Index)
	t := study.Trial{Name: name, Generation: c.Generation, Index: c.Index, Values: c.Values, State: study.Failed, Ref: name}
	st, err := l.evaluate(ctx, name, c.Values)
	if err != nil {
		return t
	}
	ResultOf(&t, l.Study.Spec.Objectives, st)
	if l.Observe != nil {
		l.Observe(name, st)
	}
	return t
}

func (l *Local) evaluate(ctx context.Context, name string, vals []study.Value) (*blisv1alpha1.EvaluationStatus, error) {
	bundle, err := CandidateBundle(l.Base, l.Space, vals)
	if err != nil {
		return nil, err
	}
	in := l.Inputs
	in.Name = name
	in.Spec = EvaluationSpec(&l.Study.Spec, "", bundle)
	in.Policy = nil
	res, err := evaluation.Resolve(in)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	if l.byHash == nil {
		l.byHash = map[string]*blisv1alpha1.EvaluationStatus{}
	}
	cached := l.byHash[res.Hash]
	l.mu.Unlock()
	if cached != nil {
		return cached, nil
	}
	r, err := evaluation.RunWithOptions(ctx, res, evaluation.Options{Parallelism: 1})
	if err != nil {
		return nil, err
	}
	st := r.Status()
	l.mu.Lock()
	l.byHash[res.Hash] = &st
	l.mu.Unlock()
	return &st, nil
}

// Results returns the trials run so far.
func (l *Local) Results(context.Context) ([]study.Trial, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]study.Trial(nil), l.trials...), nil
}

// Best returns the bundle spec of a trial of this run.
func (l *Local) Best(t *study.Trial) (*blisv1alpha1.PolicyBundleSpec, error) {
	return CandidateBundle(l.Base, l.Space, t.Values)
}

// SetConditions writes the conditions of a decision into st, as the operator does: while
// Running, Progressing=True; at the end, Progressing=False and Completed or Failed=True with
// the planner's reason.
func SetConditions(st *blisv1alpha1.PolicyStudyStatus, gen int64, d *study.Decision) {
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, ObservedGeneration: gen,
			Reason: reason, Message: blisv1alpha1.TruncateMessage(msg)})
	}
	switch d.Outcome {
	case study.Running:
		reason := blisv1alpha1.StudyReasonRunning
		if d.Reason == study.ReasonLeaderboardOnly {
			reason = blisv1alpha1.StudyReasonLeaderboardOnly
		}
		set(blisv1alpha1.StudyConditionProgressing, metav1.ConditionTrue, reason, d.Message)
		set(blisv1alpha1.StudyConditionCompleted, metav1.ConditionFalse, blisv1alpha1.StudyReasonRunning, "the search is running")
	case study.Completed:
		set(blisv1alpha1.StudyConditionProgressing, metav1.ConditionFalse, d.Reason, d.Message)
		set(blisv1alpha1.StudyConditionCompleted, metav1.ConditionTrue, d.Reason, d.Message)
		set(blisv1alpha1.StudyConditionFailed, metav1.ConditionFalse, d.Reason, "the search completed")
	case study.FailedOutcome:
		set(blisv1alpha1.StudyConditionProgressing, metav1.ConditionFalse, d.Reason, d.Message)
		set(blisv1alpha1.StudyConditionCompleted, metav1.ConditionFalse, d.Reason, "the search failed")
		set(blisv1alpha1.StudyConditionFailed, metav1.ConditionTrue, d.Reason, d.Message)
	}
}

// RunLocal runs a whole study in-process and returns its final status (counters, best, front,
// convergence and the Completed or Failed condition) and the best candidate's bundle spec
// (nil when nothing succeeded).
func RunLocal(ctx context.Context, l *Local) (*blisv1alpha1.PolicyStudyStatus, *blisv1alpha1.PolicyBundleSpec, error) {
	if l.Study.Spec.Budget.MaxEvaluations == 0 {
		return nil, nil, errors.New("the study is leaderboard-only (budget.maxEvaluations 0): it ranks Evaluations other clients create and has nothing to run")
	}
	cfg, err := Config(l.Study)
	if err != nil {
		return nil, nil, err
	}
	l.Space = cfg.Space
	if err := CheckSpace(l.Base, cfg.Space); err != nil {
		return nil, nil, err
	}
	d, err := study.Run(ctx, cfg, l)
	if err != nil {
		return nil, nil, err
	}
	st := &blisv1alpha1.PolicyStudyStatus{ObservedGeneration: l.Study.Generation, SearchHash: SearchHash(&l.Study.Spec, l.Base)}
	ApplyDecision(st, &l.Study.Spec, cfg.Space, &d)
	SetConditions(st, l.Study.Generation, &d)
	var best *blisv1alpha1.PolicyBundleSpec
	if d.Summary.Best != nil {
		if best, err = l.Best(d.Summary.Best); err != nil {
			return st, nil, fmt.Errorf("best candidate: %w", err)
		}
	}
	return st, best, nil
}
