package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func defaultCatalogT(t *testing.T) *Catalog {
	t.Helper()
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestHardwareLookup(t *testing.T) {
	hw := defaultCatalogT(t).Hardware()
	h, err := hw.Lookup("h100")
	if err != nil {
		t.Fatal(err)
	}
	if h.Name != "H100" || h.TFlopsPeak != 989.5 || h.TFlopsFP8 != 1979 || h.BwPeakTBs != 3.35 || h.MemoryGiB != 80 ||
		h.MfuPrefill != 0.45 || h.MfuDecode != 0.30 {
		t.Fatalf("H100 = %+v", h)
	}
	a, err := hw.Lookup("A100")
	if err != nil || a.Name != "A100-80" || a.BwPeakTBs != 2.039 {
		t.Fatalf("alias A100 = %+v, %v", a, err)
	}
	if _, err := hw.Lookup("B200"); err == nil || !strings.Contains(err.Error(), "known: A100-80, A100-SXM, H100, L40S") {
		t.Fatalf("unknown GPU error = %v", err)
	}
	if _, err := ParseHardwareConfig([]byte(`{"X": {"TFlopsPeak": 1, "BwPeakTBs": 0, "MemoryGiB": 1, "mfuPrefill": 0.5, "mfuDecode": 0.5}}`)); err == nil ||
		!strings.Contains(err.Error(), "BwPeakTBs must be a positive number") {
		t.Fatalf("bad hardware error = %v", err)
	}
}

// Seed 002 scenarios for the engine configuration (BC-2).
func TestEngineConfig(t *testing.T) {
	e := DefaultVLLMEngineConfig()
	if e.TensorParallelSize != 1 || e.MaxNumSeqs != 256 || e.BlockSize != 16 || !e.EnableChunkedPrefill ||
		e.MaxNumBatchedTokens != 2048 || e.GPUMemoryUtilization != 0.9 || !e.EnablePrefixCaching {
		t.Fatalf("defaults = %+v", e)
	}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	e.TensorParallelSize, e.PipelineParallelSize, e.DataParallelSize = 2, 2, 4
	if e.TotalGPUs() != 16 {
		t.Fatalf("TotalGPUs = %d, want 16", e.TotalGPUs())
	}
	e.PipelineParallelSize = 1
	if e.EffectiveExpertParallelism() != 8 {
		t.Fatalf("EffectiveExpertParallelism = %d, want 8", e.EffectiveExpertParallelism())
	}
	cases := []struct {
		mutate func(*VLLMEngineConfig)
		want   string
	}{
		{func(e *VLLMEngineConfig) { e.TensorParallelSize = 0 }, "tensor-parallel-size must be >= 1"},
		{func(e *VLLMEngineConfig) { e.PipelineParallelSize = 0 }, "pipeline-parallel-size must be >= 1"},
		{func(e *VLLMEngineConfig) { e.DataParallelSize = 0 }, "data-parallel-size must be >= 1"},
		{func(e *VLLMEngineConfig) { e.GPUMemoryUtilization = 1.5 }, "gpu-memory-utilization must be in (0, 1]"},
		{func(e *VLLMEngineConfig) { e.GPUMemoryUtilization = 0 }, "gpu-memory-utilization must be in (0, 1]"},
		{func(e *VLLMEngineConfig) { e.MaxNumSeqs = 0 }, "max-num-seqs must be > 0"},
		{func(e *VLLMEngineConfig) { e.MaxNumBatchedTokens = -1 }, "max-num-batched-tokens must be > 0"},
		{func(e *VLLMEngineConfig) { e.BlockSize = 0 }, "block-size must be > 0"},
		{func(e *VLLMEngineConfig) { e.TotalKVBlocks = -3 }, "total KV blocks must be > 0"},
		{func(e *VLLMEngineConfig) {
			e.EnableChunkedPrefill, e.MaxModelLen = false, 8192
		}, "max-num-batched-tokens (2048) must be >= max-model-len (8192) when chunked prefill is disabled"},
	}
	for _, tc := range cases {
		e := DefaultVLLMEngineConfig()
		tc.mutate(&e)
		if err := e.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error = %v, want %q", err, tc.want)
		}
	}
}

func TestLookupModel(t *testing.T) {
	c := defaultCatalogT(t)
	for _, name := range []string{"meta-llama/llama-3.1-8b-instruct", "Meta-Llama/Llama-3.1-8B-Instruct", "llama-3.1-8b-instruct", "LLAMA-3.1-8B-INSTRUCT"} {
		e, err := c.LookupModel(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if e.ID != "meta-llama/llama-3.1-8b-instruct" || e.Folder != "llama-3.1-8b-instruct" || e.DefaultGPU != "H100" || e.DefaultTP != 1 {
			t.Fatalf("%s: entry %+v", name, e)
		}
	}
	// A folder whose id differs from its name: the RedHat FP8 Scout.
	e, err := c.LookupModel("llama-4-scout-17b-16e-instruct-fp8-dynamic")
	if err != nil || e.ID != "redhatai/llama-4-scout-17b-16e-instruct-fp8-dynamic" || e.DefaultTP != 2 {
		t.Fatalf("scout entry %+v, %v", e, err)
	}
	// A folder with no defaults entry.
	if e, err := c.LookupModel("mixtral-8x7b-v0.1"); err != nil || e.ID != "" || e.Folder != "mixtral-8x7b-v0.1" {
		t.Fatalf("mixtral entry %+v, %v", e, err)
	}
	_, err = c.LookupModel("gpt-5")
	if err == nil || !strings.Contains(err.Error(), `model "gpt-5" is not known`) ||
		!strings.Contains(err.Error(), "meta-llama/llama-3.1-8b-instruct (llama-3.1-8b-instruct)") ||
		!strings.Contains(err.Error(), "deepseek-v2-lite") {
		t.Fatalf("unknown model error = %v", err)
	}
	// An id without a config.json.
	phi, err := c.LookupModel("microsoft/phi-4")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ModelConfig(phi); err == nil || !strings.Contains(err.Error(), "has no config.json") {
		t.Fatalf("phi-4 config error = %v", err)
	}
}

func TestBlackboxRows(t *testing.T) {
	c := defaultCatalogT(t)
	r, err := c.BlackboxCoefficients("meta-llama/llama-3.1-8b-instruct", "H100", 1, "")
	if err != nil {
		t.Fatal(err)
	}
	// The row of blis-upstream §2.1, selected through the default version v0.11.0.
	if r.VLLMVersion != "vllm/vllm-openai:v0.11.0" || r.Beta[0] != 6472.007648778123 || r.Beta[2] != 304.4021040302657 || r.Alpha[0] != 10326.268121600151 {
		t.Fatalf("row = %+v", r)
	}
	r, err = c.BlackboxCoefficients("META-LLAMA/llama-3.1-8b-instruct", "a100", 1, "vllm/vllm-openai:v0.8.4")
	if err != nil || r.GPU != "A100-80" || r.Beta[0] != 16441.531547147923 {
		t.Fatalf("A100 row = %+v, %v", r, err)
	}
	_, err = c.BlackboxCoefficients("meta-llama/llama-3.1-8b-instruct", "L40S", 1, "")
	if err == nil || !strings.Contains(err.Error(), "rows for this model:") || !strings.Contains(err.Error(), "H100/TP2/vllm/vllm-openai:v0.8.4") {
		t.Fatalf("missing row error = %v", err)
	}
	_, err = c.BlackboxCoefficients("qwen/qwen3-30b", "H100", 1, "")
	if err == nil || !strings.Contains(err.Error(), "models with rows:") {
		t.Fatalf("no rows error = %v", err)
	}
	if n := len(c.rows); n != 111 {
		t.Fatalf("blackbox rows = %d, want 111", n)
	}
}

func TestTrainedPhysicsDefaults(t *testing.T) {
	co, err := defaultCatalogT(t).TrainedPhysicsCoefficients()
	if err != nil {
		t.Fatal(err)
	}
	if len(co.Alpha) != 3 || co.Alpha[0] != 15563.199579 || len(co.Beta) != 11 || co.Beta[0] != 0.152128 || co.Beta[10] != 0.752037 {
		t.Fatalf("coefficients = %+v", co)
	}
	co.Beta[0] = 99 // the catalog hands out copies
	again, _ := defaultCatalogT(t).TrainedPhysicsCoefficients()
	if again.Beta[0] != 0.152128 {
		t.Fatal("TrainedPhysicsCoefficients returned shared storage")
	}
}

func TestOverridePaths(t *testing.T) {
	dir := t.TempDir()
	// A single-model folder (BLIS --model-config-folder) serves any requested name.
	single := filepath.Join(dir, "single")
	if err := os.MkdirAll(single, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `{"num_hidden_layers": 4, "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4,
		"num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 2048, "torch_dtype": "bfloat16"}`
	if err := os.WriteFile(filepath.Join(single, "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	hw := filepath.Join(dir, "hw.json")
	if err := os.WriteFile(hw, []byte(`{"_comment": "x", "TinyGPU": {"TFlopsPeak": 10, "TFlopsFP8": 0, "BwPeakTBs": 0.5, "mfuPrefill": 0.5, "mfuDecode": 0.2, "MemoryGiB": 4}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	defs := filepath.Join(dir, "defaults.yaml")
	if err := os.WriteFile(defs, []byte("defaults:\n  acme/tiny:\n    GPU: TinyGPU\n    tensor_parallelism: 2\ntrained_physics_coefficients:\n  alpha_coeffs: [1, 2, 3]\n  beta_coeffs: [1, 0, 1, 0, 1, 1, 1]\nmodels:\n- id: acme/tiny\n  GPU: TinyGPU\n  tensor_parallelism: 2\n  vllm_version: v1\n  alpha_coeffs: [10, 0, 1]\n  beta_coeffs: [100, 2, 3]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Resolve(InstanceSpec{Model: "acme/tiny", LatencyModel: "blackbox",
		Paths: Sources{ModelConfigDir: single, HardwareConfigPath: hw, DefaultsPath: defs}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Hardware.Name != "TinyGPU" || r.Engine.TensorParallelSize != 2 || r.Model.NumLayers != 4 ||
		r.Latency.Beta[0] != 100 || r.Engine.VLLMVersion != "v1" {
		t.Fatalf("resolved = %+v %+v %+v", r.Hardware, r.Engine, r.Latency)
	}
	r, err = Resolve(InstanceSpec{Model: "acme/tiny", Paths: Sources{ModelConfigDir: single, HardwareConfigPath: hw, DefaultsPath: defs}})
	if err != nil || len(r.Latency.Beta) != 7 || r.Latency.Alpha[2] != 3 {
		t.Fatalf("trained-physics from override defaults: %+v, %v", r, err)
	}
	// A folder of model folders (BLIS model_configs/ layout).
	tree := filepath.Join(dir, "tree", "tiny-model")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadCatalog(Sources{ModelConfigDir: filepath.Join(dir, "tree")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.LookupModel("llama-3.1-8b-instruct"); err == nil {
		t.Fatal("an overriding config folder must replace the embedded configs")
	}
	e, err := c.LookupModel("Tiny-Model")
	if err != nil || e.Folder != "tiny-model" {
		t.Fatalf("tree lookup %+v, %v", e, err)
	}
	if _, err := LoadCatalog(Sources{HardwareConfigPath: filepath.Join(dir, "missing.json")}); err == nil {
		t.Fatal("a missing override file must be an error")
	}
}
