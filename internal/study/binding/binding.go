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

// Package binding connects the study engine to the API: it turns a PolicyStudy spec into a
// planner configuration, patches the base PolicyBundle with a candidate's values, reads trials
// back from Evaluations, writes the planner's decision into PolicyStudy status, exports a
// winner as llm-d configuration, and runs whole studies in-process for `blis study`. The
// operator and the CLI share all of it, so both write the same status for the same study.
package binding

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/blisfile"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/report"
	"github.com/inference-sim/blis-operator/internal/study"
)

// Space converts the spec's search space.
func Space(spec *blisv1alpha1.PolicyStudySpec) (study.Space, error) {
	out := make(study.Space, 0, len(spec.SearchSpace))
	for _, p := range spec.SearchSpace {
		sp := study.Param{Path: p.Path, GridPoints: int(p.GridPoints), Choices: p.Values}
		if sp.GridPoints == 0 {
			sp.GridPoints = 5
		}
		switch p.Type {
		case blisv1alpha1.ParameterFloat:
			sp.Kind = study.Float
		case blisv1alpha1.ParameterInt:
			sp.Kind = study.Int
		case blisv1alpha1.ParameterChoice:
			sp.Kind = study.Choice
		default:
			return nil, fmt.Errorf("searchSpace %s: unknown type %q (float, int, choice)", p.Path, p.Type)
		}
		if p.Min != nil {
			sp.Min = *p.Min
		}
		if p.Max != nil {
			sp.Max = *p.Max
		}
		sp.Log = p.LogScale != nil && *p.LogScale
		out = append(out, sp)
	}
	if err := out.Validate(); err != nil {
		return nil, err
	}
	return out, nil
}

// Settings converts the spec's algorithm settings.
func Settings(spec *blisv1alpha1.PolicyStudySpec, dims int) study.Settings {
	a := spec.Algorithm
	s := study.Settings{Name: string(a.Name), Seed: spec.Seed, PopulationSize: int(a.PopulationSize)}
	if s.Name == "" {
		s.Name = study.NameRandom
	}
	if s.PopulationSize == 0 {
		s.PopulationSize = 16
	}
	if a.Parents != nil {
		s.Parents = int(*a.Parents)
	}
	if a.MutationPermille != nil {
		s.MutationRate = float64(*a.MutationPermille) / 1000
	} else if dims > 0 {
		s.MutationRate = 1 / float64(dims)
	}
	if a.InitialStepPermille > 0 {
		s.InitialStep = float64(a.InitialStepPermille) / 1000
	}
	if c := a.CMAES; c != nil {
		if c.PopulationSize != nil {
			s.CMAESPopulation = int(*c.PopulationSize)
		}
		if c.InitialSigmaPermille != nil {
			s.CMAESSigma = float64(*c.InitialSigmaPermille) / 1000
		}
		if c.Restarts != nil {
			s.CMAESRestarts = int(*c.Restarts)
		}
	}
	return s
}

// Config builds the planner configuration of a study.
func Config(ps *blisv1alpha1.PolicyStudy) (study.Config, error) {
	var space study.Space
	var alg study.Algorithm
	if len(ps.Spec.SearchSpace) > 0 || ps.Spec.Budget.MaxEvaluations > 0 {
		var err error
		if space, err = Space(&ps.Spec); err != nil {
			return study.Config{}, err
		}
		if ps.Spec.Algorithm.CMAES != nil && ps.Spec.Algorithm.Name != blisv1alpha1.AlgorithmCMAES {
			return study.Config{}, errors.New("algorithm.cmaes: cmaes settings need name cmaes")
		}
		if alg, err = study.New(space, Settings(&ps.Spec, len(space))); err != nil {
			return study.Config{}, fmt.Errorf("algorithm: %w", err)
		}
	}
	maxFailures := int(ps.Spec.Budget.MaxFailures)
	if maxFailures == 0 {
		maxFailures = 10
	}
	par := int(ps.Spec.Parallelism)
	if par == 0 {
		par = 4
	}
	return study.Config{
		Study:           ps.Name,
		Space:           space,
		Algorithm:       alg,
		MaxEvaluations:  int(ps.Spec.Budget.MaxEvaluations),
		MaxFailures:     maxFailures,
		Parallelism:     par,
		FrontSize:       blisv1alpha1.MaxStudyParetoFront,
		ConvergenceSize: blisv1alpha1.MaxStudyConvergence,
	}, nil
}

// searchPart is the part of a spec that defines the search: changing any of it would make the
// existing children meaningless for the search, so it is hashed when the study starts.
type searchPart struct {
	ClusterRef    blisv1alpha1.LocalObjectReference  `json:"clusterRef"`
	WorkloadRef   blisv1alpha1.LocalObjectReference  `json:"workloadRef"`
	BasePolicyRef *blisv1alpha1.LocalObjectReference `json:"basePolicyRef,omitempty"`
	BasePolicy    *blisv1alpha1.PolicyBundleSpec     `json:"basePolicy,omitempty"`
	SearchSpace   []blisv1alpha1.SearchParameter     `json:"searchSpace"`
	Objectives    []blisv1alpha1.Objective           `json:"objectives"`
	Algorithm     blisv1alpha1.StudyAlgorithm        `json:"algorithm"`
	Seed          int64                              `json:"seed"`
	Seeds         []int64                            `json:"seeds,omitempty"`
	Horizon       *int64                             `json:"horizon,omitempty"`
	NumRequests   *int64                             `json:"numRequests,omitempty"`
}

// SearchHash is the SHA-256 (hex) of what defines a study's search: the references, base,
// space, objectives, algorithm, search seed and simulation settings of spec, and the content of
// the base bundle the candidates are derived from (base; for basePolicyRef the referenced
// bundle's spec). Budget, parallelism, execution and promotion are not part of it.
func SearchHash(spec *blisv1alpha1.PolicyStudySpec, base *blisv1alpha1.PolicyBundleSpec) string {
	js, err := json.Marshal(struct {
		Spec searchPart                     `json:"spec"`
		Base *blisv1alpha1.PolicyBundleSpec `json:"base,omitempty"`
	}{searchPart{
		ClusterRef: spec.ClusterRef, WorkloadRef: spec.WorkloadRef, BasePolicyRef: spec.BasePolicyRef, BasePolicy: spec.BasePolicy,
		SearchSpace: spec.SearchSpace, Objectives: spec.Objectives, Algorithm: spec.Algorithm, Seed: spec.Seed,
		Seeds: spec.Seeds, Horizon: spec.Horizon, NumRequests: spec.NumRequests,
	}, base})
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(js)
	return hex.EncodeToString(sum[:])
}

// CandidateBundle returns base with every parameter of space set to its value in vals. The
// result is decoded strictly, so a path naming a field the PolicyBundle spec does not have is
// an error.
func CandidateBundle(base *blisv1alpha1.PolicyBundleSpec, space study.Space, vals []study.Value) (*blisv1alpha1.PolicyBundleSpec, error) {
	if base == nil {
		base = &blisv1alpha1.PolicyBundleSpec{}
	}
	if base.BlisConfigMapRef != nil {
		return nil, errors.New("the base bundle references a BLIS file (blisConfigMapRef); a study needs the typed fields to patch")
	}
	if len(vals) != len(space) {
		return nil, fmt.Errorf("%d values for %d parameters", len(vals), len(space))
	}
	js, err := json.Marshal(base)
	if err != nil {
		return nil, err
	}
	doc := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(js))
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	for i, p := range space {
		if err := study.Patch(doc, p.Path, vals[i]); err != nil {
			return nil, err
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var spec blisv1alpha1.PolicyBundleSpec
	strict := json.NewDecoder(bytes.NewReader(out))
	strict.DisallowUnknownFields()
	if err := strict.Decode(&spec); err != nil {
		return nil, fmt.Errorf("the patched bundle is not a PolicyBundle spec: %w", err)
	}
	// A new candidate is a new bundle: the base's lineage does not describe it.
	spec.Lineage = nil
	return &spec, nil
}

// CheckBundle validates a bundle with the engine's own validation (templates, parameter
// names, observables, expressions).
func CheckBundle(spec *blisv1alpha1.PolicyBundleSpec) error {
	y, err := blisfile.PolicyToEngine(spec)
	if err != nil {
		return err
	}
	b, err := policy.Parse(y)
	if err != nil {
		return err
	}
	return b.Validate()
}

// CheckSpace checks that every parameter path fits base: each parameter alone at its extreme
// values (min and max, or every choice), the others at their lower end, must give a valid
// bundle.
func CheckSpace(base *blisv1alpha1.PolicyBundleSpec, space study.Space) error {
	low := make([]study.Value, len(space))
	for i := range space {
		low[i] = space[i].Decode(0)
	}
	for i := range space {
		p := &space[i]
		var tries []study.Value
		if p.Kind == study.Choice {
			for _, c := range p.Choices {
				tries = append(tries, study.Value{Str: c, IsStr: true})
			}
		} else {
			tries = []study.Value{p.Decode(0), p.Decode(1)}
		}
		for _, v := range tries {
			vals := append([]study.Value(nil), low...)
			vals[i] = v
			b, err := CandidateBundle(base, space, vals)
			if err != nil {
				return fmt.Errorf("searchSpace %s = %s: %w", p.Path, v, err)
			}
			if err := CheckBundle(b); err != nil {
				return fmt.Errorf("searchSpace %s = %s: %w", p.Path, v, err)
			}
		}
	}
	return nil
}

// ParametersJSON encodes a candidate's values as a JSON object from path to value (its
// String form), the value of the study-parameters annotation.
func ParametersJSON(space study.Space, vals []study.Value) string {
	m := make(map[string]string, len(space))
	for i, p := range space {
		if i < len(vals) {
			m[p.Path] = vals[i].String()
		}
	}
	js, _ := json.Marshal(m)
	return string(js)
}

// ParseParameters reads the values of the study-parameters annotation in space order.
func ParseParameters(space study.Space, s string) ([]study.Value, error) {
	m := map[string]string{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("study parameters: %w", err)
	}
	out := make([]study.Value, len(space))
	for i := range space {
		raw, ok := m[space[i].Path]
		if !ok {
			return nil, fmt.Errorf("study parameters: %s is missing", space[i].Path)
		}
		v, err := space[i].ParseValue(raw)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// ParameterValues lists a candidate's values for status.
func ParameterValues(space study.Space, vals []study.Value) []blisv1alpha1.ParameterValue {
	if len(vals) != len(space) {
		return nil
	}
	out := make([]blisv1alpha1.ParameterValue, 0, len(space))
	for i, p := range space {
		out = append(out, blisv1alpha1.ParameterValue{Path: p.Path, Value: vals[i].String()})
	}
	return out
}

// EvaluationSpec is the spec of a child Evaluation: the study's inputs with policy (a
// reference to the child PolicyBundle, or an inline spec when policy is given).
func EvaluationSpec(spec *blisv1alpha1.PolicyStudySpec, policyRef string, inline *blisv1alpha1.PolicyBundleSpec) blisv1alpha1.EvaluationSpec {
	cr, wr := spec.ClusterRef, spec.WorkloadRef
	out := blisv1alpha1.EvaluationSpec{
		ClusterRef:  &cr,
		WorkloadRef: &wr,
		Seeds:       append([]int64(nil), spec.Seeds...),
		Objectives:  append([]blisv1alpha1.Objective(nil), spec.Objectives...),
	}
	if spec.Execution != nil {
		out.Execution = *spec.Execution.DeepCopy()
	} else {
		out.Execution.Executor = blisv1alpha1.ExecutorInProcess
	}
	if len(out.Seeds) == 0 {
		out.Seeds = nil
	}
	if spec.Horizon != nil {
		h := *spec.Horizon
		out.Horizon = &h
	}
	if spec.NumRequests != nil {
		n := *spec.NumRequests
		out.NumRequests = &n
	}
	if inline != nil {
		out.Policy = inline
	} else {
		out.PolicyRef = &blisv1alpha1.LocalObjectReference{Name: policyRef}
	}
	return out
}

// ResultOf fills a trial's outcome from an Evaluation status (report.TrialResult, the rule the
// study report reads finished studies with).
func ResultOf(t *study.Trial, objectives []blisv1alpha1.Objective, st *blisv1alpha1.EvaluationStatus) {
	report.TrialResult(t, objectives, st)
}

// candidate converts a trial for status.
func candidate(t *study.Trial, space study.Space, objectives []blisv1alpha1.Objective) blisv1alpha1.StudyCandidate {
	c := blisv1alpha1.StudyCandidate{Evaluation: t.Name, PolicyBundle: t.Ref, Parameters: ParameterValues(space, t.Values)}
	if t.Generation >= 0 {
		g := int32(t.Generation)
		c.Generation = &g
	}
	score := blisv1alpha1.RoundMetric(t.Score)
	c.FitnessScore = &score
	for i, o := range objectives {
		if i < len(t.Objectives) && len(c.Fitness) < blisv1alpha1.MaxFitnessValues {
			c.Fitness = append(c.Fitness, blisv1alpha1.NamedValue{Name: o.Name, Value: blisv1alpha1.RoundMetric(t.Objectives[i])})
		}
	}
	return c
}

// ApplyDecision writes the planner's counters and leaderboard into st (conditions are the
// caller's).
func ApplyDecision(st *blisv1alpha1.PolicyStudyStatus, spec *blisv1alpha1.PolicyStudySpec, space study.Space, d *study.Decision) {
	s := &d.Summary
	st.Generation = int32(d.Generations)
	st.Evaluations = blisv1alpha1.StudyCounters{
		Created: int32(s.Created), Running: int32(s.Running), Succeeded: int32(s.Succeeded),
		Failed: int32(s.Failed), External: int32(s.External),
	}
	st.Best = nil
	if s.Best != nil {
		c := candidate(s.Best, space, spec.Objectives)
		st.Best = &c
	}
	st.ParetoFront = nil
	for i := range s.Front {
		st.ParetoFront = append(st.ParetoFront, candidate(&s.Front[i], space, spec.Objectives))
	}
	st.ParetoFrontSize = int32(s.FrontSize)
	st.Convergence = nil
	for _, g := range s.Convergence {
		gs := blisv1alpha1.GenerationSummary{Generation: int32(g.Generation), Evaluated: int32(g.Evaluated), Failed: int32(g.Failed)}
		if g.HasScore {
			b, m := blisv1alpha1.RoundMetric(g.Best), blisv1alpha1.RoundMetric(g.Mean)
			gs.BestScore, gs.MeanScore = &b, &m
		}
		if g.HasBestSoFar {
			b := blisv1alpha1.RoundMetric(g.BestSoFar)
			gs.BestSoFar = &b
		}
		st.Convergence = append(st.Convergence, gs)
	}
}

// Mutations describes a candidate's values as lineage mutations ("path=value"), in space order.
func Mutations(space study.Space, vals []study.Value) []string {
	out := make([]string, 0, len(space))
	for i, p := range space {
		if i < len(vals) {
			out = append(out, p.Path+"="+vals[i].String())
		}
	}
	return out
}
