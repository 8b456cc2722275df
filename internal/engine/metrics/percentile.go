package metrics

import (
	"cmp"
	"math"
	"slices"
)

// Percentile returns the p-th percentile (0 <= p <= 100) of sorted, in the same unit, with the
// rule upstream BLIS uses: linear interpolation between the values at the floor and ceiling of
// the rank p/100·(n−1). It returns 0 for an empty slice. sorted must be in ascending order.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	lo, hi, frac := rankOf(int64(len(sorted)), p)
	return interpolate(sorted[lo], sorted[hi], frac)
}

// PercentileMs is Percentile for values in µs, returning ms with BLIS's exact arithmetic
// (lower/1000 + (upper−lower)·frac/1000), so that identical samples give bit-identical output.
func PercentileMs(sortedUs []float64, p float64) float64 {
	if len(sortedUs) == 0 {
		return 0
	}
	lo, hi, frac := rankOf(int64(len(sortedUs)), p)
	return interpolateMs(sortedUs[lo], sortedUs[hi], frac)
}

// rankOf returns the floor and ceiling indices of rank p/100·(n−1) (clamped to the data) and
// the fractional part; n > 0.
func rankOf(n int64, p float64) (lo, hi int64, frac float64) {
	rank := p / 100 * float64(n-1)
	lo = max(0, min(int64(math.Floor(rank)), n-1))
	hi = max(0, min(int64(math.Ceil(rank)), n-1))
	return lo, hi, rank - float64(lo)
}

// interpolate and interpolateMs are the only formulas Percentile, PercentileMs and
// WeightedSamples use, so a weighted set and its expansion give bit-identical results.
func interpolate(lo, hi, frac float64) float64 {
	if lo == hi || frac == 0 {
		return lo
	}
	return lo + (hi-lo)*frac
}

func interpolateMs(lo, hi, frac float64) float64 {
	if lo == hi || frac == 0 {
		return lo / 1000
	}
	return lo/1000 + (hi-lo)*frac/1000
}

// Mean returns the arithmetic mean of values, or 0 when empty.
func Mean(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	var s float64
	for _, v := range values {
		s += v
	}
	return s / float64(len(values))
}

// pair is one distinct value and how many samples carry it.
type pair struct {
	v float64
	c int64
}

// WeightedSamples is a multiset of float64 values given as (value, count) pairs. It answers
// Mean and Percentile exactly as if every value had been repeated count times, without
// materializing the repetitions: the simulator records one inter-token gap per decode step for
// all requests in that step, so a run with 51 million gaps needs only one pair per distinct gap.
//
// Equal values are merged as they are added (a hash index from value to pair, used for lookup
// only and never iterated), so memory is bounded by the number of distinct values, not by the
// number of Add calls; gaps are integer microseconds, so a run has at most a few tens of
// thousands of them. Pairs are sorted once, when a percentile is first asked for.
//
// Sums are kept in float64; for integer values they are exact while below 2^53 (about 285
// years of microseconds), so means do not depend on the order of Add calls.
//
// The zero value is empty and ready to use. Values must not be NaN.
type WeightedSamples struct {
	pairs []pair
	index map[uint64]int32 // value bits -> position in pairs; lookup only
	total int64
	sum   float64
	cum   []int64 // cumulative counts of sorted pairs; valid while len(cum) == len(pairs)
	dirty bool    // pairs changed since the last sort
}

// Add records value v count times. Counts <= 0 are ignored.
func (w *WeightedSamples) Add(v float64, count int64) {
	if count <= 0 {
		return
	}
	w.total += count
	w.sum += v * float64(count)
	// Keyed by bit pattern, which hashes faster than float64 keys; the only values with equal
	// numbers but different bits are ±0, which then occupy two pairs without harm.
	key := math.Float64bits(v)
	if i, ok := w.index[key]; ok {
		w.pairs[i].c += count
		w.cum = w.cum[:0]
		return
	}
	if w.index == nil {
		w.index = make(map[uint64]int32)
	}
	w.index[key] = int32(len(w.pairs))
	w.pairs = append(w.pairs, pair{v, count})
	w.dirty = true
}

// Merge adds every sample of o to w (o is not modified).
func (w *WeightedSamples) Merge(o *WeightedSamples) {
	for _, p := range o.pairs {
		w.Add(p.v, p.c)
	}
}

// Count returns the number of samples (the sum of counts).
func (w *WeightedSamples) Count() int64 { return w.total }

// Sum returns the sum of all samples.
func (w *WeightedSamples) Sum() float64 { return w.sum }

// Distinct returns the number of distinct values.
func (w *WeightedSamples) Distinct() int { return len(w.pairs) }

// Mean returns the mean of all samples, or 0 when empty.
func (w *WeightedSamples) Mean() float64 {
	if w.total == 0 {
		return 0
	}
	return w.sum / float64(w.total)
}

// Percentile returns the p-th percentile of the samples by the rule of Percentile applied to the
// expanded, sorted sample list. The first call after new values were added sorts the distinct
// values (O(d log d)); later calls are O(log d).
func (w *WeightedSamples) Percentile(p float64) float64 {
	if w.total == 0 {
		return 0
	}
	w.prepare()
	lo, hi, frac := rankOf(w.total, p)
	return interpolate(w.at(lo), w.at(hi), frac)
}

// PercentileMs is Percentile for samples in µs, returning ms with PercentileMs's arithmetic.
func (w *WeightedSamples) PercentileMs(p float64) float64 {
	if w.total == 0 {
		return 0
	}
	w.prepare()
	lo, hi, frac := rankOf(w.total, p)
	return interpolateMs(w.at(lo), w.at(hi), frac)
}

// at returns the value at index k of the expanded sorted list; prepare must have run.
func (w *WeightedSamples) at(k int64) float64 {
	// cum[i] is the number of samples with values <= pairs[i].v; find the first cum[i] > k.
	i, _ := slices.BinarySearch(w.cum, k+1)
	return w.pairs[i].v
}

// prepare sorts the pairs by value (re-pointing the index) and builds the cumulative counts.
func (w *WeightedSamples) prepare() {
	if w.dirty {
		slices.SortFunc(w.pairs, func(a, b pair) int { return cmp.Compare(a.v, b.v) })
		for i, p := range w.pairs {
			w.index[math.Float64bits(p.v)] = int32(i)
		}
		w.dirty = false
		w.cum = w.cum[:0]
	}
	if len(w.cum) == len(w.pairs) {
		return
	}
	w.cum = slices.Grow(w.cum[:0], len(w.pairs))
	var run int64
	for _, p := range w.pairs {
		run += p.c
		w.cum = append(w.cum, run)
	}
}
