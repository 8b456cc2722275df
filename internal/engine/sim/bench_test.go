package sim

import (
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// benchCase is one of the reference workloads: llama-3.1-8b on H100 (TP1), input and
// output 512±256 tokens, constant arrivals, round-robin routing, seed 42.
type benchCase struct {
	requests  int64
	instances int
	rate      float64
}

var (
	benchA = benchCase{1_000, 1, 20}
	benchB = benchCase{10_000, 4, 80}
	benchC = benchCase{100_000, 16, 320}
)

func benchConfig(bc benchCase, inst InstanceConfig) *Config {
	cfg := &Config{Seed: 42, Router: RoundRobin}
	for range bc.instances {
		cfg.Instances = append(cfg.Instances, inst)
	}
	return cfg
}

func benchSource(b *testing.B, bc benchCase) workload.Source {
	dc := workload.DefaultDistributionConfig()
	dc.Rate, dc.NumRequests = bc.rate, bc.requests
	src, err := workload.NewDistribution(dc, 42)
	if err != nil {
		b.Fatal(err)
	}
	return src
}

func runBench(b *testing.B, bc benchCase) {
	cfg := benchConfig(bc, benchInstance(b))
	b.ReportAllocs()
	var completed int
	for b.Loop() {
		res, err := Run(cfg, benchSource(b, bc))
		if err != nil {
			b.Fatal(err)
		}
		completed = 0
		for i := range res.Instances {
			completed += int(res.Instances[i].Completed)
		}
	}
	if int64(completed) != bc.requests {
		b.Fatalf("completed %d of %d", completed, bc.requests)
	}
}

// BenchmarkSimA is workload A: 1,000 requests, 1 instance, 20 req/s.
func BenchmarkSimA(b *testing.B) { runBench(b, benchA) }

// BenchmarkSimB is workload B: 10,000 requests, 4 instances, 80 req/s.
func BenchmarkSimB(b *testing.B) { runBench(b, benchB) }

// BenchmarkSimC is workload C: 100,000 requests, 16 instances, 320 req/s.
func BenchmarkSimC(b *testing.B) { runBench(b, benchC) }
