package workload

import (
	"math"
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/rng"
)

func samples(t *testing.T, d DistSpec, n int) []float64 {
	t.Helper()
	s, err := newSampler("d", &d, "")
	if err != nil {
		t.Fatal(err)
	}
	r := rng.Derive(3, "dist")
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(s.tokens(r))
	}
	return out
}

func TestLengthDistributions(t *testing.T) {
	const n = 100_000
	// Lognormal: mean exp(mu + sigma²/2) = exp(5.125) ≈ 168.2.
	m, _ := meanCV(samples(t, DistSpec{Type: "lognormal", Params: map[string]float64{"mu": 5, "sigma": 0.5}}, n))
	within(t, "lognormal mean", m, math.Exp(5.125), 0.02)
	for _, v := range samples(t, DistSpec{Type: "lognormal", Params: map[string]float64{"mu": 5, "sigma": 2, "min": 50, "max": 400}}, 2000) {
		if v < 50 || v > 400 {
			t.Fatalf("clamped lognormal sample %g", v)
		}
	}
	// Pareto part only (mix_weight 1): P(X > 2·xm) = 2^-alpha = 0.25 for alpha 2.
	over := 0
	for _, v := range samples(t, DistSpec{Type: "pareto_lognormal", Params: map[string]float64{"alpha": 2, "xm": 100, "mu": 0, "sigma": 0, "mix_weight": 1}}, n) {
		if v < 100 {
			t.Fatalf("pareto sample %g below xm", v)
		}
		if v > 200 {
			over++
		}
	}
	within(t, "P(pareto > 2 xm)", float64(over)/n, 0.25, 0.03)
	// Lognormal part only (mix_weight 0), sigma 0: exactly exp(mu).
	for _, v := range samples(t, DistSpec{Type: "pareto_lognormal", Params: map[string]float64{"alpha": 2, "xm": 100, "mu": math.Log(42), "sigma": 0, "mix_weight": 0}}, 100) {
		if v != 42 {
			t.Fatalf("lognormal part gave %g, want 42", v)
		}
	}
	// Exponential with bounds, and rounding to at least one token.
	m, _ = meanCV(samples(t, DistSpec{Type: "exponential", Params: map[string]float64{"mean": 50}}, n))
	within(t, "exponential mean", m, 50, 0.02)
	for _, v := range samples(t, DistSpec{Type: "exponential", Params: map[string]float64{"mean": 0.01}}, 100) {
		if v != 1 {
			t.Fatalf("tiny exponential sample %g, want the 1-token floor", v)
		}
	}
	for _, v := range samples(t, DistSpec{Type: "exponential", Params: map[string]float64{"mean": 1000, "min": 10, "max": 20}}, 1000) {
		if v < 10 || v > 20 {
			t.Fatalf("clamped exponential sample %g", v)
		}
	}
}

func TestDistributionErrors(t *testing.T) {
	cases := []struct {
		d    DistSpec
		want string
	}{
		{DistSpec{}, "d.type: required"},
		{DistSpec{Type: "zipf"}, `unknown distribution "zipf"; valid: gaussian`},
		{DistSpec{Type: "gaussian", Params: map[string]float64{"mean": 1, "std_dev": 1, "min": 5, "max": 1}}, "d.params.min: 5 is greater than max 1"},
		{DistSpec{Type: "gaussian", Params: map[string]float64{"mean": 1, "std_dev": -1, "min": 1, "max": 2}}, "d.params.std_dev: must be >= 0"},
		{DistSpec{Type: "exponential", Params: map[string]float64{"mean": 1, "scale": 2}}, "d.params.scale: unknown parameter for type exponential; valid: mean, min, max"},
		{DistSpec{Type: "pareto_lognormal", Params: map[string]float64{"alpha": 1, "xm": 1, "mu": 1, "sigma": 1, "mix_weight": 2}}, "d.params.mix_weight: must be in [0, 1]"},
		{DistSpec{Type: "constant", Params: map[string]float64{"value": math.NaN()}}, "d.params.value: must be a finite number"},
		{DistSpec{Type: "constant", File: "x.csv", Params: map[string]float64{"value": 1}}, "d.file: only valid for type empirical"},
		{DistSpec{Type: "empirical", Params: map[string]float64{"ten": 1}}, "d.params.ten: empirical bins are keyed by numeric value"},
		{DistSpec{Type: "empirical", Params: map[string]float64{"10": 0}}, "no bin with a positive weight"},
		{DistSpec{Type: "empirical", File: "does-not-exist.csv"}, "d.file:"},
	}
	for _, tc := range cases {
		_, err := newSampler("d", &tc.d, "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.d, err, tc.want)
		}
	}
}

func TestIndependentTurnsShareOnlyThePrefix(t *testing.T) {
	s, err := ParseSpec([]byte(`
aggregate_rate: 1
num_requests: 6
clients:
  - id: chat
    rate_fraction: 1
    prefix_group: sys
    prefix_length: 30
    arrival: {process: constant}
    reasoning: {multi_turn: {max_rounds: 3, think_time_us: 1000}}` + constLens))
	if err != nil {
		t.Fatal(err)
	}
	src, _ := s.Source(1)
	reqs := simulate(t, src, fixedService(500), nil)
	if len(reqs) != 6 {
		t.Fatalf("%d requests", len(reqs))
	}
	for _, r := range reqs {
		if len(r.Segments) != 2 || r.Segments[0] != (Segment{Key: PrefixKey("sys"), Length: 30}) || r.InputLen != 130 {
			t.Fatalf("round %d of session %d: %+v, want prefix + a fresh message only", r.Round, r.Session, r.Segments)
		}
	}
}

func TestSpecTopLevelErrors(t *testing.T) {
	cases := map[string]string{
		"category: video\n" + baseClient:                                        "category: unknown category \"video\"",
		"servegen_data: {path: x}\n" + baseClient:                               "servegen_data: generating from ServeGen data files is not supported",
		"goodput_slo_targets: {urgent: {ttft: 1}}\n" + baseClient:               "goodput_slo_targets.urgent: unknown SLO class",
		strings.Replace(baseClient, "num_requests: 100", "num_requests: -1", 1): "num_requests: must be >= 0",
		"aggregate_rate: 1\n":                                                   "clients: at least one client",
		"":                                                                      "empty document",
	}
	for y, want := range cases {
		_, err := ParseSpec([]byte(y))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
}
