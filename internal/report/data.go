// Package report turns evaluation results into things people look at: a self-contained HTML
// report with charts, PNG charts, comparisons of several results and study plots.
//
// Data is the one input of every renderer. It is built from a fresh simulation (which adds the
// latency distributions and the time series the engine records when tracing is on) or from an
// Evaluation status alone (headline numbers, classes, anomalies and the trace summary), and it
// is JSON so that a report can be rebuilt later from a saved file.
package report

import (
	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// DataVersion is the version of the Data JSON layout; a file with another version is refused.
const DataVersion = "report.blis.inference-sim.io/v1"

// Data is what a report shows for one evaluation.
type Data struct {
	// Version is DataVersion.
	Version string `json:"version"`
	// Name identifies the evaluation (namespace/name in a cluster, or the Evaluation's name in
	// manifests).
	Name string `json:"name"`
	// Description says what was run, in one line (cluster, workload, policy bundle).
	Description string `json:"description,omitempty"`
	// Status holds the result fields of the Evaluation status: headline metrics, per-class
	// rows, replicate statistics, fitness, anomaly counters, trace summary, input hash and
	// engine version.
	Status blisv1alpha1.EvaluationStatus `json:"status"`
	// Seed is the seed whose distributions and time series are shown (the first of the
	// evaluation's seeds); the headline numbers are over every seed.
	Seed int64 `json:"seed,omitempty"`
	// Distributions are the latency distributions of Seed: one per metric for every request,
	// then one per metric and SLO class.
	Distributions []Distribution `json:"distributions,omitempty"`
	// Series are the time series of Seed (nil when the run recorded none).
	Series *Series `json:"series,omitempty"`
	// Missing says, one sentence each, what this report cannot show and why (for example, no
	// time series because the trace level was none).
	Missing []string `json:"missing,omitempty"`
}

// Latency metrics of a Distribution.
const (
	MetricTTFT = "ttft"
	MetricITL  = "itl"
	MetricE2E  = "e2e"
)

// Distribution is the empirical distribution of one latency metric: its value at fixed
// probabilities, enough to draw a CDF.
type Distribution struct {
	// Metric is MetricTTFT, MetricITL or MetricE2E.
	Metric string `json:"metric"`
	// Class is the SLO class ("" for every request).
	Class string `json:"class,omitempty"`
	// Count is the number of samples (completed requests; decode gaps for ITL).
	Count int64 `json:"count"`
	// Points are (probability, value in ms) pairs in increasing probability, from the
	// minimum (probability 0) to the maximum (probability 1).
	Points []QuantilePoint `json:"points"`
}

// QuantilePoint is one point of a CDF.
type QuantilePoint struct {
	// P is the cumulative probability in [0, 1].
	P float64 `json:"p"`
	// Ms is the latency at P, in milliseconds.
	Ms float64 `json:"ms"`
}

// Series are bounded, downsampled time series of a run: the run is cut into equal buckets of
// BucketUs microseconds starting at 0 (the engine doubles the bucket width and merges pairs
// of buckets whenever a run outgrows its bound, so a series never has more than a few hundred
// points whatever the run's length).
type Series struct {
	// BucketUs is the width of one bucket in µs of simulated time.
	BucketUs int64 `json:"bucketUs"`
	// EndUs is the end of the run in µs: the last bucket ends there, so it may be shorter than
	// BucketUs (its rates and averages are over its own length).
	EndUs int64 `json:"endUs,omitempty"`
	// Cluster holds the cluster-wide series.
	Cluster ClusterSeries `json:"cluster"`
	// Instances holds one entry per instance, in instance order.
	Instances []InstanceSeries `json:"instances"`
}

// ClusterSeries are per-bucket cluster-wide values; every slice has one value per bucket.
type ClusterSeries struct {
	// ArrivalsPerSec is the request arrival rate at the cluster.
	ArrivalsPerSec []float64 `json:"arrivalsPerSec"`
	// CompletionsPerSec is the rate of completed requests.
	CompletionsPerSec []float64 `json:"completionsPerSec"`
	// ReadyInstances is the time-average number of instances that could be routed to (varies
	// only with autoscaling).
	ReadyInstances []float64 `json:"readyInstances,omitempty"`
}

// InstanceSeries are per-bucket values of one instance; every slice has one value per bucket.
// The instance's state is sampled after each of its steps and held until its next step; time
// in which it is idle (no step running) counts as an empty queue and batch with its KV blocks
// as they were, and time before its first step as 0.
type InstanceSeries struct {
	// Name is the instance's name (instance_<i>, as in the metrics).
	Name string `json:"name"`
	// QueueDepth is the time-average number of requests in the wait queue.
	QueueDepth []float64 `json:"queueDepth"`
	// BatchSize is the time-average number of requests in a step's batch.
	BatchSize []float64 `json:"batchSize"`
	// KVUtilization is the time-average fraction of KV blocks in use, in [0, 1].
	KVUtilization []float64 `json:"kvUtilization"`
	// CacheHitRate is the fraction of prompt tokens served from the prefix cache among the
	// prompt tokens admitted in the bucket, in [0, 1] (the last value when none were admitted).
	CacheHitRate []float64 `json:"cacheHitRate"`
}
