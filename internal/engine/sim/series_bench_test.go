package sim

import "testing"

// BenchmarkSimBSeries is workload B (BenchmarkSimB) with time series recorded: the cost of
// Options.Series is the difference between the two.
func BenchmarkSimBSeries(b *testing.B) {
	cfg := benchConfig(benchB, benchInstance(b))
	cfg.Options.Series = true
	res := runConfig(b, benchB, cfg)
	if res.Series == nil || res.Series.Buckets() > MaxSeriesBuckets {
		b.Fatal("no bounded series recorded")
	}
	var arrivals int64
	for _, a := range res.Series.Arrivals {
		arrivals += a
	}
	if arrivals != benchB.requests {
		b.Fatalf("series count %d arrivals of %d", arrivals, benchB.requests)
	}
}
