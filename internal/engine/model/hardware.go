package model

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
)

// Hardware is one GPU's specification, in the units of BLIS's hardware_config.json.
type Hardware struct {
	// Name is the GPU name as the catalog knows it (e.g. "H100", "A100-80").
	Name string `json:"-"`
	// TFlopsPeak is the dense BF16 tensor-core peak in TFLOP/s.
	TFlopsPeak float64 `json:"TFlopsPeak"`
	// TFlopsFP8 is the dense FP8 peak in TFLOP/s, 0 when the GPU has no FP8 tensor cores.
	TFlopsFP8 float64 `json:"TFlopsFP8"`
	// BwPeakTBs is the peak HBM bandwidth in TB/s (10^12 bytes per second).
	BwPeakTBs float64 `json:"BwPeakTBs"`
	// MfuPrefill is the model-FLOPs utilisation the roofline model assumes for prefill.
	MfuPrefill float64 `json:"mfuPrefill"`
	// MfuDecode is the model-FLOPs utilisation the roofline model assumes for decode.
	MfuDecode float64 `json:"mfuDecode"`
	// MemoryGiB is the GPU memory in GiB.
	MemoryGiB float64 `json:"MemoryGiB"`
}

// Validate checks that the figures are usable by the latency and capacity models.
func (h *Hardware) Validate() error {
	pos := func(field string, v float64) error {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("hardware %q: %s must be a positive number, got %v", h.Name, field, v)
		}
		return nil
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"TFlopsPeak", h.TFlopsPeak}, {"BwPeakTBs", h.BwPeakTBs}, {"MemoryGiB", h.MemoryGiB}, {"mfuPrefill", h.MfuPrefill}, {"mfuDecode", h.MfuDecode}} {
		if err := pos(f.name, f.v); err != nil {
			return err
		}
	}
	if h.MfuPrefill > 1 || h.MfuDecode > 1 {
		return fmt.Errorf("hardware %q: mfuPrefill and mfuDecode must be in (0, 1], got %v and %v", h.Name, h.MfuPrefill, h.MfuDecode)
	}
	if h.TFlopsFP8 < 0 || math.IsNaN(h.TFlopsFP8) || math.IsInf(h.TFlopsFP8, 0) {
		return fmt.Errorf("hardware %q: TFlopsFP8 must be >= 0, got %v", h.Name, h.TFlopsFP8)
	}
	return nil
}

// Names hardware_config.json uses for the GPUs the catalog most often refers to.
const (
	// gpuH100 is the NVIDIA H100 (SXM, 80 GB), the default GPU.
	gpuH100 = "H100"
	// gpuA100 is the NVIDIA A100 (SXM, 80 GB).
	gpuA100 = "A100-80"
)

// HardwareCatalog is a set of GPUs by name.
type HardwareCatalog struct {
	byKey map[string]Hardware // lower-cased name → spec
	names []string            // sorted canonical names
}

// hardwareAliases maps common spellings to the names hardware_config.json uses.
var hardwareAliases = map[string]string{
	"h100-sxm":      gpuH100,
	"h100-80":       gpuH100,
	"h100-80gb":     gpuH100,
	"nvidia-h100":   gpuH100,
	"a100":          gpuA100,
	"a100-80gb":     gpuA100,
	"a100-sxm4-80":  gpuA100,
	"nvidia-a100":   gpuA100,
	"l40s-48":       "L40S",
	"nvidia-l40s":   "L40S",
	"a100-sxm4-80g": gpuA100,
}

// ParseHardwareConfig parses BLIS's hardware_config.json (an object of GPU name → figures;
// keys starting with "_" are comments).
func ParseHardwareConfig(data []byte) (*HardwareCatalog, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("hardware config: %w", err)
	}
	cat := &HardwareCatalog{byKey: make(map[string]Hardware, len(raw))}
	for name, msg := range raw {
		if strings.HasPrefix(name, "_") {
			continue
		}
		var h Hardware
		if err := json.Unmarshal(msg, &h); err != nil {
			return nil, fmt.Errorf("hardware config: GPU %q: %w", name, err)
		}
		h.Name = name
		if err := h.Validate(); err != nil {
			return nil, fmt.Errorf("hardware config: %w", err)
		}
		cat.byKey[strings.ToLower(name)] = h
		cat.names = append(cat.names, name)
	}
	if len(cat.names) == 0 {
		return nil, fmt.Errorf("hardware config: no GPU entries")
	}
	sort.Strings(cat.names)
	return cat, nil
}

// LoadHardwareConfig reads a hardware_config.json file.
func LoadHardwareConfig(path string) (*HardwareCatalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hardware config: %w", err)
	}
	return ParseHardwareConfig(data)
}

// Names lists the GPU names, sorted.
func (c *HardwareCatalog) Names() []string { return append([]string(nil), c.names...) }

// Lookup returns a GPU by name, case-insensitively, accepting common aliases (A100 → A100-80,
// H100-SXM → H100). An unknown name is an error listing the known ones.
func (c *HardwareCatalog) Lookup(name string) (Hardware, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	if h, ok := c.byKey[key]; ok {
		return h, nil
	}
	if alias, ok := hardwareAliases[key]; ok {
		if h, ok := c.byKey[strings.ToLower(alias)]; ok {
			return h, nil
		}
	}
	return Hardware{}, fmt.Errorf("gpu %q is not known (known: %s)", name, strings.Join(c.names, ", "))
}
