package model

import (
	"strings"
	"testing"
)

// memoryGiB sizes the KV cache: 10 GiB more per GPU at utilisation 0.9 adds 9 GiB, which is
// 9 × 2^30 / (16 tokens × 131072 bytes) = 4608 blocks of llama-3.1-8b (±1 for truncation).
func TestHardwareOverrideMemory(t *testing.T) {
	base, err := Resolve(InstanceSpec{Model: "llama-3.1-8b-instruct", GPU: "H100"})
	if err != nil {
		t.Fatal(err)
	}
	mem := base.Hardware.MemoryGiB + 10
	r, err := Resolve(InstanceSpec{Model: "llama-3.1-8b-instruct", GPU: "H100", HardwareOverrides: &HardwareOverrides{MemoryGiB: &mem}})
	if err != nil {
		t.Fatal(err)
	}
	if d := r.Engine.TotalKVBlocks - base.Engine.TotalKVBlocks; d < 4607 || d > 4609 {
		t.Fatalf("10 GiB more memory adds %d blocks, want 4608", d)
	}
	if r.Hardware.Name != "H100" || r.Hardware.MemoryGiB != mem || r.Hardware.BwPeakTBs != base.Hardware.BwPeakTBs {
		t.Fatalf("hardware = %+v", r.Hardware)
	}
	// memoryGiB does not touch the step times, so blackbox accepts it.
	if _, err := Resolve(InstanceSpec{Model: "meta-llama/llama-3.1-8b-instruct", GPU: "H100", LatencyModel: LatencyBlackbox,
		HardwareOverrides: &HardwareOverrides{MemoryGiB: &mem}}); err != nil {
		t.Fatalf("blackbox with memoryGiB: %v", err)
	}
}

func TestHardwareOverrideErrors(t *testing.T) {
	bw, zero, mfu := 6.7, 0.0, 1.5
	_, err := Resolve(InstanceSpec{Model: "meta-llama/llama-3.1-8b-instruct", GPU: "H100", LatencyModel: LatencyBlackbox,
		HardwareOverrides: &HardwareOverrides{BwPeakTBs: &bw}})
	if err == nil || !strings.Contains(err.Error(), "bwPeakTBs") || !strings.Contains(err.Error(), "blackbox") {
		t.Fatalf("blackbox with bwPeakTBs: %v", err)
	}
	if _, err := Resolve(InstanceSpec{Model: "llama-3.1-8b-instruct", HardwareOverrides: &HardwareOverrides{TFlopsPeak: &zero}}); err == nil || !strings.Contains(err.Error(), "TFlopsPeak") {
		t.Fatalf("zero peak: %v", err)
	}
	if _, err := Resolve(InstanceSpec{Model: "llama-3.1-8b-instruct", HardwareOverrides: &HardwareOverrides{MfuDecode: &mfu}}); err == nil || !strings.Contains(err.Error(), "mfu") {
		t.Fatalf("mfu above 1: %v", err)
	}
}
