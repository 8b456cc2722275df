// Package fitness turns evaluation metrics into fitness: weighted objectives over named
// metrics, upstream BLIS's --fitness-weights score, and Pareto ranks over sets of results.
//
// Every normalised value is in [0, 1] and higher is better, whatever the objective's
// direction, so that weighted sums of them are meaningful:
//
//   - a fraction (SLO attainment, cache hit rate) is x when maximised and 1 − x when minimised;
//   - an unbounded quantity with reference scale ref is x / (x + ref) when maximised and
//     1 / (1 + x/ref) when minimised (ref maps to 0.5 either way).
//
// BLIS's --fitness-weights use the second rule with BLIS's own reference scales (see
// BLISComponent).
package fitness

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Direction says whether an objective is minimised or maximised.
type Direction string

// The directions.
const (
	// Minimize prefers smaller values.
	Minimize Direction = "minimize"
	// Maximize prefers larger values.
	Maximize Direction = "maximize"
)

// ParseDirection checks a direction name.
func ParseDirection(s string) (Direction, error) {
	switch Direction(s) {
	case Minimize, Maximize:
		return Direction(s), nil
	}
	return "", fmt.Errorf("direction %q is not minimize or maximize", s)
}

// Objective is one fitness objective over a named metric.
type Objective struct {
	// Name is the metric.
	Name string `json:"name"`
	// Direction is minimize or maximize.
	Direction Direction `json:"direction"`
	// Weight is the objective's weight in the score (>= 0).
	Weight float64 `json:"weight"`
}

// Scale describes how a metric is normalised.
type Scale struct {
	// Fraction marks a metric in [0, 1] that is used as is (or 1 − x when minimised).
	Fraction bool
	// Ref is the reference scale of an unbounded metric (> 0): the value that normalises to 0.5.
	Ref float64
}

// Normalize maps the metric value v to [0, 1], higher is better (see the package comment).
// Negative, NaN and infinite values are treated as 0 before normalisation.
func Normalize(v float64, s Scale, d Direction) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		v = 0
	}
	if s.Fraction {
		v = min(v, 1)
		if d == Minimize {
			return 1 - v
		}
		return v
	}
	ref := s.Ref
	if !(ref > 0) {
		ref = 1
	}
	if d == Minimize {
		return 1 / (1 + v/ref)
	}
	return v / (v + ref)
}

// WeightedMean is Σ wᵢ·vᵢ / Σ wᵢ over the objectives' weights and the normalised values (in the
// same order); 0 when every weight is 0.
func WeightedMean(objs []Objective, normalized []float64) float64 {
	var num, den float64
	for i, o := range objs {
		if i >= len(normalized) {
			break
		}
		num += o.Weight * normalized[i]
		den += o.Weight
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// BLIS's reference scales: 100 requests/s, 10,000 tokens/s, and 1 ms of latency.
const (
	blisRefRPS       = 100.0
	blisRefTPS       = 10000.0
	blisRefLatencyMs = 1.0
)

// BLISMetrics are the metrics BLIS's --fitness-weights read. Latencies are in milliseconds.
type BLISMetrics struct {
	// RequestsPerSec and TokensPerSec are the throughputs.
	RequestsPerSec, TokensPerSec float64
	// TTFT and E2E percentiles and means.
	TTFTP99Ms, TTFTP50Ms, TTFTMeanMs float64
	E2EP99Ms, E2EP50Ms, E2EMeanMs    float64
}

// BLISKeys lists the metric keys of --fitness-weights, in BLIS's order.
func BLISKeys() []string {
	return []string{"throughput", "tokens_per_sec", "p99_ttft", "p50_ttft", "mean_ttft", "p99_e2e", "p50_e2e", "mean_e2e"}
}

// BLISComponent is BLIS's normalised component of key: throughput r/(r+100) (requests/s),
// tokens_per_sec t/(t+10000), and for the latencies 1/(1 + ms/1) (BLIS's 1000-tick reference is
// 1 ms). ok is false for an unknown key.
func BLISComponent(key string, m BLISMetrics) (v float64, ok bool) {
	lat := func(ms float64) float64 { return Normalize(ms, Scale{Ref: blisRefLatencyMs}, Minimize) }
	switch key {
	case "throughput":
		return Normalize(m.RequestsPerSec, Scale{Ref: blisRefRPS}, Maximize), true
	case "tokens_per_sec":
		return Normalize(m.TokensPerSec, Scale{Ref: blisRefTPS}, Maximize), true
	case "p99_ttft":
		return lat(m.TTFTP99Ms), true
	case "p50_ttft":
		return lat(m.TTFTP50Ms), true
	case "mean_ttft":
		return lat(m.TTFTMeanMs), true
	case "p99_e2e":
		return lat(m.E2EP99Ms), true
	case "p50_e2e":
		return lat(m.E2EP50Ms), true
	case "mean_e2e":
		return lat(m.E2EMeanMs), true
	}
	return 0, false
}

// CheckWeights reports the first invalid entry of a --fitness-weights map: an unknown key (the
// error lists the valid ones) or a weight that is negative, NaN or infinite.
func CheckWeights(w map[string]float64) error {
	for _, k := range sortedKeys(w) {
		if _, ok := BLISComponent(k, BLISMetrics{}); !ok {
			return fmt.Errorf("unknown fitness metric key %q; valid keys: %s", k, strings.Join(BLISKeys(), ", "))
		}
		if v := w[k]; math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("fitness weight of %q must be a finite number >= 0, got %v", k, v)
		}
	}
	return nil
}

// BLISScore is BLIS's fitness: Σ weight × component over the keys (not divided by the total
// weight), with the components by key. Keys are visited in sorted order.
func BLISScore(w map[string]float64, m BLISMetrics) (score float64, components map[string]float64, err error) {
	if err := CheckWeights(w); err != nil {
		return 0, nil, err
	}
	components = make(map[string]float64, len(w))
	for _, k := range sortedKeys(w) {
		c, _ := BLISComponent(k, m)
		components[k] = c
		score += w[k] * c
	}
	return score, components, nil
}

// ParseWeights parses BLIS's --fitness-weights syntax, "key:weight,key:weight" (spaces around
// items allowed), checking keys and weights. An empty string gives an empty map.
func ParseWeights(s string) (map[string]float64, error) {
	w := map[string]float64{}
	if strings.TrimSpace(s) == "" {
		return w, nil
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		k, v, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("fitness weight %q: expected key:weight", item)
		}
		k = strings.TrimSpace(k)
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return nil, fmt.Errorf("fitness weight of %q: %q is not a number", k, strings.TrimSpace(v))
		}
		if _, dup := w[k]; dup {
			return nil, fmt.Errorf("fitness weight of %q is given twice", k)
		}
		w[k] = f
	}
	if err := CheckWeights(w); err != nil {
		return nil, err
	}
	return w, nil
}

// FormatWeights renders a weight map in --fitness-weights syntax with sorted keys.
func FormatWeights(w map[string]float64) string {
	parts := make([]string, 0, len(w))
	for _, k := range sortedKeys(w) {
		parts = append(parts, k+":"+strconv.FormatFloat(w[k], 'g', -1, 64))
	}
	return strings.Join(parts, ",")
}

// Dominates reports whether point a Pareto-dominates b under dirs: a is no worse in every
// objective and strictly better in at least one.
func Dominates(a, b []float64, dirs []Direction) bool {
	better := false
	for i, d := range dirs {
		x, y := a[i], b[i]
		if d == Minimize {
			x, y = -x, -y
		}
		if x < y {
			return false
		}
		if x > y {
			better = true
		}
	}
	return better
}

// ParetoRanks is non-dominated sorting: rank 0 is the set of points no other point dominates,
// rank 1 the non-dominated points once rank 0 is removed, and so on. Every point must have one
// value per direction. The result does not depend on the order of equal points, and NaN values
// are an error.
func ParetoRanks(points [][]float64, dirs []Direction) ([]int, error) {
	for i, p := range points {
		if len(p) != len(dirs) {
			return nil, fmt.Errorf("point %d has %d values, want %d", i, len(p), len(dirs))
		}
		for _, v := range p {
			if math.IsNaN(v) {
				return nil, fmt.Errorf("point %d has a NaN value", i)
			}
		}
	}
	for _, d := range dirs {
		if d != Minimize && d != Maximize {
			return nil, errors.New("every direction must be minimize or maximize")
		}
	}
	n := len(points)
	dominatedBy := make([]int, n) // number of points dominating i
	dominates := make([][]int, n) // points i dominates, ascending
	for i := range n {
		for j := range n {
			if i != j && Dominates(points[i], points[j], dirs) {
				dominates[i] = append(dominates[i], j)
				dominatedBy[j]++
			}
		}
	}
	ranks := make([]int, n)
	var front []int
	for i := range n {
		if dominatedBy[i] == 0 {
			front = append(front, i)
		}
	}
	for r := 0; len(front) > 0; r++ {
		var next []int
		for _, i := range front {
			ranks[i] = r
			for _, j := range dominates[i] {
				dominatedBy[j]--
				if dominatedBy[j] == 0 {
					next = append(next, j)
				}
			}
		}
		sort.Ints(next)
		front = next
	}
	return ranks, nil
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
