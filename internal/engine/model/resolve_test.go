package model

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// blis-upstream §2.5: llama-3.1-8b on one H100 at 0.9 ⇒ 26,312 blocks (BLIS's log).
func TestKVCapacityMatchesBLIS(t *testing.T) {
	r, err := Resolve(InstanceSpec{Model: "meta-llama/llama-3.1-8b-instruct", GPU: "H100"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Engine.TotalKVBlocks != 26312 {
		t.Fatalf("TotalKVBlocks = %d, want 26312", r.Engine.TotalKVBlocks)
	}
	// max_model_len auto = max_position_embeddings (131072), under the 421k-token cache.
	if r.Engine.MaxModelLen != 131072 {
		t.Fatalf("MaxModelLen = %d, want 131072", r.Engine.MaxModelLen)
	}
	if r.KVCapacity.ActivationGiB != 5.5 || r.KVCapacity.NonTorchGiB != 0.15 || r.KVCapacity.BlockBytes != 16*131072 {
		t.Fatalf("capacity breakdown = %+v", r.KVCapacity)
	}
}

func TestKVCapacityScaling(t *testing.T) {
	blocks := func(model, gpu string, s EngineSettings) int64 {
		t.Helper()
		r, err := Resolve(InstanceSpec{Model: model, GPU: gpu, Engine: s})
		if err != nil {
			t.Fatalf("%s %s %+v: %v", model, gpu, s, err)
		}
		return r.Engine.TotalKVBlocks
	}
	tp1 := blocks("llama-3.1-8b-instruct", "H100", EngineSettings{TensorParallelSize: 1})
	tp2 := blocks("llama-3.1-8b-instruct", "H100", EngineSettings{TensorParallelSize: 2})
	// Two GPUs hold the same weights once, so more than twice the free memory is left.
	if tp2 <= 2*tp1 {
		t.Fatalf("TP2 blocks %d should exceed twice TP1 blocks %d", tp2, tp1)
	}
	low := blocks("llama-3.1-8b-instruct", "H100", EngineSettings{GPUMemoryUtilization: 0.5})
	if low >= tp1 {
		t.Fatalf("utilisation 0.5 gives %d blocks, not fewer than %d", low, tp1)
	}
	big := blocks("llama-3.1-8b-instruct", "H100", EngineSettings{BlockSize: 32})
	if big != tp1/2 && big != tp1/2-1 {
		t.Fatalf("32-token blocks = %d, want about half of %d", big, tp1)
	}
	// MoE DP ranks each hold a full pool.
	dp1 := blocks("qwen3-30b-a3b", "H100", EngineSettings{TensorParallelSize: 2})
	dp2 := blocks("qwen3-30b-a3b", "H100", EngineSettings{TensorParallelSize: 2, DataParallelSize: 2})
	if dp2 != 2*dp1 {
		t.Fatalf("DP2 blocks %d != 2 × DP1 blocks %d", dp2, dp1)
	}
	// The MLA latent is replicated per TP rank, so TP2 costs twice the bytes per block.
	r, err := Resolve(InstanceSpec{Model: "deepseek-v2-lite", Engine: EngineSettings{TensorParallelSize: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if r.KVCapacity.BlockBytes != 2*16*31104 {
		t.Fatalf("MLA TP2 block bytes = %d, want %d", r.KVCapacity.BlockBytes, 2*16*31104)
	}
}

func TestKVCapacityTooSmall(t *testing.T) {
	_, err := Resolve(InstanceSpec{Model: "llama-3.1-70b-instruct", GPU: "H100", Engine: EngineSettings{TensorParallelSize: 1}})
	if err == nil || !strings.Contains(err.Error(), "minimum GPUs per replica: 2") {
		t.Fatalf("70B on one H100: error = %v", err)
	}
	// An explicit pool bypasses the estimate.
	r, err := Resolve(InstanceSpec{Model: "llama-3.1-70b-instruct", GPU: "H100", Engine: EngineSettings{TensorParallelSize: 1, TotalKVBlocks: 100}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Engine.TotalKVBlocks != 100 || r.Engine.MaxModelLen != 1600 || r.KVCapacity.Blocks != 0 {
		t.Fatalf("explicit pool: %+v", r.Engine)
	}
}

func TestResolveDefaultsAndErrors(t *testing.T) {
	r, err := Resolve(InstanceSpec{Model: "codellama/codellama-34b-instruct-hf"})
	if err != nil {
		t.Fatal(err)
	}
	// defaults.yaml: codellama-34b → H100, TP 2; max_model_len = max_position_embeddings.
	if r.Hardware.Name != "H100" || r.Engine.TensorParallelSize != 2 || r.Engine.MaxModelLen != 16384 ||
		r.ModelName != "codellama/codellama-34b-instruct-hf" || r.Latency.Kind != LatencyTrainedPhysics {
		t.Fatalf("resolved %s %+v %+v", r.ModelName, r.Hardware, r.Engine)
	}
	off := false
	r, err = Resolve(InstanceSpec{Model: "qwen3-14b", GPU: "a100", Engine: EngineSettings{
		MaxNumSeqs: 64, MaxNumBatchedTokens: 8192, LongPrefillTokenThreshold: 512, EnablePrefixCaching: &off, MaxModelLen: 8192}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Hardware.Name != "A100-80" || r.Engine.MaxNumSeqs != 64 || r.Engine.MaxNumBatchedTokens != 8192 ||
		r.Engine.LongPrefillTokenThreshold != 512 || r.Engine.EnablePrefixCaching || !r.Engine.EnableChunkedPrefill || r.Engine.MaxModelLen != 8192 {
		t.Fatalf("settings not applied: %+v", r.Engine)
	}

	cases := []struct {
		spec InstanceSpec
		want string
	}{
		{InstanceSpec{Model: "nope"}, `model "nope" is not known`},
		{InstanceSpec{Model: "llama-3.1-8b-instruct", GPU: "TPUv5"}, "gpu \"TPUv5\" is not known (known: A100-80, A100-SXM, H100, L40S)"},
		{InstanceSpec{Model: "llama-3.1-8b-instruct", Engine: EngineSettings{TensorParallelSize: 3}}, "tensor-parallel-size 3 is not supported by meta-llama/llama-3.1-8b-instruct: num_attention_heads (32) and num_key_value_heads (8) must divide evenly (supported: 1, 2, 4, 8, 16, 32)"},
		{InstanceSpec{Model: "llama-3.1-8b-instruct", Engine: EngineSettings{DataParallelSize: 2}}, "data-parallel-size 2 needs a MoE model"},
		{InstanceSpec{Model: "llama-3.1-8b-instruct", Engine: EngineSettings{GPUMemoryUtilization: 1.2}}, "gpu-memory-utilization must be in (0, 1]"},
		{InstanceSpec{Model: "llama-3.1-8b-instruct", Engine: EngineSettings{MaxNumSeqs: -1}}, "max-num-seqs must be > 0"},
		{InstanceSpec{Model: "llama-3.1-8b-instruct", Engine: EngineSettings{MaxModelLen: 200000}}, "max-model-len (200000) must not exceed the model's maximum context 131072"},
		{InstanceSpec{Model: "llama-3.1-8b-instruct", Engine: EngineSettings{TotalKVBlocks: 10, MaxModelLen: 4096}}, "must not exceed the KV cache (10 blocks × 16 tokens = 160 tokens)"},
		{InstanceSpec{Model: "llama-3.1-8b-instruct", LatencyModel: "roofline", AlphaCoeffs: []float64{1, 2, 3}}, "roofline takes no alpha or beta coefficients"},
		{InstanceSpec{Model: "llama-3.1-8b-instruct", LatencyModel: "magic"}, "latency: model \"magic\" is not known (known: trained-physics, roofline, blackbox)"},
		{InstanceSpec{Model: "llama-3.1-8b-instruct", LatencyModel: "blackbox", GPU: "L40S"}, "no row for model \"meta-llama/llama-3.1-8b-instruct\" on GPU L40S"},
		{InstanceSpec{Model: "mixtral-8x7b-v0.1", LatencyModel: "blackbox", Engine: EngineSettings{TensorParallelSize: 2}}, "blackbox needs alpha and beta coefficients or a catalog model id"},
		{InstanceSpec{Model: "llama-3.1-8b-instruct", BetaCoeffs: []float64{1, -1}}, "coefficients must be finite and >= 0"},
		{InstanceSpec{}, "model must name a catalog model or an inline config"},
	}
	for _, tc := range cases {
		_, err := Resolve(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error = %v, want %q", tc.spec, err, tc.want)
		}
	}
}

func TestResolveLatencyCoefficients(t *testing.T) {
	r, err := Resolve(InstanceSpec{Model: "llama-3.1-8b-instruct", LatencyModel: "blackbox"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Latency.Beta[0] != 6472.007648778123 || r.Engine.VLLMVersion != "vllm/vllm-openai:v0.11.0" ||
		!strings.Contains(r.Latency.Source, "blackbox row meta-llama/llama-3.1-8b-instruct/H100/TP1") {
		t.Fatalf("blackbox: %+v %s", r.Latency, r.Engine.VLLMVersion)
	}
	r, err = Resolve(InstanceSpec{Model: "llama-3.1-8b-instruct", Engine: EngineSettings{TensorParallelSize: 2, VLLMVersion: "vllm/vllm-openai:v0.8.4"}, LatencyModel: "BlackBox"})
	if err != nil || r.Latency.Beta[0] != 6910.420479880494 {
		t.Fatalf("TP2 v0.8.4 row: %+v, %v", r, err)
	}
	// Explicit blackbox coefficients need no row (any model).
	r, err = Resolve(InstanceSpec{Model: "mixtral-8x7b-v0.1", Engine: EngineSettings{TensorParallelSize: 2}, LatencyModel: "blackbox",
		AlphaCoeffs: []float64{1, 2, 3}, BetaCoeffs: []float64{4, 5, 6}})
	if err != nil || r.Latency.Source != "explicit" || r.Latency.Beta[2] != 6 {
		t.Fatalf("explicit blackbox: %+v, %v", r, err)
	}
	// Explicit betas with default alphas for trained-physics.
	r, err = Resolve(InstanceSpec{Model: "llama-3.1-8b-instruct", BetaCoeffs: []float64{1, 1, 1, 1, 1, 1, 1}})
	if err != nil || len(r.Latency.Beta) != 7 || r.Latency.Alpha[0] != 15563.199579 {
		t.Fatalf("explicit betas: %+v, %v", r, err)
	}
	r, err = Resolve(InstanceSpec{Model: "llama-3.1-8b-instruct", LatencyModel: "roofline"})
	if err != nil || r.Latency.Alpha != nil || r.Latency.Beta != nil {
		t.Fatalf("roofline: %+v, %v", r, err)
	}
}

func TestResolveInlineConfig(t *testing.T) {
	js := []byte(`{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 16, "hidden_size": 2048,
		"intermediate_size": 8192, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
		"max_position_embeddings": 131072, "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "original_max_position_embeddings": 8192},
		"tie_word_embeddings": true, "torch_dtype": "bfloat16"}`)
	r, err := Resolve(InstanceSpec{ModelConfigJSON: js, GPU: "L40S"})
	if err != nil {
		t.Fatal(err)
	}
	if r.ModelName != "inline" || r.Model.NumLayers != 16 || !r.Model.TieWordEmbeddings || r.Hardware.Name != "L40S" || r.Engine.TotalKVBlocks <= 0 {
		t.Fatalf("inline: %s %+v %+v", r.ModelName, r.Model, r.Engine)
	}
	// A catalog name with an inline config keeps the name's defaults (GPU, TP) and rows.
	r, err = Resolve(InstanceSpec{Model: "meta-llama/llama-3.1-8b-instruct", ModelConfigJSON: js, LatencyModel: "blackbox"})
	if err != nil || r.Model.NumLayers != 16 || r.Latency.Beta[0] != 6472.007648778123 {
		t.Fatalf("named inline: %+v, %v", r, err)
	}
	if _, err := Resolve(InstanceSpec{ModelConfigJSON: []byte(`{"num_hidden_layers": 0}`)}); err == nil || !strings.Contains(err.Error(), "inline model config") {
		t.Fatalf("bad inline config error = %v", err)
	}
	// A parsed config is copied, not aliased.
	m := shippedConfig(t, "qwen3-14b")
	r, err = Resolve(InstanceSpec{ModelConfig: m})
	if err != nil || r.Model == m {
		t.Fatalf("parsed inline: %v (aliased: %v)", err, r != nil && r.Model == m)
	}
}

// Example_kvCapacity prints the KV capacity table of docs/latency-models.md; the output is
// checked, so a change to the estimate shows up here.
func Example_kvCapacity() {
	rows := []struct {
		model, gpu string
		tp, dp     int
	}{
		{"llama-3.1-8b-instruct", "H100", 1, 1},
		{"llama-3.1-8b-instruct", "H100", 2, 1},
		{"llama-3.1-8b-instruct", "A100-80", 1, 1},
		{"llama-3.1-8b-instruct", "L40S", 1, 1},
		{"llama-3.1-70b-instruct", "H100", 4, 1},
		{"llama-3.1-70b-instruct", "H100", 8, 1},
		{"qwen3-14b", "H100", 1, 1},
		{"mixtral-8x7b-v0.1", "H100", 2, 1},
		{"mixtral-8x7b-v0.1", "H100", 4, 1},
		{"qwen3-30b-a3b", "H100", 1, 1},
		{"qwen3-30b-a3b", "H100", 2, 2},
		{"deepseek-v2-lite", "H100", 1, 1},
		{"llama-4-scout-17b-16e-instruct-fp8-dynamic", "H100", 2, 1},
	}
	fmt.Println("| model | GPU | TP | DP | weights GiB | KV blocks | tokens | max_model_len |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, row := range rows {
		r, err := Resolve(InstanceSpec{Model: row.model, GPU: row.gpu, Engine: EngineSettings{TensorParallelSize: row.tp, DataParallelSize: row.dp}})
		if err != nil {
			fmt.Println(row.model, err)
			continue
		}
		fmt.Printf("| %s | %s | %d | %d | %.2f | %d | %d | %d |\n", row.model, r.Hardware.Name, row.tp, row.dp,
			r.KVCapacity.WeightGiB, r.Engine.TotalKVBlocks, r.Engine.TotalKVBlocks*r.Engine.BlockSize, r.Engine.MaxModelLen)
	}
	// Output:
	// | model | GPU | TP | DP | weights GiB | KV blocks | tokens | max_model_len |
	// |---|---|---|---|---|---|---|---|
	// | llama-3.1-8b-instruct | H100 | 1 | 1 | 14.96 | 26312 | 420992 | 131072 |
	// | llama-3.1-8b-instruct | H100 | 2 | 1 | 14.96 | 62639 | 1002224 | 131072 |
	// | llama-3.1-8b-instruct | A100-80 | 1 | 1 | 14.96 | 26312 | 420992 | 131072 |
	// | llama-3.1-8b-instruct | L40S | 1 | 1 | 14.96 | 11567 | 185072 | 131072 |
	// | llama-3.1-70b-instruct | H100 | 4 | 1 | 131.42 | 30450 | 487200 | 131072 |
	// | llama-3.1-70b-instruct | H100 | 8 | 1 | 131.42 | 88941 | 1423056 | 131072 |
	// | qwen3-14b | H100 | 1 | 1 | 27.51 | 15909 | 254544 | 40960 |
	// | mixtral-8x7b-v0.1 | H100 | 2 | 1 | 86.99 | 24478 | 391648 | 32768 |
	// | mixtral-8x7b-v0.1 | H100 | 4 | 1 | 86.99 | 97591 | 1561456 | 32768 |
	// | qwen3-30b-a3b | H100 | 1 | 1 | 56.87 | 4764 | 76224 | 40960 |
	// | qwen3-30b-a3b | H100 | 2 | 2 | 56.87 | 106398 | 1702368 | 40960 |
	// | deepseek-v2-lite | H100 | 1 | 1 | 29.26 | 74639 | 1194224 | 163840 |
	// | llama-4-scout-17b-16e-instruct-fp8-dynamic | H100 | 2 | 1 | 100.37 | 11752 | 188032 | 188032 |
}

// An InstanceSpec decodes from JSON with the inline config.json as a nested object, as a
// resource or an input file carries it.
func TestInstanceSpecFromJSON(t *testing.T) {
	doc := `{"model": "my-model", "gpu": "H100", "latencyModel": "roofline",
		"engine": {"tensorParallelSize": 2, "maxNumSeqs": 128, "enablePrefixCaching": false},
		"modelConfigJSON": {"num_hidden_layers": 8, "hidden_size": 1024, "intermediate_size": 4096,
			"num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000, "max_position_embeddings": 8192}}`
	var spec InstanceSpec
	if err := json.Unmarshal([]byte(doc), &spec); err != nil {
		t.Fatal(err)
	}
	r, err := Resolve(spec)
	if err != nil {
		t.Fatal(err)
	}
	if r.ModelName != "my-model" || r.Model.NumLayers != 8 || r.Engine.TensorParallelSize != 2 || r.Engine.MaxNumSeqs != 128 ||
		r.Engine.EnablePrefixCaching || r.Engine.MaxModelLen != 8192 || r.Latency.Kind != LatencyRoofline || r.Model.Raw["vocab_size"] == nil {
		t.Fatalf("resolved %s %+v %+v", r.ModelName, r.Engine, r.Latency)
	}
}

func TestLoadHFConfigFileOrFolder(t *testing.T) {
	dir := t.TempDir()
	data, err := embedded.ReadFile("data/model_configs/qwen3-14b/config.json")
	if err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(dir, "qwen3-14b")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{folder, filepath.Join(folder, "config.json")} {
		m, err := LoadHFConfig(p)
		if err != nil || m.NumLayers != 40 || m.ModelID != "qwen3-14b" {
			t.Fatalf("%s: %+v, %v", p, m, err)
		}
	}
	if err := os.WriteFile(filepath.Join(folder, "config.json"), []byte(`{"num_hidden_layers": 2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadHFConfig(folder); err == nil || !strings.Contains(err.Error(), "hidden_size must be > 0") {
		t.Fatalf("invalid config error = %v", err)
	}
}

func TestKVCapacityBudgetTerms(t *testing.T) {
	cat := defaultCatalogT(t)
	h100, _ := cat.Hardware().Lookup("H100")
	moe := shippedConfig(t, "qwen3-30b-a3b")
	e := DefaultVLLMEngineConfig()
	kc, err := EstimateKVCapacity(moe, h100, &e)
	if err != nil {
		t.Fatal(err)
	}
	if kc.ActivationGiB != 8 || kc.NonTorchGiB != 0.15 || kc.AvailableGiB != 72 {
		t.Fatalf("MoE budget = %+v", kc)
	}
	// Two pipeline stages double the memory and take the multi-GPU non-torch reserve.
	e.PipelineParallelSize = 2
	kc2, err := EstimateKVCapacity(moe, h100, &e)
	if err != nil {
		t.Fatal(err)
	}
	if kc2.AvailableGiB != 144 || kc2.NonTorchGiB != 1.2 || kc2.Blocks <= 2*kc.Blocks {
		t.Fatalf("PP2 budget = %+v (PP1 blocks %d)", kc2, kc.Blocks)
	}
	// Exact arithmetic for llama-3.1-8b: (72 − weights − 5.5 − 0.15) GiB over 2 MiB blocks.
	dense := shippedConfig(t, "llama-3.1-8b-instruct")
	e = DefaultVLLMEngineConfig()
	kc, _ = EstimateKVCapacity(dense, h100, &e)
	want := int64((72-float64(dense.WeightBytes())/(1<<30)-5.5-0.15)*(1<<30)) / (16 * 131072)
	if kc.Blocks != want || want != 26312 {
		t.Fatalf("blocks = %d, want %d", kc.Blocks, want)
	}
}
