package model

import (
	"io/fs"
	"path"
	"strings"
	"testing"
)

// shippedConfig loads one embedded config.json by folder name.
func shippedConfig(t *testing.T, folder string) *HFModelConfig {
	t.Helper()
	data, err := embedded.ReadFile(path.Join(embeddedModelConfigs, folder, "config.json"))
	if err != nil {
		t.Fatalf("read %s: %v", folder, err)
	}
	m, err := ParseHFConfig(data)
	if err != nil {
		t.Fatalf("parse %s: %v", folder, err)
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("validate %s: %v", folder, err)
	}
	m.ModelID = folder
	return m
}

func TestEveryShippedConfigLoadsAndValidates(t *testing.T) {
	entries, err := fs.ReadDir(embedded, embeddedModelConfigs)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 14 {
		t.Fatalf("expected the 14 BLIS model configs, found %d", len(entries))
	}
	for _, e := range entries {
		t.Run(e.Name(), func(t *testing.T) {
			m := shippedConfig(t, e.Name())
			if m.TotalParameters() <= 0 || m.ActiveParametersPerToken() <= 0 || m.KVCacheBytesPerToken() <= 0 || m.MaxModelLen() <= 0 {
				t.Fatalf("non-positive derived property: %+v", m)
			}
			if m.ActiveParametersPerToken() > m.TotalParameters() {
				t.Fatalf("active %d > total %d", m.ActiveParametersPerToken(), m.TotalParameters())
			}
		})
	}
}

// TestShippedArchitectures pins the facts read from each config.json; parameter counts are
// checked against the published model sizes (within 2%).
func TestShippedArchitectures(t *testing.T) {
	cases := []struct {
		folder        string
		moe, mla      bool
		moeLayers     int
		headDim       int
		kvBytes       int64
		paramsB       float64 // published size in billions
		activeB       float64 // 0 = same as total
		wbpp          float64
		maxModelLen   int64
		sharedExperts int
	}{
		{folder: "llama-3.1-8b-instruct", headDim: 128, kvBytes: 131072, paramsB: 8.03, wbpp: 2, maxModelLen: 131072},
		{folder: "llama-3.1-70b-instruct", headDim: 128, kvBytes: 327680, paramsB: 70.55, wbpp: 2, maxModelLen: 131072},
		{folder: "llama-2-7b-hf", headDim: 128, kvBytes: 524288, paramsB: 6.74, wbpp: 2, maxModelLen: 4096},
		{folder: "llama-2-70b-hf", headDim: 128, kvBytes: 327680, paramsB: 68.98, wbpp: 2, maxModelLen: 4096},
		{folder: "codellama-34b-instruct-hf", headDim: 128, kvBytes: 196608, paramsB: 33.74, wbpp: 2, maxModelLen: 16384},
		{folder: "yi-34b", headDim: 128, kvBytes: 245760, paramsB: 34.39, wbpp: 2, maxModelLen: 4096},
		// Explicit head_dim 128 where hidden/heads would give 160.
		{folder: "mistral-nemo-instruct-2407", headDim: 128, kvBytes: 163840, paramsB: 12.25, wbpp: 2, maxModelLen: 131072},
		{folder: "qwen2.5-7b-instruct", headDim: 128, kvBytes: 57344, paramsB: 7.62, wbpp: 2, maxModelLen: 32768},
		{folder: "qwen3-14b", headDim: 128, kvBytes: 163840, paramsB: 14.77, wbpp: 2, maxModelLen: 40960},
		{folder: "mixtral-8x7b-v0.1", moe: true, moeLayers: 32, headDim: 128, kvBytes: 131072, paramsB: 46.7, activeB: 12.9, wbpp: 2, maxModelLen: 32768},
		// Explicit head_dim 128 where hidden/heads would give 64.
		{folder: "qwen3-30b-a3b", moe: true, moeLayers: 48, headDim: 128, kvBytes: 98304, paramsB: 30.5, activeB: 3.3, wbpp: 2, maxModelLen: 40960},
		// MLA: 27 layers × (512 + 64) × 2 bytes; first layer dense; 2 shared experts; yarn ×40.
		{folder: "deepseek-v2-lite", moe: true, mla: true, moeLayers: 26, headDim: 128, kvBytes: 31104, paramsB: 15.7, activeB: 2.66, wbpp: 2, maxModelLen: 163840, sharedExperts: 2},
		// MLA with low-rank queries, 3 dense layers, FP8 weights.
		{folder: "glm-5.2-fp8", moe: true, mla: true, moeLayers: 75, headDim: 192, kvBytes: 78 * 576 * 2, paramsB: 744, activeB: 41, wbpp: 1, maxModelLen: 1048576, sharedExperts: 1},
		// Multimodal config (text_config), interleave step 1 = every layer MoE, FP8 weights.
		{folder: "llama-4-scout-17b-16e-instruct-fp8-dynamic", moe: true, moeLayers: 48, headDim: 128, kvBytes: 196608, paramsB: 107.8, activeB: 17.2, wbpp: 1, maxModelLen: 10485760, sharedExperts: 1},
	}
	for _, tc := range cases {
		t.Run(tc.folder, func(t *testing.T) {
			m := shippedConfig(t, tc.folder)
			if m.IsMoE() != tc.moe || m.IsMLA() != tc.mla {
				t.Fatalf("IsMoE=%v IsMLA=%v, want %v %v", m.IsMoE(), m.IsMLA(), tc.moe, tc.mla)
			}
			if m.NumMoELayers() != tc.moeLayers {
				t.Errorf("NumMoELayers=%d, want %d", m.NumMoELayers(), tc.moeLayers)
			}
			if m.HeadDim() != tc.headDim {
				t.Errorf("HeadDim=%d, want %d", m.HeadDim(), tc.headDim)
			}
			if m.KVCacheBytesPerToken() != tc.kvBytes {
				t.Errorf("KVCacheBytesPerToken=%d, want %d", m.KVCacheBytesPerToken(), tc.kvBytes)
			}
			if m.WeightBytesPerParam != tc.wbpp {
				t.Errorf("WeightBytesPerParam=%v, want %v", m.WeightBytesPerParam, tc.wbpp)
			}
			if m.MaxModelLen() != tc.maxModelLen {
				t.Errorf("MaxModelLen=%d, want %d", m.MaxModelLen(), tc.maxModelLen)
			}
			near := func(what string, got int64, wantB float64) {
				if g := float64(got) / 1e9; g < wantB*0.98 || g > wantB*1.02 {
					t.Errorf("%s = %.3fB, want about %.2fB", what, g, wantB)
				}
			}
			near("TotalParameters", m.TotalParameters(), tc.paramsB)
			if tc.activeB > 0 {
				near("ActiveParametersPerToken", m.ActiveParametersPerToken(), tc.activeB)
			} else if m.ActiveParametersPerToken() != m.TotalParameters() {
				t.Errorf("dense model: active %d != total %d", m.ActiveParametersPerToken(), m.TotalParameters())
			}
			if tc.moe && m.MoE.NumSharedExperts != tc.sharedExperts {
				t.Errorf("NumSharedExperts=%d, want %d", m.MoE.NumSharedExperts, tc.sharedExperts)
			}
		})
	}
}

// Seed 002 scenario: load MoE model config (Mixtral).
func TestMixtralIsMoE(t *testing.T) {
	m := shippedConfig(t, "mixtral-8x7b-v0.1")
	if !m.IsMoE() || m.MoE.NumLocalExperts != 8 || m.MoE.NumExpertsPerTok != 2 {
		t.Fatalf("Mixtral MoE = %+v", m.MoE)
	}
	if m.MoE.ExpertIntermediateSize != 14336 {
		t.Fatalf("expert width = %d, want intermediate_size 14336", m.MoE.ExpertIntermediateSize)
	}
}

func syntheticDense() *HFModelConfig {
	return &HFModelConfig{
		ModelID: "synthetic", NumLayers: 32, HiddenSize: 4096, IntermediateSize: 14336,
		NumAttentionHeads: 32, NumKVHeads: 8, VocabSize: 128256, MaxPositionEmbeddings: 8192,
		BytesPerParam: 2, WeightBytesPerParam: 2, HiddenAct: "silu",
	}
}

// Seed 002 scenarios: KV bytes per token; identical for dense and MoE with the same attention;
// active < total for MoE; reject NumKVHeads > NumAttentionHeads.
func TestSeedScenarios(t *testing.T) {
	dense := syntheticDense()
	if got := dense.KVCacheBytesPerToken(); got != 131072 { // 2 × 32 × 8 × 128 × 2
		t.Fatalf("KVCacheBytesPerToken = %d, want 131072", got)
	}
	moe := syntheticDense()
	moe.MoE = &MoEConfig{NumLocalExperts: 8, NumExpertsPerTok: 2, ExpertIntermediateSize: 14336, NumMoELayers: 32}
	if err := moe.Validate(); err != nil {
		t.Fatal(err)
	}
	if moe.KVCacheBytesPerToken() != dense.KVCacheBytesPerToken() {
		t.Fatalf("MoE KV %d != dense KV %d", moe.KVCacheBytesPerToken(), dense.KVCacheBytesPerToken())
	}
	if moe.ActiveParametersPerToken() >= moe.TotalParameters() {
		t.Fatalf("active %d not < total %d", moe.ActiveParametersPerToken(), moe.TotalParameters())
	}
	bad := syntheticDense()
	bad.NumKVHeads = 64
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "num_key_value_heads") {
		t.Fatalf("NumKVHeads > heads: error = %v", err)
	}
}

func TestValidateNamesFieldAndRule(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*HFModelConfig)
		want   string
	}{
		{"layers", func(m *HFModelConfig) { m.NumLayers = 0 }, "num_hidden_layers must be > 0"},
		{"hidden", func(m *HFModelConfig) { m.HiddenSize = -1 }, "hidden_size must be > 0"},
		{"heads", func(m *HFModelConfig) { m.NumAttentionHeads = 0 }, "num_attention_heads must be > 0"},
		{"kv heads zero", func(m *HFModelConfig) { m.NumKVHeads = 0 }, "num_key_value_heads must be in [1,"},
		{"kv heads not dividing", func(m *HFModelConfig) { m.NumKVHeads = 6 }, "must be a multiple of num_key_value_heads"},
		{"head dim implied", func(m *HFModelConfig) { m.HiddenSize = 4100 }, "hidden_size (4100) must be divisible by num_attention_heads (32)"},
		{"dtype", func(m *HFModelConfig) { m.BytesPerParam = 3 }, "must give 1, 2 or 4 bytes"},
		{"weights", func(m *HFModelConfig) { m.WeightBytesPerParam = 0 }, "positive weight size"},
		{"vocab", func(m *HFModelConfig) { m.VocabSize = 0 }, "vocab_size must be > 0"},
		{"experts", func(m *HFModelConfig) {
			m.MoE = &MoEConfig{NumLocalExperts: 1, NumExpertsPerTok: 1, ExpertIntermediateSize: 1, NumMoELayers: 1}
		}, "num_local_experts must be > 1"},
		{"top-k", func(m *HFModelConfig) {
			m.MoE = &MoEConfig{NumLocalExperts: 8, NumExpertsPerTok: 9, ExpertIntermediateSize: 1, NumMoELayers: 1}
		}, "num_experts_per_tok must be in [1, num_local_experts=8]"},
		{"mla rope", func(m *HFModelConfig) { m.MLA = &MLAConfig{KVLoraRank: 512, VHeadDim: 128} }, "qk_rope_head_dim must be > 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := syntheticDense()
			tc.mutate(m)
			err := m.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	// An explicit head_dim lifts the divisibility rule (Mistral-NeMo style).
	m := syntheticDense()
	m.HiddenSize, m.ExplicitHeadDim = 5120, 128
	m.NumAttentionHeads = 48
	if err := m.Validate(); err != nil {
		t.Fatalf("explicit head_dim: %v", err)
	}
	if m.HeadDim() != 128 {
		t.Fatalf("HeadDim = %d, want the explicit 128", m.HeadDim())
	}
}

func TestParseDtypeQuantizationAndRope(t *testing.T) {
	base := `"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
		"vocab_size": 100, "max_position_embeddings": 4096`
	cases := []struct {
		name     string
		extra    string
		bpp      int
		wbpp     float64
		maxLen   int64
		tied     bool
		kvHeads  int
		wantErr  string
		quantTag string
	}{
		{name: "defaults", extra: ``, bpp: 2, wbpp: 2, maxLen: 4096, kvHeads: 4},
		{name: "fp32 tied", extra: `,"torch_dtype":"float32","tie_word_embeddings":true`, bpp: 4, wbpp: 4, maxLen: 4096, tied: true, kvHeads: 4},
		{name: "fp8", extra: `,"quantization_config":{"quant_method":"fp8"}`, bpp: 2, wbpp: 1, maxLen: 4096, kvHeads: 4, quantTag: "fp8"},
		{name: "w4a16", extra: `,"quantization_config":{"quant_method":"compressed-tensors","config_groups":{"group_0":{"weights":{"num_bits":4}}}}`, bpp: 2, wbpp: 0.5, maxLen: 4096, kvHeads: 4, quantTag: "compressed-tensors/4-bit"},
		{name: "awq", extra: `,"quantization_config":{"quant_method":"awq","bits":4}`, bpp: 2, wbpp: 0.5, maxLen: 4096, kvHeads: 4},
		{name: "linear rope", extra: `,"rope_scaling":{"type":"linear","factor":2.0}`, bpp: 2, wbpp: 2, maxLen: 8192, kvHeads: 4},
		{name: "yarn rope", extra: `,"rope_scaling":{"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":1024}`, bpp: 2, wbpp: 2, maxLen: 4096, kvHeads: 4},
		{name: "llama3 rope", extra: `,"rope_scaling":{"rope_type":"llama3","factor":8.0,"original_max_position_embeddings":512}`, bpp: 2, wbpp: 2, maxLen: 4096, kvHeads: 4},
		{name: "dynamic rope", extra: `,"rope_scaling":{"type":"dynamic","factor":2.0}`, bpp: 2, wbpp: 2, maxLen: 8192, kvHeads: 4},
		{name: "gqa", extra: `,"num_key_value_heads":2`, bpp: 2, wbpp: 2, maxLen: 4096, kvHeads: 2},
		{name: "unknown quant", extra: `,"quantization_config":{"quant_method":"zzz"}`, wantErr: `quantization_config.quant_method "zzz" is not supported`},
		{name: "unknown dtype", extra: `,"torch_dtype":"int3"`, wantErr: `torch_dtype "int3" is not supported`},
		{name: "fractional layers", extra: `,"num_hidden_layers":2.5`, wantErr: "num_hidden_layers: must be an integer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseHFConfig([]byte("{" + base + tc.extra + "}"))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			if m.BytesPerParam != tc.bpp || m.WeightBytesPerParam != tc.wbpp || m.MaxModelLen() != tc.maxLen ||
				m.TieWordEmbeddings != tc.tied || m.NumKVHeads != tc.kvHeads {
				t.Fatalf("got bpp=%d wbpp=%v maxLen=%d tied=%v kvHeads=%d", m.BytesPerParam, m.WeightBytesPerParam, m.MaxModelLen(), m.TieWordEmbeddings, m.NumKVHeads)
			}
			if tc.quantTag != "" && m.Quantization != tc.quantTag {
				t.Fatalf("Quantization = %q, want %q", m.Quantization, tc.quantTag)
			}
		})
	}
	// Tied embeddings drop the lm_head from the parameter count.
	untied, _ := ParseHFConfig([]byte("{" + base + "}"))
	tied, _ := ParseHFConfig([]byte("{" + base + `,"tie_word_embeddings":true}`))
	if d := untied.TotalParameters() - tied.TotalParameters(); d != 100*64 {
		t.Fatalf("tying removed %d parameters, want vocab×hidden = 6400", d)
	}
}

// The per-layer MoE placement rules of each family.
func TestMoELayerPlacement(t *testing.T) {
	base := `"num_hidden_layers": 8, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
		"vocab_size": 100, "max_position_embeddings": 4096, "num_experts_per_tok": 2`
	cases := []struct {
		extra string
		want  int
	}{
		{`,"num_local_experts":8`, 8},                                                          // Mixtral: all
		{`,"num_experts":8,"decoder_sparse_step":2`, 4},                                        // Qwen-MoE: every 2nd
		{`,"num_experts":8,"decoder_sparse_step":1,"mlp_only_layers":[0,7]}`, 6},               // minus MLP-only
		{`,"n_routed_experts":8,"first_k_dense_replace":3,"moe_layer_freq":1`, 5},              // DeepSeek prefix
		{`,"n_routed_experts":8,"first_k_dense_replace":1,"moe_layer_freq":2`, 3},              // layers 2,4,6
		{`,"num_local_experts":8,"interleave_moe_layer_step":2,"model_type":"llama4_text"`, 4}, // Maverick
		{`,"num_local_experts":8,"interleave_moe_layer_step":1,"model_type":"llama4_text"`, 8}, // Scout
		{`,"num_local_experts":8,"moe_layers":[1,3,5]`, 3},                                     // explicit list
	}
	for _, tc := range cases {
		js := "{" + base + tc.extra
		if !strings.HasSuffix(js, "}") {
			js += "}"
		}
		m, err := ParseHFConfig([]byte(js))
		if err != nil {
			t.Fatalf("%s: %v", tc.extra, err)
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.extra, err)
		}
		if m.NumMoELayers() != tc.want || m.NumDenseLayers() != 8-tc.want {
			t.Errorf("%s: NumMoELayers=%d, want %d", tc.extra, m.NumMoELayers(), tc.want)
		}
	}
}
