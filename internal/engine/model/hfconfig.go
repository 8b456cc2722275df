package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// HFModelConfig is a model architecture read from a Hugging Face config.json, with the
// computed properties the simulator needs (seed 002, HFModelConfig). Fields keep the Hugging
// Face meaning; multimodal configs (Llama-4) are read from their text_config.
type HFModelConfig struct {
	// ModelID names the model (catalog id or config folder); informational.
	ModelID string
	// ModelType is config.json's model_type (top level, e.g. "llama", "llama4", "deepseek_v2").
	ModelType string
	// Architectures is config.json's architectures list.
	Architectures []string

	// NumLayers is num_hidden_layers.
	NumLayers int
	// HiddenSize is hidden_size (d_model).
	HiddenSize int
	// IntermediateSize is intermediate_size: the MLP width of dense layers, and for Mixtral-style
	// MoE configs without moe_intermediate_size also the width of each expert.
	IntermediateSize int
	// DenseIntermediateSize is the MLP width of the dense layers of a MoE model when it differs
	// from IntermediateSize (Llama-4's intermediate_size_mlp); 0 when it does not.
	DenseIntermediateSize int
	// NumAttentionHeads is num_attention_heads.
	NumAttentionHeads int
	// NumKVHeads is num_key_value_heads (GQA); equal to NumAttentionHeads when absent.
	NumKVHeads int
	// ExplicitHeadDim is config.json's head_dim, 0 when absent (then HeadDim is hidden/heads).
	ExplicitHeadDim int
	// VocabSize is vocab_size.
	VocabSize int
	// MaxPositionEmbeddings is max_position_embeddings as written (see MaxModelLen for the
	// rope-scaling-aware value).
	MaxPositionEmbeddings int64
	// RopeScaling is the rope_scaling block, nil when absent or null.
	RopeScaling *RopeScaling
	// HiddenAct is hidden_act ("silu" for the SwiGLU family).
	HiddenAct string
	// TieWordEmbeddings is tie_word_embeddings (false when absent, as BLIS reads it).
	TieWordEmbeddings bool

	// TorchDtype is torch_dtype (or dtype), e.g. "bfloat16".
	TorchDtype string
	// BytesPerParam is the compute and KV-cache element size implied by TorchDtype: 1, 2 or 4.
	BytesPerParam int
	// Quantization names the weight quantization ("" when none), e.g. "fp8",
	// "compressed-tensors/8-bit".
	Quantization string
	// WeightBytesPerParam is the stored size of a weight: BytesPerParam unless the weights are
	// quantized (1 for FP8/INT8, 0.5 for 4-bit formats).
	WeightBytesPerParam float64

	// MoE is the mixture-of-experts configuration, nil for dense models.
	MoE *MoEConfig
	// MLA is the multi-head latent attention configuration (DeepSeek-V2/V3, GLM-5), nil for
	// standard multi-head / grouped-query attention.
	MLA *MLAConfig

	// Raw is the decoded config.json (numbers as json.Number), for fields not modelled above;
	// treat it as read-only. Nil for configs built in code.
	Raw map[string]any
}

// RopeScaling is the rope_scaling block of a config.json.
type RopeScaling struct {
	// Type is rope_type (or the older type), e.g. "llama3", "yarn", "linear", "dynamic".
	Type string
	// Factor is the scaling factor, 0 when absent.
	Factor float64
	// OriginalMaxPositionEmbeddings is original_max_position_embeddings, 0 when absent.
	OriginalMaxPositionEmbeddings int64
}

// MoEConfig describes the mixture-of-experts layers of a model.
type MoEConfig struct {
	// NumLocalExperts is the number of routed experts per MoE layer (num_local_experts,
	// num_experts or n_routed_experts).
	NumLocalExperts int
	// NumExpertsPerTok is the number of routed experts each token activates (top-k).
	NumExpertsPerTok int
	// ExpertIntermediateSize is the MLP width of one routed expert (moe_intermediate_size, else
	// intermediate_size).
	ExpertIntermediateSize int
	// NumSharedExperts is the number of always-active shared experts per MoE layer.
	NumSharedExperts int
	// SharedExpertIntermediateSize is the total MLP width of the shared experts of one MoE layer
	// (NumSharedExperts × per-expert width); 0 when there are none.
	SharedExpertIntermediateSize int
	// NumMoELayers is how many of the model's layers are MoE layers; the others are dense.
	NumMoELayers int
	// Interleaved reports a Llama-4 style config (interleave_moe_layer_step present), whose MoE
	// and dense layers alternate by a step rather than by a dense prefix.
	Interleaved bool
	// InterleaveStep is interleave_moe_layer_step (Llama-4), 0 when absent.
	InterleaveStep int
	// FirstKDenseReplace is first_k_dense_replace (DeepSeek, GLM): the leading dense layers.
	FirstKDenseReplace int
}

// MLAConfig describes multi-head latent attention: the KV cache holds one compressed latent
// of KVLoraRank + QKRopeHeadDim elements per token and layer, shared by all heads.
type MLAConfig struct {
	// KVLoraRank is kv_lora_rank.
	KVLoraRank int
	// QLoraRank is q_lora_rank, 0 when null (queries are projected directly).
	QLoraRank int
	// QKNopeHeadDim is qk_nope_head_dim.
	QKNopeHeadDim int
	// QKRopeHeadDim is qk_rope_head_dim.
	QKRopeHeadDim int
	// VHeadDim is v_head_dim.
	VHeadDim int
}

// ParseHFConfig parses the bytes of a Hugging Face config.json. It does not validate; call
// Validate (LoadHFConfig does both).
func ParseHFConfig(data []byte) (*HFModelConfig, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("config.json: %w", err)
	}
	if root == nil {
		return nil, errors.New("config.json: top level must be a JSON object")
	}
	r := newHFReader(root)

	c := &HFModelConfig{
		Raw:               root,
		ModelType:         r.strOf("model_type"),
		NumLayers:         r.intOf("num_hidden_layers", "n_layer", "num_layers"),
		HiddenSize:        r.intOf("hidden_size", "n_embd", "d_model"),
		IntermediateSize:  r.intOf("intermediate_size", "ffn_dim", "n_inner"),
		NumAttentionHeads: r.intOf("num_attention_heads", "n_head"),
		NumKVHeads:        r.intOf("num_key_value_heads", "num_kv_heads"),
		ExplicitHeadDim:   r.intOf("head_dim"),
		VocabSize:         r.intOf("vocab_size"),
		HiddenAct:         r.strOf("hidden_act", "hidden_activation"),
		TorchDtype:        r.strOf("torch_dtype", "dtype"),
	}
	if mt, ok := r.top["model_type"].(string); ok {
		c.ModelType = mt
	}
	if a, ok := r.top["architectures"].([]any); ok {
		for _, x := range a {
			if s, ok := x.(string); ok {
				c.Architectures = append(c.Architectures, s)
			}
		}
	}
	c.MaxPositionEmbeddings = int64(r.intOf("max_position_embeddings", "n_positions", "max_seq_len", "seq_length"))
	if c.NumKVHeads == 0 {
		c.NumKVHeads = c.NumAttentionHeads
	}
	if v, ok := r.get("tie_word_embeddings"); ok {
		b, isBool := v.(bool)
		if !isBool {
			r.fail("tie_word_embeddings: must be a boolean")
		}
		c.TieWordEmbeddings = b
	}
	c.RopeScaling = r.ropeScaling()
	r.precision(c)
	c.MLA = r.mla()
	c.MoE = r.moe(c)

	if len(r.perr) > 0 {
		sort.Strings(r.perr)
		return nil, fmt.Errorf("config.json: %s", strings.Join(r.perr, "; "))
	}
	return c, nil
}

// hfReader reads the fields of a config.json and collects the problems it finds.
type hfReader struct {
	// top is the whole document.
	top jsonObject
	// text is text_config when present, else top: multimodal configs (Llama-4, Mistral-3) keep
	// the language model there, so the fields the simulator needs are read there first, then
	// at the top level.
	text jsonObject
	// perr are the problems found so far, one message each.
	perr []string
}

func newHFReader(root map[string]any) *hfReader {
	r := &hfReader{top: jsonObject(root)}
	r.text = r.top
	if tc, ok := root["text_config"].(map[string]any); ok {
		r.text = jsonObject(tc)
	}
	return r
}

// fail records a problem.
func (r *hfReader) fail(msg string) {
	r.perr = append(r.perr, msg)
}

// get returns the first non-null value of keys, looking in text_config before the top level.
func (r *hfReader) get(keys ...string) (any, bool) {
	for _, o := range []jsonObject{r.text, r.top} {
		for _, k := range keys {
			if v, ok := o[k]; ok && v != nil {
				return v, true
			}
		}
	}
	return nil, false
}

// intOf returns the integer at the first of keys present, 0 when none is; a value that is not
// an integer is a problem named after keys[0].
func (r *hfReader) intOf(keys ...string) int {
	v, ok := r.get(keys...)
	if !ok {
		return 0
	}
	n, err := toInt(v)
	if err != nil {
		r.fail(fmt.Sprintf("%s: %v", keys[0], err))
	}
	return int(n)
}

// strOf returns the string at the first of keys present, "" when none is or it is not a string.
func (r *hfReader) strOf(keys ...string) string {
	v, ok := r.get(keys...)
	if !ok {
		return ""
	}
	s, _ := v.(string)
	return s
}

// intList returns the integers of the array at key, nil when key is absent or not an array.
func (r *hfReader) intList(key string) []int {
	v, ok := r.get(key)
	if !ok {
		return nil
	}
	arr, isArr := v.([]any)
	if !isArr {
		return nil
	}
	var out []int
	for _, x := range arr {
		n, err := toInt(x)
		if err != nil {
			r.fail(fmt.Sprintf("%s: %v", key, err))
		}
		out = append(out, int(n))
	}
	return out
}

// ropeScaling reads rope_scaling, nil when it is absent or not an object.
func (r *hfReader) ropeScaling() *RopeScaling {
	v, ok := r.get("rope_scaling")
	if !ok {
		return nil
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		return nil
	}
	rs := &RopeScaling{}
	o := jsonObject(m)
	if s, ok := o["rope_type"].(string); ok {
		rs.Type = s
	} else if s, ok := o["type"].(string); ok {
		rs.Type = s
	}
	if f, ok := o["factor"]; ok && f != nil {
		x, err := toFloat(f)
		if err != nil {
			r.fail(fmt.Sprintf("rope_scaling.factor: %v", err))
		}
		rs.Factor = x
	}
	if f, ok := o["original_max_position_embeddings"]; ok && f != nil {
		x, err := toInt(f)
		if err != nil {
			r.fail(fmt.Sprintf("rope_scaling.original_max_position_embeddings: %v", err))
		}
		rs.OriginalMaxPositionEmbeddings = x
	}
	return rs
}

// precision sets the bytes per parameter from c.TorchDtype and the weight bytes per parameter
// and quantization scheme from quantization_config.
func (r *hfReader) precision(c *HFModelConfig) {
	bpp, err := dtypeBytes(c.TorchDtype)
	if err != nil {
		r.fail(err.Error())
	}
	c.BytesPerParam = bpp
	c.WeightBytesPerParam = float64(bpp)
	q, ok := r.get("quantization_config")
	if !ok {
		return
	}
	qm, isObj := q.(map[string]any)
	if !isObj {
		r.fail("quantization_config: must be an object")
		return
	}
	name, wbpp, err := quantWeightBytes(jsonObject(qm))
	if err != nil {
		r.fail(err.Error())
		return
	}
	c.Quantization = name
	c.WeightBytesPerParam = wbpp
}

// mla reads multi-head latent attention, nil unless kv_lora_rank is positive.
func (r *hfReader) mla() *MLAConfig {
	kvr := r.intOf("kv_lora_rank")
	if kvr <= 0 {
		return nil
	}
	return &MLAConfig{
		KVLoraRank:    kvr,
		QLoraRank:     r.intOf("q_lora_rank"),
		QKNopeHeadDim: r.intOf("qk_nope_head_dim"),
		QKRopeHeadDim: r.intOf("qk_rope_head_dim"),
		VHeadDim:      r.intOf("v_head_dim"),
	}
}

// moe reads the mixture-of-experts layout, nil unless the model has more than one expert. It
// sets c.DenseIntermediateSize for Llama-4, whose dense layers have their own width.
func (r *hfReader) moe(c *HFModelConfig) *MoEConfig {
	experts := r.intOf("num_local_experts", "num_experts", "n_routed_experts")
	if experts <= 1 {
		return nil
	}
	m := &MoEConfig{
		NumLocalExperts:        experts,
		NumExpertsPerTok:       r.intOf("num_experts_per_tok"),
		ExpertIntermediateSize: r.intOf("moe_intermediate_size"),
		FirstKDenseReplace:     r.intOf("first_k_dense_replace"),
		InterleaveStep:         r.intOf("interleave_moe_layer_step"),
	}
	if m.ExpertIntermediateSize == 0 {
		m.ExpertIntermediateSize = c.IntermediateSize
	}
	_, m.Interleaved = r.get("interleave_moe_layer_step")
	switch {
	case r.intOf("shared_expert_intermediate_size") > 0: // Qwen2-MoE
		m.NumSharedExperts = 1
		m.SharedExpertIntermediateSize = r.intOf("shared_expert_intermediate_size")
	case r.intOf("n_shared_experts", "num_shared_experts") > 0: // DeepSeek, GLM
		m.NumSharedExperts = r.intOf("n_shared_experts", "num_shared_experts")
		m.SharedExpertIntermediateSize = m.NumSharedExperts * m.ExpertIntermediateSize
	case strings.HasPrefix(c.ModelType, "llama4"):
		// Llama-4 MoE layers carry one shared expert as wide as a routed expert
		// (Llama4TextMoe.shared_expert); config.json has no field for it.
		m.NumSharedExperts = 1
		m.SharedExpertIntermediateSize = m.ExpertIntermediateSize
	}
	if strings.HasPrefix(c.ModelType, "llama4") {
		c.DenseIntermediateSize = r.intOf("intermediate_size_mlp")
	}
	mlpOnly := r.intList("mlp_only_layers")
	explicit := r.intList("moe_layers")
	m.NumMoELayers = countMoELayers(c.NumLayers, m, r.intOf("moe_layer_freq"), r.intOf("decoder_sparse_step"), mlpOnly, explicit)
	return m
}

// countMoELayers applies each family's layer-placement rule (as the Hugging Face modeling code
// does) to count the MoE layers.
func countMoELayers(layers int, m *MoEConfig, moeLayerFreq, sparseStep int, mlpOnly, explicit []int) int {
	if len(explicit) > 0 {
		n := 0
		for _, i := range explicit {
			if i >= 0 && i < layers {
				n++
			}
		}
		return n
	}
	skip := make(map[int]bool, len(mlpOnly))
	for _, i := range mlpOnly {
		skip[i] = true
	}
	n := 0
	for i := 0; i < layers; i++ {
		moe := true
		switch {
		case m.InterleaveStep > 0: // Llama-4: layers step-1, 2·step-1, ... are MoE
			moe = (i+1)%m.InterleaveStep == 0
		case m.FirstKDenseReplace > 0 || moeLayerFreq > 0: // DeepSeek, GLM
			freq := max(moeLayerFreq, 1)
			moe = i >= m.FirstKDenseReplace && i%freq == 0
		case sparseStep > 0: // Qwen-MoE
			moe = (i+1)%sparseStep == 0
		}
		if skip[i] {
			moe = false
		}
		if moe {
			n++
		}
	}
	return n
}

// LoadHFConfig reads and validates a config.json. path may name the file or the folder
// holding it (BLIS's --model-config-folder).
func LoadHFConfig(path string) (*HFModelConfig, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "config.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("model config: %w", err)
	}
	c, err := ParseHFConfig(data)
	if err != nil {
		return nil, fmt.Errorf("model config %s: %w", path, err)
	}
	c.ModelID = filepath.Base(filepath.Dir(path))
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("model config %s: %w", path, err)
	}
	return c, nil
}

// Validate checks the invariant BC-1 (seed 002) plus what the latency and capacity models
// need; the error names the config.json field and the rule.
func (c *HFModelConfig) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.NumLayers <= 0 {
		add("num_hidden_layers must be > 0, got %d", c.NumLayers)
	}
	if c.HiddenSize <= 0 {
		add("hidden_size must be > 0, got %d", c.HiddenSize)
	}
	if c.NumAttentionHeads <= 0 {
		add("num_attention_heads must be > 0, got %d", c.NumAttentionHeads)
	}
	if c.NumKVHeads <= 0 || (c.NumAttentionHeads > 0 && c.NumKVHeads > c.NumAttentionHeads) {
		add("num_key_value_heads must be in [1, num_attention_heads=%d], got %d", c.NumAttentionHeads, c.NumKVHeads)
	} else if c.NumAttentionHeads%c.NumKVHeads != 0 {
		add("num_attention_heads (%d) must be a multiple of num_key_value_heads (%d)", c.NumAttentionHeads, c.NumKVHeads)
	}
	if c.ExplicitHeadDim < 0 {
		add("head_dim must be > 0 when present, got %d", c.ExplicitHeadDim)
	}
	// An explicit head_dim (Mistral-NeMo, Qwen3) or MLA's own head dims replace hidden/heads,
	// so the divisibility rule applies only when the head dim is implied.
	if c.ExplicitHeadDim == 0 && c.MLA == nil && c.HiddenSize > 0 && c.NumAttentionHeads > 0 &&
		c.HiddenSize%c.NumAttentionHeads != 0 {
		add("hidden_size (%d) must be divisible by num_attention_heads (%d) when head_dim is absent", c.HiddenSize, c.NumAttentionHeads)
	}
	if c.BytesPerParam != 1 && c.BytesPerParam != 2 && c.BytesPerParam != 4 {
		add("torch_dtype %q must give 1, 2 or 4 bytes per parameter, got %d", c.TorchDtype, c.BytesPerParam)
	}
	if !(c.WeightBytesPerParam > 0) || math.IsInf(c.WeightBytesPerParam, 0) {
		add("quantization_config must give a positive weight size, got %v bytes per parameter", c.WeightBytesPerParam)
	}
	if c.IntermediateSize <= 0 {
		add("intermediate_size must be > 0, got %d", c.IntermediateSize)
	}
	if c.VocabSize <= 0 {
		add("vocab_size must be > 0, got %d", c.VocabSize)
	}
	if c.MaxPositionEmbeddings <= 0 {
		add("max_position_embeddings must be > 0, got %d", c.MaxPositionEmbeddings)
	}
	if m := c.MoE; m != nil {
		if m.NumLocalExperts <= 1 {
			add("num_local_experts must be > 1 for a MoE model, got %d", m.NumLocalExperts)
		}
		if m.NumExpertsPerTok < 1 || m.NumExpertsPerTok > m.NumLocalExperts {
			add("num_experts_per_tok must be in [1, num_local_experts=%d], got %d", m.NumLocalExperts, m.NumExpertsPerTok)
		}
		if m.ExpertIntermediateSize <= 0 {
			add("moe_intermediate_size must be > 0, got %d", m.ExpertIntermediateSize)
		}
		if m.NumMoELayers <= 0 || m.NumMoELayers > c.NumLayers {
			add("MoE layer placement (first_k_dense_replace, moe_layer_freq, interleave_moe_layer_step, mlp_only_layers) must leave 1..num_hidden_layers=%d MoE layers, got %d", c.NumLayers, m.NumMoELayers)
		}
	}
	if a := c.MLA; a != nil {
		if a.QKRopeHeadDim <= 0 {
			add("qk_rope_head_dim must be > 0 with kv_lora_rank, got %d", a.QKRopeHeadDim)
		}
		if a.QKNopeHeadDim < 0 || a.VHeadDim <= 0 {
			add("qk_nope_head_dim must be >= 0 and v_head_dim > 0 with kv_lora_rank, got %d and %d", a.QKNopeHeadDim, a.VHeadDim)
		}
		if a.QLoraRank < 0 {
			add("q_lora_rank must be >= 0, got %d", a.QLoraRank)
		}
	}
	return errors.Join(errs...)
}

// IsMoE reports whether the model has mixture-of-experts layers.
func (c *HFModelConfig) IsMoE() bool { return c.MoE != nil && c.MoE.NumLocalExperts > 1 }

// IsMLA reports whether the model uses multi-head latent attention.
func (c *HFModelConfig) IsMLA() bool { return c.MLA != nil }

// HeadDim is the attention head dimension: head_dim when config.json gives it, else
// hidden_size / num_attention_heads.
func (c *HFModelConfig) HeadDim() int {
	if c.ExplicitHeadDim > 0 {
		return c.ExplicitHeadDim
	}
	if c.NumAttentionHeads == 0 {
		return 0
	}
	return c.HiddenSize / c.NumAttentionHeads
}

// QKHeadDim is the per-head width of queries and keys (MLA: nope + rope parts).
func (c *HFModelConfig) QKHeadDim() int {
	if c.MLA != nil {
		return c.MLA.QKNopeHeadDim + c.MLA.QKRopeHeadDim
	}
	return c.HeadDim()
}

// VHeadDim is the per-head width of values.
func (c *HFModelConfig) VHeadDim() int {
	if c.MLA != nil {
		return c.MLA.VHeadDim
	}
	return c.HeadDim()
}

// KVDim is num_key_value_heads × head_dim, the width of the K (or V) projection of standard
// attention.
func (c *HFModelConfig) KVDim() int { return c.NumKVHeads * c.HeadDim() }

// KVElementsPerTokenLayer is the number of KV-cache elements one token stores in one layer:
// 2 × num_key_value_heads × head_dim, or kv_lora_rank + qk_rope_head_dim with MLA.
func (c *HFModelConfig) KVElementsPerTokenLayer() int64 {
	if c.MLA != nil {
		return int64(c.MLA.KVLoraRank + c.MLA.QKRopeHeadDim)
	}
	return 2 * int64(c.KVDim())
}

// KVCacheBytesPerToken is the KV-cache size of one token over all layers at the model's
// dtype, summed over tensor-parallel shards (seed 002: 2 × layers × KV heads × head_dim ×
// bytes; MLA: layers × (kv_lora_rank + qk_rope_head_dim) × bytes).
func (c *HFModelConfig) KVCacheBytesPerToken() int64 {
	return int64(c.NumLayers) * c.KVElementsPerTokenLayer() * int64(c.BytesPerParam)
}

// KVCacheBytesPerTokenPerGPU is the KV-cache bytes one token occupies on each GPU of a
// tensor-parallel group: standard attention shards KV heads over tp (optimistic when
// num_key_value_heads < tp, where vLLM replicates heads, as in BLIS); the MLA latent is
// replicated on every rank.
func (c *HFModelConfig) KVCacheBytesPerTokenPerGPU(tp int) float64 {
	b := float64(c.KVCacheBytesPerToken())
	if c.MLA != nil || tp <= 1 {
		return b
	}
	return b / float64(tp)
}

// NumMoELayers is the number of MoE layers (0 for dense models).
func (c *HFModelConfig) NumMoELayers() int {
	if !c.IsMoE() {
		return 0
	}
	return c.MoE.NumMoELayers
}

// NumDenseLayers is the number of layers with a dense MLP.
func (c *HFModelConfig) NumDenseLayers() int { return c.NumLayers - c.NumMoELayers() }

// DenseMLPWidth is the MLP width of the dense layers.
func (c *HFModelConfig) DenseMLPWidth() int {
	if c.DenseIntermediateSize > 0 {
		return c.DenseIntermediateSize
	}
	return c.IntermediateSize
}

// QueryDim is the width of the query projection (num_attention_heads × QK head dim).
func (c *HFModelConfig) QueryDim() int { return c.NumAttentionHeads * c.QKHeadDim() }

// AttentionParamsPerLayer counts the attention projection weights of one layer: Q, K, V and O
// for standard attention; for MLA the (optionally low-rank) query projection, the joint KV
// down-projection, the KV up-projection and the output projection.
func (c *HFModelConfig) AttentionParamsPerLayer() int64 {
	d := int64(c.HiddenSize)
	h := int64(c.NumAttentionHeads)
	if a := c.MLA; a != nil {
		qk := int64(a.QKNopeHeadDim + a.QKRopeHeadDim)
		var q int64
		if a.QLoraRank > 0 {
			q = d*int64(a.QLoraRank) + int64(a.QLoraRank)*h*qk
		} else {
			q = d * h * qk
		}
		kvA := d * int64(a.KVLoraRank+a.QKRopeHeadDim)
		kvB := int64(a.KVLoraRank) * h * int64(a.QKNopeHeadDim+a.VHeadDim)
		o := h * int64(a.VHeadDim) * d
		return q + kvA + kvB + o
	}
	q := int64(c.QueryDim())
	return d*q + 2*d*int64(c.KVDim()) + q*d
}

// normParamsPerLayer counts the norm weights of one layer: the two RMSNorms, plus MLA's
// latent norms.
func (c *HFModelConfig) normParamsPerLayer() int64 {
	n := 2 * int64(c.HiddenSize)
	if a := c.MLA; a != nil {
		n += int64(a.QLoraRank + a.KVLoraRank)
	}
	return n
}

// mlpParams counts the MLP weights of all layers with `routed` routed experts per MoE layer
// (all of them for the model size, top-k for the active parameters). SwiGLU: 3 matrices.
func (c *HFModelConfig) mlpParams(routed int) int64 {
	d := int64(c.HiddenSize)
	total := int64(c.NumDenseLayers()) * 3 * d * int64(c.DenseMLPWidth())
	if c.IsMoE() {
		m := c.MoE
		perLayer := 3*d*int64(m.ExpertIntermediateSize)*int64(routed) +
			3*d*int64(m.SharedExpertIntermediateSize) +
			int64(m.NumLocalExperts)*d // router
		total += int64(m.NumMoELayers) * perLayer
	}
	return total
}

func (c *HFModelConfig) paramsWith(routed int) int64 {
	d := int64(c.HiddenSize)
	emb := int64(c.VocabSize) * d
	lmHead := emb
	if c.TieWordEmbeddings {
		lmHead = 0
	}
	layers := int64(c.NumLayers) * (c.AttentionParamsPerLayer() + c.normParamsPerLayer())
	return emb + lmHead + layers + c.mlpParams(routed) + d // + final norm
}

// TotalParameters counts every weight of the language model: embeddings, lm_head (unless
// tied), attention, norms, SwiGLU MLPs, and for MoE all routed experts, shared experts and
// routers.
func (c *HFModelConfig) TotalParameters() int64 {
	if c.IsMoE() {
		return c.paramsWith(c.MoE.NumLocalExperts)
	}
	return c.paramsWith(0)
}

// ActiveParametersPerToken counts the weights one token touches: as TotalParameters but with
// only num_experts_per_tok routed experts per MoE layer.
func (c *HFModelConfig) ActiveParametersPerToken() int64 {
	if c.IsMoE() {
		return c.paramsWith(c.MoE.NumExpertsPerTok)
	}
	return c.paramsWith(0)
}

// WeightBytes is the size of all weights as stored (TotalParameters × WeightBytesPerParam).
func (c *HFModelConfig) WeightBytes() int64 {
	return int64(float64(c.TotalParameters()) * c.WeightBytesPerParam)
}

// MaxModelLen is the longest context the model supports, as vLLM derives it from the config
// (_get_and_verify_max_len): max_position_embeddings, scaled by rope_scaling.factor except for
// the rope types whose max_position_embeddings already states the extended length (llama3,
// longrope, su) and for Gemma-3; yarn scales original_max_position_embeddings instead.
func (c *HFModelConfig) MaxModelLen() int64 {
	n := c.MaxPositionEmbeddings
	rs := c.RopeScaling
	if rs == nil || rs.Factor <= 0 || strings.Contains(c.ModelType, "gemma3") {
		return n
	}
	switch rs.Type {
	case "llama3", "longrope", "su":
		return n
	case "yarn":
		if rs.OriginalMaxPositionEmbeddings > 0 {
			n = rs.OriginalMaxPositionEmbeddings
		}
	}
	return int64(float64(n) * rs.Factor)
}

// jsonObject is a decoded JSON object.
type jsonObject map[string]any

func toInt(v any) (int64, error) {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		f, err := x.Float64()
		if err != nil || f != math.Trunc(f) {
			return 0, fmt.Errorf("must be an integer, got %s", x)
		}
		return int64(f), nil
	case float64:
		if x != math.Trunc(x) {
			return 0, fmt.Errorf("must be an integer, got %v", x)
		}
		return int64(x), nil
	default:
		return 0, fmt.Errorf("must be a number, got %T", v)
	}
}

func toFloat(v any) (float64, error) {
	switch x := v.(type) {
	case json.Number:
		return x.Float64()
	case float64:
		return x, nil
	default:
		return 0, fmt.Errorf("must be a number, got %T", v)
	}
}

// dtypeBytes maps torch_dtype to bytes per element; an absent dtype means bfloat16, the
// dtype vLLM serves these models in.
func dtypeBytes(dtype string) (int, error) {
	switch strings.TrimPrefix(strings.ToLower(dtype), "torch.") {
	case "", "auto", "bfloat16", "float16", "half", "bf16", "fp16":
		return 2, nil
	case "float32", "float", "fp32":
		return 4, nil
	case "float8_e4m3fn", "float8_e5m2", "float8", "fp8", "int8", "uint8":
		return 1, nil
	}
	return 0, fmt.Errorf("torch_dtype %q is not supported (known: bfloat16, float16, float32, float8_e4m3fn, float8_e5m2)", dtype)
}

// quantWeightBytes reads quantization_config and returns a name and the weight size in bytes.
func quantWeightBytes(q jsonObject) (string, float64, error) {
	method, _ := q["quant_method"].(string)
	method = strings.ToLower(method)
	bitsOf := func(keys ...string) int64 {
		for _, k := range keys {
			if v, ok := q[k]; ok && v != nil {
				if n, err := toInt(v); err == nil && n > 0 {
					return n
				}
			}
		}
		return 0
	}
	switch method {
	case "fp8", "fbgemm_fp8", "modelopt":
		return method, 1, nil
	case "mxfp4":
		return method, 0.5, nil
	case "gptq", "awq", "aqlm", "marlin", "gptq_marlin", "awq_marlin":
		b := bitsOf("bits", "w_bit")
		if b == 0 {
			return "", 0, fmt.Errorf("quantization_config.bits must be > 0 for quant_method %q", method)
		}
		return fmt.Sprintf("%s/%d-bit", method, b), float64(b) / 8, nil
	case "bitsandbytes":
		if v, _ := q["load_in_4bit"].(bool); v {
			return "bitsandbytes/4-bit", 0.5, nil
		}
		return "bitsandbytes/8-bit", 1, nil
	case "compressed-tensors":
		groups, _ := q["config_groups"].(map[string]any)
		names := make([]string, 0, len(groups))
		for k := range groups {
			names = append(names, k)
		}
		sort.Strings(names)
		var bits int64
		for _, k := range names {
			g, _ := groups[k].(map[string]any)
			w, _ := g["weights"].(map[string]any)
			if w == nil {
				continue
			}
			if v, ok := w["num_bits"]; ok && v != nil {
				n, err := toInt(v)
				if err != nil {
					return "", 0, fmt.Errorf("quantization_config.config_groups.%s.weights.num_bits: %v", k, err)
				}
				bits = max(bits, n) // the widest group bounds the stored size
			}
		}
		if bits <= 0 {
			return "", 0, errors.New("quantization_config.config_groups must give weights.num_bits > 0 for compressed-tensors")
		}
		return fmt.Sprintf("compressed-tensors/%d-bit", bits), float64(bits) / 8, nil
	}
	return "", 0, fmt.Errorf("quantization_config.quant_method %q is not supported (known: fp8, fbgemm_fp8, modelopt, mxfp4, gptq, awq, bitsandbytes, compressed-tensors)", method)
}
