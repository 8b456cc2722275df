package workload

import (
	"fmt"
	"math"
	"strings"

	"github.com/inference-sim/blis-operator/internal/engine/rng"
)

// LengthConfig is a truncated Gaussian length distribution with BLIS's flag semantics
// (--prompt-tokens, --prompt-tokens-stdev, --prompt-tokens-min, --prompt-tokens-max and the
// --output-tokens equivalents). Samples outside [Min, Max] are clamped, not resampled, as in
// BLIS, then rounded to whole tokens.
type LengthConfig struct {
	Mean, Stdev float64
	Min, Max    int
}

// DistributionConfig is BLIS's default `--workload distribution` workload: one client with
// constant (or Poisson) arrivals at Rate requests per second and Gaussian lengths.
type DistributionConfig struct {
	// Rate is the arrival rate in requests per second (--rate), > 0.
	Rate float64
	// NumRequests is the number of requests (--num-requests), > 0.
	NumRequests int64
	// Poisson selects exponential inter-arrival gaps; false gives BLIS's default constant gaps.
	Poisson bool
	// PrefixTokens is the length of a prefix shared by every request (--prefix-tokens), >= 0.
	// It is prepended to the sampled prompt, so InputLen = PrefixTokens + sampled length.
	PrefixTokens int
	// Input and Output are the prompt and output length distributions.
	Input, Output LengthConfig
	// Horizon stops arrivals after this time in microseconds (0 = no horizon).
	Horizon int64
}

// DefaultDistributionConfig returns BLIS's defaults for `blis run --workload distribution`:
// rate 1 req/s, 100 requests, no prefix, prompt and output 512±256 tokens within [2, 7000].
func DefaultDistributionConfig() DistributionConfig {
	return DistributionConfig{
		Rate:        1,
		NumRequests: 100,
		Input:       LengthConfig{Mean: 512, Stdev: 256, Min: 2, Max: 7000},
		Output:      LengthConfig{Mean: 512, Stdev: 256, Min: 2, Max: 7000},
	}
}

// Validate reports the first invalid field of cfg, by name.
func (cfg *DistributionConfig) Validate() error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !(cfg.Rate > 0) || !finite(cfg.Rate):
		return fmt.Errorf("field Rate: must be a finite number > 0, got %g", cfg.Rate)
	case cfg.NumRequests <= 0:
		return fmt.Errorf("field NumRequests: must be > 0, got %d", cfg.NumRequests)
	case cfg.PrefixTokens < 0 || cfg.PrefixTokens > maxTokens:
		return fmt.Errorf("field PrefixTokens: must be in [0, %d], got %d", maxTokens, cfg.PrefixTokens)
	case cfg.Horizon < 0:
		return fmt.Errorf("field Horizon: must be >= 0, got %d", cfg.Horizon)
	}
	for _, l := range []struct {
		name string
		c    LengthConfig
	}{{"Input", cfg.Input}, {"Output", cfg.Output}} {
		switch {
		case !finite(l.c.Mean) || l.c.Mean < 0:
			return fmt.Errorf("field %s.Mean: must be a finite number >= 0, got %g", l.name, l.c.Mean)
		case !finite(l.c.Stdev) || l.c.Stdev < 0:
			return fmt.Errorf("field %s.Stdev: must be a finite number >= 0, got %g", l.name, l.c.Stdev)
		case l.c.Min < 1:
			return fmt.Errorf("field %s.Min: must be >= 1, got %d", l.name, l.c.Min)
		case l.c.Max < l.c.Min:
			return fmt.Errorf("field %s.Max: must be >= Min (%d), got %d", l.name, l.c.Min, l.c.Max)
		case l.c.Max > maxTokens:
			return fmt.Errorf("field %s.Max: must be <= %d, got %d", l.name, maxTokens, l.c.Max)
		}
	}
	return nil
}

func (l LengthConfig) sampler() *sampler {
	return &sampler{kind: distGaussian, mean: l.Mean, std: l.Stdev,
		lo: float64(l.Min), hi: float64(l.Max), hasLo: true, hasHi: true}
}

// distributionPrefixKey names the content of the --prefix-tokens prefix.
var distributionPrefixKey = rng.FNV1a("workload/distribution/prefix")

// NewDistribution returns the source of BLIS's default workload. All randomness comes from
// the workload stream of the partitioned generator for seed.
func NewDistribution(cfg DistributionConfig, seed int64) (Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("distribution workload: %w", err)
	}
	var proc process = constantProc{}
	if cfg.Poisson {
		proc = poissonProc{}
	}
	c := &clientGen{
		name: "default",
		rng:  rng.New(seed).Stream(rng.Workload),
		phases: []phase{{
			end: math.Inf(1), rate: cfg.Rate, proc: proc,
			in: cfg.Input.sampler(), out: cfg.Output.sampler(),
		}},
	}
	if cfg.PrefixTokens > 0 {
		c.prefix = Segment{Key: distributionPrefixKey, Length: int32(cfg.PrefixTokens)}
	}
	return newGenSource(defaultTables(), []*clientGen{c}, cfg.NumRequests, cfg.Horizon).source(), nil
}

// defaultTables returns tables holding only the defaults at index 0.
func defaultTables() Tables {
	return Tables{Clients: []string{"default"}, Tenants: []string{""}, SLOClasses: []string{classStandard}}
}

// ParseArrival maps a CLI arrival name ("constant" or "poisson") to DistributionConfig.Poisson.
func ParseArrival(name string) (poisson bool, err error) {
	switch strings.ToLower(name) {
	case processConstant, "":
		return false, nil
	case processPoisson:
		return true, nil
	}
	return false, fmt.Errorf("unknown arrival process %q; valid: constant, poisson", name)
}
