package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/inference-sim/blis-operator/internal/engine/model"
	"github.com/inference-sim/blis-operator/internal/engine/sim"
)

// pdFlags are the prefill/decode disaggregation flags of `blis run`: --prefill-instances of the
// --num-instances form the prefill pool, the rest the decode pool.
type pdFlags struct {
	prefill         int
	decider         string
	nonCachedTokens int
	bandwidthGBps   float64
	baseLatencyUs   int64
}

func addPDFlags(fl *pflag.FlagSet, f *pdFlags) {
	fl.IntVar(&f.prefill, "prefill-instances", 0, "disaggregate: the first this many instances form the prefill pool, the rest the decode pool (0 = monolithic)")
	fl.StringVar(&f.decider, "pd-decider", string(sim.DecideAlways), "which requests are disaggregated: never, always or prefix-threshold")
	fl.IntVar(&f.nonCachedTokens, "pd-non-cached-tokens", 0, "prefix-threshold: disaggregate when more prompt tokens than this are not cached on the best decode instance")
	fl.Float64Var(&f.bandwidthGBps, "pd-transfer-bandwidth-gbps", 25, "KV transfer link bandwidth in GB/s, shared by all transfers")
	fl.Int64Var(&f.baseLatencyUs, "pd-transfer-base-latency-us", 0, "fixed cost of one KV transfer in microseconds")
}

// pdConfig returns the run's disaggregation (nil without --prefill-instances).
func pdConfig(fl *pflag.FlagSet, f *pdFlags, instances int, r *model.Resolved) (*sim.PDConfig, error) {
	if f.prefill == 0 {
		for _, n := range []string{"pd-decider", "pd-non-cached-tokens", "pd-transfer-bandwidth-gbps", "pd-transfer-base-latency-us"} {
			if fl.Changed(n) {
				return nil, fmt.Errorf("--%s needs --prefill-instances (prefill and decode pools)", n)
			}
		}
		return nil, nil
	}
	if f.nonCachedTokens < 0 || f.nonCachedTokens > 1<<31-1 {
		return nil, fmt.Errorf("--pd-non-cached-tokens must be in [0, %d], got %d", 1<<31-1, f.nonCachedTokens)
	}
	c := &sim.PDConfig{
		PrefillInstances: f.prefill, Decider: sim.PDDecider(f.decider), NonCachedTokens: int32(f.nonCachedTokens),
		BandwidthGBps: f.bandwidthGBps, BaseLatencyUs: f.baseLatencyUs, BytesPerToken: r.Model.KVCacheBytesPerToken(),
	}
	return c, c.Validate(instances)
}
