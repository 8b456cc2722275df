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

// SimulatedClusterSpec describes a simulated vLLM deployment: the model, the hardware, the
// engine settings, the latency model, the replica pools and the cluster control plane.
//
// +kubebuilder:validation:XValidation:rule="self.pools.all(p, p.role == 'monolithic') || self.pools.all(p, p.role != 'monolithic')",message="pools must be all monolithic, or prefill and decode pools (disaggregated); the two kinds cannot be mixed",fieldPath=".pools"
// +kubebuilder:validation:XValidation:rule="self.pools.exists(p, p.role == 'prefill') == self.pools.exists(p, p.role == 'decode')",message="a disaggregated cluster needs at least one prefill pool and at least one decode pool",fieldPath=".pools"
// +kubebuilder:validation:XValidation:rule="!has(self.kvTransfer) || self.pools.exists(p, p.role == 'prefill')",message="kvTransfer applies only to a disaggregated cluster (prefill and decode pools)",fieldPath=".kvTransfer"
type SimulatedClusterSpec struct {
	// Model is the served model: a name from the bundled model catalog, optionally with an
	// inline HuggingFace-style architecture config that replaces the catalog entry.
	// +required
	Model ModelSpec `json:"model"`

	// GPU is the accelerator type, a name from the bundled hardware catalog (for example H100,
	// A100-80, L40S). It selects peak FLOPs, memory bandwidth and memory size unless
	// hardware overrides them. Absent: the model's default GPU in the catalog, else H100.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][-A-Za-z0-9_.]*$`
	// +optional
	GPU string `json:"gpu,omitempty"`

	// Hardware overrides individual figures of the GPU catalog entry, or describes a GPU the
	// catalog does not have.
	// +optional
	Hardware *HardwareSpec `json:"hardware,omitempty"`

	// Engine holds the vLLM engine settings of every replica: parallelism, batch limits, KV
	// cache sizing, chunked prefill and prefix caching.
	// +optional
	Engine VLLMEngineSpec `json:"engine,omitempty"`

	// LatencyModel selects how step times are computed and carries its coefficients.
	// +optional
	LatencyModel LatencyModelSpec `json:"latencyModel,omitempty"`

	// Pools are the replica pools: one or more monolithic pools, or prefill and decode pools
	// for prefill/decode disaggregation.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +required
	Pools []ReplicaPoolSpec `json:"pools"`

	// KVTransfer models the prefill-to-decode KV cache transfer of a disaggregated cluster.
	// +optional
	KVTransfer *KVTransferSpec `json:"kvTransfer,omitempty"`

	// KVTiers are KV cache tiers below GPU memory (CPU offload and storage), at most one per
	// tier kind.
	// +listType=map
	// +listMapKey=tier
	// +kubebuilder:validation:MaxItems=3
	// +optional
	KVTiers []KVTierSpec `json:"kvTiers,omitempty"`

	// Autoscaling bounds the replica count the autoscale policy may choose and models how
	// long new replicas take to serve.
	// +optional
	Autoscaling *AutoscalingSpec `json:"autoscaling,omitempty"`

	// ControlPlane holds the latencies of the router's decisions and of its signals.
	// +optional
	ControlPlane ControlPlaneSpec `json:"controlPlane,omitempty"`

	// Observability controls how fresh each instance signal is when policies read it.
	// +optional
	Observability *ObservabilitySpec `json:"observability,omitempty"`
}

// ModelSpec names the served model and optionally gives its architecture inline.
type ModelSpec struct {
	// Name is the model identifier, for example meta-llama/llama-3.1-8b-instruct. Without
	// config it must name an entry of the bundled model catalog; with config it is a label
	// used in results and exports.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Config is an inline HuggingFace config.json (camelCase keys) used instead of the
	// catalog entry.
	// +optional
	Config *HFModelConfig `json:"config,omitempty"`
}

// HFModelConfig is the part of a HuggingFace config.json that determines compute, memory
// and KV cache size. Keys are the camelCase forms of the config.json keys.
//
// +kubebuilder:validation:XValidation:rule="!has(self.numKeyValueHeads) || self.numKeyValueHeads <= self.numAttentionHeads",message="numKeyValueHeads must not exceed numAttentionHeads",fieldPath=".numKeyValueHeads"
// +kubebuilder:validation:XValidation:rule="!has(self.numKeyValueHeads) || self.numAttentionHeads % self.numKeyValueHeads == 0",message="numAttentionHeads must be a multiple of numKeyValueHeads",fieldPath=".numKeyValueHeads"
// +kubebuilder:validation:XValidation:rule="has(self.headDim) || self.hiddenSize % self.numAttentionHeads == 0",message="hiddenSize must be a multiple of numAttentionHeads unless headDim is given",fieldPath=".hiddenSize"
// +kubebuilder:validation:XValidation:rule="!has(self.numExpertsPerTok) || (has(self.numLocalExperts) && self.numExpertsPerTok <= self.numLocalExperts)",message="numExpertsPerTok needs numLocalExperts and must not exceed it",fieldPath=".numExpertsPerTok"
type HFModelConfig struct {
	// ModelType is config.json's model_type, for example llama, qwen2, mixtral.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	ModelType string `json:"modelType,omitempty"`

	// Architectures is config.json's architectures list, for example LlamaForCausalLM.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:items:MaxLength=127
	// +optional
	Architectures []string `json:"architectures,omitempty"`

	// NumHiddenLayers is the number of transformer layers.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +required
	NumHiddenLayers int32 `json:"numHiddenLayers"`

	// HiddenSize is the model (residual stream) dimension.
	// +kubebuilder:validation:Minimum=1
	// +required
	HiddenSize int32 `json:"hiddenSize"`

	// IntermediateSize is the dense MLP hidden dimension.
	// +kubebuilder:validation:Minimum=1
	// +required
	IntermediateSize int32 `json:"intermediateSize"`

	// NumAttentionHeads is the number of query heads.
	// +kubebuilder:validation:Minimum=1
	// +required
	NumAttentionHeads int32 `json:"numAttentionHeads"`

	// NumKeyValueHeads is the number of key/value heads (grouped-query attention); absent
	// means equal to numAttentionHeads.
	// +kubebuilder:validation:Minimum=1
	// +optional
	NumKeyValueHeads *int32 `json:"numKeyValueHeads,omitempty"`

	// HeadDim is the per-head dimension when it is not hiddenSize / numAttentionHeads.
	// +kubebuilder:validation:Minimum=1
	// +optional
	HeadDim *int32 `json:"headDim,omitempty"`

	// VocabSize is the vocabulary size (embedding and LM-head rows).
	// +kubebuilder:validation:Minimum=1
	// +optional
	VocabSize int32 `json:"vocabSize,omitempty"`

	// MaxPositionEmbeddings is the longest context the model supports, in tokens.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxPositionEmbeddings int32 `json:"maxPositionEmbeddings,omitempty"`

	// TorchDtype is the weight data type (config.json's torch_dtype).
	// +kubebuilder:validation:Enum=bfloat16;float16;float32;float8_e4m3fn;float8_e5m2;int8
	// +optional
	TorchDtype string `json:"torchDtype,omitempty"`

	// TieWordEmbeddings is true when the LM head shares the embedding weights.
	// +optional
	TieWordEmbeddings bool `json:"tieWordEmbeddings,omitempty"`

	// NumLocalExperts is the number of experts per MoE layer (absent or 1 for dense models).
	// +kubebuilder:validation:Minimum=1
	// +optional
	NumLocalExperts *int32 `json:"numLocalExperts,omitempty"`

	// NumExpertsPerTok is the number of experts each token activates.
	// +kubebuilder:validation:Minimum=1
	// +optional
	NumExpertsPerTok *int32 `json:"numExpertsPerTok,omitempty"`

	// MoeIntermediateSize is the hidden dimension of one expert's MLP.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MoeIntermediateSize *int32 `json:"moeIntermediateSize,omitempty"`

	// NSharedExperts is the number of always-active shared experts (DeepSeek style).
	// +kubebuilder:validation:Minimum=0
	// +optional
	NSharedExperts *int32 `json:"nSharedExperts,omitempty"`

	// SharedExpertIntermediateSize is the hidden dimension of a shared expert's MLP.
	// +kubebuilder:validation:Minimum=1
	// +optional
	SharedExpertIntermediateSize *int32 `json:"sharedExpertIntermediateSize,omitempty"`

	// KvLoraRank is the compressed KV rank of multi-head latent attention (MLA) models.
	// +kubebuilder:validation:Minimum=1
	// +optional
	KvLoraRank *int32 `json:"kvLoraRank,omitempty"`

	// QkRopeHeadDim is the rotary part of the query/key head of MLA models.
	// +kubebuilder:validation:Minimum=1
	// +optional
	QkRopeHeadDim *int32 `json:"qkRopeHeadDim,omitempty"`
}

// HardwareSpec gives per-GPU performance figures, each overriding the catalog entry of the
// cluster's GPU.
type HardwareSpec struct {
	// TFlopsPeak is the dense BF16 peak in TFLOP/s.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +optional
	TFlopsPeak *float64 `json:"tflopsPeak,omitempty"`

	// TFlopsFP8 is the dense FP8 peak in TFLOP/s (0 when the GPU has no FP8).
	// +kubebuilder:validation:Minimum=0
	// +optional
	TFlopsFP8 *float64 `json:"tflopsFP8,omitempty"`

	// BwPeakTBs is the peak memory bandwidth in TB/s.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +optional
	BwPeakTBs *float64 `json:"bwPeakTBs,omitempty"`

	// MfuPrefill is the model FLOPs utilisation of prefill, used by the roofline model.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +optional
	MfuPrefill *float64 `json:"mfuPrefill,omitempty"`

	// MfuDecode is the model FLOPs utilisation of decode, used by the roofline model.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +optional
	MfuDecode *float64 `json:"mfuDecode,omitempty"`

	// MemoryGiB is the GPU memory in GiB.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +optional
	MemoryGiB *float64 `json:"memoryGiB,omitempty"`
}

// VLLMEngineSpec holds vLLM engine arguments; names are the camelCase forms of vLLM's
// command-line flags (--max-num-seqs is maxNumSeqs).
//
// +kubebuilder:validation:XValidation:rule="!(has(self.gpuMemoryUtilization) && has(self.totalKVBlocks))",message="set gpuMemoryUtilization or totalKVBlocks, not both",fieldPath=".totalKVBlocks"
// +kubebuilder:validation:XValidation:rule="!has(self.longPrefillTokenThreshold) || !has(self.maxNumBatchedTokens) || self.longPrefillTokenThreshold <= self.maxNumBatchedTokens",message="longPrefillTokenThreshold must not exceed maxNumBatchedTokens",fieldPath=".longPrefillTokenThreshold"
type VLLMEngineSpec struct {
	// VllmVersion is the vLLM release whose behaviour and coefficients are modelled, for
	// example v0.11.0.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	VllmVersion string `json:"vllmVersion,omitempty"`

	// TensorParallelSize is the number of GPUs a layer is split across. Absent: the model's
	// default in the catalog (for example 4 for 70B models), else 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	TensorParallelSize int32 `json:"tensorParallelSize,omitempty"`

	// PipelineParallelSize is the number of pipeline stages.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +kubebuilder:default=1
	// +optional
	PipelineParallelSize int32 `json:"pipelineParallelSize,omitempty"`

	// DataParallelSize is the number of data-parallel ranks inside one replica (for MoE
	// expert parallelism, EP = DP x TP).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +kubebuilder:default=1
	// +optional
	DataParallelSize int32 `json:"dataParallelSize,omitempty"`

	// MaxNumSeqs is the most requests a replica runs in one batch.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	// +optional
	MaxNumSeqs int32 `json:"maxNumSeqs,omitempty"`

	// MaxNumBatchedTokens is the token budget of one engine step.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16777216
	// +optional
	MaxNumBatchedTokens int32 `json:"maxNumBatchedTokens,omitempty"`

	// MaxModelLen caps prompt plus output length; absent means the model's context length,
	// capped by the KV cache capacity.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxModelLen int32 `json:"maxModelLen,omitempty"`

	// BlockSize is the KV cache block size in tokens.
	// +kubebuilder:validation:Enum=1;8;16;32;64;128;256
	// +kubebuilder:default=16
	// +optional
	BlockSize int32 `json:"blockSize,omitempty"`

	// GpuMemoryUtilization is the fraction of GPU memory vLLM may use; the KV cache gets what
	// weights, activations and runtime overhead leave.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +optional
	GpuMemoryUtilization *float64 `json:"gpuMemoryUtilization,omitempty"`

	// TotalKVBlocks fixes the number of GPU KV blocks per replica instead of deriving it from
	// gpuMemoryUtilization.
	// +kubebuilder:validation:Minimum=1
	// +optional
	TotalKVBlocks *int64 `json:"totalKVBlocks,omitempty"`

	// SwapSpaceGiB is the CPU swap space per GPU in GiB.
	// +kubebuilder:validation:Minimum=0
	// +optional
	SwapSpaceGiB *float64 `json:"swapSpaceGiB,omitempty"`

	// EnableChunkedPrefill lets long prompts be split across steps (vLLM v1 default: true).
	// +optional
	EnableChunkedPrefill *bool `json:"enableChunkedPrefill,omitempty"`

	// LongPrefillTokenThreshold caps the tokens one prefill may take per step (0 = no cap).
	// +kubebuilder:validation:Minimum=0
	// +optional
	LongPrefillTokenThreshold *int32 `json:"longPrefillTokenThreshold,omitempty"`

	// MaxNumPartialPrefills is the most prompts that may be partially prefilled at once.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxNumPartialPrefills *int32 `json:"maxNumPartialPrefills,omitempty"`

	// EnablePrefixCaching reuses KV blocks of identical prompt prefixes (default: true).
	// +optional
	EnablePrefixCaching *bool `json:"enablePrefixCaching,omitempty"`

	// MoE holds the engine options of mixture-of-experts deployments.
	// +optional
	MoE *VLLMMoESpec `json:"moe,omitempty"`
}

// VLLMMoESpec holds vLLM options specific to mixture-of-experts models.
type VLLMMoESpec struct {
	// EnableAllToAll uses all-to-all communication for expert routing.
	// +optional
	EnableAllToAll bool `json:"enableAllToAll,omitempty"`

	// UseFusedMoEKernel uses fused MoE kernels.
	// +optional
	UseFusedMoEKernel bool `json:"useFusedMoEKernel,omitempty"`

	// KernelBackend selects the MoE kernel implementation.
	// +kubebuilder:validation:Enum=auto;triton;cuda
	// +optional
	KernelBackend string `json:"kernelBackend,omitempty"`
}

// LatencyBackend names a step-time model.
// +kubebuilder:validation:Enum=trained-physics;roofline;blackbox
type LatencyBackend string

// The latency backends.
const (
	// LatencyTrainedPhysics is roofline-shaped basis functions times globally fitted
	// coefficients (the default).
	LatencyTrainedPhysics LatencyBackend = "trained-physics"
	// LatencyRoofline is the analytical max(compute, memory) model with MFU factors.
	LatencyRoofline LatencyBackend = "roofline"
	// LatencyBlackbox is the per-model linear alpha/beta model.
	LatencyBlackbox LatencyBackend = "blackbox"
)

// LatencyModelSpec selects the step-time model and optionally overrides its coefficients.
//
// +kubebuilder:validation:XValidation:rule="self.backend != 'blackbox' || (!has(self.betaCoeffs) || size(self.betaCoeffs) == 3)",message="the blackbox model takes exactly 3 beta coefficients (step constant, per prefill token, per decode request)",fieldPath=".betaCoeffs"
// +kubebuilder:validation:XValidation:rule="self.backend != 'trained-physics' || !has(self.betaCoeffs) || size(self.betaCoeffs) >= 7",message="the trained-physics model takes 7 to 11 beta coefficients",fieldPath=".betaCoeffs"
// +kubebuilder:validation:XValidation:rule="self.backend != 'roofline' || !has(self.betaCoeffs)",message="the roofline model has no beta coefficients",fieldPath=".betaCoeffs"
type LatencyModelSpec struct {
	// Backend is the step-time model.
	// +kubebuilder:default=trained-physics
	// +optional
	Backend LatencyBackend `json:"backend,omitempty"`

	// AlphaCoeffs are the request-overhead coefficients in microseconds (queueing,
	// post-decode, per output token); absent means the bundled defaults for the backend.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=3
	// +optional
	AlphaCoeffs []float64 `json:"alphaCoeffs,omitempty"`

	// BetaCoeffs are the step-time coefficients of the backend; absent means the bundled
	// defaults (per model, GPU and TP for blackbox).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=11
	// +optional
	BetaCoeffs []float64 `json:"betaCoeffs,omitempty"`
}

// PoolRole is the role of a replica pool.
// +kubebuilder:validation:Enum=monolithic;prefill;decode
type PoolRole string

// The pool roles.
const (
	// PoolMonolithic replicas run prefill and decode.
	PoolMonolithic PoolRole = "monolithic"
	// PoolPrefill replicas only prefill and hand the KV cache to a decode replica.
	PoolPrefill PoolRole = "prefill"
	// PoolDecode replicas only decode requests prefilled elsewhere.
	PoolDecode PoolRole = "decode"
)

// ReplicaPoolSpec is a group of identical replicas.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas <= self.replicas",message="minReplicas must not exceed replicas",fieldPath=".minReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.maxReplicas) || self.replicas <= self.maxReplicas",message="replicas must not exceed maxReplicas",fieldPath=".maxReplicas"
type ReplicaPoolSpec struct {
	// Name identifies the pool within the cluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// Role is monolithic, prefill or decode.
	// +kubebuilder:default=monolithic
	// +optional
	Role PoolRole `json:"role,omitempty"`

	// Replicas is the initial number of replicas.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1024
	// +required
	Replicas int32 `json:"replicas"`

	// MinReplicas is the fewest replicas the autoscaler may leave in this pool.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1024
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// MaxReplicas is the most replicas the autoscaler may create in this pool.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
}

// KVTransferSpec models moving a prefilled KV cache to a decode replica:
// time = baseLatencyUs + bytes / bandwidth.
type KVTransferSpec struct {
	// BandwidthGBps is the inter-replica transfer bandwidth in GB/s.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=25
	// +optional
	BandwidthGBps float64 `json:"bandwidthGBps,omitempty"`

	// BaseLatencyUs is the fixed cost of one transfer in microseconds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	BaseLatencyUs int64 `json:"baseLatencyUs,omitempty"`

	// Decider chooses which requests are disaggregated: always, never, or only prompts
	// longer than directDecodeThreshold tokens (prefix-threshold).
	// +kubebuilder:validation:Enum=always;never;prefix-threshold
	// +kubebuilder:default=always
	// +optional
	Decider string `json:"decider,omitempty"`

	// DirectDecodeThreshold is the prompt length in tokens at or below which the
	// prefix-threshold decider sends a request straight to a decode replica.
	// +kubebuilder:validation:Minimum=0
	// +optional
	DirectDecodeThreshold int32 `json:"directDecodeThreshold,omitempty"`
}

// KVTierSpec is a KV cache tier below GPU memory. Moving n blocks takes
// baseLatencyUs + n x block bytes / bandwidth.
type KVTierSpec struct {
	// Tier is the kind of storage.
	// +kubebuilder:validation:Enum=cpu;filesystem;object-store
	// +required
	Tier string `json:"tier"`

	// CapacityBlocks is the tier's capacity in KV blocks per replica.
	// +kubebuilder:validation:Minimum=1
	// +required
	CapacityBlocks int64 `json:"capacityBlocks"`

	// BandwidthGBps is the transfer bandwidth between GPU memory and this tier in GB/s.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +required
	BandwidthGBps float64 `json:"bandwidthGBps"`

	// BaseLatencyUs is the fixed cost of one transfer in microseconds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	BaseLatencyUs int64 `json:"baseLatencyUs,omitempty"`

	// OffloadThreshold is the GPU KV utilisation (0-1] above which blocks are offloaded.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +optional
	OffloadThreshold *float64 `json:"offloadThreshold,omitempty"`
}

// AutoscalingSpec bounds the replica count and models scaling actuation.
//
// +kubebuilder:validation:XValidation:rule="self.minReplicas <= self.maxReplicas",message="minReplicas must not exceed maxReplicas",fieldPath=".minReplicas"
type AutoscalingSpec struct {
	// MinReplicas is the fewest replicas in the cluster.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1024
	// +required
	MinReplicas int32 `json:"minReplicas"`

	// MaxReplicas is the most replicas in the cluster.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +required
	MaxReplicas int32 `json:"maxReplicas"`

	// ProvisioningDelayUs is the time from a scale-up decision to a running replica process.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ProvisioningDelayUs int64 `json:"provisioningDelayUs,omitempty"`

	// ModelLoadDelayUs is the time a new replica spends loading weights.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ModelLoadDelayUs int64 `json:"modelLoadDelayUs,omitempty"`

	// WarmupDelayUs is the time a loaded replica needs before it takes traffic.
	// +kubebuilder:validation:Minimum=0
	// +optional
	WarmupDelayUs int64 `json:"warmupDelayUs,omitempty"`

	// DrainPolicy decides what happens to a replica's requests on scale-down: wait for them,
	// drop them immediately, or redirect queued requests to other replicas.
	// +kubebuilder:validation:Enum=wait;immediate;redirect
	// +kubebuilder:default=wait
	// +optional
	DrainPolicy string `json:"drainPolicy,omitempty"`

	// CostPerReplicaHour is the cost of one replica for one hour, for cost objectives.
	// +kubebuilder:validation:Minimum=0
	// +optional
	CostPerReplicaHour float64 `json:"costPerReplicaHour,omitempty"`
}

// ControlPlaneSpec holds control-plane latencies, all in microseconds.
type ControlPlaneSpec struct {
	// AdmissionLatencyUs is the time an admission decision takes.
	// +kubebuilder:validation:Minimum=0
	// +optional
	AdmissionLatencyUs int64 `json:"admissionLatencyUs,omitempty"`

	// RoutingLatencyUs is the time a routing decision takes.
	// +kubebuilder:validation:Minimum=0
	// +optional
	RoutingLatencyUs int64 `json:"routingLatencyUs,omitempty"`

	// SnapshotRefreshIntervalUs is how often periodic instance snapshots are refreshed
	// (default 50000).
	// +kubebuilder:validation:Minimum=0
	// +optional
	SnapshotRefreshIntervalUs *int64 `json:"snapshotRefreshIntervalUs,omitempty"`

	// CacheSignalDelayUs is how stale the router's view of instance prefix caches is
	// (default 50000).
	// +kubebuilder:validation:Minimum=0
	// +optional
	CacheSignalDelayUs *int64 `json:"cacheSignalDelayUs,omitempty"`
}

// ObservabilitySpec sets the refresh behaviour of each instance signal the router reads.
// Signals not listed (in-flight requests, free KV blocks, estimated wait) are always fresh.
type ObservabilitySpec struct {
	// QueueDepth refresh (default immediate).
	// +optional
	QueueDepth *SignalRefresh `json:"queueDepth,omitempty"`
	// BatchSize refresh (default immediate).
	// +optional
	BatchSize *SignalRefresh `json:"batchSize,omitempty"`
	// KVUtilization refresh (default immediate; periodic models a metrics scrape).
	// +optional
	KVUtilization *SignalRefresh `json:"kvUtilization,omitempty"`
	// CacheHitRate refresh (default periodic, 10000 µs).
	// +optional
	CacheHitRate *SignalRefresh `json:"cacheHitRate,omitempty"`
	// RecentTTFT refresh (default periodic, 100000 µs).
	// +optional
	RecentTTFT *SignalRefresh `json:"recentTTFT,omitempty"`
	// RecentTPOT refresh (default periodic, 100000 µs).
	// +optional
	RecentTPOT *SignalRefresh `json:"recentTPOT,omitempty"`
}

// SignalRefresh says when a signal's value is re-read.
//
// +kubebuilder:validation:XValidation:rule="self.mode != 'periodic' || (has(self.intervalUs) && self.intervalUs > 0)",message="periodic refresh needs intervalUs > 0",fieldPath=".intervalUs"
// +kubebuilder:validation:XValidation:rule="self.mode == 'periodic' || !has(self.intervalUs)",message="intervalUs applies only to periodic refresh",fieldPath=".intervalUs"
type SignalRefresh struct {
	// Mode is immediate (read on every access), periodic (every intervalUs) or on-demand
	// (re-read only when a refresh is requested).
	// +kubebuilder:validation:Enum=immediate;periodic;on-demand
	// +required
	Mode string `json:"mode"`

	// IntervalUs is the refresh period of periodic mode, in microseconds.
	// +optional
	IntervalUs *int64 `json:"intervalUs,omitempty"`
}

// SimulatedClusterStatus is the observed state of a SimulatedCluster.
type SimulatedClusterStatus struct {
	// Conditions: Ready is True when the model, GPU and coefficients resolve.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// TotalGPUs is GPUs per replica times the initial replicas of all pools.
	// +optional
	TotalGPUs int32 `json:"totalGPUs,omitempty"`

	// KVBlocksPerReplica is the GPU KV cache capacity per replica after sizing.
	// +optional
	KVBlocksPerReplica int64 `json:"kvBlocksPerReplica,omitempty"`
}

// SimulatedCluster is a simulated LLM-inference deployment: model, hardware, vLLM engine,
// latency model and replica pools.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=simcluster;simc,categories=blis
// +kubebuilder:printcolumn:name="Model",type=string,JSONPath=`.spec.model.name`
// +kubebuilder:printcolumn:name="GPU",type=string,JSONPath=`.spec.gpu`
// +kubebuilder:printcolumn:name="TP",type=integer,JSONPath=`.spec.engine.tensorParallelSize`
// +kubebuilder:printcolumn:name="Latency",type=string,JSONPath=`.spec.latencyModel.backend`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SimulatedCluster struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired deployment.
	// +required
	Spec SimulatedClusterSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status SimulatedClusterStatus `json:"status,omitempty"`
}

// SimulatedClusterList is a list of SimulatedCluster.
//
// +kubebuilder:object:root=true
type SimulatedClusterList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the SimulatedClusters.
	Items []SimulatedCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SimulatedCluster{}, &SimulatedClusterList{})
}
