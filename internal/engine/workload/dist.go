package workload

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// DistSpec parameterizes a length distribution (tokens, or microseconds for tool latencies),
// with BLIS's keys: type, params, file.
type DistSpec struct {
	// Type is one of gaussian, exponential, pareto_lognormal, lognormal, constant, empirical.
	Type string `yaml:"type" json:"type"`
	// Params holds the type's parameters (see docs/workloads.md). For an inline empirical
	// distribution the keys are values and the numbers their weights.
	Params map[string]float64 `yaml:"params,omitempty" json:"params,omitempty"`
	// File names an empirical distribution file, relative to the spec file's directory.
	File string `yaml:"file,omitempty" json:"file,omitempty"`
}

// DistTypes lists the valid distribution type names.
var DistTypes = []string{"gaussian", "exponential", "pareto_lognormal", "lognormal", "constant", "empirical"}

type distKind uint8

const (
	distGaussian distKind = iota
	distExponential
	distParetoLognormal
	distLognormal
	distConstant
	distEmpirical
)

// sampler draws from one distribution. Values are clamped to [lo, hi] when those bounds are
// set; BLIS clamps rather than resamples, so the bounds carry point masses.
type sampler struct {
	kind           distKind
	mean, std      float64 // gaussian, exponential (mean)
	mu, sigma      float64 // lognormal parts
	alpha, xm, mix float64 // pareto part
	value          float64 // constant
	lo, hi         float64
	hasLo, hasHi   bool
	values, cdf    []float64 // empirical
}

// maxTokens bounds sampled token counts so that int32 arithmetic on sums stays safe.
const maxTokens = 1 << 26

func (s *sampler) float(r *rand.Rand) float64 {
	var v float64
	switch s.kind {
	case distGaussian:
		if s.hasLo && s.hasHi && s.lo == s.hi {
			return s.lo
		}
		v = s.mean + s.std*r.NormFloat64()
	case distExponential:
		v = s.mean * r.ExpFloat64()
	case distParetoLognormal:
		if r.Float64() < s.mix {
			u := 1 - r.Float64() // (0, 1]
			v = s.xm / math.Pow(u, 1/s.alpha)
		} else {
			v = math.Exp(s.mu + s.sigma*r.NormFloat64())
		}
	case distLognormal:
		v = math.Exp(s.mu + s.sigma*r.NormFloat64())
	case distConstant:
		v = s.value
	case distEmpirical:
		if len(s.values) == 1 {
			v = s.values[0]
		} else {
			i := sort.SearchFloat64s(s.cdf, r.Float64())
			if i >= len(s.values) {
				i = len(s.values) - 1
			}
			v = s.values[i]
		}
	}
	if math.IsNaN(v) || math.IsInf(v, 1) {
		v = math.MaxFloat64
	}
	if s.hasLo && v < s.lo {
		v = s.lo
	}
	if s.hasHi && v > s.hi {
		v = s.hi
	}
	return v
}

// tokens samples a token count: rounded, at least 1 (as BLIS) and at most maxTokens.
func (s *sampler) tokens(r *rand.Rand) int32 {
	v := math.Round(s.float(r))
	if v < 1 {
		return 1
	}
	if v > maxTokens {
		return maxTokens
	}
	return int32(v)
}

// micros samples a non-negative duration in microseconds.
func (s *sampler) micros(r *rand.Rand) int64 {
	v := math.Round(s.float(r))
	if v < 0 {
		return 0
	}
	if v > 1<<52 {
		return 1 << 52
	}
	return int64(v)
}

// distKindSpec describes one distribution type: its parameters and how to read them.
type distKindSpec struct {
	kind     distKind
	required []string
	optional []string
	read     func(s *sampler, p map[string]float64) (badParam string, why string)
}

// distKinds is indexed by type name (lookup only).
var distKinds = map[string]distKindSpec{
	"gaussian": {distGaussian, []string{"mean", "std_dev", "min", "max"}, nil, func(s *sampler, p map[string]float64) (string, string) {
		s.mean, s.std = p["mean"], p["std_dev"]
		if s.std < 0 {
			return "std_dev", "must be >= 0"
		}
		return "", ""
	}},
	"exponential": {distExponential, []string{"mean"}, []string{"min", "max"}, func(s *sampler, p map[string]float64) (string, string) {
		s.mean = p["mean"]
		if s.mean <= 0 {
			return "mean", "must be > 0"
		}
		return "", ""
	}},
	"pareto_lognormal": {distParetoLognormal, []string{"alpha", "xm", "mu", "sigma", "mix_weight"}, []string{"min", "max"}, func(s *sampler, p map[string]float64) (string, string) {
		s.alpha, s.xm, s.mu, s.sigma, s.mix = p["alpha"], p["xm"], p["mu"], p["sigma"], p["mix_weight"]
		switch {
		case s.alpha <= 0:
			return "alpha", "must be > 0"
		case s.xm <= 0:
			return "xm", "must be > 0"
		case s.sigma < 0:
			return "sigma", "must be >= 0"
		case s.mix < 0 || s.mix > 1:
			return "mix_weight", "must be in [0, 1]"
		}
		return "", ""
	}},
	"lognormal": {distLognormal, []string{"mu", "sigma"}, []string{"min", "max"}, func(s *sampler, p map[string]float64) (string, string) {
		s.mu, s.sigma = p["mu"], p["sigma"]
		if s.sigma < 0 {
			return "sigma", "must be >= 0"
		}
		return "", ""
	}},
	"constant": {distConstant, []string{"value"}, nil, func(s *sampler, p map[string]float64) (string, string) {
		s.value = p["value"]
		return "", ""
	}},
}

// newSampler validates d and builds its sampler. field names the spec location for errors,
// e.g. `client "chat": input_distribution`; baseDir resolves relative empirical files.
func newSampler(field string, d *DistSpec, baseDir string) (*sampler, error) {
	if d == nil || d.Type == "" {
		return nil, fmt.Errorf("%s.type: required; valid: %s", field, strings.Join(DistTypes, ", "))
	}
	p := d.Params
	for _, k := range sortedKeys(p) {
		if v := p[k]; math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s.params.%s: must be a finite number", field, k)
		}
	}
	if d.Type == "empirical" {
		return newEmpirical(field, d, baseDir)
	}
	ks, ok := distKinds[d.Type]
	if !ok {
		return nil, fmt.Errorf("%s.type: unknown distribution %q; valid: %s", field, d.Type, strings.Join(DistTypes, ", "))
	}
	if d.File != "" {
		return nil, fmt.Errorf("%s.file: only valid for type empirical", field)
	}
	valid := append(append([]string(nil), ks.required...), ks.optional...)
	for _, k := range sortedKeys(p) {
		if !slices.Contains(valid, k) {
			return nil, fmt.Errorf("%s.params.%s: unknown parameter for type %s; valid: %s", field, k, d.Type, strings.Join(valid, ", "))
		}
	}
	for _, k := range ks.required {
		if _, ok := p[k]; !ok {
			return nil, fmt.Errorf("%s.params.%s: required for type %s", field, k, d.Type)
		}
	}
	s := &sampler{kind: ks.kind}
	if bad, why := ks.read(s, p); bad != "" {
		return nil, fmt.Errorf("%s.params.%s: %s, got %g", field, bad, why, p[bad])
	}
	if v, ok := p["min"]; ok {
		s.lo, s.hasLo = v, true
	}
	if v, ok := p["max"]; ok {
		s.hi, s.hasHi = v, true
	}
	if s.hasLo && s.hasHi && s.lo > s.hi {
		return nil, fmt.Errorf("%s.params.min: %g is greater than max %g", field, s.lo, s.hi)
	}
	return s, nil
}

// newEmpirical builds an empirical sampler from a file or inline value: weight params.
func newEmpirical(field string, d *DistSpec, baseDir string) (*sampler, error) {
	s := &sampler{kind: distEmpirical}
	var pairs [][2]float64
	if d.File != "" {
		if len(d.Params) > 0 {
			return nil, fmt.Errorf("%s: give either file or inline params for an empirical distribution, not both", field)
		}
		path := d.File
		if !filepath.IsAbs(path) && baseDir != "" {
			path = filepath.Join(baseDir, path)
		}
		var err error
		if pairs, err = readEmpirical(path); err != nil {
			return nil, fmt.Errorf("%s.file: %w", field, err)
		}
	} else {
		for _, k := range sortedKeys(d.Params) {
			v, err := strconv.ParseFloat(k, 64)
			if err != nil {
				return nil, fmt.Errorf("%s.params.%s: empirical bins are keyed by numeric value", field, k)
			}
			pairs = append(pairs, [2]float64{v, d.Params[k]})
		}
	}
	if err := s.setEmpirical(pairs); err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return s, nil
}

func (s *sampler) setEmpirical(pairs [][2]float64) error {
	sort.Slice(pairs, func(i, j int) bool { return pairs[i][0] < pairs[j][0] })
	total := 0.0
	for _, pr := range pairs {
		if pr[1] < 0 || math.IsNaN(pr[1]) || math.IsInf(pr[1], 0) {
			return fmt.Errorf("empirical weight of value %g must be a finite number >= 0", pr[0])
		}
		total += pr[1]
	}
	if total <= 0 {
		return fmt.Errorf("empirical distribution has no bin with a positive weight")
	}
	acc := 0.0
	for _, pr := range pairs {
		if pr[1] == 0 {
			continue
		}
		acc += pr[1] / total
		s.values = append(s.values, pr[0])
		s.cdf = append(s.cdf, acc)
	}
	s.cdf[len(s.cdf)-1] = 1
	return nil
}

// readEmpirical reads an empirical distribution file: one observation per line ("value"), or
// a weighted bin per line ("value,weight" or "value weight"). Blank lines and lines starting
// with # are skipped, and a first line that is not numeric is taken as a header.
func readEmpirical(path string) ([][2]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	counts := map[float64]int{} // lookup and accumulation only; turned into sorted pairs below
	var pairs [][2]float64
	line := 0
	for sc.Scan() {
		line++
		txt := strings.TrimSpace(sc.Text())
		if txt == "" || strings.HasPrefix(txt, "#") {
			continue
		}
		fields := strings.FieldsFunc(txt, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			if line == 1 {
				continue
			}
			return nil, fmt.Errorf("line %d: value %q is not a number", line, fields[0])
		}
		switch len(fields) {
		case 1:
			if _, ok := counts[v]; !ok {
				pairs = append(pairs, [2]float64{v, 0})
			}
			counts[v]++
		case 2:
			w, err := strconv.ParseFloat(fields[1], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: weight %q is not a number", line, fields[1])
			}
			pairs = append(pairs, [2]float64{v, w})
		default:
			return nil, fmt.Errorf("line %d: expected \"value\" or \"value,weight\", got %d fields", line, len(fields))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for i := range pairs {
		if c, ok := counts[pairs[i][0]]; ok && pairs[i][1] == 0 {
			pairs[i][1] = float64(c)
		}
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("no values in %s", path)
	}
	return pairs, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
