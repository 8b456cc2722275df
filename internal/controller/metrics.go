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
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// metricsSubsystem prefixes the operator's metric names.
const metricsSubsystem = "blis"

// Prometheus metrics of the operator, on the manager's /metrics endpoint. Labels are bounded
// sets (phase, executor, result): never an Evaluation's name.
var (
	evaluationsByPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: metricsSubsystem,
		Name:      "evaluations",
		Help:      "Evaluations this manager knows, by phase (Pending, Queued, Running, Succeeded, Failed).",
	}, []string{"phase"})
	runDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: metricsSubsystem,
		Name:      "evaluation_run_duration_seconds",
		Help:      "Wall-clock time from an engine run's start to its result, by executor (job, inProcess) and result (succeeded, failed).",
		Buckets:   prometheus.ExponentialBuckets(0.01, 2.5, 14),
	}, []string{"executor", "result"})
	queueDepth = prometheus.NewGauge(prometheus.GaugeOpts{
		Subsystem: metricsSubsystem,
		Name:      "evaluation_queue_depth",
		Help:      "Evaluations waiting for a parallelism slot (condition Queued).",
	})
	runningSlots = prometheus.NewGauge(prometheus.GaugeOpts{
		Subsystem: metricsSubsystem,
		Name:      "evaluation_running",
		Help:      "Evaluations holding a parallelism slot.",
	})
	cacheHits = prometheus.NewCounter(prometheus.CounterOpts{
		Subsystem: metricsSubsystem,
		Name:      "evaluation_cache_hits_total",
		Help:      "Evaluations that reused the result of a Succeeded Evaluation with the same input hash.",
	})
	transitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: metricsSubsystem,
		Name:      "evaluation_transitions_total",
		Help:      "Evaluation phase changes written to status, by the phase entered.",
	}, []string{"phase"})
	workersBusy = prometheus.NewGauge(prometheus.GaugeOpts{
		Subsystem: metricsSubsystem,
		Name:      "inprocess_workers_busy",
		Help:      "In-process executor workers running an evaluation.",
	})
	workersTotal = prometheus.NewGauge(prometheus.GaugeOpts{
		Subsystem: metricsSubsystem,
		Name:      "inprocess_workers",
		Help:      "In-process executor workers (busy / workers is the executor's utilization).",
	})
)

var registerOnce sync.Once

// registerMetrics adds the operator's collectors to the controller-runtime registry once per
// process.
func registerMetrics() {
	registerOnce.Do(func() {
		ctrlmetrics.Registry.MustRegister(evaluationsByPhase, runDuration, queueDepth, runningSlots,
			cacheHits, transitions, workersBusy, workersTotal)
	})
}

// phaseTracker keeps the phase of every Evaluation seen, for the evaluations gauge: counters
// kept up to date on each status write rather than a list on each scrape.
type phaseTracker struct {
	mu     sync.Mutex
	phases map[types.NamespacedName]blisv1alpha1.EvaluationPhase
}

func newPhaseTracker() *phaseTracker {
	return &phaseTracker{phases: map[types.NamespacedName]blisv1alpha1.EvaluationPhase{}}
}

// set records the phase of the Evaluation key; an empty phase forgets it.
func (t *phaseTracker) set(key types.NamespacedName, phase blisv1alpha1.EvaluationPhase) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, had := t.phases[key]
	if had && old == phase {
		return
	}
	if had {
		evaluationsByPhase.WithLabelValues(string(old)).Dec()
	}
	if phase == "" {
		delete(t.phases, key)
		return
	}
	t.phases[key] = phase
	evaluationsByPhase.WithLabelValues(string(phase)).Inc()
}

// count returns the number of Evaluations in phase.
func (t *phaseTracker) count(phase blisv1alpha1.EvaluationPhase) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, p := range t.phases {
		if p == phase {
			n++
		}
	}
	return n
}
