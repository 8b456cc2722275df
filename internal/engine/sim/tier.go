package sim

import (
	"fmt"
	"math"

	"github.com/inference-sim/blis-operator/internal/engine/kvcache"
)

// This file is the CPU KV tier of an instance (InstanceConfig.CPUTier).
//
// Model: when a request's prefill completes while the GPU cache's utilization is at or above
// the offload threshold, its full prompt blocks are written to the CPU tier (write-through, as
// vLLM's CPU offloading connector stores computed blocks; the copy runs beside the engine and is
// not charged to the step). The tier is an LRU of block hashes with a capacity in blocks. When a
// request is admitted, the blocks of its prompt that follow its GPU prefix hit and are held in
// the CPU tier are reloaded: they take GPU blocks like computed ones, need no prefill, and the
// step that admits the request takes base latency + bytes / bandwidth longer (the reload
// blocks the batch). A reload of a block that moved (was stored or reloaded) less than the
// thrashing window ago counts as KV thrashing: the GPU cache lost it again right away.
// Reloaded blocks count as prefix-cache hits.

// KVTierConfig is a CPU KV tier of one instance.
type KVTierConfig struct {
	// CapacityBlocks is the tier's size in KV blocks (> 0).
	CapacityBlocks int32
	// BandwidthGBps is the GPU<->CPU transfer bandwidth in GB/s (> 0).
	BandwidthGBps float64
	// BaseLatencyUs is the fixed cost of one reload (>= 0).
	BaseLatencyUs int64
	// BlockBytes is the size of one KV block (> 0).
	BlockBytes int64
	// OffloadThreshold is the GPU KV utilization in [0, 1] at or above which computed prompt
	// blocks are offloaded (0 = always).
	OffloadThreshold float64
	// ThrashWindowUs: a reload within this time of the block's store or previous reload is
	// thrashing (0 = 1 s).
	ThrashWindowUs int64
}

// Validate reports the first invalid field.
func (k *KVTierConfig) Validate() error {
	switch {
	case k.CapacityBlocks <= 0:
		return fmt.Errorf("CPU KV tier capacity must be > 0 blocks, got %d", k.CapacityBlocks)
	case math.IsNaN(k.BandwidthGBps) || math.IsInf(k.BandwidthGBps, 0) || k.BandwidthGBps <= 0:
		return fmt.Errorf("CPU KV tier bandwidth must be > 0 GB/s, got %v", k.BandwidthGBps)
	case k.BaseLatencyUs < 0:
		return fmt.Errorf("CPU KV tier base latency must be >= 0, got %d", k.BaseLatencyUs)
	case k.BlockBytes <= 0:
		return fmt.Errorf("CPU KV tier block size must be > 0 bytes, got %d", k.BlockBytes)
	case math.IsNaN(k.OffloadThreshold) || k.OffloadThreshold < 0 || k.OffloadThreshold > 1:
		return fmt.Errorf("CPU KV tier offload threshold must be in [0, 1], got %v", k.OffloadThreshold)
	case k.ThrashWindowUs < 0:
		return fmt.Errorf("CPU KV tier thrashing window must be >= 0, got %d", k.ThrashWindowUs)
	}
	return nil
}

// reloadTime is the time to move n blocks from the tier to GPU memory.
func (k *KVTierConfig) reloadTime(n int32) int64 {
	bytesPerUs := k.BandwidthGBps * 1e3 // 1 GB/s = 1000 bytes/µs
	return k.BaseLatencyUs + int64(math.Ceil(float64(int64(n)*k.BlockBytes)/bytesPerUs))
}

// offload writes the full prompt blocks of a request whose prefill just completed to the tier,
// when the GPU cache is at or above the threshold.
func (s *simulation) offload(in *instance, r *reqState) {
	if in.kv.Utilization() < in.cfg.CPUTier.OffloadThreshold || len(r.hashes) == 0 {
		return
	}
	before := in.tier.Stats().Stored
	in.tier.Store(r.hashes, s.now)
	in.stats.KVOffloadedBlocks += in.tier.Stats().Stored - before
}

// tierMatch returns how many blocks after the k GPU-cached ones of the request's prompt the
// CPU tier can supply (within the claimable prefix).
func (in *instance) tierMatch(r *reqState, k int32) int32 {
	limit := min(in.kv.MaxClaimBlocks(r.input), int32(len(r.hashes)))
	if k >= limit {
		return 0
	}
	return in.tier.Match(r.hashes[k:limit])
}

// reloaded charges the reload of m blocks after the k GPU-cached ones of an admitted request
// to the step being formed.
func (s *simulation) reloaded(in *instance, r *reqState, k, m int32) {
	tc := in.cfg.CPUTier
	window := tc.ThrashWindowUs
	if window == 0 {
		window = 1_000_000
	}
	in.stats.KVThrashingEvents += in.tier.Reload(r.hashes[k:k+m], s.now, window)
	in.stats.KVReloadedBlocks += int64(m)
	in.stats.KVReloadedTokens += int64(m) * int64(in.cfg.BlockSize)
	in.reloadUs += tc.reloadTime(m)
}

// newTier gives in an empty CPU tier when it has one configured.
func (in *instance) newTier() {
	if c := in.cfg.CPUTier; c != nil {
		in.tier = kvcache.NewTier(c.CapacityBlocks)
	}
}
