package model

import (
	"fmt"
	"math"
)

// Memory-budget constants of the KV-capacity estimate. BLIS takes them from llm-d-benchmark's
// capacity planner (blis-upstream §2.5): peak activation memory per replica, and memory outside
// PyTorch's allocator (CUDA context, NCCL buffers) per GPU.
const (
	activationGiBDense  = 5.5
	activationGiBMoE    = 8.0
	nonTorchGiBOneGPU   = 0.15
	nonTorchGiBMultiGPU = 0.6
	gib                 = 1 << 30
)

// KVCapacity is the breakdown of a KV-cache size estimate (all GiB figures cover the whole
// tensor × pipeline parallel group of one DP rank).
type KVCapacity struct {
	// Blocks is the number of KV blocks of the instance (all DP ranks).
	Blocks int64
	// AvailableGiB is GPU memory × utilisation × GPUs.
	AvailableGiB float64
	// WeightGiB is the weight footprint.
	WeightGiB float64
	// ActivationGiB is the activation reserve.
	ActivationGiB float64
	// NonTorchGiB is the non-PyTorch reserve.
	NonTorchGiB float64
	// BlockBytes is the size of one block summed over the GPUs that hold a shard of it.
	BlockBytes int64
}

// EstimateKVCapacity computes the number of KV-cache blocks that fit in GPU memory, as upstream
// BLIS does (latency.CalculateKVBlocks, blis-upstream §2.5):
//
//	available  = MemoryGiB × gpu-memory-utilization × GPUs        (GPUs = TP × PP)
//	overhead   = weights + activation (5.5 GiB dense, 8 GiB MoE) + non-torch (0.15 GiB on one
//	             GPU, else 0.6 GiB per GPU)
//	blocks     = floor((available − overhead) / (per-GPU block bytes × TP)),  × DP for MoE
//
// The arithmetic is BLIS's, in GiB floats with the same truncations, so llama-3.1-8b on one
// H100 at 0.9 gives 26,312 blocks as BLIS logs. The divisor is the block's size summed over
// the TP shards (BLIS #1846: budget and block cost on the same basis). Weights come from
// TotalParameters, which counts MLA attention and Llama-4 shared experts exactly where BLIS
// approximates them.
func EstimateKVCapacity(m *HFModelConfig, hw Hardware, e *VLLMEngineConfig) (KVCapacity, error) {
	tp, pp, dp := e.TensorParallelSize, e.PipelineParallelSize, e.DataParallelSize
	if tp < 1 || pp < 1 || dp < 1 {
		return KVCapacity{}, fmt.Errorf("kv capacity: tensor-, pipeline- and data-parallel sizes must be >= 1, got %d, %d, %d", tp, pp, dp)
	}
	if e.BlockSize <= 0 {
		return KVCapacity{}, fmt.Errorf("kv capacity: block-size must be > 0, got %d", e.BlockSize)
	}
	if !(e.GPUMemoryUtilization > 0 && e.GPUMemoryUtilization <= 1) {
		return KVCapacity{}, fmt.Errorf("kv capacity: gpu-memory-utilization must be in (0, 1], got %v", e.GPUMemoryUtilization)
	}
	gpus := tp * pp
	kc := KVCapacity{
		AvailableGiB: hw.MemoryGiB * e.GPUMemoryUtilization * float64(gpus),
		WeightGiB:    float64(m.WeightBytes()) / gib,
	}
	kc.ActivationGiB = activationGiBDense
	if m.IsMoE() {
		kc.ActivationGiB = activationGiBMoE
	}
	perGPU := nonTorchGiBOneGPU
	if gpus > 1 {
		perGPU = nonTorchGiBMultiGPU
	}
	kc.NonTorchGiB = perGPU * float64(gpus)
	overhead := kc.WeightGiB + kc.ActivationGiB + kc.NonTorchGiB
	if overhead >= kc.AvailableGiB {
		// The smallest group that would fit: the per-GPU share must hold the TP-independent
		// terms, with the multi-GPU non-torch reserve.
		perGPUCap := hw.MemoryGiB*e.GPUMemoryUtilization - nonTorchGiBMultiGPU
		minGPUs := "none (a GPU's budget does not cover its non-torch reserve)"
		if perGPUCap > 0 {
			minGPUs = fmt.Sprint(int(math.Ceil((kc.WeightGiB + kc.ActivationGiB) / perGPUCap)))
		}
		return KVCapacity{}, fmt.Errorf("kv capacity: model %s needs %.2f GiB (%.2f weights + %.2f activation + %.2f non-torch) but %d × %s gives %.2f GiB at gpu-memory-utilization %v; minimum GPUs per replica: %s",
			m.ModelID, overhead, kc.WeightGiB, kc.ActivationGiB, kc.NonTorchGiB, gpus, hw.Name, kc.AvailableGiB, e.GPUMemoryUtilization, minGPUs)
	}
	allocatable := int64((kc.AvailableGiB - overhead) * gib)
	perGPUBlock := int64(m.KVCacheBytesPerTokenPerGPU(tp) * float64(e.BlockSize))
	if perGPUBlock <= 0 {
		return KVCapacity{}, fmt.Errorf("kv capacity: model %s has no KV bytes per block", m.ModelID)
	}
	kc.BlockBytes = perGPUBlock * int64(tp)
	kc.Blocks = allocatable / kc.BlockBytes
	if kc.Blocks <= 0 {
		return KVCapacity{}, fmt.Errorf("kv capacity: model %s leaves room for no KV block (%.2f GiB free, %d bytes per block)", m.ModelID, kc.AvailableGiB-overhead, kc.BlockBytes)
	}
	// Each DP rank of a MoE deployment is its own engine core with its own KV pool.
	if m.IsMoE() && dp > 1 {
		kc.Blocks *= int64(dp)
	}
	return kc, nil
}
