package workload

import (
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// presets are BLIS's named distribution workloads (`blis run --workload chatbot`), the
// `workloads:` section of BLIS's defaults.yaml (inference-sim @ f90a1e3a).
var presets = map[string]struct { // lookup only; PresetNames gives the order
	prefix  int
	in, out LengthConfig
}{
	"chatbot":       {0, LengthConfig{256, 100, 2, 800}, LengthConfig{256, 100, 1, 1024}},
	"contentgen":    {0, LengthConfig{1024, 150, 10, 2048}, LengthConfig{1024, 200, 10, 2048}},
	"summarization": {0, LengthConfig{4096, 500, 100, 8192}, LengthConfig{512, 150, 10, 2048}},
	"multidoc":      {0, LengthConfig{10240, 1200, 500, 20480}, LengthConfig{1536, 300, 50, 4096}},
}

// PresetNames lists BLIS's distribution presets in sorted order.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Preset returns the default workload configuration with the lengths and prefix of a BLIS
// preset; rate, request count and arrival process stay at their defaults for the caller
// (the CLI flags) to set.
func Preset(name string) (DistributionConfig, error) {
	p, ok := presets[name]
	if !ok {
		return DistributionConfig{}, fmt.Errorf("unknown workload preset %q; valid: %s", name, strings.Join(PresetNames(), ", "))
	}
	cfg := DefaultDistributionConfig()
	cfg.PrefixTokens, cfg.Input, cfg.Output = p.prefix, p.in, p.out
	return cfg, nil
}

// presetFile is one entry of a defaults.yaml `workloads:` section.
type presetFile struct {
	PrefixTokens      int     `yaml:"prefix_tokens"`
	PromptTokens      float64 `yaml:"prompt_tokens"`
	PromptTokensStdev float64 `yaml:"prompt_tokens_stdev"`
	PromptTokensMin   int     `yaml:"prompt_tokens_min"`
	PromptTokensMax   int     `yaml:"prompt_tokens_max"`
	OutputTokens      float64 `yaml:"output_tokens"`
	OutputTokensStdev float64 `yaml:"output_tokens_stdev"`
	OutputTokensMin   int     `yaml:"output_tokens_min"`
	OutputTokensMax   int     `yaml:"output_tokens_max"`
}

// ParsePresets reads the `workloads:` section of a BLIS defaults.yaml (other sections are
// ignored) into validated configurations keyed by preset name.
func ParsePresets(data []byte) (map[string]DistributionConfig, error) {
	var f struct {
		Workloads map[string]presetFile `yaml:"workloads"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("workload presets: %w", err)
	}
	out := make(map[string]DistributionConfig, len(f.Workloads))
	for _, name := range sortedKeys(f.Workloads) {
		p := f.Workloads[name]
		cfg := DefaultDistributionConfig()
		cfg.PrefixTokens = p.PrefixTokens
		cfg.Input = LengthConfig{p.PromptTokens, p.PromptTokensStdev, p.PromptTokensMin, p.PromptTokensMax}
		cfg.Output = LengthConfig{p.OutputTokens, p.OutputTokensStdev, p.OutputTokensMin, p.OutputTokensMax}
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("workload presets: workloads.%s: %w", name, err)
		}
		out[name] = cfg
	}
	return out, nil
}
