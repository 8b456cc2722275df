package report

import (
	"fmt"
	"math"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// quantiles builds CDF points of an exponential-like latency: value(p) = base - scale·ln(1-p),
// capped at p = 0.999 for the maximum.
func quantiles(base, scale float64) []QuantilePoint {
	ps := []float64{0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1}
	out := make([]QuantilePoint, len(ps))
	for i, p := range ps {
		q := math.Min(p, 0.999)
		out[i] = QuantilePoint{P: p, Ms: math.Round((base-scale*math.Log(1-q))*1000) / 1000}
	}
	return out
}

// fixture is hand-made report data: two SLO classes, distributions, nInstances instances of
// 20 buckets of 500 ms, replicate statistics over the given number of seeds (none for 1), fitness and
// anomalies.
func fixture(name string, nInstances int, seeds int32, ttftScale float64) *Data {
	score := 0.71
	st := blisv1alpha1.EvaluationStatus{
		InputHash:     "0123456789abcdef0123456789abcdef",
		EngineVersion: "test-engine",
		Metrics: &blisv1alpha1.EvaluationMetrics{
			InjectedRequests: 400, CompletedRequests: 390, RejectedRequests: 10,
			ResponsesPerSec: 39, TokensPerSec: 5200, GoodputRps: 30, SloAttainment: 0.77,
			TtftMeanMs: 40 + ttftScale, TtftP50Ms: 35 + ttftScale, TtftP99Ms: 120 + 4*ttftScale,
			ItlMeanMs: 8, ItlP99Ms: 14, E2eMeanMs: 900, E2eP50Ms: 800, E2eP99Ms: 2400,
			PerClass: []blisv1alpha1.ClassMetrics{
				{Name: "batch", CompletedRequests: 190, TtftP99Ms: 300, E2eP99Ms: 4000, ItlP99Ms: 15, SloAttainment: 0.6, GoodputRps: 12},
				{Name: "chat", CompletedRequests: 200, RejectedRequests: 10, TtftP99Ms: 90, E2eP99Ms: 1200, ItlP99Ms: 12, SloAttainment: 0.93, GoodputRps: 18},
			},
		},
		FitnessScore:       &score,
		Fitness:            []blisv1alpha1.NamedValue{{Name: "ttftP99Ms", Value: 0.62}, {Name: "goodputRps", Value: 0.8}},
		Anomalies:          &blisv1alpha1.AnomalyCounters{PriorityInversions: 3, HolBlockingEvents: 1, RejectedRequests: 10},
		TraceSummary:       "Outcome: 77% of requests met <SLO> targets & 10 rejected.\nIssues:\n  - queue on instance_0",
		Phase:              blisv1alpha1.PhaseSucceeded,
		ObservedGeneration: 1,
	}
	if seeds >= 2 {
		st.Replicates = &blisv1alpha1.ReplicateStatistics{Count: seeds, Metrics: []blisv1alpha1.ReplicateStat{
			{Name: "ttftP99Ms", Mean: 120 + 4*ttftScale, Stddev: 6, Ci95: 9},
			{Name: "goodputRps", Mean: 30, Stddev: 1, Ci95: 1.5},
		}}
	}
	d := &Data{Version: DataVersion, Name: name, Description: "cluster c, workload w, policy bundle " + name, Status: st, Seed: 42}
	for _, m := range []string{MetricTTFT, MetricITL, MetricE2E} {
		base, scale := 20.0, ttftScale
		switch m {
		case MetricITL:
			base, scale = 5, 2
		case MetricE2E:
			base, scale = 300, 400
		}
		d.Distributions = append(d.Distributions,
			Distribution{Metric: m, Count: 390, Points: quantiles(base, scale)},
			Distribution{Metric: m, Class: "batch", Count: 190, Points: quantiles(base*1.5, scale*2)},
			Distribution{Metric: m, Class: "chat", Count: 200, Points: quantiles(base, scale/2)})
	}
	s := &Series{BucketUs: 500_000}
	for b := 0; b < 20; b++ {
		s.Cluster.ArrivalsPerSec = append(s.Cluster.ArrivalsPerSec, 40+float64(b%3))
		s.Cluster.CompletionsPerSec = append(s.Cluster.CompletionsPerSec, 38+float64(b%4))
		s.Cluster.ReadyInstances = append(s.Cluster.ReadyInstances, float64(nInstances))
	}
	for i := 0; i < nInstances; i++ {
		in := InstanceSeries{Name: fmt.Sprintf("instance_%d", i)}
		for b := 0; b < 20; b++ {
			in.QueueDepth = append(in.QueueDepth, float64((i*7+b)%5)+float64(i))
			in.BatchSize = append(in.BatchSize, 8+float64((i+b)%6))
			in.KVUtilization = append(in.KVUtilization, 0.3+0.02*float64((i+b)%10))
			in.CacheHitRate = append(in.CacheHitRate, 0.1*float64(i%4))
		}
		s.Instances = append(s.Instances, in)
	}
	d.Series = s
	return d
}
