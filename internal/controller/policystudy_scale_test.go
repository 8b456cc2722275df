//go:build scale

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
	"context"
	"encoding/json"
	"runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// TestScaleStudyFiveHundred runs a 500-Evaluation NSGA-II study (25 generations of 20) on the
// small contention workload with the real Evaluation reconciler in-process, and reports the
// wall time, the manager process's memory and the size of the study's status. The numbers are
// measurements; the test asserts only that the study completes with every child once.
//
//	KUBEBUILDER_ASSETS=$PWD/bin/k8s/v1.34.10 go test -tags scale ./internal/controller -run ScaleStudy -v -timeout 30m
func TestScaleStudyFiveHundred(t *testing.T) {
	ns := newNamespace(t)
	contentionInputs(t, ns)
	startStudyManager(t, Config{DefaultExecutor: blisv1alpha1.ExecutorInProcess, InProcessWorkers: runtime.GOMAXPROCS(0), MaxConcurrentReconciles: 8})
	ps := &blisv1alpha1.PolicyStudy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scale"},
		Spec: blisv1alpha1.PolicyStudySpec{
			ClusterRef: blisv1alpha1.LocalObjectReference{Name: "small"}, WorkloadRef: blisv1alpha1.LocalObjectReference{Name: "contention"},
			BasePolicy: prefixOnlyBase(),
			SearchSpace: []blisv1alpha1.SearchParameter{
				weightParam("prefix-cache-scorer", 0, 5), weightParam("queue-scorer", 0, 5),
				{Path: "scheduler", Type: blisv1alpha1.ParameterChoice, Values: []string{"fcfs", "sjf", "priority-fcfs"}},
			},
			Objectives: []blisv1alpha1.Objective{
				{Name: "ttftP99Ms", Direction: "minimize", Weight: 1},
				{Name: "e2eMeanMs", Direction: "minimize", Weight: 1},
			},
			Algorithm:   blisv1alpha1.StudyAlgorithm{Name: blisv1alpha1.AlgorithmNSGA2, PopulationSize: 20},
			Seed:        5,
			Budget:      blisv1alpha1.StudyBudget{MaxEvaluations: 500, MaxFailures: 10},
			Parallelism: 20,
			Execution:   &blisv1alpha1.ExecutionSpec{Executor: blisv1alpha1.ExecutorInProcess, ReuseCachedResult: ptr.To(true)},
		},
	}
	var heapPeak uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			heapPeak = max(heapPeak, ms.HeapInuse)
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	create(t, ps)
	var done blisv1alpha1.PolicyStudy
	deadline := time.Now().Add(25 * time.Minute)
	for {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(ps), &done); err != nil {
			t.Fatal(err)
		}
		if isTrue(done.Status.Conditions, blisv1alpha1.StudyConditionCompleted) || isTrue(done.Status.Conditions, blisv1alpha1.StudyConditionFailed) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not finished: %s", describeStudy(&done))
		}
		time.Sleep(time.Second)
	}
	wall := time.Since(start)
	close(stop)
	<-sampled
	children := studyChildren(t, ns, "scale")
	status, _ := json.Marshal(done.Status)
	t.Logf("500-evaluation study: %s; wall %s; %d children; status %d bytes; heap in use peak %d MiB; peak RSS %d MiB",
		describeStudy(&done), wall.Round(time.Millisecond), len(children), len(status), heapPeak>>20, peakRSS()>>20)
	if done.Status.Evaluations.Created != 500 || len(children) != 500 || !isTrue(done.Status.Conditions, blisv1alpha1.StudyConditionCompleted) {
		t.Errorf("study ended with %s and %d children", describeStudy(&done), len(children))
	}
}
