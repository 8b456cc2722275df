package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/inference-sim/blis-operator/internal/engine/model"
	"github.com/inference-sim/blis-operator/internal/engine/sim"
)

// tierFlags are the CPU KV tier flags of `blis run` (after BLIS's --kv-cpu-blocks; the
// bandwidth is in GB/s and the latency in µs here).
type tierFlags struct {
	cpuBlocks     int64
	bandwidthGBps float64
	baseLatencyUs int64
	threshold     float64
	thrashUs      int64
	// lower are the filesystem and object-store tiers below the CPU tier.
	lower [2]lowerTierFlags
}

// lowerTierFlags are one tier below the CPU tier: --kv-<name>-blocks, -bandwidth-gbps and
// -base-latency-us.
type lowerTierFlags struct {
	blocks        int64
	bandwidthGBps float64
	baseLatencyUs int64
}

// lowerTiers name the tiers below the CPU tier in chain order: flag prefix, kind and defaults.
var lowerTiers = [2]struct {
	flag, kind, title string
	bandwidthGBps     float64
	baseLatencyUs     int64
}{
	{"kv-fs", sim.TierFilesystem, "filesystem", 4, 100},
	{"kv-object-store", sim.TierObjectStore, "object-store", 1, 10_000},
}

func addTierFlags(fl *pflag.FlagSet, f *tierFlags) {
	fl.Int64Var(&f.cpuBlocks, "kv-cpu-blocks", 0, "CPU KV tier capacity in blocks per instance (0 = GPU KV only)")
	fl.Float64Var(&f.bandwidthGBps, "kv-cpu-bandwidth-gbps", 32, "GPU<->CPU KV transfer bandwidth in GB/s")
	fl.Int64Var(&f.baseLatencyUs, "kv-cpu-base-latency-us", 0, "fixed cost of one CPU-tier reload in microseconds")
	fl.Float64Var(&f.threshold, "kv-offload-threshold", 0, "GPU KV utilization in [0, 1] at or above which computed prompt blocks are offloaded")
	fl.Int64Var(&f.thrashUs, "kv-thrash-window-us", 0, "a reload within this time of the block's previous move counts as KV thrashing (0 = 1 s)")
	for i, t := range lowerTiers {
		l := &f.lower[i]
		fl.Int64Var(&l.blocks, t.flag+"-blocks", 0, fmt.Sprintf("%s KV tier capacity in blocks per instance, below the CPU tier (0 = none)", t.title))
		fl.Float64Var(&l.bandwidthGBps, t.flag+"-bandwidth-gbps", t.bandwidthGBps, fmt.Sprintf("%s KV tier read bandwidth in GB/s", t.title))
		fl.Int64Var(&l.baseLatencyUs, t.flag+"-base-latency-us", t.baseLatencyUs, fmt.Sprintf("fixed cost of one %s-tier reload in microseconds", t.title))
	}
}

// cpuTier returns the instance's KV tier chain from the flags (nil without --kv-cpu-blocks,
// --kv-fs-blocks or --kv-object-store-blocks): the CPU tier, then the filesystem and
// object-store tiers, each when given.
func cpuTier(fl *pflag.FlagSet, f *tierFlags, r *model.Resolved) (*sim.KVTierConfig, error) {
	blockBytes := r.Model.KVCacheBytesPerToken() * r.Engine.BlockSize
	var head, last *sim.KVTierConfig
	link := func(t *sim.KVTierConfig) {
		if head == nil {
			head, t.OffloadThreshold, t.ThrashWindowUs = t, f.threshold, f.thrashUs
		} else {
			last.Next = t
		}
		last = t
	}
	if f.cpuBlocks != 0 {
		if f.cpuBlocks < 0 || f.cpuBlocks > 1<<31-1 {
			return nil, fmt.Errorf("--kv-cpu-blocks must be in [1, %d], got %d", 1<<31-1, f.cpuBlocks)
		}
		link(&sim.KVTierConfig{CapacityBlocks: int32(f.cpuBlocks), BandwidthGBps: f.bandwidthGBps, BaseLatencyUs: f.baseLatencyUs, BlockBytes: blockBytes})
	} else {
		for _, n := range []string{"kv-cpu-bandwidth-gbps", "kv-cpu-base-latency-us"} {
			if fl.Changed(n) {
				return nil, fmt.Errorf("--%s needs --kv-cpu-blocks", n)
			}
		}
	}
	for i, t := range lowerTiers {
		l := &f.lower[i]
		if l.blocks == 0 {
			for _, n := range []string{t.flag + "-bandwidth-gbps", t.flag + "-base-latency-us"} {
				if fl.Changed(n) {
					return nil, fmt.Errorf("--%s needs --%s-blocks", n, t.flag)
				}
			}
			continue
		}
		if l.blocks < 0 || l.blocks > 1<<31-1 {
			return nil, fmt.Errorf("--%s-blocks must be in [1, %d], got %d", t.flag, 1<<31-1, l.blocks)
		}
		link(&sim.KVTierConfig{Kind: t.kind, CapacityBlocks: int32(l.blocks), BandwidthGBps: l.bandwidthGBps, BaseLatencyUs: l.baseLatencyUs, BlockBytes: blockBytes})
	}
	if head == nil {
		for _, n := range []string{"kv-offload-threshold", "kv-thrash-window-us"} {
			if fl.Changed(n) {
				return nil, fmt.Errorf("--%s needs --kv-cpu-blocks, --kv-fs-blocks or --kv-object-store-blocks", n)
			}
		}
		return nil, nil
	}
	return head, head.Validate()
}
