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
}

func addTierFlags(fl *pflag.FlagSet, f *tierFlags) {
	fl.Int64Var(&f.cpuBlocks, "kv-cpu-blocks", 0, "CPU KV tier capacity in blocks per instance (0 = GPU KV only)")
	fl.Float64Var(&f.bandwidthGBps, "kv-cpu-bandwidth-gbps", 32, "GPU<->CPU KV transfer bandwidth in GB/s")
	fl.Int64Var(&f.baseLatencyUs, "kv-cpu-base-latency-us", 0, "fixed cost of one CPU-tier reload in microseconds")
	fl.Float64Var(&f.threshold, "kv-offload-threshold", 0, "GPU KV utilization in [0, 1] at or above which computed prompt blocks are offloaded")
	fl.Int64Var(&f.thrashUs, "kv-thrash-window-us", 0, "a reload within this time of the block's previous move counts as KV thrashing (0 = 1 s)")
}

// cpuTier returns the instance's CPU KV tier from the flags (nil without --kv-cpu-blocks).
func cpuTier(fl *pflag.FlagSet, f *tierFlags, r *model.Resolved) (*sim.KVTierConfig, error) {
	if f.cpuBlocks == 0 {
		for _, n := range []string{"kv-cpu-bandwidth-gbps", "kv-cpu-base-latency-us", "kv-offload-threshold", "kv-thrash-window-us"} {
			if fl.Changed(n) {
				return nil, fmt.Errorf("--%s needs --kv-cpu-blocks", n)
			}
		}
		return nil, nil
	}
	if f.cpuBlocks < 0 || f.cpuBlocks > 1<<31-1 {
		return nil, fmt.Errorf("--kv-cpu-blocks must be in [1, %d], got %d", 1<<31-1, f.cpuBlocks)
	}
	t := &sim.KVTierConfig{
		CapacityBlocks: int32(f.cpuBlocks), BandwidthGBps: f.bandwidthGBps, BaseLatencyUs: f.baseLatencyUs,
		BlockBytes:       r.Model.KVCacheBytesPerToken() * r.Engine.BlockSize,
		OffloadThreshold: f.threshold, ThrashWindowUs: f.thrashUs,
	}
	return t, t.Validate()
}
