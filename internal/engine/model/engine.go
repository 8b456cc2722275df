package model

import (
	"errors"
	"fmt"
	"math"
)

// Engine defaults. Where upstream BLIS has a CLI flag its default is used (block size 16,
// --max-num-running-reqs 256, --max-num-scheduled-tokens 2048,
// --long-prefill-token-threshold 0); vLLM's defaults otherwise (--gpu-memory-utilization 0.9,
// chunked prefill and prefix caching on in the V1 engine).
const (
	// DefaultMaxNumSeqs is the default --max-num-seqs (BLIS --max-num-running-reqs).
	DefaultMaxNumSeqs = 256
	// DefaultMaxNumBatchedTokens is the default --max-num-batched-tokens (BLIS
	// --max-num-scheduled-tokens).
	DefaultMaxNumBatchedTokens = 2048
	// DefaultBlockSize is the default --block-size in tokens (BLIS --block-size-in-tokens).
	DefaultBlockSize = 16
	// DefaultGPUMemoryUtilization is vLLM's default --gpu-memory-utilization.
	DefaultGPUMemoryUtilization = 0.9
	// DefaultLongPrefillTokenThreshold is the default --long-prefill-token-threshold (no cap).
	DefaultLongPrefillTokenThreshold = 0
	// DefaultMaxNumPartialPrefills is vLLM's default --max-num-partial-prefills.
	DefaultMaxNumPartialPrefills = 1
	// DefaultMaxLongPartialPrefills is vLLM's default --max-long-partial-prefills.
	DefaultMaxLongPartialPrefills = 1
)

// VLLMEngineConfig is the vLLM deployment of one simulated instance (seed 002,
// VLLMEngineConfig). After Resolve, TotalKVBlocks and MaxModelLen are the values the engine
// runs with (no zeros).
type VLLMEngineConfig struct {
	// VLLMVersion is the vLLM release the coefficients refer to (e.g.
	// "vllm/vllm-openai:v0.11.0"); used to select blackbox rows.
	VLLMVersion string
	// TensorParallelSize is --tensor-parallel-size.
	TensorParallelSize int
	// PipelineParallelSize is --pipeline-parallel-size.
	PipelineParallelSize int
	// DataParallelSize is --data-parallel-size (MoE models: DP ranks inside one instance).
	DataParallelSize int
	// MaxNumSeqs is --max-num-seqs: the most requests in one step.
	MaxNumSeqs int64
	// MaxNumBatchedTokens is --max-num-batched-tokens: the token budget of one step.
	MaxNumBatchedTokens int64
	// LongPrefillTokenThreshold is --long-prefill-token-threshold: the largest prefill chunk
	// of one request per step; 0 means no limit beyond the token budget.
	LongPrefillTokenThreshold int64
	// MaxNumPartialPrefills is --max-num-partial-prefills: above 1, how many requests may be
	// partially prefilled at once, sharing the token budget (1 = the classic behaviour).
	MaxNumPartialPrefills int64
	// MaxLongPartialPrefills is --max-long-partial-prefills: how many of those may have a
	// prompt above the long-prefill threshold, so shorter prompts can go ahead of long ones.
	MaxLongPartialPrefills int64
	// BlockSize is --block-size: tokens per KV-cache block.
	BlockSize int64
	// GPUMemoryUtilization is --gpu-memory-utilization, in (0, 1].
	GPUMemoryUtilization float64
	// TotalKVBlocks is the KV-cache size in blocks; 0 = derive from memory (Resolve does).
	TotalKVBlocks int64
	// MaxModelLen is --max-model-len; 0 = derive from the model and the KV cache (Resolve does).
	MaxModelLen int64
	// EnableChunkedPrefill is --enable-chunked-prefill.
	EnableChunkedPrefill bool
	// EnablePrefixCaching is --enable-prefix-caching.
	EnablePrefixCaching bool
}

// DefaultVLLMEngineConfig returns the defaults: TP=PP=DP=1, 256 sequences, 2048 batched
// tokens, 16-token blocks, 0.9 memory utilisation, KV blocks and max model length derived,
// chunked prefill and prefix caching on.
func DefaultVLLMEngineConfig() VLLMEngineConfig {
	return VLLMEngineConfig{
		TensorParallelSize:        1,
		PipelineParallelSize:      1,
		DataParallelSize:          1,
		MaxNumSeqs:                DefaultMaxNumSeqs,
		MaxNumBatchedTokens:       DefaultMaxNumBatchedTokens,
		LongPrefillTokenThreshold: DefaultLongPrefillTokenThreshold,
		MaxNumPartialPrefills:     DefaultMaxNumPartialPrefills,
		MaxLongPartialPrefills:    DefaultMaxLongPartialPrefills,
		BlockSize:                 DefaultBlockSize,
		GPUMemoryUtilization:      DefaultGPUMemoryUtilization,
		EnableChunkedPrefill:      true,
		EnablePrefixCaching:       true,
	}
}

// TotalGPUs is TP × PP × DP.
func (e *VLLMEngineConfig) TotalGPUs() int {
	return e.TensorParallelSize * e.PipelineParallelSize * e.DataParallelSize
}

// EffectiveExpertParallelism is DP × TP: vLLM spreads the experts of a MoE model over all
// data- and tensor-parallel ranks.
func (e *VLLMEngineConfig) EffectiveExpertParallelism() int {
	return e.DataParallelSize * e.TensorParallelSize
}

// Validate checks the invariant BC-2 (seed 002); errors name the vLLM flag and the rule.
func (e *VLLMEngineConfig) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if e.TensorParallelSize < 1 {
		add("tensor-parallel-size must be >= 1, got %d", e.TensorParallelSize)
	}
	if e.PipelineParallelSize < 1 {
		add("pipeline-parallel-size must be >= 1, got %d", e.PipelineParallelSize)
	}
	if e.DataParallelSize < 1 {
		add("data-parallel-size must be >= 1, got %d", e.DataParallelSize)
	}
	if e.MaxNumSeqs <= 0 {
		add("max-num-seqs must be > 0, got %d", e.MaxNumSeqs)
	}
	if e.MaxNumBatchedTokens <= 0 {
		add("max-num-batched-tokens must be > 0, got %d", e.MaxNumBatchedTokens)
	}
	if e.LongPrefillTokenThreshold < 0 {
		add("long-prefill-token-threshold must be >= 0, got %d", e.LongPrefillTokenThreshold)
	}
	if e.MaxNumPartialPrefills < 1 || e.MaxNumPartialPrefills > math.MaxInt32 {
		add("max-num-partial-prefills must be >= 1, got %d", e.MaxNumPartialPrefills)
	}
	if e.MaxLongPartialPrefills < 1 || e.MaxLongPartialPrefills > e.MaxNumPartialPrefills {
		add("max-long-partial-prefills must be between 1 and max-num-partial-prefills (%d), got %d", e.MaxNumPartialPrefills, e.MaxLongPartialPrefills)
	}
	if e.MaxNumPartialPrefills > 1 && !e.EnableChunkedPrefill {
		add("max-num-partial-prefills above 1 needs chunked prefill")
	}
	if e.BlockSize <= 0 {
		add("block-size must be > 0, got %d", e.BlockSize)
	}
	if !(e.GPUMemoryUtilization > 0 && e.GPUMemoryUtilization <= 1) || math.IsNaN(e.GPUMemoryUtilization) {
		add("gpu-memory-utilization must be in (0, 1], got %v", e.GPUMemoryUtilization)
	}
	if e.TotalKVBlocks < 0 {
		add("total KV blocks must be > 0 when set (0 = derive from memory), got %d", e.TotalKVBlocks)
	}
	if e.MaxModelLen < 0 {
		add("max-model-len must be > 0 when set (0 = derive), got %d", e.MaxModelLen)
	}
	// Without chunked prefill vLLM requires the token budget to hold a whole prompt.
	if !e.EnableChunkedPrefill && e.MaxModelLen > 0 && e.MaxNumBatchedTokens > 0 && e.MaxNumBatchedTokens < e.MaxModelLen {
		add("max-num-batched-tokens (%d) must be >= max-model-len (%d) when chunked prefill is disabled", e.MaxNumBatchedTokens, e.MaxModelLen)
	}
	return errors.Join(errs...)
}
