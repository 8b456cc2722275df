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
	// model is the served model: a name from the bundled model catalog, optionally with an
	// inline HuggingFace-style architecture config that replaces the catalog entry.
	// +required
	Model ModelSpec `json:"model"`

	// gpu is the accelerator type, a name from the bundled hardware catalog (for example H100,
	// A100-80, L40S). It selects peak FLOPs, memory bandwidth and memory size unless
	// hardware overrides them. Absent: the model's default GPU in the catalog, else H100.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][-A-Za-z0-9_.]*$`
	// +optional
	GPU string `json:"gpu,omitempty"`

	// hardware overrides individual figures of the GPU catalog entry, or describes a GPU the
	// catalog does not have.
	// +optional
	Hardware *HardwareSpec `json:"hardware,omitempty"`

	// engine holds the vLLM engine settings of every replica: parallelism, batch limits, KV
	// cache sizing, chunked prefill and prefix caching.
	// +kubebuilder:default={}
	// +optional
	Engine VLLMEngineSpec `json:"engine,omitempty"`

	// latencyModel selects how step times are computed and carries its coefficients.
	// +kubebuilder:default={}
	// +optional
	LatencyModel LatencyModelSpec `json:"latencyModel,omitempty"`

	// pools are the replica pools: one or more monolithic pools, or prefill and decode pools
	// for prefill/decode disaggregation.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +required
	Pools []ReplicaPoolSpec `json:"pools"`

	// kvTransfer models the prefill-to-decode KV cache transfer of a disaggregated cluster.
	// +optional
	KVTransfer *KVTransferSpec `json:"kvTransfer,omitempty"`

	// kvTiers are KV cache tiers below GPU memory (CPU offload and storage), at most one per
	// tier kind.
	// +listType=map
	// +listMapKey=tier
	// +kubebuilder:validation:MaxItems=3
	// +optional
	KVTiers []KVTierSpec `json:"kvTiers,omitempty"`

	// autoscaling bounds the replica count the autoscale policy may choose and models how
	// long new replicas take to serve.
	// +optional
	Autoscaling *AutoscalingSpec `json:"autoscaling,omitempty"`

	// controlPlane holds the latencies of the router's decisions and of its signals.
	// +optional
	ControlPlane ControlPlaneSpec `json:"controlPlane,omitempty"`

	// observability controls how fresh each instance signal is when policies read it.
	// +optional
	Observability *ObservabilitySpec `json:"observability,omitempty"`
}

// ModelSpec names the served model and optionally gives its architecture inline.
type ModelSpec struct {
	// name is the model identifier, for example meta-llama/llama-3.1-8b-instruct. Without
	// config it must name an entry of the bundled model catalog; with config it is a label
	// used in results and exports.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// config is an inline HuggingFace config.json (camelCase keys) used instead of the
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
	// modelType is config.json's model_type, for example llama, qwen2, mixtral.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	ModelType string `json:"modelType,omitempty"`

	// architectures is config.json's architectures list, for example LlamaForCausalLM.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:items:MaxLength=127
	// +optional
	Architectures []string `json:"architectures,omitempty"`

	// numHiddenLayers is the number of transformer layers.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +required
	NumHiddenLayers int32 `json:"numHiddenLayers"`

	// hiddenSize is the model (residual stream) dimension.
	// +kubebuilder:validation:Minimum=1
	// +required
	HiddenSize int32 `json:"hiddenSize"`

	// intermediateSize is the dense MLP hidden dimension.
	// +kubebuilder:validation:Minimum=1
	// +required
	IntermediateSize int32 `json:"intermediateSize"`

	// numAttentionHeads is the number of query heads.
	// +kubebuilder:validation:Minimum=1
	// +required
	NumAttentionHeads int32 `json:"numAttentionHeads"`

	// numKeyValueHeads is the number of key/value heads (grouped-query attention); absent
	// means equal to numAttentionHeads.
	// +kubebuilder:validation:Minimum=1
	// +optional
	NumKeyValueHeads *int32 `json:"numKeyValueHeads,omitempty"`

	// headDim is the per-head dimension when it is not hiddenSize / numAttentionHeads.
	// +kubebuilder:validation:Minimum=1
	// +optional
	HeadDim *int32 `json:"headDim,omitempty"`

	// vocabSize is the vocabulary size (embedding and LM-head rows).
	// +kubebuilder:validation:Minimum=1
	// +optional
	VocabSize int32 `json:"vocabSize,omitempty"`

	// maxPositionEmbeddings is the longest context the model supports, in tokens.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxPositionEmbeddings int32 `json:"maxPositionEmbeddings,omitempty"`

	// torchDtype is the weight data type (config.json's torch_dtype).
	// +kubebuilder:validation:Enum=bfloat16;float16;float32;float8_e4m3fn;float8_e5m2;int8
	// +optional
	TorchDtype string `json:"torchDtype,omitempty"`

	// tieWordEmbeddings is true when the LM head shares the embedding weights.
	// +optional
	TieWordEmbeddings bool `json:"tieWordEmbeddings,omitempty"`

	// numLocalExperts is the number of experts per MoE layer (absent or 1 for dense models).
	// +kubebuilder:validation:Minimum=1
	// +optional
	NumLocalExperts *int32 `json:"numLocalExperts,omitempty"`

	// numExpertsPerTok is the number of experts each token activates.
	// +kubebuilder:validation:Minimum=1
	// +optional
	NumExpertsPerTok *int32 `json:"numExpertsPerTok,omitempty"`

	// moeIntermediateSize is the hidden dimension of one expert's MLP.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MoeIntermediateSize *int32 `json:"moeIntermediateSize,omitempty"`

	// nSharedExperts is the number of always-active shared experts (DeepSeek style).
	// +kubebuilder:validation:Minimum=0
	// +optional
	NSharedExperts *int32 `json:"nSharedExperts,omitempty"`

	// sharedExpertIntermediateSize is the hidden dimension of a shared expert's MLP.
	// +kubebuilder:validation:Minimum=1
	// +optional
	SharedExpertIntermediateSize *int32 `json:"sharedExpertIntermediateSize,omitempty"`

	// kvLoraRank is the compressed KV rank of multi-head latent attention (MLA) models.
	// +kubebuilder:validation:Minimum=1
	// +optional
	KvLoraRank *int32 `json:"kvLoraRank,omitempty"`

	// qkRopeHeadDim is the rotary part of the query/key head of MLA models.
	// +kubebuilder:validation:Minimum=1
	// +optional
	QkRopeHeadDim *int32 `json:"qkRopeHeadDim,omitempty"`
}

// HardwareSpec gives per-GPU performance figures, each overriding the catalog entry of the
// cluster's GPU.
type HardwareSpec struct {
	// tflopsPeak is the dense BF16 peak in TFLOP/s.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +optional
	TFlopsPeak *float64 `json:"tflopsPeak,omitempty"`

	// tflopsFP8 is the dense FP8 peak in TFLOP/s (0 when the GPU has no FP8).
	// +kubebuilder:validation:Minimum=0
	// +optional
	TFlopsFP8 *float64 `json:"tflopsFP8,omitempty"`

	// bwPeakTBs is the peak memory bandwidth in TB/s.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +optional
	BwPeakTBs *float64 `json:"bwPeakTBs,omitempty"`

	// mfuPrefill is the model FLOPs utilisation of prefill, used by the roofline model.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +optional
	MfuPrefill *float64 `json:"mfuPrefill,omitempty"`

	// mfuDecode is the model FLOPs utilisation of decode, used by the roofline model.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +optional
	MfuDecode *float64 `json:"mfuDecode,omitempty"`

	// memoryGiB is the GPU memory in GiB.
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
	// vllmVersion is the vLLM release whose behaviour and coefficients are modelled, for
	// example v0.11.0.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	VllmVersion string `json:"vllmVersion,omitempty"`

	// tensorParallelSize is the number of GPUs a layer is split across. Absent: the model's
	// default in the catalog (for example 4 for 70B models), else 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	TensorParallelSize int32 `json:"tensorParallelSize,omitempty"`

	// pipelineParallelSize is the number of pipeline stages.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +kubebuilder:default=1
	// +optional
	PipelineParallelSize int32 `json:"pipelineParallelSize,omitempty"`

	// dataParallelSize is the number of data-parallel ranks inside one replica (for MoE
	// expert parallelism, EP = DP x TP).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +kubebuilder:default=1
	// +optional
	DataParallelSize int32 `json:"dataParallelSize,omitempty"`

	// maxNumSeqs is the most requests a replica runs in one batch.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	// +optional
	MaxNumSeqs int32 `json:"maxNumSeqs,omitempty"`

	// maxNumBatchedTokens is the token budget of one engine step.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16777216
	// +optional
	MaxNumBatchedTokens int32 `json:"maxNumBatchedTokens,omitempty"`

	// maxModelLen caps prompt plus output length; absent means the model's context length,
	// capped by the KV cache capacity.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxModelLen int32 `json:"maxModelLen,omitempty"`

	// blockSize is the KV cache block size in tokens.
	// +kubebuilder:validation:Enum=1;8;16;32;64;128;256
	// +kubebuilder:default=16
	// +optional
	BlockSize int32 `json:"blockSize,omitempty"`

	// gpuMemoryUtilization is the fraction of GPU memory vLLM may use; the KV cache gets what
	// weights, activations and runtime overhead leave.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +optional
	GpuMemoryUtilization *float64 `json:"gpuMemoryUtilization,omitempty"`

	// totalKVBlocks fixes the number of GPU KV blocks per replica instead of deriving it from
	// gpuMemoryUtilization.
	// +kubebuilder:validation:Minimum=1
	// +optional
	TotalKVBlocks *int64 `json:"totalKVBlocks,omitempty"`

	// swapSpaceGiB is the CPU swap space per GPU in GiB.
	// +kubebuilder:validation:Minimum=0
	// +optional
	SwapSpaceGiB *float64 `json:"swapSpaceGiB,omitempty"`

	// enableChunkedPrefill lets long prompts be split across steps (vLLM v1 default: true).
	// +optional
	EnableChunkedPrefill *bool `json:"enableChunkedPrefill,omitempty"`

	// longPrefillTokenThreshold caps the tokens one prefill may take per step (0 = no cap).
	// +kubebuilder:validation:Minimum=0
	// +optional
	LongPrefillTokenThreshold *int32 `json:"longPrefillTokenThreshold,omitempty"`

	// maxNumPartialPrefills is the most prompts that may be partially prefilled at once.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxNumPartialPrefills *int32 `json:"maxNumPartialPrefills,omitempty"`

	// enablePrefixCaching reuses KV blocks of identical prompt prefixes (default: true).
	// +optional
	EnablePrefixCaching *bool `json:"enablePrefixCaching,omitempty"`

	// moe holds the engine options of mixture-of-experts deployments.
	// +optional
	MoE *VLLMMoESpec `json:"moe,omitempty"`
}

// VLLMMoESpec holds vLLM options specific to mixture-of-experts models.
type VLLMMoESpec struct {
	// enableAllToAll uses all-to-all communication for expert routing.
	// +optional
	EnableAllToAll bool `json:"enableAllToAll,omitempty"`

	// useFusedMoEKernel uses fused MoE kernels.
	// +optional
	UseFusedMoEKernel bool `json:"useFusedMoEKernel,omitempty"`

	// kernelBackend selects the MoE kernel implementation.
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
	// backend is the step-time model.
	// +kubebuilder:default=trained-physics
	// +optional
	Backend LatencyBackend `json:"backend,omitempty"`

	// alphaCoeffs are the request-overhead coefficients in microseconds (queueing,
	// post-decode, per output token); absent means the bundled defaults for the backend.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=3
	// +optional
	AlphaCoeffs []float64 `json:"alphaCoeffs,omitempty"`

	// betaCoeffs are the step-time coefficients of the backend; absent means the bundled
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

// ReplicaPoolSpec is a group of identical replicas. A prefill or decode pool may override the
// cluster's GPU, some engine settings and the latency model; its other settings are the
// cluster's.
//
// +kubebuilder:validation:XValidation:rule="self.role != 'monolithic' || (!has(self.gpu) && !has(self.engine) && !has(self.latencyModel))",message="gpu, engine and latencyModel overrides apply only to prefill and decode pools",fieldPath=".role"
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas <= self.replicas",message="minReplicas must not exceed replicas",fieldPath=".minReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.maxReplicas) || self.replicas <= self.maxReplicas",message="replicas must not exceed maxReplicas",fieldPath=".maxReplicas"
type ReplicaPoolSpec struct {
	// name identifies the pool within the cluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// role is monolithic, prefill or decode.
	// +kubebuilder:default=monolithic
	// +optional
	Role PoolRole `json:"role,omitempty"`

	// replicas is the initial number of replicas.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1024
	// +required
	Replicas int32 `json:"replicas"`

	// minReplicas is the fewest replicas the autoscaler may leave in this pool.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1024
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// maxReplicas is the most replicas the autoscaler may create in this pool.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// gpu is this pool's accelerator type (prefill and decode pools only); absent: the
	// cluster's.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][-A-Za-z0-9_.]*$`
	// +optional
	GPU string `json:"gpu,omitempty"`

	// engine overrides engine settings for this pool (prefill and decode pools only); fields
	// left out are the cluster's.
	// +optional
	Engine *PoolEngineSpec `json:"engine,omitempty"`

	// latencyModel replaces the cluster's latency model for this pool (prefill and decode
	// pools only).
	// +optional
	LatencyModel *LatencyModelSpec `json:"latencyModel,omitempty"`
}

// PoolEngineSpec are the engine settings a prefill or decode pool may set differently from the
// cluster. The KV block size stays the cluster's: a transferred prompt keeps its block layout.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.gpuMemoryUtilization) && has(self.totalKVBlocks))",message="set gpuMemoryUtilization or totalKVBlocks, not both",fieldPath=".totalKVBlocks"
type PoolEngineSpec struct {
	// tensorParallelSize is the number of GPUs a layer is split across in this pool.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	TensorParallelSize int32 `json:"tensorParallelSize,omitempty"`

	// maxNumSeqs is the most requests a replica of this pool runs in one batch.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	// +optional
	MaxNumSeqs int32 `json:"maxNumSeqs,omitempty"`

	// maxNumBatchedTokens is the token budget of one engine step in this pool.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16777216
	// +optional
	MaxNumBatchedTokens int32 `json:"maxNumBatchedTokens,omitempty"`

	// gpuMemoryUtilization is the fraction of GPU memory vLLM may use in this pool (it
	// replaces the cluster's totalKVBlocks).
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +optional
	GpuMemoryUtilization *float64 `json:"gpuMemoryUtilization,omitempty"`

	// totalKVBlocks fixes the number of GPU KV blocks per replica of this pool.
	// +kubebuilder:validation:Minimum=1
	// +optional
	TotalKVBlocks *int64 `json:"totalKVBlocks,omitempty"`
}

// KVTransferSpec models moving a prefilled KV cache to a decode replica:
// time = baseLatencyUs + bytes / bandwidth.
type KVTransferSpec struct {
	// bandwidthGBps is the inter-replica transfer bandwidth in GB/s.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=25
	// +optional
	BandwidthGBps float64 `json:"bandwidthGBps,omitempty"`

	// baseLatencyUs is the fixed cost of one transfer in microseconds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	BaseLatencyUs int64 `json:"baseLatencyUs,omitempty"`

	// decider chooses which requests are disaggregated: always, never, or only prompts
	// longer than directDecodeThreshold tokens (prefix-threshold).
	// +kubebuilder:validation:Enum=always;never;prefix-threshold
	// +kubebuilder:default=always
	// +optional
	Decider string `json:"decider,omitempty"`

	// directDecodeThreshold is the prompt length in tokens at or below which the
	// prefix-threshold decider sends a request straight to a decode replica.
	// +kubebuilder:validation:Minimum=0
	// +optional
	DirectDecodeThreshold int32 `json:"directDecodeThreshold,omitempty"`
}

// KVTierSpec is a KV cache tier below GPU memory. Moving n blocks takes
// baseLatencyUs + n x block bytes / bandwidth.
type KVTierSpec struct {
	// tier is the kind of storage.
	// +kubebuilder:validation:Enum=cpu;filesystem;object-store
	// +required
	Tier string `json:"tier"`

	// capacityBlocks is the tier's capacity in KV blocks per replica.
	// +kubebuilder:validation:Minimum=1
	// +required
	CapacityBlocks int64 `json:"capacityBlocks"`

	// bandwidthGBps is the transfer bandwidth between GPU memory and this tier in GB/s.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +required
	BandwidthGBps float64 `json:"bandwidthGBps"`

	// baseLatencyUs is the fixed cost of one transfer in microseconds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	BaseLatencyUs int64 `json:"baseLatencyUs,omitempty"`

	// offloadThreshold is the GPU KV utilisation (0-1] above which blocks are offloaded.
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
	// minReplicas is the fewest replicas in the cluster.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1024
	// +required
	MinReplicas int32 `json:"minReplicas"`

	// maxReplicas is the most replicas in the cluster.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +required
	MaxReplicas int32 `json:"maxReplicas"`

	// provisioningDelayUs is the time from a scale-up decision to a running replica process.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ProvisioningDelayUs int64 `json:"provisioningDelayUs,omitempty"`

	// modelLoadDelayUs is the time a new replica spends loading weights.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ModelLoadDelayUs int64 `json:"modelLoadDelayUs,omitempty"`

	// warmupDelayUs is the time a loaded replica needs before it takes traffic.
	// +kubebuilder:validation:Minimum=0
	// +optional
	WarmupDelayUs int64 `json:"warmupDelayUs,omitempty"`

	// drainPolicy decides what happens to a replica's requests on scale-down: wait for them,
	// drop them immediately, or redirect queued requests to other replicas.
	// +kubebuilder:validation:Enum=wait;immediate;redirect
	// +kubebuilder:default=wait
	// +optional
	DrainPolicy string `json:"drainPolicy,omitempty"`

	// costPerReplicaHour is the cost of one replica for one hour, for cost objectives.
	// +kubebuilder:validation:Minimum=0
	// +optional
	CostPerReplicaHour float64 `json:"costPerReplicaHour,omitempty"`
}

// ControlPlaneSpec holds control-plane latencies, all in microseconds.
type ControlPlaneSpec struct {
	// admissionLatencyUs is the time an admission decision takes.
	// +kubebuilder:validation:Minimum=0
	// +optional
	AdmissionLatencyUs int64 `json:"admissionLatencyUs,omitempty"`

	// routingLatencyUs is the time a routing decision takes.
	// +kubebuilder:validation:Minimum=0
	// +optional
	RoutingLatencyUs int64 `json:"routingLatencyUs,omitempty"`

	// snapshotRefreshIntervalUs is how often the router's view of instance load (queue depth,
	// batch size, KV utilization) is refreshed; between refreshes routing sees the last
	// snapshot. A PolicyBundle's own observability rule for a signal takes precedence. Unset or
	// 0: the router reads load live.
	// +kubebuilder:validation:Minimum=0
	// +optional
	SnapshotRefreshIntervalUs *int64 `json:"snapshotRefreshIntervalUs,omitempty"`

	// cacheSignalDelayUs delays the KV-cache events that feed the precise prefix-cache scorer:
	// blocks an instance stores count for routing only this long after they are stored (llm-d's
	// KV-event path). Unset or 0: no delay.
	// +kubebuilder:validation:Minimum=0
	// +optional
	CacheSignalDelayUs *int64 `json:"cacheSignalDelayUs,omitempty"`
}

// ObservabilitySpec sets the refresh behaviour of each instance signal the router reads.
// Signals not listed (in-flight requests, free KV blocks, estimated wait) are always fresh.
type ObservabilitySpec struct {
	// queueDepth refresh (default immediate).
	// +optional
	QueueDepth *SignalRefresh `json:"queueDepth,omitempty"`
	// batchSize refresh (default immediate).
	// +optional
	BatchSize *SignalRefresh `json:"batchSize,omitempty"`
	// kvUtilization refresh (default immediate; periodic models a metrics scrape).
	// +optional
	KVUtilization *SignalRefresh `json:"kvUtilization,omitempty"`
	// cacheHitRate refresh (default periodic, 10000 µs).
	// +optional
	CacheHitRate *SignalRefresh `json:"cacheHitRate,omitempty"`
	// recentTTFT refresh (default periodic, 100000 µs).
	// +optional
	RecentTTFT *SignalRefresh `json:"recentTTFT,omitempty"`
	// recentTPOT refresh (default periodic, 100000 µs).
	// +optional
	RecentTPOT *SignalRefresh `json:"recentTPOT,omitempty"`
}

// SignalRefresh says when a signal's value is re-read.
//
// +kubebuilder:validation:XValidation:rule="self.mode != 'periodic' || (has(self.intervalUs) && self.intervalUs > 0)",message="periodic refresh needs intervalUs > 0",fieldPath=".intervalUs"
// +kubebuilder:validation:XValidation:rule="self.mode == 'periodic' || !has(self.intervalUs)",message="intervalUs applies only to periodic refresh",fieldPath=".intervalUs"
type SignalRefresh struct {
	// mode is immediate (read on every access), periodic (every intervalUs) or on-demand
	// (re-read only when a refresh is requested).
	// +kubebuilder:validation:Enum=immediate;periodic;on-demand
	// +required
	Mode string `json:"mode"`

	// intervalUs is the refresh period of periodic mode, in microseconds.
	// +optional
	IntervalUs *int64 `json:"intervalUs,omitempty"`
}

// SimulatedClusterStatus is the observed state of a SimulatedCluster.
type SimulatedClusterStatus struct {
	// conditions: Ready is True when the model, GPU and coefficients resolve.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// totalGPUs is GPUs per replica times the initial replicas of all pools.
	// +optional
	TotalGPUs int32 `json:"totalGPUs,omitempty"`

	// kvBlocksPerReplica is the GPU KV cache capacity per replica after sizing.
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
	registerKnownTypes(&SimulatedCluster{}, &SimulatedClusterList{})
}
