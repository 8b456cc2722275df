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

package controller

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/export"
	"github.com/inference-sim/blis-operator/internal/evaluation"
	"github.com/inference-sim/blis-operator/internal/evaluation/fitness"
	"github.com/inference-sim/blis-operator/internal/study/binding"
)

// startStudyManager runs a manager with every reconciler (the Evaluation reconciler runs the
// children in-process) plus the PolicyStudy reconciler, until the test ends or stop is called.
func startStudyManager(t *testing.T, cfg Config) (stop func()) {
	t.Helper()
	return startManagerWith(t, env.Config, cfg, SetupPolicyStudyWithManager)
}

// studyCfg is the reconcilers' configuration of the study tests: in-process runs, two workers.
func studyCfg() Config {
	return Config{DefaultExecutor: blisv1alpha1.ExecutorInProcess, InProcessWorkers: 2}
}

// contentionInputs creates a small cluster whose replicas are easily overloaded and a workload
// whose requests share one prefix: routing by prefix affinity alone piles them on one replica.
func contentionInputs(t *testing.T, ns string) {
	t.Helper()
	create(t,
		&blisv1alpha1.SimulatedCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "small"},
			Spec: blisv1alpha1.SimulatedClusterSpec{
				Model:  blisv1alpha1.ModelSpec{Name: "meta-llama/llama-3.1-8b-instruct"},
				GPU:    "H100",
				Engine: blisv1alpha1.VLLMEngineSpec{MaxNumSeqs: 32, MaxNumBatchedTokens: 2048},
				Pools:  []blisv1alpha1.ReplicaPoolSpec{{Name: "main", Replicas: 3}},
			},
		},
		contentionWorkload(t, ns))
}

// contentionWorkloadYAML is 200 requests at 45 per second, all sharing one 256-token prefix.
const contentionWorkloadYAML = `
apiVersion: blis.inference-sim.io/v1alpha1
kind: WorkloadSpec
metadata:
  name: contention
spec:
  version: "2"
  seed: 11
  aggregateRate: 45
  numRequests: 200
  clients:
  - id: chat
    sloClass: critical
    rateFraction: 1
    prefixGroup: shared
    prefixLength: 256
    arrival: {process: poisson}
    inputDistribution: {type: gaussian, params: {mean: 512, stdDev: 128, min: 64, max: 2048}}
    outputDistribution: {type: exponential, params: {mean: 128}}
`

func contentionWorkload(t *testing.T, ns string) *blisv1alpha1.WorkloadSpec {
	t.Helper()
	var wl blisv1alpha1.WorkloadSpec
	if err := yaml.UnmarshalStrict([]byte(contentionWorkloadYAML), &wl); err != nil {
		t.Fatal(err)
	}
	wl.Namespace = ns
	return &wl
}

// prefixOnlyBase routes by prefix affinity with the queue scorer switched off.
func prefixOnlyBase() *blisv1alpha1.PolicyBundleSpec {
	return &blisv1alpha1.PolicyBundleSpec{Routing: &blisv1alpha1.RoutingPolicy{
		Policy: "weighted",
		Scorers: []blisv1alpha1.Scorer{
			{Name: "prefix-cache-scorer", Weight: 1},
			{Name: "queue-scorer", Weight: 0},
		},
	}}
}

func weightParam(scorer string, lo, hi float64) blisv1alpha1.SearchParameter {
	return blisv1alpha1.SearchParameter{Path: "routing.scorers[name=" + scorer + "].weight", Type: blisv1alpha1.ParameterFloat,
		Min: ptr.To(lo), Max: ptr.To(hi)}
}

// waitStudy waits until condition typ of the study is True and returns the study.
func waitStudy(t *testing.T, ns, name, typ string) *blisv1alpha1.PolicyStudy {
	t.Helper()
	var ps blisv1alpha1.PolicyStudy
	eventually(t, fmt.Sprintf("PolicyStudy %s %s", name, typ), func() (bool, string) {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &ps); err != nil {
			return false, err.Error()
		}
		return meta.IsStatusConditionTrue(ps.Status.Conditions, typ), describeStudy(&ps)
	})
	return &ps
}

func describeStudy(ps *blisv1alpha1.PolicyStudy) string {
	var b strings.Builder
	fmt.Fprintf(&b, "counters %+v", ps.Status.Evaluations)
	for _, c := range ps.Status.Conditions {
		fmt.Fprintf(&b, "; %s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

func studyChildren(t *testing.T, ns, study string) []blisv1alpha1.Evaluation {
	t.Helper()
	var list blisv1alpha1.EvaluationList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{blisv1alpha1.LabelStudy: study}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b blisv1alpha1.Evaluation) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
}

// TestPolicyStudyGridAndPromotion: a 2-parameter grid creates exactly its grid points as owned
// PolicyBundles and Evaluations, reports the Pareto front of their results, and promotes the
// winner into a PolicyBundle and a ConfigMap of llm-d files.
func TestPolicyStudyGridAndPromotion(t *testing.T) {
	ns := newNamespace(t)
	contentionInputs(t, ns)
	startStudyManager(t, studyCfg())
	ps := &blisv1alpha1.PolicyStudy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "grid"},
		Spec: blisv1alpha1.PolicyStudySpec{
			ClusterRef: blisv1alpha1.LocalObjectReference{Name: "small"}, WorkloadRef: blisv1alpha1.LocalObjectReference{Name: "contention"},
			BasePolicy: prefixOnlyBase(),
			SearchSpace: []blisv1alpha1.SearchParameter{
				{Path: "scheduler", Type: blisv1alpha1.ParameterChoice, Values: []string{"fcfs", "sjf"}},
				{Path: "routing.scorers[name=queue-scorer].weight", Type: blisv1alpha1.ParameterFloat, Min: ptr.To(0.0), Max: ptr.To(4.0), GridPoints: 2},
			},
			Objectives: []blisv1alpha1.Objective{
				{Name: "ttftP99Ms", Direction: "minimize", Weight: 1},
				{Name: "e2eMeanMs", Direction: "minimize", Weight: 1},
			},
			Algorithm:   blisv1alpha1.StudyAlgorithm{Name: blisv1alpha1.AlgorithmGrid},
			Budget:      blisv1alpha1.StudyBudget{MaxEvaluations: 20},
			Parallelism: 3,
			Promotion:   &blisv1alpha1.PromotionSpec{ConfigMapName: "grid-llm-d"},
		},
	}
	create(t, ps)
	done := waitStudy(t, ns, "grid", blisv1alpha1.StudyConditionCompleted)
	if c := meta.FindStatusCondition(done.Status.Conditions, blisv1alpha1.StudyConditionCompleted); c.Reason != blisv1alpha1.StudyReasonSearchSpaceExhausted {
		t.Errorf("Completed reason %s, want SearchSpaceExhausted", c.Reason)
	}

	children := studyChildren(t, ns, "grid")
	want := map[string]string{
		"grid-g000-000": `{"routing.scorers[name=queue-scorer].weight":"0","scheduler":"fcfs"}`,
		"grid-g000-001": `{"routing.scorers[name=queue-scorer].weight":"4","scheduler":"fcfs"}`,
		"grid-g000-002": `{"routing.scorers[name=queue-scorer].weight":"0","scheduler":"sjf"}`,
		"grid-g000-003": `{"routing.scorers[name=queue-scorer].weight":"4","scheduler":"sjf"}`,
	}
	if len(children) != len(want) {
		t.Fatalf("%d children, want %d", len(children), len(want))
	}
	for _, ev := range children {
		if got := ev.Annotations[blisv1alpha1.AnnotationStudyParameters]; got != want[ev.Name] {
			t.Errorf("%s parameters %s, want %s", ev.Name, got, want[ev.Name])
		}
		if !metav1.IsControlledBy(&ev, done) {
			t.Errorf("%s is not controlled by the study", ev.Name)
		}
		if ev.Status.Phase != blisv1alpha1.PhaseSucceeded {
			t.Errorf("%s: %s", ev.Name, describeEval(&ev))
		}
		var pb blisv1alpha1.PolicyBundle
		if ev.Spec.Execution.Executor != blisv1alpha1.ExecutorInProcess {
			t.Errorf("%s executor %q, want the default inProcess", ev.Name, ev.Spec.Execution.Executor)
		}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: ev.Name}, &pb); err != nil {
			t.Fatalf("child PolicyBundle %s: %v", ev.Name, err)
		}
		if !metav1.IsControlledBy(&pb, done) || ev.Spec.PolicyRef == nil || ev.Spec.PolicyRef.Name != pb.Name {
			t.Errorf("PolicyBundle %s is not the study's child of Evaluation %s", pb.Name, ev.Name)
		}
		wantScheduler := "fcfs"
		if strings.Contains(want[ev.Name], "sjf") {
			wantScheduler = "sjf"
		}
		if pb.Spec.Scheduler != wantScheduler || pb.Spec.Routing.Scorers[0].Weight != 1 {
			t.Errorf("PolicyBundle %s spec: scheduler %q scorers %+v", pb.Name, pb.Spec.Scheduler, pb.Spec.Routing.Scorers)
		}
	}

	// The front is the non-dominated set of the children's fitness vectors.
	if t.Failed() {
		t.FailNow()
	}
	points := make([][]float64, len(children))
	for i, ev := range children {
		points[i] = []float64{ev.Status.Fitness[0].Value, ev.Status.Fitness[1].Value}
	}
	ranks, err := fitness.ParetoRanks(points, []fitness.Direction{fitness.Maximize, fitness.Maximize})
	if err != nil {
		t.Fatal(err)
	}
	// Children with equal fitness are one point of the front, listed under the first name.
	var wantFront []string
	seen := map[string]bool{}
	for i, r := range ranks {
		key := fmt.Sprint(points[i])
		if r == 0 && !seen[key] {
			seen[key] = true
			wantFront = append(wantFront, children[i].Name)
		}
	}
	// Once the study completed, each child carries its rank within the study.
	eventually(t, "Pareto ranks on the children", func() (bool, string) {
		children = studyChildren(t, ns, "grid")
		var got []string
		ok := true
		for i, ev := range children {
			if ev.Status.ParetoRank == nil {
				ok = false
				got = append(got, ev.Name+"=none")
				continue
			}
			got = append(got, fmt.Sprintf("%s=%d (want %d)", ev.Name, *ev.Status.ParetoRank, ranks[i]))
			if int(*ev.Status.ParetoRank) != ranks[i] {
				ok = false
			}
		}
		return ok, strings.Join(got, ", ")
	})
	var gotFront []string
	for _, c := range done.Status.ParetoFront {
		gotFront = append(gotFront, c.Evaluation)
	}
	slices.Sort(gotFront)
	if !slices.Equal(gotFront, wantFront) || int(done.Status.ParetoFrontSize) != len(wantFront) {
		t.Errorf("front %v (size %d), want %v", gotFront, done.Status.ParetoFrontSize, wantFront)
	}
	st := done.Status
	if st.Evaluations.Created != 4 || st.Evaluations.Succeeded != 4 || st.Evaluations.Running != 0 || st.Best == nil {
		t.Fatalf("status %+v", st)
	}
	for _, ev := range children {
		if *ev.Status.FitnessScore > *st.Best.FitnessScore {
			t.Errorf("%s scores %v, above best %s (%v)", ev.Name, *ev.Status.FitnessScore, st.Best.Evaluation, *st.Best.FitnessScore)
		}
	}

	// Promotion on completion.
	promoted := waitStudy(t, ns, "grid", blisv1alpha1.StudyConditionPromoted)
	if promoted.Status.Promotion == nil || promoted.Status.Promotion.Evaluation != st.Best.Evaluation {
		t.Fatalf("promotion %+v, best %s", promoted.Status.Promotion, st.Best.Evaluation)
	}
	var winner blisv1alpha1.PolicyBundle
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "grid-winner"}, &winner); err != nil {
		t.Fatal(err)
	}
	var best blisv1alpha1.PolicyBundle
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: st.Best.Evaluation}, &best); err != nil {
		t.Fatal(err)
	}
	if winner.Spec.Scheduler != best.Spec.Scheduler || winner.Spec.Routing.Scorers[1].Weight != best.Spec.Routing.Scorers[1].Weight ||
		!metav1.IsControlledBy(&winner, promoted) || winner.Spec.Lineage == nil || len(winner.Spec.Lineage.Mutations) != 2 {
		t.Errorf("winner bundle %+v does not match the best candidate %+v", winner.Spec, best.Spec)
	}
	var cm corev1.ConfigMap
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "grid-llm-d"}, &cm); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data[export.FileEPPConfig], "EndpointPickerConfig") || !strings.Contains(cm.Data[FileWinnerBundle], "grid-winner") {
		t.Errorf("promotion ConfigMap keys %v", slices.Sorted(func(yield func(string) bool) {
			for k := range cm.Data {
				if !yield(k) {
					return
				}
			}
		}))
	}
}

// TestPolicyStudyEvolutionBeatsBase: on the contention workload the evolution strategy finds,
// within 18 Evaluations (3 generations of 6, seed 3), a bundle with a better fitness score than
// the base bundle, which is evaluated by an Evaluation created outside the study with the
// study label (so it joins the leaderboard as an external entry). The same study run
// in-process (blis study) ends with the same best candidate and counters.
func TestPolicyStudyEvolutionBeatsBase(t *testing.T) {
	ns := newNamespace(t)
	contentionInputs(t, ns)
	base := &blisv1alpha1.PolicyBundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prefix-only"}, Spec: *prefixOnlyBase()}
	create(t, base)
	startStudyManager(t, studyCfg())
	objectives := []blisv1alpha1.Objective{{Name: "ttftP99Ms", Direction: "minimize", Weight: 1}}
	baseEval := &blisv1alpha1.Evaluation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "base-run", Labels: map[string]string{blisv1alpha1.LabelStudy: "evolve"}},
		Spec: blisv1alpha1.EvaluationSpec{
			ClusterRef: &blisv1alpha1.LocalObjectReference{Name: "small"}, WorkloadRef: &blisv1alpha1.LocalObjectReference{Name: "contention"},
			PolicyRef: &blisv1alpha1.LocalObjectReference{Name: "prefix-only"}, Objectives: objectives,
			Execution: blisv1alpha1.ExecutionSpec{Executor: blisv1alpha1.ExecutorInProcess},
		},
	}
	ps := &blisv1alpha1.PolicyStudy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "evolve"},
		Spec: blisv1alpha1.PolicyStudySpec{
			ClusterRef: blisv1alpha1.LocalObjectReference{Name: "small"}, WorkloadRef: blisv1alpha1.LocalObjectReference{Name: "contention"},
			BasePolicyRef: &blisv1alpha1.LocalObjectReference{Name: "prefix-only"},
			SearchSpace:   []blisv1alpha1.SearchParameter{weightParam("prefix-cache-scorer", 0, 5), weightParam("queue-scorer", 0, 5)},
			Objectives:    objectives,
			Algorithm:     blisv1alpha1.StudyAlgorithm{Name: blisv1alpha1.AlgorithmEvolution, PopulationSize: 6, Parents: ptr.To[int32](2), InitialStepPermille: 200},
			Seed:          3,
			Budget:        blisv1alpha1.StudyBudget{MaxEvaluations: 18, MaxFailures: 3},
			Parallelism:   6,
		},
	}
	create(t, baseEval, ps)
	baseDone := waitCondition(t, ns, "base-run", ConditionSucceeded, metav1.ConditionTrue, "")
	done := waitStudy(t, ns, "evolve", blisv1alpha1.StudyConditionCompleted)
	// The external Evaluation may finish after the study's last child; wait until it is counted.
	eventually(t, "the base Evaluation on the leaderboard", func() (bool, string) {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(ps), done); err != nil {
			return false, err.Error()
		}
		return done.Status.Evaluations.External == 1, describeStudy(done)
	})
	st := done.Status
	if st.Evaluations.Created != 18 || st.Evaluations.Succeeded != 18 || st.Generation != 3 {
		t.Fatalf("status %+v", st.Evaluations)
	}
	baseScore := *baseDone.Status.FitnessScore
	if st.Best == nil || *st.Best.FitnessScore <= baseScore || st.Best.Generation == nil {
		t.Fatalf("best %+v does not beat the base (%v)", st.Best, baseScore)
	}
	t.Logf("base fitness %v (TTFT p99 %v ms); best %s fitness %v %v", baseScore, baseDone.Status.Metrics.TtftP99Ms, st.Best.Evaluation, *st.Best.FitnessScore, st.Best.Parameters)
	if len(st.Convergence) != 3 || st.Convergence[2].BestSoFar == nil || *st.Convergence[2].BestSoFar != *st.Best.FitnessScore {
		t.Fatalf("convergence %+v", st.Convergence)
	}
	// Selection concentrates the population where the score is high: the last generation's
	// mean beats the random first generation's.
	if first, last := *st.Convergence[0].MeanScore, *st.Convergence[2].MeanScore; last <= first {
		t.Errorf("mean score went from %v (generation 0) to %v (generation 2)", first, last)
	}

	// The same study in-process.
	local := ps.DeepCopy()
	local.Spec.BasePolicyRef, local.Spec.BasePolicy = nil, prefixOnlyBase()
	var cl blisv1alpha1.SimulatedCluster
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "small"}, &cl); err != nil {
		t.Fatal(err)
	}
	var wl blisv1alpha1.WorkloadSpec
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "contention"}, &wl); err != nil {
		t.Fatal(err)
	}
	l := &binding.Local{Study: local, Base: local.Spec.BasePolicy, Inputs: evaluation.Inputs{Cluster: &cl, Workload: &wl}, Workers: 2}
	lst, _, err := binding.RunLocal(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if lst.Best == nil || lst.Best.Evaluation != st.Best.Evaluation || *lst.Best.FitnessScore != *st.Best.FitnessScore ||
		lst.Evaluations.Created != st.Evaluations.Created || lst.Generation != st.Generation {
		t.Errorf("in-process best %+v (%+v), operator best %+v (%+v)", lst.Best, lst.Evaluations, st.Best, st.Evaluations)
	}
	for i := range lst.Convergence {
		if *lst.Convergence[i].BestScore != *st.Convergence[i].BestScore || *lst.Convergence[i].MeanScore != *st.Convergence[i].MeanScore {
			t.Errorf("generation %d: in-process %+v, operator %+v", i, lst.Convergence[i], st.Convergence[i])
		}
	}
}

// TestPolicyStudyResumesAfterRestart: a manager whose engine never finishes creates the first
// Evaluations and stops; a new manager finishes the study without recreating or duplicating
// any child.
func TestPolicyStudyResumesAfterRestart(t *testing.T) {
	ns := newNamespace(t)
	contentionInputs(t, ns)
	hang := studyCfg()
	hang.Run = func(ctx context.Context, _ *evaluation.Resolved) (*blisv1alpha1.EvaluationStatus, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	stop := startStudyManager(t, hang)
	ps := &blisv1alpha1.PolicyStudy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "resume"},
		Spec: blisv1alpha1.PolicyStudySpec{
			ClusterRef: blisv1alpha1.LocalObjectReference{Name: "small"}, WorkloadRef: blisv1alpha1.LocalObjectReference{Name: "contention"},
			BasePolicy:  prefixOnlyBase(),
			SearchSpace: []blisv1alpha1.SearchParameter{weightParam("queue-scorer", 0, 5)},
			Objectives:  []blisv1alpha1.Objective{{Name: "ttftP99Ms", Direction: "minimize", Weight: 1}},
			Algorithm:   blisv1alpha1.StudyAlgorithm{Name: blisv1alpha1.AlgorithmNSGA2, PopulationSize: 4},
			Seed:        9,
			Budget:      blisv1alpha1.StudyBudget{MaxEvaluations: 8, MaxFailures: 3},
			Parallelism: 3,
		},
	}
	create(t, ps)
	eventually(t, "the first children", func() (bool, string) {
		var cur blisv1alpha1.PolicyStudy
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(ps), &cur); err != nil {
			return false, err.Error()
		}
		return cur.Status.Evaluations.Created == 3 && cur.Status.Evaluations.Running == 3, describeStudy(&cur)
	})
	stop()
	before := map[string]types.UID{}
	for _, ev := range studyChildren(t, ns, "resume") {
		before[ev.Name] = ev.UID
	}
	if len(before) != 3 {
		t.Fatalf("%d children before the restart, want 3 (parallelism)", len(before))
	}

	startStudyManager(t, studyCfg())
	done := waitStudy(t, ns, "resume", blisv1alpha1.StudyConditionCompleted)
	children := studyChildren(t, ns, "resume")
	var names []string
	for _, ev := range children {
		names = append(names, ev.Name)
		if uid, ok := before[ev.Name]; ok && uid != ev.UID {
			t.Errorf("%s was recreated after the restart", ev.Name)
		}
	}
	want := []string{"resume-g000-000", "resume-g000-001", "resume-g000-002", "resume-g000-003",
		"resume-g001-000", "resume-g001-001", "resume-g001-002", "resume-g001-003"}
	if !slices.Equal(names, want) {
		t.Errorf("children %v, want %v", names, want)
	}
	if done.Status.Evaluations.Created != 8 || done.Status.Evaluations.Succeeded != 8 {
		t.Errorf("counters %+v", done.Status.Evaluations)
	}
}

// TestPolicyStudyAdmission: invalid search spaces and edits of the search are rejected by the
// API server; a path that passes the schema but does not fit the base bundle fails the study.
func TestPolicyStudyAdmission(t *testing.T) {
	ns := newNamespace(t)
	valid := func(name string) *blisv1alpha1.PolicyStudy {
		return &blisv1alpha1.PolicyStudy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: blisv1alpha1.PolicyStudySpec{
				ClusterRef: blisv1alpha1.LocalObjectReference{Name: "small"}, WorkloadRef: blisv1alpha1.LocalObjectReference{Name: "contention"},
				BasePolicy:  prefixOnlyBase(),
				SearchSpace: []blisv1alpha1.SearchParameter{weightParam("queue-scorer", 0, 5)},
				Objectives:  []blisv1alpha1.Objective{{Name: "ttftP99Ms", Direction: "minimize", Weight: 1}},
				Budget:      blisv1alpha1.StudyBudget{MaxEvaluations: 4},
			},
		}
	}
	cases := map[string]struct {
		mutate func(*blisv1alpha1.PolicyStudy)
		msg    string
	}{
		"min-not-below-max": {func(p *blisv1alpha1.PolicyStudy) { p.Spec.SearchSpace[0].Min = ptr.To(5.0) }, "min must be less than max"},
		"choice-without-values": {func(p *blisv1alpha1.PolicyStudy) {
			p.Spec.SearchSpace[0] = blisv1alpha1.SearchParameter{Path: "scheduler", Type: blisv1alpha1.ParameterChoice}
		}, "choice parameters need values"},
		"float-with-values": {func(p *blisv1alpha1.PolicyStudy) { p.Spec.SearchSpace[0].Values = []string{"1"} }, "float and int parameters need min and max"},
		"log-from-zero":     {func(p *blisv1alpha1.PolicyStudy) { p.Spec.SearchSpace[0].LogScale = ptr.To(true) }, "logScale needs"},
		"int-fraction": {func(p *blisv1alpha1.PolicyStudy) {
			p.Spec.SearchSpace[0].Type = blisv1alpha1.ParameterInt
			p.Spec.SearchSpace[0].Max = ptr.To(2.5)
		}, "whole numbers"},
		"bad-path": {func(p *blisv1alpha1.PolicyStudy) { p.Spec.SearchSpace[0].Path = "routing..weight" }, "spec.searchSpace[0].path"},
		"duplicate-path": {func(p *blisv1alpha1.PolicyStudy) {
			p.Spec.SearchSpace = append(p.Spec.SearchSpace, p.Spec.SearchSpace[0])
		}, "Duplicate value"},
		"no-parameters":    {func(p *blisv1alpha1.PolicyStudy) { p.Spec.SearchSpace = nil }, "searchSpace is required unless"},
		"negative-budget":  {func(p *blisv1alpha1.PolicyStudy) { p.Spec.Budget.MaxEvaluations = -1 }, "maxEvaluations"},
		"parents-over-pop": {func(p *blisv1alpha1.PolicyStudy) { p.Spec.Algorithm.Parents = ptr.To[int32](40) }, "parents must not exceed"},
		"two-bases": {func(p *blisv1alpha1.PolicyStudy) {
			p.Spec.BasePolicyRef = &blisv1alpha1.LocalObjectReference{Name: "x"}
		}, "at most one of basePolicyRef"},
		"long-name": {func(p *blisv1alpha1.PolicyStudy) {
			p.Name = strings.Repeat("s", 49)
		}, "at most 48 characters"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := valid("bad-" + name)
			tc.mutate(p)
			err := env.Client.Create(context.Background(), p)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("create: %v; want an error with %q", err, tc.msg)
			}
		})
	}

	// The search is immutable; the budget may change.
	ok := valid("editable")
	create(t, ok)
	edit := ok.DeepCopy()
	edit.Spec.SearchSpace[0].Max = ptr.To(9.0)
	if err := env.Client.Update(context.Background(), edit); err == nil || !strings.Contains(err.Error(), "searchSpace is immutable") {
		t.Errorf("search space edit: %v", err)
	}
	edit = ok.DeepCopy()
	edit.Spec.Seed = 99
	if err := env.Client.Update(context.Background(), edit); err == nil || !strings.Contains(err.Error(), "seed is immutable") {
		t.Errorf("seed edit: %v", err)
	}
	edit = ok.DeepCopy()
	edit.Spec.Budget.MaxEvaluations = 40
	edit.Spec.Parallelism = 8
	if err := env.Client.Update(context.Background(), edit); err != nil {
		t.Errorf("budget edit rejected: %v", err)
	}

	// Deep validation against the base bundle.
	contentionInputs(t, ns)
	startStudyManager(t, studyCfg())
	missing := valid("no-such-scorer")
	missing.Spec.SearchSpace[0] = weightParam("load-aware-scorer", 0, 1)
	typo := valid("typo")
	typo.Spec.SearchSpace[0].Path = "routing.scorerz[name=queue-scorer].weight"
	param := valid("bad-param")
	param.Spec.SearchSpace[0] = blisv1alpha1.SearchParameter{Path: "admission.parameters.no_such_parameter", Type: blisv1alpha1.ParameterFloat, Min: ptr.To(0.0), Max: ptr.To(1.0)}
	param.Spec.BasePolicy.Admission = &blisv1alpha1.AdmissionPolicy{Policy: "token-bucket"}
	create(t, missing, typo, param)
	for _, name := range []string{"no-such-scorer", "typo", "bad-param"} {
		failed := waitStudy(t, ns, name, blisv1alpha1.StudyConditionFailed)
		c := meta.FindStatusCondition(failed.Status.Conditions, blisv1alpha1.StudyConditionFailed)
		if c.Reason != blisv1alpha1.StudyReasonInvalidSearchSpace || failed.Status.Evaluations.Created != 0 {
			t.Errorf("%s: %s", name, describeStudy(failed))
		}
		t.Logf("%s: %s", name, c.Message)
	}
}

// TestPolicyStudySamplesAccepted: every document of config/samples/studies is accepted by the
// API server, and every file is in the directory's kustomization.
func TestPolicyStudySamplesAccepted(t *testing.T) {
	ns := newNamespace(t)
	dir := filepath.Join(env.RepoRoot, "config", "samples", "studies")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) < 5 {
		t.Fatalf("study samples: %v %v", files, err)
	}
	kustomization, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	studies := 0
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		if !strings.Contains(string(kustomization), "- "+filepath.Base(f)+"\n") {
			t.Errorf("%s is not listed in config/samples/studies/kustomization.yaml", filepath.Base(f))
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			chunk, err := rd.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(chunk, &u.Object); err != nil {
				t.Fatal(err)
			}
			if len(u.Object) == 0 {
				continue
			}
			u.SetNamespace(ns)
			if err := env.Client.Create(context.Background(), u); err != nil {
				t.Errorf("%s: %s %s rejected: %v", filepath.Base(f), u.GetKind(), u.GetName(), err)
			}
			if u.GetKind() == "PolicyStudy" {
				studies++
			}
		}
	}
	if studies < 3 {
		t.Errorf("%d PolicyStudy samples", studies)
	}
}

// TestPolicyStudyLeaderboardOnlyAndPromoteOnRequest: a study with no budget of its own ranks
// the Evaluations an external optimizer creates with its label, and promotes the best one when
// the promote annotation asks for it.
func TestPolicyStudyLeaderboardOnlyAndPromoteOnRequest(t *testing.T) {
	ns := newNamespace(t)
	contentionInputs(t, ns)
	balanced := prefixOnlyBase()
	balanced.Routing.Scorers[1].Weight = 2
	create(t,
		&blisv1alpha1.PolicyBundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cand-a"}, Spec: *prefixOnlyBase()},
		&blisv1alpha1.PolicyBundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cand-b"}, Spec: *balanced})
	startStudyManager(t, studyCfg())
	objectives := []blisv1alpha1.Objective{{Name: "ttftP99Ms", Direction: "minimize", Weight: 1}}
	ps := &blisv1alpha1.PolicyStudy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "board"},
		Spec: blisv1alpha1.PolicyStudySpec{
			ClusterRef: blisv1alpha1.LocalObjectReference{Name: "small"}, WorkloadRef: blisv1alpha1.LocalObjectReference{Name: "contention"},
			Objectives: objectives,
			Budget:     blisv1alpha1.StudyBudget{MaxEvaluations: 0},
			Promotion:  &blisv1alpha1.PromotionSpec{ConfigMapName: "board-llm-d", PolicyBundleName: "board-best", OnCompletion: ptr.To(false)},
		},
	}
	create(t, ps)
	for _, name := range []string{"a", "b"} {
		create(t, &blisv1alpha1.Evaluation{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "opt-" + name, Labels: map[string]string{blisv1alpha1.LabelStudy: "board"}},
			Spec: blisv1alpha1.EvaluationSpec{
				ClusterRef: &blisv1alpha1.LocalObjectReference{Name: "small"}, WorkloadRef: &blisv1alpha1.LocalObjectReference{Name: "contention"},
				PolicyRef: &blisv1alpha1.LocalObjectReference{Name: "cand-" + name}, Objectives: objectives,
				Execution: blisv1alpha1.ExecutionSpec{Executor: blisv1alpha1.ExecutorInProcess},
			},
		})
	}
	var cur blisv1alpha1.PolicyStudy
	eventually(t, "both external Evaluations ranked", func() (bool, string) {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(ps), &cur); err != nil {
			return false, err.Error()
		}
		return cur.Status.Evaluations.External == 2 && cur.Status.Best != nil, describeStudy(&cur)
	})
	if c := meta.FindStatusCondition(cur.Status.Conditions, blisv1alpha1.StudyConditionProgressing); c == nil ||
		c.Status != metav1.ConditionTrue || c.Reason != blisv1alpha1.StudyReasonLeaderboardOnly {
		t.Errorf("Progressing: %+v", c)
	}
	if cur.Status.Evaluations.Created != 0 || cur.Status.Best.Evaluation != "opt-b" || cur.Status.Best.PolicyBundle != "cand-b" || cur.Status.Best.Generation != nil {
		t.Fatalf("leaderboard %+v", cur.Status)
	}
	if meta.FindStatusCondition(cur.Status.Conditions, blisv1alpha1.StudyConditionPromoted) != nil {
		t.Fatal("promoted without a request")
	}

	updateFresh(t, &cur, func(ps *blisv1alpha1.PolicyStudy) {
		ps.Annotations = map[string]string{blisv1alpha1.AnnotationPromote: "1"}
	})
	done := waitStudy(t, ns, "board", blisv1alpha1.StudyConditionPromoted)
	if p := done.Status.Promotion; p == nil || p.Request != "1" || p.Evaluation != "opt-b" || p.PolicyBundle != "board-best" {
		t.Errorf("promotion %+v", done.Status.Promotion)
	}
	var winner blisv1alpha1.PolicyBundle
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "board-best"}, &winner); err != nil {
		t.Fatal(err)
	}
	if winner.Spec.Routing == nil || winner.Spec.Routing.Scorers[1].Weight != 2 || !metav1.IsControlledBy(&winner, done) {
		t.Errorf("winner %+v", winner.Spec.Routing)
	}
	var cm corev1.ConfigMap
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "board-llm-d"}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data[export.FileEPPConfig] == "" || cm.Labels[LabelManagedBy] != ManagedByValue {
		t.Errorf("promotion ConfigMap %v", cm.Labels)
	}
}

// TestPolicyStudyBaseChangeStops: editing the referenced base bundle of a running study would
// derive later candidates from another base, so the study stops with SpecChanged; restoring
// the base lets it go on.
func TestPolicyStudyBaseChangeStops(t *testing.T) {
	ns := newNamespace(t)
	contentionInputs(t, ns)
	base := &blisv1alpha1.PolicyBundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "base"}, Spec: *prefixOnlyBase()}
	create(t, base)
	hang := studyCfg()
	hang.Run = func(ctx context.Context, _ *evaluation.Resolved) (*blisv1alpha1.EvaluationStatus, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	startStudyManager(t, hang)
	ps := &blisv1alpha1.PolicyStudy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "moving-base"},
		Spec: blisv1alpha1.PolicyStudySpec{
			ClusterRef: blisv1alpha1.LocalObjectReference{Name: "small"}, WorkloadRef: blisv1alpha1.LocalObjectReference{Name: "contention"},
			BasePolicyRef: &blisv1alpha1.LocalObjectReference{Name: "base"},
			SearchSpace:   []blisv1alpha1.SearchParameter{weightParam("queue-scorer", 0, 5)},
			Objectives:    []blisv1alpha1.Objective{{Name: "ttftP99Ms", Direction: "minimize", Weight: 1}},
			Budget:        blisv1alpha1.StudyBudget{MaxEvaluations: 4},
			Parallelism:   2,
		},
	}
	create(t, ps)
	eventually(t, "the first children", func() (bool, string) {
		var cur blisv1alpha1.PolicyStudy
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(ps), &cur); err != nil {
			return false, err.Error()
		}
		return cur.Status.Evaluations.Created == 2, describeStudy(&cur)
	})
	cur := base.DeepCopy()
	updateFresh(t, cur, func(pb *blisv1alpha1.PolicyBundle) { pb.Spec.Scheduler = "sjf" })
	failed := waitStudy(t, ns, "moving-base", blisv1alpha1.StudyConditionFailed)
	if c := meta.FindStatusCondition(failed.Status.Conditions, blisv1alpha1.StudyConditionFailed); c.Reason != blisv1alpha1.StudyReasonSpecChanged {
		t.Fatalf("Failed reason %s", c.Reason)
	}
	updateFresh(t, cur, func(pb *blisv1alpha1.PolicyBundle) { pb.Spec.Scheduler = "" })
	var study blisv1alpha1.PolicyStudy
	eventually(t, "the study going on with the restored base", func() (bool, string) {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(ps), &study); err != nil {
			return false, err.Error()
		}
		return meta.FindStatusCondition(study.Status.Conditions, blisv1alpha1.StudyConditionFailed) == nil &&
			meta.IsStatusConditionTrue(study.Status.Conditions, blisv1alpha1.StudyConditionProgressing), describeStudy(&study)
	})
}
