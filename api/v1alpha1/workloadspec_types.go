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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkloadSpecSpec is a BLIS workload spec v2 with camelCase keys (aggregate_rate is
// aggregateRate), extended with agentic workflows. Exactly one request source is given:
// clients/cohorts/inferencePerf/servegenData, a built-in scenario, a trace to replay, or
// blisConfigMapRef (an unchanged BLIS workload file in a ConfigMap).
//
// +kubebuilder:validation:XValidation:rule="[has(self.blisConfigMapRef), has(self.trace), has(self.scenario), has(self.clients) || has(self.cohorts) || has(self.inferencePerf) || has(self.servegenData)].filter(x, x).size() == 1",message="give exactly one request source: clients/cohorts/inferencePerf/servegenData, scenario, trace, or blisConfigMapRef"
// +kubebuilder:validation:XValidation:rule="!has(self.blisConfigMapRef) || !(has(self.version) || has(self.seed) || has(self.category) || has(self.aggregateRate) || has(self.numRequests) || has(self.horizon) || has(self.goodputSloTargets))",message="blisConfigMapRef replaces the whole spec; no other field may be set with it",fieldPath=".blisConfigMapRef"
// +kubebuilder:validation:XValidation:rule="!has(self.scenario) || !(has(self.version) || has(self.category) || has(self.aggregateRate) || has(self.goodputSloTargets))",message="a scenario defines the workload; only seed, horizon and numRequests may override it",fieldPath=".scenario"
// +kubebuilder:validation:XValidation:rule="!has(self.clients) || self.clients.all(c, !has(c.agentic)) || (has(self.category) && self.category == 'agentic')",message="clients with agentic workflows need category agentic",fieldPath=".category"
// +kubebuilder:validation:XValidation:rule="(has(self.aggregateRate) && self.aggregateRate > 0.0) || !has(self.clients) || self.clients.all(c, (has(c.concurrency) && c.concurrency > 0) || (has(c.lifecycle) && c.lifecycle.windows.all(w, has(w.traceRate))))",message="without a positive aggregateRate (absolute mode) every rate-based client needs lifecycle windows with traceRate",fieldPath=".clients"
// +kubebuilder:validation:XValidation:rule="(has(self.aggregateRate) && self.aggregateRate > 0.0) || !has(self.cohorts) || self.cohorts.all(c, has(c.spike) && has(c.spike.traceRate) && !has(c.diurnal) && !has(c.drain))",message="without a positive aggregateRate (absolute mode) every cohort needs spike.traceRate and no diurnal or drain pattern",fieldPath=".cohorts"
type WorkloadSpecSpec struct {
	// blisConfigMapRef points at a ConfigMap key holding an unchanged BLIS workload file,
	// used instead of every other field.
	// +optional
	BlisConfigMapRef *ConfigMapKeyReference `json:"blisConfigMapRef,omitempty"`

	// version is the BLIS workload spec version; "1" files are upgraded (SLO class realtime
	// becomes critical, interactive becomes standard).
	// +kubebuilder:validation:Enum="1";"2"
	// +optional
	Version string `json:"version,omitempty"`

	// seed is the workload's random seed. An Evaluation's seeds override it.
	// +optional
	Seed *int64 `json:"seed,omitempty"`

	// category is the workload family.
	// +kubebuilder:validation:Enum=language;multimodal;reasoning;agentic
	// +optional
	Category string `json:"category,omitempty"`

	// aggregateRate is the total arrival rate in requests per second, split between clients
	// by rateFraction; 0 selects absolute mode where lifecycle windows carry traceRate.
	// +kubebuilder:validation:Minimum=0
	// +optional
	AggregateRate *float64 `json:"aggregateRate,omitempty"`

	// numRequests stops generation after this many requests (0 = limited by horizon only).
	// +kubebuilder:validation:Minimum=0
	// +optional
	NumRequests *int64 `json:"numRequests,omitempty"`

	// horizon is the simulated duration in microseconds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Horizon *int64 `json:"horizon,omitempty"`

	// clients are the request sources.
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Clients []ClientSpec `json:"clients,omitempty"`

	// cohorts are populations of identical clients with diurnal, spike and drain patterns.
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Cohorts []CohortSpec `json:"cohorts,omitempty"`

	// servegenData loads clients from ServeGen data files (BLIS compatibility; the engine
	// reports it as unsupported when the workload is resolved: convert the data to clients or
	// replay it as a trace).
	// +optional
	ServegenData *ServegenDataSpec `json:"servegenData,omitempty"`

	// inferencePerf describes the workload in inference-perf's compact staged form.
	// +optional
	InferencePerf *InferencePerfSpec `json:"inferencePerf,omitempty"`

	// goodputSloTargets are per-SLO-class latency thresholds for goodput. Keys are SLO class
	// names.
	// +kubebuilder:validation:MaxProperties=16
	// +optional
	GoodputSloTargets map[string]SLODimTargets `json:"goodputSloTargets,omitempty"`

	// trace replays recorded requests instead of generating them.
	// +optional
	Trace *TraceSource `json:"trace,omitempty"`

	// scenario names a built-in workload (for example bursty-traffic, diurnal-cycle,
	// unfair-tenants, prefix-heavy, mixed-slo, agentic-react, agentic-mcts,
	// agentic-fork-join). seed, horizon and numRequests, when set, override the scenario's.
	// The name is checked when the workload is resolved.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Scenario string `json:"scenario,omitempty"`
}

// SLODimTargets are one SLO class's latency thresholds in milliseconds; 0 leaves a dimension
// unconstrained.
type SLODimTargets struct {
	// ttft is the time-to-first-token threshold in milliseconds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTFT float64 `json:"ttft,omitempty"`
	// itl is the mean inter-token latency threshold in milliseconds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ITL float64 `json:"itl,omitempty"`
	// e2e is the end-to-end latency threshold in milliseconds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	E2E float64 `json:"e2e,omitempty"`
}

// ClientSpec is one source of requests.
//
// +kubebuilder:validation:XValidation:rule="!has(self.agentic) || !(has(self.reasoning) || has(self.multimodal))",message="agentic is mutually exclusive with reasoning and multimodal",fieldPath=".agentic"
// +kubebuilder:validation:XValidation:rule="has(self.agentic) || has(self.inputDistribution) || has(self.multimodal)",message="a non-agentic client needs inputDistribution (or multimodal)",fieldPath=".inputDistribution"
// +kubebuilder:validation:XValidation:rule="has(self.agentic) || has(self.outputDistribution)",message="a non-agentic client needs outputDistribution",fieldPath=".outputDistribution"
type ClientSpec struct {
	// id names the client.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +required
	ID string `json:"id"`

	ClientTraffic `json:",inline"`

	// concurrency makes the client closed-loop with this many outstanding requests instead
	// of rate-based.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Concurrency int32 `json:"concurrency,omitempty"`

	// thinkTimeUs is the pause between a response and the next request of a
	// concurrency-based client, in microseconds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ThinkTimeUs int64 `json:"thinkTimeUs,omitempty"`

	// lifecycle restricts the client to activity windows.
	// +optional
	Lifecycle *LifecycleSpec `json:"lifecycle,omitempty"`
}

// CohortSpec is a population of identical clients, expanded into clients before
// generation.
//
// +kubebuilder:validation:XValidation:rule="!has(self.agentic) || !(has(self.reasoning) || has(self.multimodal))",message="agentic is mutually exclusive with reasoning and multimodal",fieldPath=".agentic"
type CohortSpec struct {
	// id names the cohort; members are named after it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +required
	ID string `json:"id"`

	// population is the number of clients in the cohort.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	// +required
	Population int32 `json:"population"`

	ClientTraffic `json:",inline"`

	// prefixSharing is shared (all members share the prefix group) or per_member.
	// +kubebuilder:validation:Enum=shared;per_member
	// +optional
	PrefixSharing string `json:"prefixSharing,omitempty"`

	// diurnal modulates the rate sinusoidally over 24 hours.
	// +optional
	Diurnal *DiurnalSpec `json:"diurnal,omitempty"`

	// spike makes the cohort active only during a window.
	// +optional
	Spike *SpikeSpec `json:"spike,omitempty"`

	// drain ramps the cohort's rate down to zero.
	// +optional
	Drain *DrainSpec `json:"drain,omitempty"`
}

// ClientTraffic is what clients and cohorts have in common: who sends, at what rate, and
// what requests look like.
type ClientTraffic struct {
	// tenantId is the tenant the requests belong to.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	TenantID string `json:"tenantId,omitempty"`

	// sloClass is the SLO tier (realtime and interactive are version 1 names of critical and
	// standard).
	// +kubebuilder:validation:Enum=critical;standard;sheddable;batch;background;realtime;interactive
	// +optional
	SloClass string `json:"sloClass,omitempty"`

	// model is the model the requests ask for (multi-model clusters).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Model string `json:"model,omitempty"`

	// adapter is the LoRA adapter the requests ask for.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Adapter string `json:"adapter,omitempty"`

	// rateFraction is this source's share of aggregateRate.
	// +kubebuilder:validation:Minimum=0
	// +optional
	RateFraction float64 `json:"rateFraction,omitempty"`

	// arrival is the inter-arrival process.
	// +optional
	Arrival *ArrivalSpec `json:"arrival,omitempty"`

	// inputDistribution is the prompt length distribution in tokens.
	// +optional
	InputDistribution *Distribution `json:"inputDistribution,omitempty"`

	// outputDistribution is the output length distribution in tokens.
	// +optional
	OutputDistribution *Distribution `json:"outputDistribution,omitempty"`

	// prefixGroup names a shared prompt prefix; requests of sources with the same group share
	// it.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	PrefixGroup string `json:"prefixGroup,omitempty"`

	// prefixLength is the shared prefix length in tokens (default 50).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1048576
	// +optional
	PrefixLength int32 `json:"prefixLength,omitempty"`

	// streaming marks streamed responses.
	// +optional
	Streaming bool `json:"streaming,omitempty"`

	// network adds client-side network delay.
	// +optional
	Network *NetworkSpec `json:"network,omitempty"`

	// multimodal makes requests carry image, audio and video tokens.
	// +optional
	Multimodal *MultimodalSpec `json:"multimodal,omitempty"`

	// reasoning adds reasoning tokens and multi-turn sessions.
	// +optional
	Reasoning *ReasoningSpec `json:"reasoning,omitempty"`

	// agentic makes every arrival a session of an agentic workflow (a DAG of LLM and tool
	// calls).
	// +optional
	Agentic *AgenticSpec `json:"agentic,omitempty"`

	// timeout is the per-request timeout in microseconds (default 300 s; 0 = none).
	// +kubebuilder:validation:Minimum=0
	// +optional
	Timeout *int64 `json:"timeout,omitempty"`

	// sloTargetUs is the per-request TTFT target in microseconds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	SloTargetUs *int64 `json:"sloTargetUs,omitempty"`

	// closedLoop generates follow-up rounds after responses (default true for multi-turn)
	// rather than all up front.
	// +optional
	ClosedLoop *bool `json:"closedLoop,omitempty"`
}

// ArrivalSpec is an inter-arrival time process: BLIS's processes (poisson, gamma, weibull,
// constant) and the pattern processes bursty, diurnal, periodic and adversarial. Every
// process averages to the client's rate; the pattern parameters shape it.
//
// +kubebuilder:validation:XValidation:rule="!has(self.cv) || self.process in ['gamma', 'weibull']",message="cv applies to the gamma and weibull processes",fieldPath=".cv"
// +kubebuilder:validation:XValidation:rule="!(has(self.spikeIntervalUs) || has(self.spikeDurationUs) || has(self.spikeMultiplier)) || self.process == 'bursty'",message="spikeIntervalUs, spikeDurationUs and spikeMultiplier apply to the bursty process"
// +kubebuilder:validation:XValidation:rule="!(has(self.periodUs) || has(self.peakToTroughRatio) || has(self.peakUs)) || self.process == 'diurnal'",message="periodUs, peakToTroughRatio and peakUs apply to the diurnal process"
// +kubebuilder:validation:XValidation:rule="!has(self.jitter) || self.process == 'periodic'",message="jitter applies to the periodic process",fieldPath=".jitter"
// +kubebuilder:validation:XValidation:rule="!has(self.burstSize) || self.process == 'adversarial'",message="burstSize applies to the adversarial process",fieldPath=".burstSize"
// +kubebuilder:validation:XValidation:rule="!has(self.spikeIntervalUs) || !has(self.spikeDurationUs) || self.spikeDurationUs <= self.spikeIntervalUs",message="spikeDurationUs must not exceed spikeIntervalUs",fieldPath=".spikeDurationUs"
type ArrivalSpec struct {
	// process is the arrival process.
	// +kubebuilder:validation:Enum=poisson;gamma;weibull;constant;bursty;diurnal;periodic;adversarial
	// +required
	Process string `json:"process"`

	// cv is the coefficient of variation of inter-arrival times (gamma and weibull).
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +optional
	Cv *float64 `json:"cv,omitempty"`

	// shape is a fitted gamma alpha or weibull k, an alternative to cv.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +optional
	Shape *float64 `json:"shape,omitempty"`

	// scale is a fitted gamma theta or weibull lambda in microseconds (BLIS compatibility;
	// the engine derives the scale from the client's rate and rejects an explicit one).
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +optional
	Scale *float64 `json:"scale,omitempty"`

	// spikeIntervalUs is the bursty process's spike period (default 60 s).
	// +kubebuilder:validation:Minimum=1
	// +optional
	SpikeIntervalUs *int64 `json:"spikeIntervalUs,omitempty"`

	// spikeDurationUs is how long each bursty spike lasts (default 5 s).
	// +kubebuilder:validation:Minimum=1
	// +optional
	SpikeDurationUs *int64 `json:"spikeDurationUs,omitempty"`

	// spikeMultiplier multiplies the rate during a bursty spike (default 10).
	// +kubebuilder:validation:Minimum=1
	// +optional
	SpikeMultiplier *float64 `json:"spikeMultiplier,omitempty"`

	// periodUs is the diurnal process's period (default 24 h).
	// +kubebuilder:validation:Minimum=1
	// +optional
	PeriodUs *int64 `json:"periodUs,omitempty"`

	// peakToTroughRatio is the diurnal process's peak rate over trough rate (default 10).
	// +kubebuilder:validation:Minimum=1
	// +optional
	PeakToTroughRatio *float64 `json:"peakToTroughRatio,omitempty"`

	// peakUs is when in each diurnal period the rate peaks (default half a period).
	// +kubebuilder:validation:Minimum=0
	// +optional
	PeakUs *int64 `json:"peakUs,omitempty"`

	// jitter is the periodic process's jitter as a fraction of the period, in [0, 0.5]
	// (default 0.1).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=0.5
	// +optional
	Jitter *float64 `json:"jitter,omitempty"`

	// burstSize is the adversarial process's number of simultaneous arrivals per burst
	// (default 50).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	// +optional
	BurstSize *int32 `json:"burstSize,omitempty"`
}

// Distribution is a token-count (or latency) distribution.
//
// +kubebuilder:validation:XValidation:rule="self.type != 'gaussian' || (has(self.params) && has(self.params.mean) && has(self.params.stdDev))",message="gaussian needs params.mean and params.stdDev",fieldPath=".params"
// +kubebuilder:validation:XValidation:rule="self.type != 'exponential' || (has(self.params) && has(self.params.mean))",message="exponential needs params.mean",fieldPath=".params"
// +kubebuilder:validation:XValidation:rule="self.type != 'lognormal' || (has(self.params) && has(self.params.mu) && has(self.params.sigma))",message="lognormal needs params.mu and params.sigma",fieldPath=".params"
// +kubebuilder:validation:XValidation:rule="self.type != 'pareto_lognormal' || (has(self.params) && has(self.params.alpha) && has(self.params.xm) && has(self.params.mu) && has(self.params.sigma) && has(self.params.mixWeight))",message="pareto_lognormal needs params.alpha, xm, mu, sigma and mixWeight",fieldPath=".params"
// +kubebuilder:validation:XValidation:rule="self.type != 'constant' || (has(self.params) && has(self.params.value))",message="constant needs params.value",fieldPath=".params"
// +kubebuilder:validation:XValidation:rule="(self.type == 'empirical') == has(self.file)",message="file is required by, and only allowed for, the empirical type",fieldPath=".file"
type Distribution struct {
	// type is the distribution family.
	// +kubebuilder:validation:Enum=gaussian;exponential;pareto_lognormal;lognormal;constant;empirical
	// +required
	Type string `json:"type"`

	// params are the family's parameters.
	// +optional
	Params *DistributionParams `json:"params,omitempty"`

	// file is the path of an empirical distribution's data, resolved by the engine.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	File string `json:"file,omitempty"`
}

// DistributionParams are distribution parameters (BLIS params keys in camelCase: std_dev is
// stdDev, mix_weight is mixWeight).
//
// +kubebuilder:validation:XValidation:rule="!has(self.min) || !has(self.max) || self.min <= self.max",message="min must not exceed max",fieldPath=".min"
type DistributionParams struct {
	// mean of gaussian and exponential.
	// +optional
	Mean *float64 `json:"mean,omitempty"`
	// stdDev is the standard deviation of gaussian.
	// +kubebuilder:validation:Minimum=0
	// +optional
	StdDev *float64 `json:"stdDev,omitempty"`
	// min truncates samples from below.
	// +optional
	Min *float64 `json:"min,omitempty"`
	// max truncates samples from above.
	// +optional
	Max *float64 `json:"max,omitempty"`
	// mu is the log-space mean of lognormal and pareto_lognormal.
	// +optional
	Mu *float64 `json:"mu,omitempty"`
	// sigma is the log-space standard deviation of lognormal and pareto_lognormal.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Sigma *float64 `json:"sigma,omitempty"`
	// alpha is the Pareto shape of pareto_lognormal.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +optional
	Alpha *float64 `json:"alpha,omitempty"`
	// xm is the Pareto scale of pareto_lognormal.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +optional
	Xm *float64 `json:"xm,omitempty"`
	// mixWeight is the Pareto share in [0, 1] of pareto_lognormal.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +optional
	MixWeight *float64 `json:"mixWeight,omitempty"`
	// value of the constant distribution.
	// +optional
	Value *float64 `json:"value,omitempty"`
}

// NetworkSpec is client-side network delay.
type NetworkSpec struct {
	// rttMs is the round-trip time in milliseconds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	RttMs float64 `json:"rttMs,omitempty"`
	// bandwidthMbps is the client link bandwidth in Mbit/s (0 = unlimited).
	// +kubebuilder:validation:Minimum=0
	// +optional
	BandwidthMbps float64 `json:"bandwidthMbps,omitempty"`
}

// LifecycleSpec restricts a client to activity windows.
type LifecycleSpec struct {
	// windows are the activity periods.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +required
	Windows []ActiveWindow `json:"windows"`
}

// ActiveWindow is a period in which a client sends requests, in microseconds from the
// start, optionally with its own rate, arrival and lengths.
//
// +kubebuilder:validation:XValidation:rule="self.startUs < self.endUs",message="startUs must be before endUs",fieldPath=".endUs"
type ActiveWindow struct {
	// startUs is the window start.
	// +kubebuilder:validation:Minimum=0
	// +required
	StartUs int64 `json:"startUs"`
	// endUs is the window end (exclusive).
	// +required
	EndUs int64 `json:"endUs"`
	// traceRate is a rate weight in rate mode, or the absolute rate in requests per second
	// when aggregateRate is 0.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TraceRate *float64 `json:"traceRate,omitempty"`
	// arrival overrides the client's arrival process in this window.
	// +optional
	Arrival *ArrivalSpec `json:"arrival,omitempty"`
	// inputDistribution overrides the client's prompt lengths in this window.
	// +optional
	InputDistribution *Distribution `json:"inputDistribution,omitempty"`
	// outputDistribution overrides the client's output lengths in this window.
	// +optional
	OutputDistribution *Distribution `json:"outputDistribution,omitempty"`
}

// MultimodalSpec describes the modalities of multimodal requests.
type MultimodalSpec struct {
	// textDistribution is the text tokens per request.
	// +optional
	TextDistribution *Distribution `json:"textDistribution,omitempty"`
	// imageDistribution is the tokens per image.
	// +optional
	ImageDistribution *Distribution `json:"imageDistribution,omitempty"`
	// imageCountDistribution is the images per request.
	// +optional
	ImageCountDistribution *Distribution `json:"imageCountDistribution,omitempty"`
	// audioDistribution is the tokens per audio segment.
	// +optional
	AudioDistribution *Distribution `json:"audioDistribution,omitempty"`
	// audioCountDistribution is the audio segments per request.
	// +optional
	AudioCountDistribution *Distribution `json:"audioCountDistribution,omitempty"`
	// videoDistribution is the tokens per video segment.
	// +optional
	VideoDistribution *Distribution `json:"videoDistribution,omitempty"`
	// videoCountDistribution is the video segments per request.
	// +optional
	VideoCountDistribution *Distribution `json:"videoCountDistribution,omitempty"`
}

// ReasoningSpec adds reasoning tokens and multi-turn sessions.
type ReasoningSpec struct {
	// reasonRatioDistribution is the share of output tokens that are reasoning tokens.
	// +optional
	ReasonRatioDistribution *Distribution `json:"reasonRatioDistribution,omitempty"`
	// multiTurn makes each arrival a multi-round session.
	// +optional
	MultiTurn *MultiTurnSpec `json:"multiTurn,omitempty"`
}

// MultiTurnSpec is a multi-round conversation.
type MultiTurnSpec struct {
	// maxRounds is the number of rounds per session.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +required
	MaxRounds int32 `json:"maxRounds"`
	// thinkTimeUs is the pause between rounds in microseconds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ThinkTimeUs int64 `json:"thinkTimeUs,omitempty"`
	// contextGrowth is accumulate (each round's prompt includes all earlier rounds) or empty
	// (independent rounds).
	// +kubebuilder:validation:Enum=accumulate
	// +optional
	ContextGrowth string `json:"contextGrowth,omitempty"`
	// singleSession runs all rounds of a client in one session.
	// +optional
	SingleSession bool `json:"singleSession,omitempty"`
}

// DiurnalSpec is a sinusoidal 24-hour rate modulation.
type DiurnalSpec struct {
	// peakHour is the hour of day (0-23) of the peak.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=23
	// +required
	PeakHour int32 `json:"peakHour"`
	// peakToTroughRatio is peak rate over trough rate, at least 1.
	// +kubebuilder:validation:Minimum=1
	// +required
	PeakToTroughRatio float64 `json:"peakToTroughRatio"`
}

// SpikeSpec is a burst window.
type SpikeSpec struct {
	// startTimeUs is the start of the spike.
	// +kubebuilder:validation:Minimum=0
	// +required
	StartTimeUs int64 `json:"startTimeUs"`
	// durationUs is the length of the spike.
	// +kubebuilder:validation:Minimum=1
	// +required
	DurationUs int64 `json:"durationUs"`
	// traceRate is the cohort rate in requests per second in absolute mode.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +optional
	TraceRate *float64 `json:"traceRate,omitempty"`
}

// DrainSpec is a linear ramp-down of the rate to zero.
type DrainSpec struct {
	// startTimeUs is when the ramp starts.
	// +kubebuilder:validation:Minimum=0
	// +required
	StartTimeUs int64 `json:"startTimeUs"`
	// rampDurationUs is the length of the ramp.
	// +kubebuilder:validation:Minimum=0
	// +required
	RampDurationUs int64 `json:"rampDurationUs"`
}

// ServegenDataSpec loads a ServeGen data set.
type ServegenDataSpec struct {
	// path of the ServeGen data, resolved by the engine.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +required
	Path string `json:"path"`
	// timeWindow selects a single period (deprecated in BLIS).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	TimeWindow string `json:"timeWindow,omitempty"`
	// spanStart is the start of the span used, in microseconds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	SpanStart int64 `json:"spanStart,omitempty"`
	// spanEnd is the end of the span used, in microseconds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	SpanEnd int64 `json:"spanEnd,omitempty"`
	// windowDurationSecs is the duration of each period in multi-period mode.
	// +kubebuilder:validation:Minimum=0
	// +optional
	WindowDurationSecs int32 `json:"windowDurationSecs,omitempty"`
	// drainTimeoutSecs is the gap between periods in multi-period mode.
	// +kubebuilder:validation:Minimum=0
	// +optional
	DrainTimeoutSecs int32 `json:"drainTimeoutSecs,omitempty"`
}

// InferencePerfSpec is inference-perf's staged load with a shared-prefix data set.
type InferencePerfSpec struct {
	// stages run one after another.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +required
	Stages []InferencePerfStage `json:"stages"`
	// sharedPrefix describes prompts built from shared system prompts.
	// +optional
	SharedPrefix *SharedPrefixSpec `json:"sharedPrefix,omitempty"`
}

// InferencePerfStage is one load stage.
type InferencePerfStage struct {
	// rate in requests per second.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +required
	Rate float64 `json:"rate"`
	// duration in seconds.
	// +kubebuilder:validation:Minimum=1
	// +required
	Duration int64 `json:"duration"`
}

// SharedPrefixSpec is inference-perf's shared_prefix data set.
type SharedPrefixSpec struct {
	// numUniqueSystemPrompts is the number of prefix groups.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +required
	NumUniqueSystemPrompts int32 `json:"numUniqueSystemPrompts"`
	// numUsersPerSystemPrompt is the number of clients per prefix group.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +required
	NumUsersPerSystemPrompt int32 `json:"numUsersPerSystemPrompt"`
	// systemPromptLen is the shared prefix length in tokens.
	// +kubebuilder:validation:Minimum=0
	// +required
	SystemPromptLen int32 `json:"systemPromptLen"`
	// questionLen is the per-request prompt length in tokens.
	// +kubebuilder:validation:Minimum=1
	// +required
	QuestionLen int32 `json:"questionLen"`
	// outputLen is the output length in tokens.
	// +kubebuilder:validation:Minimum=1
	// +required
	OutputLen int32 `json:"outputLen"`
	// enableMultiTurnChat turns each user into a single multi-turn session.
	// +optional
	EnableMultiTurnChat bool `json:"enableMultiTurnChat,omitempty"`
}

// AgenticSpec is an agentic workflow: a DAG of LLM calls and tool calls with fan-out,
// fan-in and an optional loop. Each arrival of the client starts one session.
//
// +kubebuilder:validation:XValidation:rule="self.steps.all(s, !has(s.dependsOn) || s.dependsOn.all(d, self.steps.exists(t, t.id == d)))",message="dependsOn must name steps of this workflow",fieldPath=".steps"
// +kubebuilder:validation:XValidation:rule="self.steps.all(s, !has(s.tool) || (has(self.tools) && s.tool in self.tools))",message="every tool must be defined in tools",fieldPath=".tools"
// +kubebuilder:validation:XValidation:rule="!has(self.__loop__) || self.__loop__.over.all(o, self.steps.exists(t, t.id == o))",message="loop.over must name steps of this workflow",fieldPath=".loop.over"
// +kubebuilder:validation:XValidation:rule="self.steps.all(s, !has(s.contextGrowth) || (has(self.__loop__) && s.id in self.__loop__.over))",message="contextGrowth accumulate is only valid for steps inside loop.over",fieldPath=".steps"
// +kubebuilder:validation:XValidation:rule="self.steps.exists(s, !has(s.dependsOn) || size(s.dependsOn) == 0)",message="a workflow needs a root step (one without dependsOn)",fieldPath=".steps"
type AgenticSpec struct {
	// workflow names the workflow.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Workflow string `json:"workflow,omitempty"`

	// loop repeats a group of steps.
	// +optional
	Loop *AgenticLoop `json:"loop,omitempty"`

	// steps are the workflow's LLM and tool calls.
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +required
	Steps []AgenticStep `json:"steps"`

	// tools maps a tool name to its latency and output size. Keys are tool names as used by
	// steps.
	// +kubebuilder:validation:MaxProperties=16
	// +optional
	Tools map[string]AgenticTool `json:"tools,omitempty"`
}

// AgenticLoop repeats the steps it names.
type AgenticLoop struct {
	// over names the steps of the loop body.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=32
	// +required
	Over []string `json:"over"`

	// maxIterations bounds the number of iterations.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +required
	MaxIterations int32 `json:"maxIterations"`

	// continueProbability is the probability of another iteration after each one below
	// maxIterations (default 1: always run maxIterations).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +optional
	ContinueProbability *float64 `json:"continueProbability,omitempty"`
}

// AgenticStep is one node of an agentic workflow.
//
// +kubebuilder:validation:XValidation:rule="self.type != 'llm_call' || (has(self.inputDistribution) && has(self.outputDistribution))",message="an llm_call step needs inputDistribution and outputDistribution",fieldPath=".inputDistribution"
// +kubebuilder:validation:XValidation:rule="self.type != 'tool_call' || (has(self.tool) && !has(self.inputDistribution) && !has(self.outputDistribution))",message="a tool_call step needs tool and takes no distributions (latency comes from tools)",fieldPath=".tool"
// +kubebuilder:validation:XValidation:rule="self.type == 'tool_call' || !has(self.tool)",message="tool applies only to tool_call steps",fieldPath=".tool"
// +kubebuilder:validation:XValidation:rule="!has(self.dependsOn) || !(self.id in self.dependsOn)",message="a step cannot depend on itself",fieldPath=".dependsOn"
type AgenticStep struct {
	// id names the step.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +required
	ID string `json:"id"`

	// type is llm_call or tool_call.
	// +kubebuilder:validation:Enum=llm_call;tool_call
	// +required
	Type string `json:"type"`

	// tool names the tool of a tool_call step (a key of tools).
	// +kubebuilder:validation:MaxLength=32
	// +optional
	Tool string `json:"tool,omitempty"`

	// dependsOn are the steps that must complete first (fan-in when several).
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=32
	// +optional
	DependsOn []string `json:"dependsOn,omitempty"`

	// fanOut runs this many parallel instances of the step.
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=64
	// +optional
	FanOut *int32 `json:"fanOut,omitempty"`

	// contextGrowth accumulate makes a loop step's prompt include earlier iterations.
	// +kubebuilder:validation:Enum=accumulate
	// +optional
	ContextGrowth string `json:"contextGrowth,omitempty"`

	// inputDistribution is the prompt length of an llm_call step.
	// +optional
	InputDistribution *Distribution `json:"inputDistribution,omitempty"`

	// outputDistribution is the output length of an llm_call step.
	// +optional
	OutputDistribution *Distribution `json:"outputDistribution,omitempty"`
}

// AgenticTool is an external tool's behaviour.
type AgenticTool struct {
	// latency is the tool's latency distribution in microseconds.
	// +required
	Latency Distribution `json:"latency"`

	// outputTokens is the size of the tool's output, added to the next prompt.
	// +optional
	OutputTokens *Distribution `json:"outputTokens,omitempty"`
}

// TraceSource is a recorded request trace to replay: an Azure LLM inference trace (CSV), a
// Mooncake trace (JSONL), or a BLIS trace v2 (a YAML header file plus a CSV data file). Each
// file comes from a ConfigMap key or from a path on a volume mounted into the engine.
//
// +kubebuilder:validation:XValidation:rule="has(self.configMapRef) != has(self.path)",message="give exactly one of configMapRef and path for the trace data"
// +kubebuilder:validation:XValidation:rule="(has(self.format) && self.format == 'blis-v2') == (has(self.headerConfigMapRef) || has(self.headerPath))",message="the blis-v2 format needs its header file (headerConfigMapRef or headerPath); other formats have none"
// +kubebuilder:validation:XValidation:rule="!(has(self.headerConfigMapRef) && has(self.headerPath))",message="give at most one of headerConfigMapRef and headerPath"
type TraceSource struct {
	// format of the trace: azure, mooncake or blis-v2. Empty selects it from the data file's
	// extension (.csv azure, .jsonl or .json mooncake).
	// +kubebuilder:validation:Enum=azure;mooncake;blis-v2
	// +optional
	Format string `json:"format,omitempty"`

	// configMapRef selects the trace data in a ConfigMap.
	// +optional
	ConfigMapRef *ConfigMapKeyReference `json:"configMapRef,omitempty"`

	// path is the trace data file on a volume mounted into the engine.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/`
	// +optional
	Path string `json:"path,omitempty"`

	// headerConfigMapRef selects the YAML header of a blis-v2 trace in a ConfigMap.
	// +optional
	HeaderConfigMapRef *ConfigMapKeyReference `json:"headerConfigMapRef,omitempty"`

	// headerPath is the YAML header file of a blis-v2 trace on a mounted volume.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/`
	// +optional
	HeaderPath string `json:"headerPath,omitempty"`

	// speedup divides recorded inter-arrival times: 2 replays the trace twice as fast
	// (default 1).
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +optional
	Speedup *float64 `json:"speedup,omitempty"`
}

// WorkloadSpecStatus is the observed state of a WorkloadSpec.
type WorkloadSpecStatus struct {
	// conditions: Ready is True when the workload (or its referenced BLIS file or trace)
	// resolves and passes the engine's validation.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// contentHash is the SHA-256 of the resolved workload, hex encoded.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	ContentHash string `json:"contentHash,omitempty"`
}

// WorkloadSpec is a request workload: clients and cohorts with arrival processes, token
// distributions, prefixes, sessions and agentic workflows, or a trace to replay.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wls;wl,categories=blis
// +kubebuilder:printcolumn:name="Category",type=string,JSONPath=`.spec.category`
// +kubebuilder:printcolumn:name="Rate",type=number,JSONPath=`.spec.aggregateRate`
// +kubebuilder:printcolumn:name="Requests",type=integer,JSONPath=`.spec.numRequests`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WorkloadSpec struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the workload.
	// +required
	Spec WorkloadSpecSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status WorkloadSpecStatus `json:"status,omitempty"`
}

// WorkloadSpecList is a list of WorkloadSpec.
//
// +kubebuilder:object:root=true
type WorkloadSpecList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the WorkloadSpecs.
	Items []WorkloadSpec `json:"items"`
}

func init() {
	registerKnownTypes(&WorkloadSpec{}, &WorkloadSpecList{})
}
