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
	"strings"
	"testing"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/study"
)

const studyDoc = `apiVersion: blis.inference-sim.io/v1alpha1
kind: PolicyStudy
metadata: {name: s}
spec:
  clusterRef: {name: c}
  workloadRef: {name: w}
  basePolicy:
    routing:
      policy: weighted
      scorers:
      - {name: queue-scorer, weight: 1}
      - {name: kv-cache-utilization-scorer, weight: 1}
    admission: {policy: token-bucket}
  searchSpace:
  - {path: "routing.scorers[name=queue-scorer].weight", type: float, min: 0, max: 4}
  - {path: admission.parameters.refill_rate, type: int, min: 10, max: 1000, logScale: true}
  - {path: scheduler, type: choice, values: [fcfs, sjf]}
  objectives: [{name: ttftP99Ms, direction: minimize}]
  budget: {maxEvaluations: 10}
`

func TestParseStudyDefaults(t *testing.T) {
	ps, err := ParseStudy([]byte(studyDoc))
	if err != nil {
		t.Fatal(err)
	}
	s := ps.Spec
	if s.Seed != 1 || s.Objectives[0].Weight != 1 || s.Algorithm.Name != blisv1alpha1.AlgorithmRandom || s.Algorithm.PopulationSize != 16 ||
		s.Parallelism != 4 || s.Budget.MaxFailures != 10 || s.Execution == nil || s.Execution.Executor != blisv1alpha1.ExecutorInProcess ||
		s.SearchSpace[2].GridPoints != 5 {
		t.Errorf("defaults not applied: %+v", s)
	}
	explicit, err := ParseStudy([]byte(strings.Replace(studyDoc, "budget:", "seed: 0\n  budget:", 1)))
	if err != nil || explicit.Spec.Seed != 0 {
		t.Errorf("an explicit seed 0 became %d (%v)", explicit.Spec.Seed, err)
	}
	if _, err := ParseStudy([]byte(strings.Replace(studyDoc, "clusterRef", "clusterReff", 1))); err == nil {
		t.Error("an unknown field was accepted")
	}
}

func TestCandidateBundle(t *testing.T) {
	ps, err := ParseStudy([]byte(studyDoc))
	if err != nil {
		t.Fatal(err)
	}
	space, err := Space(&ps.Spec)
	if err != nil {
		t.Fatal(err)
	}
	vals := []study.Value{{Num: 2.5}, {Num: 100}, {Str: "sjf", IsStr: true}}
	b, err := CandidateBundle(ps.Spec.BasePolicy, space, vals)
	if err != nil {
		t.Fatal(err)
	}
	if b.Routing.Scorers[0].Weight != 2.5 || b.Routing.Scorers[1].Weight != 1 || b.Admission.Parameters["refill_rate"] != 100 || b.Scheduler != "sjf" {
		t.Errorf("candidate %+v %+v %q", b.Routing.Scorers, b.Admission.Parameters, b.Scheduler)
	}
	if ps.Spec.BasePolicy.Scheduler != "" || ps.Spec.BasePolicy.Admission.Parameters != nil {
		t.Error("the base bundle was modified")
	}
	if err := CheckBundle(b); err != nil {
		t.Errorf("valid candidate rejected: %v", err)
	}
	if err := CheckSpace(ps.Spec.BasePolicy, space); err != nil {
		t.Errorf("CheckSpace: %v", err)
	}
	bad := append(study.Space(nil), space...)
	bad[2] = study.Param{Path: "scheduler", Kind: study.Choice, Choices: []string{"fcfs", "lifo"}}
	if err := CheckSpace(ps.Spec.BasePolicy, bad); err == nil || !strings.Contains(err.Error(), "lifo") {
		t.Errorf("an invalid choice passed CheckSpace: %v", err)
	}
	typo := append(study.Space(nil), space...)
	typo[0].Path = "routing.scorers[name=queue-scorer].wieght"
	if _, err := CandidateBundle(ps.Spec.BasePolicy, typo, vals); err == nil || !strings.Contains(err.Error(), "wieght") {
		t.Errorf("a misspelt field was accepted: %v", err)
	}

	js := ParametersJSON(space, vals)
	back, err := ParseParameters(space, js)
	if err != nil || back[0].Num != 2.5 || back[1].Num != 100 || back[2].Str != "sjf" {
		t.Errorf("parameters round trip %s -> %+v %v", js, back, err)
	}
}

func TestSearchHash(t *testing.T) {
	ps, err := ParseStudy([]byte(studyDoc))
	if err != nil {
		t.Fatal(err)
	}
	h := SearchHash(&ps.Spec, ps.Spec.BasePolicy)
	edited := ps.DeepCopy()
	edited.Spec.Budget.MaxEvaluations = 99
	edited.Spec.Parallelism = 1
	if SearchHash(&edited.Spec, edited.Spec.BasePolicy) != h {
		t.Error("budget and parallelism changed the search hash")
	}
	edited.Spec.Seed = 2
	if SearchHash(&edited.Spec, edited.Spec.BasePolicy) == h {
		t.Error("the seed did not change the search hash")
	}
	other := ps.Spec.BasePolicy.DeepCopy()
	other.Scheduler = "sjf"
	if SearchHash(&ps.Spec, other) == h {
		t.Error("the base content did not change the search hash")
	}
}

func TestResultOf(t *testing.T) {
	objs := []blisv1alpha1.Objective{{Name: "a"}, {Name: "b"}}
	score := 0.7
	var tr study.Trial
	ResultOf(&tr, objs, &blisv1alpha1.EvaluationStatus{Phase: blisv1alpha1.PhaseSucceeded, FitnessScore: &score,
		Fitness: []blisv1alpha1.NamedValue{{Name: "b", Value: 0.9}, {Name: "other", Value: 1}}})
	if tr.State != study.Succeeded || tr.Score != 0.7 || len(tr.Objectives) != 2 || tr.Objectives[0] != 0 || tr.Objectives[1] != 0.9 {
		t.Errorf("trial %+v", tr)
	}
	ResultOf(&tr, objs, &blisv1alpha1.EvaluationStatus{Phase: blisv1alpha1.PhaseRunning})
	if tr.State != study.Pending {
		t.Errorf("running Evaluation: %+v", tr)
	}
}

func TestCMAESConfig(t *testing.T) {
	cmaes := strings.Replace(studyDoc, "budget:", "algorithm: {name: cmaes, cmaes: {populationSize: 9, initialSigmaPermille: 100, restarts: 2}}\n  budget:", 1)
	ps, err := ParseStudy([]byte(cmaes))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Config(ps); err == nil || !strings.Contains(err.Error(), "searchSpace[2] (scheduler)") {
		t.Fatalf("a choice parameter with cmaes: %v", err)
	}
	ps.Spec.SearchSpace = ps.Spec.SearchSpace[:2]
	s := Settings(&ps.Spec, 2)
	if s.Name != study.NameCMAES || s.CMAESPopulation != 9 || s.CMAESSigma != 0.1 || s.CMAESRestarts != 2 {
		t.Fatalf("settings %+v", s)
	}
	cfg, err := Config(ps)
	if err != nil || cfg.Algorithm.Size(0) != 9 {
		t.Fatalf("config: %v", err)
	}
	ps.Spec.Algorithm.CMAES = nil
	if cfg, err := Config(ps); err != nil || cfg.Algorithm.Size(0) != study.CMAESPopulation(2) {
		t.Fatalf("default lambda: %v", err)
	}
	ps.Spec.Algorithm = blisv1alpha1.StudyAlgorithm{Name: blisv1alpha1.AlgorithmEvolution, PopulationSize: 8, CMAES: &blisv1alpha1.CMAESSettings{}}
	if _, err := Config(ps); err == nil || !strings.Contains(err.Error(), "algorithm.cmaes") {
		t.Fatalf("cmaes settings with evolution: %v", err)
	}
}
