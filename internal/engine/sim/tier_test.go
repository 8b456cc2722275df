package sim

import (
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/metrics"
)

// tierWorkload is a workload of 20 shared 1024-token prefixes (64 blocks each, 1280 in all) with
// short unique suffixes: its working set exceeds a 400-block GPU cache.
func tierWorkload() *sliceSource {
	return &sliceSource{reqs: gen(genSpec{n: 600, gapUs: 20_000, inMean: 64, inStd: 16, outMean: 16, outSd: 4,
		prefixLen: 1024, prefixGroups: 20, seed: 5})}
}

func tieredInstance(tier *KVTierConfig) InstanceConfig {
	ic := testInstance(plainModel())
	ic.TotalKVBlocks = 400
	ic.MaxNumSeqs = 4
	ic.CPUTier = tier
	return ic
}

func TestCPUTierRaisesCacheHitRate(t *testing.T) {
	run := func(tier *KVTierConfig) (*Result, metrics.Output) {
		cfg := &Config{Instances: []InstanceConfig{tieredInstance(tier)}, Options: Options{CheckInvariants: true}}
		src := tierWorkload()
		res, err := Run(cfg, src)
		if err != nil {
			t.Fatal(err)
		}
		return res, res.Report(src.Tables(), metrics.Options{}).Cluster
	}
	gpu, gpuOut := run(nil)
	tier := &KVTierConfig{CapacityBlocks: 4000, BandwidthGBps: 20, BaseLatencyUs: 100, BlockBytes: 2 << 20}
	cpu, cpuOut := run(tier)
	hit := func(o metrics.Output) float64 {
		if o.CacheHitRate == nil {
			t.Fatal("no cache hit rate")
		}
		return *o.CacheHitRate
	}
	st := cpu.Instances[0]
	t.Logf("hit rate GPU only %.3f, with CPU tier %.3f; offloaded %d, reloaded %d, thrashing %d; TTFT mean %.1f -> %.1f ms",
		hit(gpuOut), hit(cpuOut), st.KVOffloadedBlocks, st.KVReloadedBlocks, st.KVThrashingEvents, gpuOut.TTFTMeanMs, cpuOut.TTFTMeanMs)
	if !(hit(cpuOut) > hit(gpuOut)+0.2) {
		t.Errorf("the CPU tier should raise the hit rate well above %.3f, got %.3f", hit(gpuOut), hit(cpuOut))
	}
	if st.KVReloadedBlocks == 0 || st.KVOffloadedBlocks == 0 {
		t.Errorf("no offloads or reloads: %+v", st)
	}
	if gpu.Instances[0].KVReloadedBlocks != 0 {
		t.Error("a GPU-only run reloaded blocks")
	}
	if cpuOut.CompletedRequests != gpuOut.CompletedRequests {
		t.Errorf("completed %d with the tier, %d without", cpuOut.CompletedRequests, gpuOut.CompletedRequests)
	}

	// Reloads cost time: at a tiny bandwidth the same hits make TTFT worse than recomputing.
	slow := *tier
	slow.BandwidthGBps = 0.01
	_, slowOut := run(&slow)
	if !(slowOut.TTFTMeanMs > cpuOut.TTFTMeanMs) {
		t.Errorf("TTFT at 0.01 GB/s (%.1f ms) should exceed TTFT at 20 GB/s (%.1f ms)", slowOut.TTFTMeanMs, cpuOut.TTFTMeanMs)
	}

	// A tier too small to hold the working set with a short window thrashes.
	small := *tier
	small.CapacityBlocks = 300
	small.ThrashWindowUs = 60_000_000
	sres, _ := run(&small)
	if sres.Instances[0].KVThrashingEvents == 0 {
		t.Error("no thrashing with a long window")
	}
}

func TestCPUTierValidation(t *testing.T) {
	for _, c := range []struct {
		tier KVTierConfig
		want string
	}{
		{KVTierConfig{CapacityBlocks: 0, BandwidthGBps: 1, BlockBytes: 1}, "capacity"},
		{KVTierConfig{CapacityBlocks: 1, BandwidthGBps: 0, BlockBytes: 1}, "bandwidth"},
		{KVTierConfig{CapacityBlocks: 1, BandwidthGBps: -2, BlockBytes: 1}, "bandwidth"},
		{KVTierConfig{CapacityBlocks: 1, BandwidthGBps: 1, BlockBytes: 0}, "block size"},
		{KVTierConfig{CapacityBlocks: 1, BandwidthGBps: 1, BlockBytes: 1, OffloadThreshold: 1.5}, "threshold"},
	} {
		tier := c.tier
		cfg := &Config{Instances: []InstanceConfig{tieredInstance(&tier)}}
		if _, err := Run(cfg, &sliceSource{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.tier, err, c.want)
		}
	}
}
