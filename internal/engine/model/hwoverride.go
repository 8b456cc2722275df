package model

import (
	"fmt"
	"strings"
)

// HardwareOverrides replace some of a catalog GPU's figures (nil keeps the catalog's), so a
// study can ask what a faster or larger GPU of the same kind would do without a new catalog
// entry. The GPU keeps its catalog name: blackbox rows are looked up by it.
type HardwareOverrides struct {
	// TFlopsPeak replaces the dense BF16 peak in TFLOP/s.
	TFlopsPeak *float64 `json:"tflopsPeak,omitempty"`
	// TFlopsFP8 replaces the dense FP8 peak in TFLOP/s.
	TFlopsFP8 *float64 `json:"tflopsFP8,omitempty"`
	// BwPeakTBs replaces the peak HBM bandwidth in TB/s.
	BwPeakTBs *float64 `json:"bwPeakTBs,omitempty"`
	// MfuPrefill replaces the roofline model's prefill FLOPs utilisation.
	MfuPrefill *float64 `json:"mfuPrefill,omitempty"`
	// MfuDecode replaces the roofline model's decode FLOPs utilisation.
	MfuDecode *float64 `json:"mfuDecode,omitempty"`
	// MemoryGiB replaces the GPU memory in GiB (it sizes the KV cache).
	MemoryGiB *float64 `json:"memoryGiB,omitempty"`
}

// Apply returns hw with the set fields replaced and checks the result.
func (o *HardwareOverrides) Apply(hw Hardware) (Hardware, error) {
	if o == nil {
		return hw, nil
	}
	for _, f := range []struct {
		v   *float64
		dst *float64
	}{{o.TFlopsPeak, &hw.TFlopsPeak}, {o.TFlopsFP8, &hw.TFlopsFP8}, {o.BwPeakTBs, &hw.BwPeakTBs},
		{o.MfuPrefill, &hw.MfuPrefill}, {o.MfuDecode, &hw.MfuDecode}, {o.MemoryGiB, &hw.MemoryGiB}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	if err := hw.Validate(); err != nil {
		return hw, fmt.Errorf("hardware overrides: %w", err)
	}
	return hw, nil
}

// ComputeFields names the set overrides that change step times (all but memoryGiB), in the
// API's spelling. Blackbox coefficients were fitted on the catalog GPU, so these cannot
// apply to them.
func (o *HardwareOverrides) ComputeFields() []string {
	if o == nil {
		return nil
	}
	var out []string
	for _, f := range []struct {
		name string
		v    *float64
	}{{"tflopsPeak", o.TFlopsPeak}, {"tflopsFP8", o.TFlopsFP8}, {"bwPeakTBs", o.BwPeakTBs},
		{"mfuPrefill", o.MfuPrefill}, {"mfuDecode", o.MfuDecode}} {
		if f.v != nil {
			out = append(out, f.name)
		}
	}
	return out
}

// checkBlackboxOverrides refuses overrides a blackbox latency model cannot honour.
func checkBlackboxOverrides(o *HardwareOverrides, gpu string) error {
	if f := o.ComputeFields(); len(f) > 0 {
		return fmt.Errorf("latency: blackbox coefficients are fitted per catalog GPU (%s), so the hardware override %s cannot change its step times; use roofline or trained-physics, or drop the override (memoryGiB alone is allowed)",
			gpu, strings.Join(f, ", "))
	}
	return nil
}
