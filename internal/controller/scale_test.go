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
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation"
)

// scaleEvaluations is the number of Evaluations of TestScaleThousandEvaluations
// (BLIS_SCALE_N overrides it).
const scaleEvaluations = 1000

// inlineEval is a self-contained small Evaluation, as an optimizer creates them.
func inlineEval(ns, name string, seed int64) *blisv1alpha1.Evaluation {
	return &blisv1alpha1.Evaluation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: blisv1alpha1.EvaluationSpec{
			Cluster:    testCluster(ns, "").Spec.DeepCopy(),
			Policy:     testPolicy(ns, "").Spec.DeepCopy(),
			Workload:   testWorkload(ns, "").Spec.DeepCopy(),
			Seeds:      []int64{seed},
			Objectives: []blisv1alpha1.Objective{{Name: "ttftP99Ms", Direction: "minimize", Weight: 1}},
			Execution:  blisv1alpha1.ExecutionSpec{Executor: blisv1alpha1.ExecutorInProcess, ReuseCachedResult: ptr.To(false)},
		},
	}
}

// peakRSS is the process's peak resident set (VmHWM) in bytes.
func peakRSS() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestScaleThousandEvaluations creates 1,000 small in-process Evaluations at once and waits
// until all are Succeeded; every input must have run exactly once (no lost, no duplicate
// results). It reports throughput, the create-to-Succeeded latency of a single small
// Evaluation on an idle manager, and memory; the numbers are measurements, not assertions.
//
//	KUBEBUILDER_ASSETS=$PWD/bin/k8s/v1.34.10 go test -tags scale ./internal/controller -run Scale -v -timeout 30m
func TestScaleThousandEvaluations(t *testing.T) {
	n := scaleEvaluations
	if v, err := strconv.Atoi(os.Getenv("BLIS_SCALE_N")); err == nil && v > 0 {
		n = v
	}
	ns := newNamespace(t)
	var mu sync.Mutex
	runs := map[string]int{}
	run := func(ctx context.Context, r *evaluation.Resolved) (*blisv1alpha1.EvaluationStatus, error) {
		mu.Lock()
		runs[r.Hash]++
		mu.Unlock()
		return DefaultRun(ctx, r)
	}
	restCfg := rest.CopyConfig(env.Config)
	restCfg.QPS, restCfg.Burst = 200, 400
	startManagerWith(t, restCfg, Config{InProcessOnly: true, MaxRunning: 64, MaxRunningPerNamespace: 64,
		InProcessWorkers: runtime.GOMAXPROCS(0), MaxConcurrentReconciles: 8, Run: run})
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// Latency of one small Evaluation on an idle manager (median of five).
	var lat []time.Duration
	for i := range 5 {
		ev := inlineEval(ns, fmt.Sprintf("single-%d", i), int64(100000+i))
		start := time.Now()
		if err := c.Create(ctx, ev); err != nil {
			t.Fatal(err)
		}
		waitSucceeded(t, c, ns, ev.Name)
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })

	// The flood.
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 32)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := c.Create(ctx, inlineEval(ns, fmt.Sprintf("flood-%04d", i), int64(i+1))); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	created := time.Since(start)

	var heapPeak uint64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			heapPeak = max(heapPeak, ms.HeapInuse)
			select {
			case <-stopSampling:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	var succeeded, failed int
	err = wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Minute, true, func(ctx context.Context) (bool, error) {
		var list blisv1alpha1.EvaluationList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		succeeded, failed = 0, 0
		for i := range list.Items {
			st := &list.Items[i].Status
			switch {
			case meta.IsStatusConditionTrue(st.Conditions, ConditionSucceeded):
				succeeded++
			case meta.IsStatusConditionTrue(st.Conditions, blisv1alpha1.ConditionFailed):
				failed++
			}
		}
		return succeeded+failed == n+5, nil
	})
	elapsed := time.Since(start)
	close(stopSampling)
	<-sampled
	if err != nil || failed > 0 {
		t.Fatalf("%d succeeded, %d failed of %d (%v)", succeeded, failed, n+5, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != n+5 {
		t.Fatalf("%d distinct inputs ran, want %d", len(runs), n+5)
	}
	for h, k := range runs {
		if k != 1 {
			t.Fatalf("input %s ran %d times", h, k)
		}
	}
	perMin := float64(n) / elapsed.Minutes()
	t.Logf("%d Evaluations: created in %v, all Succeeded after %v: %.0f evaluations/minute", n, created.Round(time.Millisecond), elapsed.Round(time.Millisecond), perMin)
	t.Logf("single small Evaluation, create to Succeeded on an idle manager: median %v (min %v, max %v)", lat[2].Round(time.Millisecond), lat[0].Round(time.Millisecond), lat[4].Round(time.Millisecond))
	t.Logf("test process (manager, its caches, the test client): peak RSS %.0f MiB, peak Go heap in use %.0f MiB", float64(peakRSS())/(1<<20), float64(heapPeak)/(1<<20))
}

func waitSucceeded(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		var ev blisv1alpha1.Evaluation
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ev); err != nil {
			return false, nil
		}
		return meta.IsStatusConditionTrue(ev.Status.Conditions, ConditionSucceeded), nil
	})
	if err != nil {
		t.Fatalf("%s did not succeed: %v", name, err)
	}
}
