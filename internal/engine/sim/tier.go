package sim

import (
	"fmt"
	"math"

	"github.com/inference-sim/blis-operator/internal/engine/kvcache"
)

// This file is the KV tier chain of an instance (InstanceConfig.CPUTier, its first tier).
//
// Model: when a request's prefill completes while the GPU cache's utilization is at or above
// the offload threshold, its full prompt blocks are written to the first tier (write-through, as
// vLLM's CPU offloading connector stores computed blocks; the copy runs beside the engine and is
// not charged to the step). Each tier is an LRU of block hashes with a capacity in blocks, in
// the order cpu -> filesystem -> object-store; a block a tier evicts is demoted to the next one
// (not charged either). When a request is admitted, the longest run of blocks of its prompt that
// follow its GPU prefix hit and are held in the chain are reloaded, each from the highest tier
// holding it: they take GPU blocks like computed ones, need no prefill, and the step that admits
// the request takes, per tier read from, base latency + bytes / bandwidth longer (the reload
// blocks the batch); blocks read from below then move up to the first tier. A reload of a block
// that moved (was stored or reloaded) less than the thrashing window ago counts as KV thrashing:
// the GPU cache lost it again right away. Reloaded blocks count as prefix-cache hits.

// KVTierConfig is a KV tier of one instance (the first of its chain, or one below).
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
	// Kind is the tier's storage: TierCPU (""), TierFilesystem or TierObjectStore. The chain
	// runs cpu -> filesystem -> object-store, each kind at most once.
	Kind string
	// Next is the tier below this one (nil: the last), which receives the blocks this one
	// evicts; its BlockBytes, OffloadThreshold and ThrashWindowUs are unused (the first
	// tier's apply).
	Next *KVTierConfig
}

// The kinds of KV tier, in chain order.
const (
	TierCPU         = "cpu"
	TierFilesystem  = "filesystem"
	TierObjectStore = "object-store"
)

// tierRank is the position of a tier kind in the chain (-1: unknown).
func tierRank(kind string) int {
	switch kind {
	case "", TierCPU:
		return 0
	case TierFilesystem:
		return 1
	case TierObjectStore:
		return 2
	}
	return -1
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
	case tierRank(k.Kind) < 0:
		return fmt.Errorf("KV tier kind must be cpu, filesystem or object-store, got %q", k.Kind)
	}
	if n := k.Next; n != nil {
		if tierRank(n.Kind) <= tierRank(k.Kind) {
			return fmt.Errorf("KV tier %s cannot be below %s (the order is cpu, filesystem, object-store, each at most once)", tierName(n.Kind), tierName(k.Kind))
		}
		if err := n.Validate(); err != nil {
			return fmt.Errorf("%s KV tier: %w", tierName(n.Kind), err)
		}
	}
	return nil
}

// tierName is a tier kind for messages.
func tierName(kind string) string {
	if kind == "" {
		return TierCPU
	}
	return kind
}

// maxTiers is the longest tier chain (cpu, filesystem, object-store).
const maxTiers = 3

// reloadTime is the time to move n blocks of blockBytes from the tier to GPU memory.
func (k *KVTierConfig) reloadTime(n int32, blockBytes int64) int64 {
	bytesPerUs := k.BandwidthGBps * 1e3 // 1 GB/s = 1000 bytes/µs
	return k.BaseLatencyUs + int64(math.Ceil(float64(int64(n)*blockBytes)/bytesPerUs))
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
	return in.tier.MatchChain(r.hashes[k:limit])
}

// reloaded charges the reload of m blocks after the k GPU-cached ones of an admitted request
// to the step being formed.
func (s *simulation) reloaded(in *instance, r *reqState, k, m int32) {
	tc := in.cfg.CPUTier
	window := tc.ThrashWindowUs
	if window == 0 {
		window = 1_000_000
	}
	var per [maxTiers]int32
	in.stats.KVThrashingEvents += in.tier.ReloadChain(r.hashes[k:k+m], s.now, window, per[:])
	in.stats.KVReloadedBlocks += int64(m)
	in.stats.KVReloadedTokens += int64(m) * int64(in.cfg.BlockSize)
	// Each tier read from charges its base latency once and its blocks' bytes at its bandwidth;
	// a block's size is the instance's, the first tier's BlockBytes.
	bb := tc.BlockBytes
	for d, c := 0, tc; c != nil; d, c = d+1, c.Next {
		if per[d] > 0 {
			in.reloadUs += c.reloadTime(per[d], bb)
		}
	}
}

// newTier gives in an empty CPU tier when it has one configured.
func (in *instance) newTier() {
	if c := in.cfg.CPUTier; c != nil {
		in.tier = kvcache.NewTier(c.CapacityBlocks)
		for t := in.tier; c.Next != nil; t = t.Next() {
			c = c.Next
			t.Chain(kvcache.NewTier(c.CapacityBlocks))
		}
	}
}
