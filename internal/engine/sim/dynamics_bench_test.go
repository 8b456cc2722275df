package sim

import (
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

// BenchmarkSimBDynamics is workload B with autoscaling (threshold, 2..4 replicas, evaluations
// every second, 30 s provisioning, 20 s model load, 5 s warm-up) and a CPU KV tier on every
// replica: the cost of both features against BenchmarkSimB.
func BenchmarkSimBDynamics(b *testing.B) {
	inst := benchInstance(b)
	inst.CPUTier = &KVTierConfig{CapacityBlocks: 50_000, BandwidthGBps: 32, BaseLatencyUs: 20, BlockBytes: 2 << 20}
	cfg := benchConfig(benchB, inst)
	cfg.Autoscale = &AutoscaleConfig{
		Policy:      policy.AutoscaleSpec{Template: policy.AutoscaleThreshold},
		MinReplicas: 2, MaxReplicas: 4, InitialReplicas: 4,
		IntervalUs: 1_000_000, ScaleDownCooldownUs: 30_000_000,
		Provisioning: Delay{MeanUs: 30_000_000}, ModelLoad: Delay{MeanUs: 20_000_000}, Warmup: Delay{MeanUs: 5_000_000},
	}
	as := runConfig(b, benchB, cfg).Autoscale
	b.ReportMetric(float64(as.ScaleUps+as.ScaleDowns), "scale-actions")
}

// BenchmarkSimBDisaggregated is workload B on 2 prefill + 2 decode instances (always
// disaggregate, 25 GB/s link) with a CPU KV tier on every instance.
func BenchmarkSimBDisaggregated(b *testing.B) {
	inst := benchInstance(b)
	inst.CPUTier = &KVTierConfig{CapacityBlocks: 50_000, BandwidthGBps: 32, BaseLatencyUs: 20, BlockBytes: 2 << 20}
	cfg := benchConfig(benchB, inst)
	cfg.PD = &PDConfig{PrefillInstances: 2, Decider: DecideAlways, BandwidthGBps: 25, BaseLatencyUs: 50, BytesPerToken: 128 << 10}
	runConfig(b, benchB, cfg)
}

// BenchmarkSimBAllDynamics is workload B with all three cluster dynamics on: 2 + 2 prefill and
// decode slots (always disaggregate, 25 GB/s link), each pool autoscaled on its own
// (queue-depth, 1..2 replicas, both ready at first, evaluations every second, the
// BenchmarkSimBDynamics delays; each pool scales down once) and a CPU KV tier on every instance: the speed criterion against
// BenchmarkSimB (within 2x).
func BenchmarkSimBAllDynamics(b *testing.B) {
	inst := benchInstance(b)
	inst.CPUTier = &KVTierConfig{CapacityBlocks: 50_000, BandwidthGBps: 32, BaseLatencyUs: 20, BlockBytes: 2 << 20}
	cfg := benchConfig(benchB, inst)
	cfg.PD = &PDConfig{PrefillInstances: 2, Decider: DecideAlways, BandwidthGBps: 25, BaseLatencyUs: 50, BytesPerToken: 128 << 10}
	cfg.Autoscale = &AutoscaleConfig{
		Policy:     policy.AutoscaleSpec{Template: policy.AutoscaleQueueDepth},
		Prefill:    &PoolBounds{MinReplicas: 1, MaxReplicas: 2, InitialReplicas: 2},
		Decode:     &PoolBounds{MinReplicas: 1, MaxReplicas: 2, InitialReplicas: 2},
		IntervalUs: 1_000_000, ScaleDownCooldownUs: 30_000_000,
		Provisioning: Delay{MeanUs: 30_000_000}, ModelLoad: Delay{MeanUs: 20_000_000}, Warmup: Delay{MeanUs: 5_000_000},
	}
	as := runConfig(b, benchB, cfg).Autoscale
	b.ReportMetric(float64(as.ScaleUps+as.ScaleDowns), "scale-actions")
}
