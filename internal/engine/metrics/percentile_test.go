package metrics

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestPercentileBLISRule(t *testing.T) {
	cases := []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
	}{
		{"empty", nil, 99, 0},
		{"n=1 p99", []float64{5}, 99, 5},
		{"n=1 p0", []float64{5}, 0, 5},
		{"n=4 p50: rank 1.5", []float64{1, 2, 3, 4}, 50, 2.5},
		{"n=4 p99: rank 2.97", []float64{1, 2, 3, 4}, 99, 3.97},
		{"n=5 p90: rank 3.6", []float64{10, 20, 30, 40, 50}, 90, 46},
		{"n=5 p95: rank 3.8", []float64{10, 20, 30, 40, 50}, 95, 48},
		{"n=5 p50 exact index", []float64{10, 20, 30, 40, 50}, 50, 30},
		{"n=2 p99: rank 0.99", []float64{100, 200}, 99, 199},
		{"p0 is min", []float64{3, 7, 9}, 0, 3},
		{"p100 is max", []float64{3, 7, 9}, 100, 9},
		{"ties", []float64{1, 1, 1, 9}, 50, 1},
	}
	for _, c := range cases {
		if got := Percentile(c.sorted, c.p); !near(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func TestPercentileMsUsesBLISArithmetic(t *testing.T) {
	us := []float64{5000, 5000, 5000, 7000}
	// rank 0.95·3 = 2.8499999999999996: BLIS computes 5000/1000 + 2000·frac/1000.
	p, n := 95.0, 3.0 // variables: constant arithmetic would be exact
	rank := p / 100 * n
	want := 5000.0/1000 + 2000*(rank-2)/1000
	if got := PercentileMs(us, 95); got != want {
		t.Errorf("PercentileMs = %v, want %v", got, want)
	}
	if PercentileMs(nil, 50) != 0 || PercentileMs([]float64{1500}, 99) != 1.5 {
		t.Error("PercentileMs edge cases")
	}
	if d := PercentileMs(us, 95) - Percentile(us, 95)/1000; d > 1e-12 || d < -1e-12 {
		t.Errorf("PercentileMs and Percentile/1000 differ by %v", d)
	}
}

func near(a, b float64) bool {
	d := a - b
	return d < 1e-9 && d > -1e-9
}

func TestMean(t *testing.T) {
	if Mean(nil) != 0 || Mean([]float64{1, 2, 6}) != 3 {
		t.Error("Mean")
	}
}

// expand materializes the weighted samples the slow way.
func expand(vals []float64, counts []int64) []float64 {
	var out []float64
	for i, v := range vals {
		for range counts[i] {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

var testPs = []float64{0, 0.1, 1, 10, 25, 33.3, 50, 66.7, 75, 90, 95, 99, 99.9, 100}

func TestWeightedSamplesEqualExpandedSamples(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for trial := range 30 {
		// Sizes below and well above the compaction threshold.
		n := []int{1, 2, 3, 17, 500, 9000}[trial%6]
		var w WeightedSamples
		vals := make([]float64, n)
		counts := make([]int64, n)
		for i := range n {
			if trial%2 == 0 {
				vals[i] = float64(1000 + r.IntN(200)) // integer µs with many repeats
			} else {
				vals[i] = r.Float64() * 50 // distinct, non-integer
			}
			counts[i] = int64(1 + r.IntN(20))
			w.Add(vals[i], counts[i])
			if i%1000 == 999 {
				// Interleave queries with adds: state must stay consistent.
				_ = w.Percentile(50)
			}
		}
		ex := expand(vals, counts)
		if w.Count() != int64(len(ex)) {
			t.Fatalf("trial %d: count %d, expanded %d", trial, w.Count(), len(ex))
		}
		for _, p := range testPs {
			if got, want := w.Percentile(p), Percentile(ex, p); got != want {
				t.Fatalf("trial %d (n=%d): p%v = %v, expanded %v", trial, n, p, got, want)
			}
			if got, want := w.PercentileMs(p), PercentileMs(ex, p); got != want {
				t.Fatalf("trial %d (n=%d): ms p%v = %v, expanded %v", trial, n, p, got, want)
			}
		}
		want := Mean(ex)
		if trial%2 == 0 && w.Mean() != want {
			t.Fatalf("trial %d: integer mean %v, expanded %v (must be exact)", trial, w.Mean(), want)
		}
		if d := w.Mean() - want; d > 1e-9*want || d < -1e-9*want {
			t.Fatalf("trial %d: mean %v, expanded %v", trial, w.Mean(), want)
		}
	}
}

func TestWeightedSamplesMergeAndIgnoredCounts(t *testing.T) {
	var a, b, all WeightedSamples
	a.Add(10, 2)
	a.Add(30, 1)
	a.Add(99, 0)  // ignored
	a.Add(99, -3) // ignored
	b.Add(20, 3)
	all.Merge(&a)
	all.Merge(&b)
	all.Merge(&WeightedSamples{})
	// Expanded: 10 10 20 20 20 30 -> p50 at rank 2.5 = 20, p90 at rank 4.5 = 25.
	if all.Count() != 6 || all.Percentile(50) != 20 || all.Percentile(90) != 25 {
		t.Errorf("count %d p50 %v p90 %v", all.Count(), all.Percentile(50), all.Percentile(90))
	}
	if all.Mean() != 110.0/6 || all.Sum() != 110 {
		t.Errorf("mean %v sum %v", all.Mean(), all.Sum())
	}
	if a.Count() != 3 || b.Count() != 3 {
		t.Error("Merge modified its argument")
	}
	var empty WeightedSamples
	if empty.Percentile(99) != 0 || empty.Mean() != 0 {
		t.Error("empty samples not zero")
	}
}

func TestWeightedSamplesMemoryBoundedByDistinctValues(t *testing.T) {
	var w WeightedSamples
	r := rand.New(rand.NewPCG(1, 1))
	for range 1_000_000 {
		w.Add(float64(5000+r.IntN(300)), int64(1+r.IntN(64)))
	}
	if w.Distinct() != 300 {
		t.Errorf("%d pairs stored for 300 distinct values", w.Distinct())
	}
}
