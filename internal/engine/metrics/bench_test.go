package metrics

import (
	"math/rand/v2"
	"testing"
)

// steps500K returns the ITL records of a 500,000-step run: integer µs gaps between 5 and 60 ms,
// each shared by 1..256 decode requests (about 64 million gaps in all).
func steps500K() (gaps, counts []int64) {
	r := rand.New(rand.NewPCG(3, 4))
	gaps = make([]int64, 500_000)
	counts = make([]int64, 500_000)
	for i := range gaps {
		gaps[i] = 5000 + r.Int64N(55_000)
		counts[i] = 1 + r.Int64N(256)
	}
	return gaps, counts
}

// BenchmarkWeightedPercentile500K records 500K steps and computes the output's ITL statistics
// (mean, p50, p90, p95, p99): the whole ITL cost of a large run's metrics.
func BenchmarkWeightedPercentile500K(b *testing.B) {
	gaps, counts := steps500K()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		var w WeightedSamples
		for i := range gaps {
			w.Add(float64(gaps[i]), counts[i])
		}
		_ = w.Mean()
		for _, p := range []float64{50, 90, 95, 99} {
			_ = w.PercentileMs(p)
		}
	}
}

// BenchmarkWeightedQuery measures one percentile query on 500K prepared steps.
func BenchmarkWeightedQuery(b *testing.B) {
	gaps, counts := steps500K()
	var w WeightedSamples
	for i := range gaps {
		w.Add(float64(gaps[i]), counts[i])
	}
	w.Percentile(50)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		_ = w.PercentileMs(float64(i % 100))
	}
}

// BenchmarkAddITL measures the per-step hot path of the simulator (amortized; compaction
// included).
func BenchmarkAddITL(b *testing.B) {
	c := NewCollector("instance_0", false)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		c.AddITL(int64(5000+i%20000), 64)
	}
}

// BenchmarkRecordCompleted measures recording a completed request without rows.
func BenchmarkRecordCompleted(b *testing.B) {
	c := NewCollector("instance_0", false)
	c.samples = make([]sample, 0, b.N)
	r := RequestRecord{InputTokens: 1000, OutputTokens: 200, TTFT: 50_000, ITLSum: 2_000_000, E2E: 2_050_000, Class: 1}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c.Completed(&r)
	}
}
