package sim

import (
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/trace"
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

func runBench(b *testing.B, bc benchCase) { runBenchPolicy(b, bc, "") }

// runBenchPolicy runs a benchmark workload with a policy bundle ("" = no bundle: the
// nil-policy fast path).
func runBenchPolicy(b *testing.B, bc benchCase, bundle string) {
	cfg := benchConfig(bc, benchInstance(b))
	if bundle != "" {
		cfg.Router = nil
		cfg.Policy = parseBundle(b, bundle)
	}
	runConfig(b, bc, cfg)
}

// runConfig runs workload bc under cfg in the benchmark loop, checks that the last run
// completed every request, and returns that run's result.
func runConfig(b *testing.B, bc benchCase, cfg *Config) *Result {
	b.Helper()
	b.ReportAllocs()
	var res *Result
	for b.Loop() {
		var err error
		if res, err = Run(cfg, benchSource(b, bc)); err != nil {
			b.Fatal(err)
		}
	}
	var completed int64
	for i := range res.Instances {
		completed += res.Instances[i].Completed
	}
	if completed != bc.requests {
		b.Fatalf("completed %d of %d", completed, bc.requests)
	}
	return res
}

// BenchmarkSimA is workload A: 1,000 requests, 1 instance, 20 req/s.
func BenchmarkSimA(b *testing.B) { runBench(b, benchA) }

// BenchmarkSimB is workload B: 10,000 requests, 4 instances, 80 req/s.
func BenchmarkSimB(b *testing.B) { runBench(b, benchB) }

// BenchmarkSimC is workload C: 100,000 requests, 16 instances, 320 req/s.
func BenchmarkSimC(b *testing.B) { runBench(b, benchC) }

// Policy pipeline costs on workload B: the default bundle through the pipeline, weighted
// scoring over three load scorers, llm-d's default scoring profile (three scorers including the
// prefix index) as a template and as a CEL expression, and the least-loaded template.
const (
	benchWeightedLoad = "routing: {policy: weighted, scorers: [{name: queue-scorer, weight: 2}, {name: kv-cache-utilization-scorer, weight: 2}, {name: load-aware-scorer, weight: 1}]}"
	benchWeighted     = "routing: {policy: weighted, scorers: [{name: queue-scorer, weight: 2}, {name: kv-cache-utilization-scorer, weight: 2}, {name: prefix-cache-scorer, weight: 3}]}"
	benchCEL          = `routing: {cel: "2.0 * score.queue + 2.0 * score.kvCacheUtilization + 3.0 * score.prefixCache"}`
)

// BenchmarkSimBPolicyRoundRobin is workload B with an explicit round-robin bundle.
func BenchmarkSimBPolicyRoundRobin(b *testing.B) {
	runBenchPolicy(b, benchB, "routing: {policy: round-robin}")
}

// BenchmarkSimBPolicyLeastLoaded is workload B routed by least effective load.
func BenchmarkSimBPolicyLeastLoaded(b *testing.B) {
	runBenchPolicy(b, benchB, "routing: {policy: least-loaded}")
}

// BenchmarkSimBPolicyWeightedLoad is workload B with weighted scoring over three load scorers.
func BenchmarkSimBPolicyWeightedLoad(b *testing.B) { runBenchPolicy(b, benchB, benchWeightedLoad) }

// BenchmarkSimBPolicyWeighted is workload B with llm-d's default profile: queue, KV
// utilization and prefix-cache scorers (the router's prefix index learns every prompt).
func BenchmarkSimBPolicyWeighted(b *testing.B) { runBenchPolicy(b, benchB, benchWeighted) }

// BenchmarkSimBPolicyCEL is workload B with the same profile as a CEL routing expression.
func BenchmarkSimBPolicyCEL(b *testing.B) { runBenchPolicy(b, benchB, benchCEL) }

// runBenchTrace runs workload B with llm-d's default profile and the given trace setting
// (nil = no recorder).
func runBenchTrace(b *testing.B, tc *trace.Config) { runBenchTraceBundle(b, benchWeighted, tc) }

// runBenchTraceBundle runs workload B with bundle and the given trace setting.
func runBenchTraceBundle(b *testing.B, bundle string, tc *trace.Config) {
	cfg := benchConfig(benchB, benchInstance(b))
	cfg.Router = nil
	cfg.Policy = parseBundle(b, bundle)
	cfg.Options.Trace = tc
	b.ReportAllocs()
	for b.Loop() {
		res, err := Run(cfg, benchSource(b, benchB))
		if err != nil {
			b.Fatal(err)
		}
		if tc != nil && res.Trace == nil {
			b.Fatal("no trace")
		}
	}
}

// BenchmarkSimBTraceOff is workload B with llm-d's default profile and no recorder (the
// baseline of the trace benchmarks).
func BenchmarkSimBTraceOff(b *testing.B) { runBenchTrace(b, nil) }

// BenchmarkSimBTraceNone is the same with the anomaly counters (trace level none).
func BenchmarkSimBTraceNone(b *testing.B) {
	runBenchTrace(b, &trace.Config{Level: trace.LevelNone})
}

// BenchmarkSimBTraceDecisions is the same with decision records (sampled, worst, rings, prefix
// lookups for the counterfactuals).
func BenchmarkSimBTraceDecisions(b *testing.B) {
	runBenchTrace(b, &trace.Config{Level: trace.LevelDecisions})
}

// BenchmarkSimBTraceFull adds the batch-formation ring.
func BenchmarkSimBTraceFull(b *testing.B) {
	runBenchTrace(b, &trace.Config{Level: trace.LevelFull})
}

// BenchmarkSimBTraceDecisionsRoundRobin is workload B with a round-robin bundle and decision
// records (the policy reads no snapshots, so records take the live replica state); compare
// with BenchmarkSimBPolicyRoundRobin.
func BenchmarkSimBTraceDecisionsRoundRobin(b *testing.B) {
	runBenchTraceBundle(b, "routing: {policy: round-robin}", &trace.Config{Level: trace.LevelDecisions})
}
