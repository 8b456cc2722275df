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

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EvaluationSpec is one simulation run (or several replicate runs with different seeds) of a
// cluster under a policy bundle and a workload. Each of the three inputs is either a
// reference to a resource in the same namespace or an inline copy of its spec. The spec is
// immutable: a changed input is a new Evaluation.
//
// +kubebuilder:validation:XValidation:rule="has(self.clusterRef) != has(self.cluster)",message="set exactly one of clusterRef and cluster"
// +kubebuilder:validation:XValidation:rule="has(self.policyRef) != has(self.policy)",message="set exactly one of policyRef and policy"
// +kubebuilder:validation:XValidation:rule="has(self.workloadRef) != has(self.workload)",message="set exactly one of workloadRef and workload"
// +kubebuilder:validation:XValidation:rule="!has(self.objectives) || self.objectives.exists(o, o.weight > 0.0)",message="at least one objective needs a positive weight",fieldPath=".objectives"
type EvaluationSpec struct {
	// clusterRef names a SimulatedCluster in the same namespace.
	// +optional
	ClusterRef *LocalObjectReference `json:"clusterRef,omitempty"`

	// cluster is an inline SimulatedCluster spec.
	// +optional
	Cluster *SimulatedClusterSpec `json:"cluster,omitempty"`

	// policyRef names a PolicyBundle in the same namespace.
	// +optional
	PolicyRef *LocalObjectReference `json:"policyRef,omitempty"`

	// policy is an inline PolicyBundle spec.
	// +optional
	Policy *PolicyBundleSpec `json:"policy,omitempty"`

	// workloadRef names a WorkloadSpec in the same namespace.
	// +optional
	WorkloadRef *LocalObjectReference `json:"workloadRef,omitempty"`

	// workload is an inline WorkloadSpec spec.
	// +optional
	Workload *WorkloadSpecSpec `json:"workload,omitempty"`

	// seeds are the simulation seeds; several seeds are replicates, reported with mean,
	// standard deviation and a 95% confidence interval. Absent means the workload's seed.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Seeds []int64 `json:"seeds,omitempty"`

	// horizon overrides the workload's simulated duration, in microseconds.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Horizon *int64 `json:"horizon,omitempty"`

	// numRequests overrides the workload's request count.
	// +kubebuilder:validation:Minimum=1
	// +optional
	NumRequests *int64 `json:"numRequests,omitempty"`

	// objectives define fitness: each names a metric, whether it is minimised or maximised,
	// and its weight in the scalar fitness score.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Objectives []Objective `json:"objectives,omitempty"`

	// fitnessWeights is BLIS's --fitness-weights in map form: metric name (BLIS raw metric
	// keys such as p99_ttft or throughput) to weight. Keys are kept as BLIS spells them.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k] >= 0.0)",message="fitness weights must be non-negative"
	// +optional
	FitnessWeights map[string]float64 `json:"fitnessWeights,omitempty"`

	// trace sets how much of the run is recorded and how it is summarised.
	// +kubebuilder:default={}
	// +optional
	Trace TraceSpec `json:"trace,omitempty"`

	// execution sets where and how the engine runs.
	// +kubebuilder:default={}
	// +optional
	Execution ExecutionSpec `json:"execution,omitempty"`
}

// Objective is one fitness objective.
type Objective struct {
	// name is a metric of status.metrics (BLIS output vocabulary in camelCase, for example
	// ttftP99Ms, e2eMeanMs, responsesPerSec, sloAttainment, jainFairnessIndex, goodputRps,
	// replicaSeconds), or a per-class metric as <metric>/<class> (for example
	// sloAttainment/critical). Names are checked when the Evaluation is resolved.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z][a-zA-Z0-9]*(/[-a-z0-9_]+)?$`
	// +required
	Name string `json:"name"`

	// direction is minimize or maximize.
	// +kubebuilder:validation:Enum=minimize;maximize
	// +required
	Direction string `json:"direction"`

	// weight of the objective in the scalar fitness.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=1
	// +optional
	Weight float64 `json:"weight,omitempty"`
}

// TraceLevel is how much of a run is recorded.
// +kubebuilder:validation:Enum=none;decisions;full
type TraceLevel string

// The trace levels.
const (
	// TraceNone records summary metrics only.
	TraceNone TraceLevel = "none"
	// TraceDecisions records every policy decision with its context.
	TraceDecisions TraceLevel = "decisions"
	// TraceFull records all events, decisions and anomalies.
	TraceFull TraceLevel = "full"
)

// TraceSpec controls trace collection and the text summary written to status.
type TraceSpec struct {
	// level is none, decisions or full.
	// +kubebuilder:default=none
	// +optional
	Level TraceLevel `json:"level,omitempty"`

	// summaryStrategy chooses how the trace is summarised into status.traceSummary.
	// +kubebuilder:validation:Enum=issue_focused;decision_audit;counterfactual;pattern_mining
	// +optional
	SummaryStrategy string `json:"summaryStrategy,omitempty"`

	// summaryMaxTokens bounds the length of the summary, in approximate tokens.
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=4000
	// +optional
	SummaryMaxTokens int32 `json:"summaryMaxTokens,omitempty"`
}

// Executor is where the engine runs.
// +kubebuilder:validation:Enum=job;inProcess
type Executor string

// The executors.
const (
	// ExecutorJob runs the engine in a batch/v1 Job.
	ExecutorJob Executor = "job"
	// ExecutorInProcess runs the engine inside the manager's bounded worker pool.
	ExecutorInProcess Executor = "inProcess"
)

// ExecutionSpec controls how the engine is run.
type ExecutionSpec struct {
	// executor is job (a batch/v1 Job per Evaluation) or inProcess (the manager's worker
	// pool, for small runs). Empty means the manager's --default-executor (job unless the
	// manager says otherwise).
	// +optional
	Executor Executor `json:"executor,omitempty"`

	// resources of the engine container (job executor).
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// timeout bounds the run's wall-clock time; the Job's activeDeadlineSeconds.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// queueName is the Kueue LocalQueue the Job is submitted to.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	QueueName string `json:"queueName,omitempty"`

	// priority orders Evaluations waiting under the operator's parallelism caps: higher runs
	// first, then older, then by name. When unset, the value of priorityClassName's
	// PriorityClass is used (0 without one).
	// +kubebuilder:validation:Minimum=-1000000
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	Priority *int32 `json:"priority,omitempty"`

	// priorityClassName is the priority class of the engine pod (with Kueue, the workload
	// priority class).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// reuseCachedResult lets the operator copy the result of a finished Evaluation with the
	// same input hash instead of running the engine again (the engine is deterministic).
	// +kubebuilder:default=true
	// +optional
	ReuseCachedResult *bool `json:"reuseCachedResult,omitempty"`

	// maxRetries bounds retries of a failed run.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +kubebuilder:default=2
	// +optional
	MaxRetries *int32 `json:"maxRetries,omitempty"`
}

// EvaluationPhase is the coarse state of an Evaluation.
// +kubebuilder:validation:Enum=Pending;Queued;Running;Succeeded;Failed
type EvaluationPhase string

// The phases.
const (
	// PhasePending: accepted, inputs not yet resolved.
	PhasePending EvaluationPhase = "Pending"
	// PhaseQueued: resolved, waiting for a parallelism slot or a Kueue admission.
	PhaseQueued EvaluationPhase = "Queued"
	// PhaseRunning: the engine is running.
	PhaseRunning EvaluationPhase = "Running"
	// PhaseSucceeded: results are in status.
	PhaseSucceeded EvaluationPhase = "Succeeded"
	// PhaseFailed: the run failed after its retries; see the conditions.
	PhaseFailed EvaluationPhase = "Failed"
)

// Condition types of an Evaluation.
const (
	// ConditionReady is True when results are available.
	ConditionReady = "Ready"
	// ConditionInputsResolved is True when every reference resolved and validated.
	ConditionInputsResolved = "InputsResolved"
	// ConditionQueued is True while the Evaluation waits for capacity.
	ConditionQueued = "Queued"
	// ConditionRunning is True while the engine runs.
	ConditionRunning = "Running"
	// ConditionFailed is True when the run failed for good.
	ConditionFailed = "Failed"
	// ConditionAccepted is True once the inputs resolved and passed the engine's validation;
	// False, naming the object and field at fault, while they do not.
	ConditionAccepted = "Accepted"
	// ConditionSucceeded is True when results are in status, run or reused from an identical
	// Evaluation (reason CacheHit).
	ConditionSucceeded = "Succeeded"
)

// Bounds of Evaluation status (they keep the object far below the etcd object limit).
const (
	// MaxTraceSummaryLength is the maximum length of status.traceSummary in bytes.
	MaxTraceSummaryLength = 12288
	// MaxClassMetrics is the maximum number of per-class metric rows.
	MaxClassMetrics = 16
	// MaxFitnessValues is the maximum number of fitness values.
	MaxFitnessValues = 16
	// MaxReplicateStats is the maximum number of replicate statistic rows.
	MaxReplicateStats = 16
	// MaxConditions is the maximum number of conditions.
	MaxConditions = 8
)

// EvaluationStatus is the observed state and the results of an Evaluation. Every list is
// bounded; floating-point numbers are rounded to MetricSignificantDigits significant digits
// (see RoundMetric).
type EvaluationStatus struct {
	// conditions: Accepted, InputsResolved, Queued, Running, Succeeded, Failed, Ready.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is Pending, Queued, Running, Succeeded or Failed.
	// +optional
	Phase EvaluationPhase `json:"phase,omitempty"`

	// startTime is when the engine started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the results were written.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// attempts is the number of engine runs started.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Attempts int32 `json:"attempts,omitempty"`

	// inputHash is the SHA-256 (hex) of the resolved input document and the engine version;
	// equal hashes give identical results.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	InputHash string `json:"inputHash,omitempty"`

	// engineVersion is the version of the engine that produced the results.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	EngineVersion string `json:"engineVersion,omitempty"`

	// cachedFrom names the Evaluation whose result was reused.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	CachedFrom string `json:"cachedFrom,omitempty"`

	// metrics are the headline metrics (mean over replicates when there are several seeds).
	// +optional
	Metrics *EvaluationMetrics `json:"metrics,omitempty"`

	// fitnessScore is the weighted scalar fitness over the objectives (higher is better).
	// +optional
	FitnessScore *float64 `json:"fitnessScore,omitempty"`

	// fitness is the normalised value of each objective.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Fitness []NamedValue `json:"fitness,omitempty"`

	// paretoRank is the Evaluation's non-domination rank within its study (0 = front).
	// +kubebuilder:validation:Minimum=0
	// +optional
	ParetoRank *int32 `json:"paretoRank,omitempty"`

	// replicates are the across-seed statistics of the headline metrics.
	// +optional
	Replicates *ReplicateStatistics `json:"replicates,omitempty"`

	// anomalies are counters of pathological behaviour.
	// +optional
	Anomalies *AnomalyCounters `json:"anomalies,omitempty"`

	// traceSummary is the bounded text summary of the trace for humans and LLM-driven
	// optimizers.
	// +kubebuilder:validation:MaxLength=12288
	// +optional
	TraceSummary string `json:"traceSummary,omitempty"`

	// resultRef points at the full result (per-request rows, traces).
	// +optional
	ResultRef *ResultReference `json:"resultRef,omitempty"`
}

// EvaluationMetrics are the headline results in BLIS output vocabulary (ttft_p99_ms is
// ttftP99Ms). Latencies are in milliseconds.
type EvaluationMetrics struct {
	// injectedRequests is the number of requests generated.
	// +optional
	InjectedRequests int64 `json:"injectedRequests,omitempty"`
	// completedRequests is the number of requests that finished.
	// +optional
	CompletedRequests int64 `json:"completedRequests,omitempty"`
	// rejectedRequests is the number of requests admission rejected.
	// +optional
	RejectedRequests int64 `json:"rejectedRequests,omitempty"`
	// stillQueued is the number of requests waiting at the horizon.
	// +optional
	StillQueued int64 `json:"stillQueued,omitempty"`
	// stillRunning is the number of requests running at the horizon.
	// +optional
	StillRunning int64 `json:"stillRunning,omitempty"`
	// droppedUnservable is the number of requests no replica could ever serve.
	// +optional
	DroppedUnservable int64 `json:"droppedUnservable,omitempty"`
	// timedOutRequests is the number of requests that hit their timeout.
	// +optional
	TimedOutRequests int64 `json:"timedOutRequests,omitempty"`
	// lengthCappedRequests is the number of requests cut at the context length.
	// +optional
	LengthCappedRequests int64 `json:"lengthCappedRequests,omitempty"`
	// preemptionCount is the number of preemptions.
	// +optional
	PreemptionCount int64 `json:"preemptionCount,omitempty"`
	// kvAllocationFailures is the number of failed KV block allocations.
	// +optional
	KvAllocationFailures int64 `json:"kvAllocationFailures,omitempty"`
	// totalInputTokens is the sum of prompt tokens.
	// +optional
	TotalInputTokens int64 `json:"totalInputTokens,omitempty"`
	// totalOutputTokens is the sum of output tokens.
	// +optional
	TotalOutputTokens int64 `json:"totalOutputTokens,omitempty"`

	// vllmEstimatedDurationS is the simulated time at the last event, in seconds (BLIS's
	// vllm_estimated_duration_s, the denominator of the rates).
	// +optional
	VllmEstimatedDurationS float64 `json:"vllmEstimatedDurationS,omitempty"`
	// responsesPerSec is completed requests per simulated second.
	// +optional
	ResponsesPerSec float64 `json:"responsesPerSec,omitempty"`
	// tokensPerSec is output tokens per simulated second.
	// +optional
	TokensPerSec float64 `json:"tokensPerSec,omitempty"`
	// goodputRps is requests per second that met their SLO targets.
	// +optional
	GoodputRps float64 `json:"goodputRps,omitempty"`

	// ttftMeanMs is the mean time to first token.
	// +optional
	TtftMeanMs float64 `json:"ttftMeanMs,omitempty"`
	// ttftP50Ms is the median time to first token.
	// +optional
	TtftP50Ms float64 `json:"ttftP50Ms,omitempty"`
	// ttftP90Ms is the 90th percentile time to first token.
	// +optional
	TtftP90Ms float64 `json:"ttftP90Ms,omitempty"`
	// ttftP95Ms is the 95th percentile time to first token.
	// +optional
	TtftP95Ms float64 `json:"ttftP95Ms,omitempty"`
	// ttftP99Ms is the 99th percentile time to first token.
	// +optional
	TtftP99Ms float64 `json:"ttftP99Ms,omitempty"`
	// e2eMeanMs is the mean end-to-end latency.
	// +optional
	E2eMeanMs float64 `json:"e2eMeanMs,omitempty"`
	// e2eP50Ms is the median end-to-end latency.
	// +optional
	E2eP50Ms float64 `json:"e2eP50Ms,omitempty"`
	// e2eP90Ms is the 90th percentile end-to-end latency.
	// +optional
	E2eP90Ms float64 `json:"e2eP90Ms,omitempty"`
	// e2eP95Ms is the 95th percentile end-to-end latency.
	// +optional
	E2eP95Ms float64 `json:"e2eP95Ms,omitempty"`
	// e2eP99Ms is the 99th percentile end-to-end latency.
	// +optional
	E2eP99Ms float64 `json:"e2eP99Ms,omitempty"`
	// itlMeanMs is the mean inter-token latency over all token gaps.
	// +optional
	ItlMeanMs float64 `json:"itlMeanMs,omitempty"`
	// itlP50Ms is the median inter-token latency.
	// +optional
	ItlP50Ms float64 `json:"itlP50Ms,omitempty"`
	// itlP90Ms is the 90th percentile inter-token latency.
	// +optional
	ItlP90Ms float64 `json:"itlP90Ms,omitempty"`
	// itlP95Ms is the 95th percentile inter-token latency.
	// +optional
	ItlP95Ms float64 `json:"itlP95Ms,omitempty"`
	// itlP99Ms is the 99th percentile inter-token latency.
	// +optional
	ItlP99Ms float64 `json:"itlP99Ms,omitempty"`
	// schedulingDelayP99Ms is the 99th percentile of arrival-to-first-schedule time.
	// +optional
	SchedulingDelayP99Ms float64 `json:"schedulingDelayP99Ms,omitempty"`

	// sloAttainment is the fraction of requests that met their SLO targets.
	// +optional
	SloAttainment float64 `json:"sloAttainment,omitempty"`
	// cacheHitRate is the fraction of prompt blocks served from the prefix cache.
	// +optional
	CacheHitRate float64 `json:"cacheHitRate,omitempty"`
	// jainFairnessIndex is Jain's index of per-tenant throughput (1 = perfectly fair).
	// +optional
	JainFairnessIndex float64 `json:"jainFairnessIndex,omitempty"`
	// replicaSeconds is the replica time consumed, for cost.
	// +optional
	ReplicaSeconds float64 `json:"replicaSeconds,omitempty"`

	// perClass are the metrics of each SLO class (or tenant), at most 16 rows.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	PerClass []ClassMetrics `json:"perClass,omitempty"`

	// pools are the metrics of the prefill and decode pools of a disaggregated cluster.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=2
	// +optional
	Pools []PoolMetrics `json:"pools,omitempty"`
}

// PoolMetrics are the headline metrics of one pool of a disaggregated cluster. The prefill
// pool's requests are its handoffs (each produced a first token and moved its KV to the decode
// pool); the decode pool's are the requests that finished there, local ones included.
type PoolMetrics struct {
	// name is prefill or decode.
	// +kubebuilder:validation:Enum=prefill;decode
	// +required
	Name string `json:"name"`
	// replicas is the pool's replica slots (its maxReplicas when autoscaled).
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// completedRequests are the prefill pool's handoffs, or the decode pool's completions.
	// +optional
	CompletedRequests int64 `json:"completedRequests,omitempty"`
	// ttftMeanMs is the mean time to first token of the pool's requests.
	// +optional
	TtftMeanMs float64 `json:"ttftMeanMs,omitempty"`
	// ttftP99Ms is the 99th percentile time to first token of the pool's requests.
	// +optional
	TtftP99Ms float64 `json:"ttftP99Ms,omitempty"`
	// itlP99Ms is the 99th percentile inter-token latency (decode pool).
	// +optional
	ItlP99Ms float64 `json:"itlP99Ms,omitempty"`
	// e2eMeanMs is the mean end-to-end latency (decode pool).
	// +optional
	E2eMeanMs float64 `json:"e2eMeanMs,omitempty"`
	// e2eP99Ms is the 99th percentile end-to-end latency (decode pool).
	// +optional
	E2eP99Ms float64 `json:"e2eP99Ms,omitempty"`
	// responsesPerSec is the pool's completed requests (or handoffs) per second.
	// +optional
	ResponsesPerSec float64 `json:"responsesPerSec,omitempty"`
	// tokensPerSec is the pool's output tokens per second.
	// +optional
	TokensPerSec float64 `json:"tokensPerSec,omitempty"`
	// peakKVUtilization is the largest fraction of a replica's KV blocks in use at once.
	// +optional
	PeakKVUtilization float64 `json:"peakKVUtilization,omitempty"`
	// kvTransfers is the number of KV handoffs from the prefill to the decode pool.
	// +optional
	KVTransfers int64 `json:"kvTransfers,omitempty"`
	// kvTransferredBytes is the volume of those handoffs.
	// +optional
	KVTransferredBytes int64 `json:"kvTransferredBytes,omitempty"`
	// kvTransferMeanMs is the mean time of a handoff (link wait, bytes over bandwidth and base
	// latency).
	// +optional
	KVTransferMeanMs float64 `json:"kvTransferMeanMs,omitempty"`
	// replicaSeconds is the pool's replica time (autoscaled clusters).
	// +optional
	ReplicaSeconds float64 `json:"replicaSeconds,omitempty"`
}

// ClassMetrics are the headline metrics of one SLO class or tenant.
type ClassMetrics struct {
	// name is the SLO class, or tenant:<id> for a tenant row.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Name string `json:"name"`
	// completedRequests of the class.
	// +optional
	CompletedRequests int64 `json:"completedRequests,omitempty"`
	// rejectedRequests of the class.
	// +optional
	RejectedRequests int64 `json:"rejectedRequests,omitempty"`
	// ttftP99Ms of the class.
	// +optional
	TtftP99Ms float64 `json:"ttftP99Ms,omitempty"`
	// e2eP99Ms of the class.
	// +optional
	E2eP99Ms float64 `json:"e2eP99Ms,omitempty"`
	// itlP99Ms of the class.
	// +optional
	ItlP99Ms float64 `json:"itlP99Ms,omitempty"`
	// sloAttainment of the class.
	// +optional
	SloAttainment float64 `json:"sloAttainment,omitempty"`
	// goodputRps of the class.
	// +optional
	GoodputRps float64 `json:"goodputRps,omitempty"`
}

// NamedValue is a named number.
type NamedValue struct {
	// name of the value (an objective name).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Name string `json:"name"`
	// value is the number.
	// +required
	Value float64 `json:"value"`
}

// ReplicateStatistics summarise headline metrics across seeds.
type ReplicateStatistics struct {
	// count is the number of replicates (seeds) that completed.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Count int32 `json:"count,omitempty"`

	// metrics are the statistics per headline metric.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Metrics []ReplicateStat `json:"metrics,omitempty"`
}

// ReplicateStat is the across-seed statistics of one metric.
type ReplicateStat struct {
	// name of the metric (as in status.metrics, for example ttftP99Ms).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Name string `json:"name"`
	// mean over replicates.
	// +required
	Mean float64 `json:"mean"`
	// stddev is the sample standard deviation over replicates.
	// +optional
	Stddev float64 `json:"stddev,omitempty"`
	// ci95 is the half-width of the 95% confidence interval of the mean (Student's t).
	// +optional
	Ci95 float64 `json:"ci95,omitempty"`
}

// AnomalyCounters count pathological behaviour detected during the run.
type AnomalyCounters struct {
	// priorityInversions counts higher-priority requests scheduled after lower-priority ones.
	// +optional
	PriorityInversions int64 `json:"priorityInversions,omitempty"`
	// holBlockingEvents counts head-of-line blocking events.
	// +optional
	HolBlockingEvents int64 `json:"holBlockingEvents,omitempty"`
	// scaleOscillations counts scale-ups followed by scale-downs (or the reverse) within the
	// cooldown.
	// +optional
	ScaleOscillations int64 `json:"scaleOscillations,omitempty"`
	// kvThrashingEvents counts offloads immediately followed by a reload of the same block.
	// +optional
	KvThrashingEvents int64 `json:"kvThrashingEvents,omitempty"`
	// rejectedRequests counts admission rejections.
	// +optional
	RejectedRequests int64 `json:"rejectedRequests,omitempty"`
	// droppedUnservable counts requests no replica could serve.
	// +optional
	DroppedUnservable int64 `json:"droppedUnservable,omitempty"`
	// timedOutRequests counts request timeouts.
	// +optional
	TimedOutRequests int64 `json:"timedOutRequests,omitempty"`
}

// ResultReference locates the full result of an Evaluation.
type ResultReference struct {
	// kind of the object holding the result (ConfigMap), or empty when uri is used.
	// +kubebuilder:validation:Enum=ConfigMap;Secret
	// +optional
	Kind string `json:"kind,omitempty"`
	// name of the object in the Evaluation's namespace.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name,omitempty"`
	// key within the object.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Key string `json:"key,omitempty"`
	// uri of a result stored outside the API server (a volume path or object-store URL).
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	URI string `json:"uri,omitempty"`
	// digest is the SHA-256 (hex) of the result document.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Digest string `json:"digest,omitempty"`
	// sizeBytes is the size of the result document.
	// +kubebuilder:validation:Minimum=0
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
}

// Evaluation runs the simulator for one cluster, policy bundle and workload and reports
// metrics, fitness, anomalies and a trace summary.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=eval,categories=blis
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Fitness",type=number,JSONPath=`.status.fitnessScore`
// +kubebuilder:printcolumn:name="TTFT-P99-ms",type=number,JSONPath=`.status.metrics.ttftP99Ms`
// +kubebuilder:printcolumn:name="E2E-P99-ms",type=number,JSONPath=`.status.metrics.e2eP99Ms`
// +kubebuilder:printcolumn:name="RPS",type=number,JSONPath=`.status.metrics.responsesPerSec`,priority=1
// +kubebuilder:printcolumn:name="Hash",type=string,JSONPath=`.status.inputHash`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Evaluation struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the run's input; it cannot be changed after creation.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable; create a new Evaluation instead"
	// +required
	Spec EvaluationSpec `json:"spec"`

	// status is the run's state and results.
	// +optional
	Status EvaluationStatus `json:"status,omitempty"`
}

// EvaluationList is a list of Evaluation.
//
// +kubebuilder:object:root=true
type EvaluationList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the Evaluations.
	Items []Evaluation `json:"items"`
}

func init() {
	registerKnownTypes(&Evaluation{}, &EvaluationList{})
}
