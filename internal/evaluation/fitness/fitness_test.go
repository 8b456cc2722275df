package fitness

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-12 {
		t.Errorf("%s = %.15g, want %.15g", what, got, want)
	}
}

func TestNormalize(t *testing.T) {
	// Unbounded, ref 100: maximize 50 -> 50/150, minimize 300 -> 1/(1+3) = 0.25.
	near(t, "max 50/ref100", Normalize(50, Scale{Ref: 100}, Maximize), 1.0/3)
	near(t, "min 300/ref100", Normalize(300, Scale{Ref: 100}, Minimize), 0.25)
	near(t, "ref maps to 0.5 (max)", Normalize(7, Scale{Ref: 7}, Maximize), 0.5)
	near(t, "ref maps to 0.5 (min)", Normalize(7, Scale{Ref: 7}, Minimize), 0.5)
	near(t, "min 0 is best", Normalize(0, Scale{Ref: 10}, Minimize), 1)
	near(t, "max 0 is worst", Normalize(0, Scale{Ref: 10}, Maximize), 0)
	// Fractions.
	near(t, "fraction max", Normalize(0.8, Scale{Fraction: true}, Maximize), 0.8)
	near(t, "fraction min", Normalize(0.8, Scale{Fraction: true}, Minimize), 0.2)
	near(t, "fraction clamps", Normalize(1.5, Scale{Fraction: true}, Maximize), 1)
	// Garbage is treated as 0.
	near(t, "NaN", Normalize(math.NaN(), Scale{Ref: 1}, Minimize), 1)
	near(t, "negative", Normalize(-3, Scale{Ref: 1}, Maximize), 0)
}

func TestWeightedMean(t *testing.T) {
	objs := []Objective{{Name: "a", Weight: 1}, {Name: "b", Weight: 3}}
	// (1*0.2 + 3*0.6) / 4 = 2.0/4 = 0.5
	near(t, "weighted mean", WeightedMean(objs, []float64{0.2, 0.6}), 0.5)
	near(t, "no weight", WeightedMean([]Objective{{Name: "a"}}, []float64{0.9}), 0)
}

func TestBLISScoreHandComputed(t *testing.T) {
	m := BLISMetrics{RequestsPerSec: 100, TokensPerSec: 30000, TTFTP99Ms: 4, E2EMeanMs: 9}
	w, err := ParseWeights("p99_ttft:0.5, throughput:0.3,tokens_per_sec:0.1,mean_e2e:0.1")
	if err != nil {
		t.Fatal(err)
	}
	score, comps, err := BLISScore(w, m)
	if err != nil {
		t.Fatal(err)
	}
	// throughput 100/(100+100) = 0.5; tokens 30000/40000 = 0.75; p99_ttft 1/(1+4) = 0.2;
	// mean_e2e 1/(1+9) = 0.1. Score = 0.3*0.5 + 0.1*0.75 + 0.5*0.2 + 0.1*0.1 = 0.335.
	near(t, "throughput", comps["throughput"], 0.5)
	near(t, "tokens_per_sec", comps["tokens_per_sec"], 0.75)
	near(t, "p99_ttft", comps["p99_ttft"], 0.2)
	near(t, "mean_e2e", comps["mean_e2e"], 0.1)
	near(t, "score", score, 0.335)
}

func TestParseWeightsErrors(t *testing.T) {
	for in, want := range map[string]string{
		"p99_ttft":                  "expected key:weight",
		"p99_ttft:x":                "is not a number",
		"p99_tft:1":                 "valid keys: throughput, tokens_per_sec, p99_ttft",
		"throughput:-1":             "finite number >= 0",
		"throughput:1,throughput:2": "given twice",
	} {
		if _, err := ParseWeights(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseWeights(%q) = %v, want an error containing %q", in, err, want)
		}
	}
	w, err := ParseWeights("")
	if err != nil || len(w) != 0 {
		t.Errorf("empty weights = %v, %v", w, err)
	}
	if got := FormatWeights(map[string]float64{"throughput": 0.5, "p99_ttft": 2}); got != "p99_ttft:2,throughput:0.5" {
		t.Errorf("FormatWeights = %q", got)
	}
}

func TestParetoRanks(t *testing.T) {
	// Objectives: latency (minimize), throughput (maximize).
	dirs := []Direction{Minimize, Maximize}
	pts := [][]float64{
		{10, 5}, // 0: front (best latency)
		{20, 9}, // 1: front (best throughput)
		{15, 7}, // 2: front (trade-off)
		{20, 5}, // 3: dominated by 0 and 1 and 2 -> rank 1? dominated by 2 (15<20, 7>5) and by 0 -> after removing front: rank 1
		{30, 4}, // 4: dominated by 3 -> rank 2
		{10, 5}, // 5: equal to 0 -> not dominated by it -> front
	}
	got, err := ParetoRanks(pts, dirs)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{0, 0, 0, 1, 2, 0}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ranks = %v, want %v", got, want)
	}
	if !Dominates([]float64{1, 2}, []float64{2, 2}, dirs) || Dominates([]float64{1, 2}, []float64{1, 2}, dirs) {
		t.Error("Dominates is wrong on a strictly better point or on equal points")
	}
	if _, err := ParetoRanks([][]float64{{1}}, dirs); err == nil {
		t.Error("a point with the wrong number of values was accepted")
	}
	if _, err := ParetoRanks([][]float64{{math.NaN(), 1}}, dirs); err == nil {
		t.Error("a NaN value was accepted")
	}
}
