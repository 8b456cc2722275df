package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Latency model kinds.
const (
	// LatencyTrainedPhysics is BLIS's default model: roofline basis functions × global fitted
	// coefficients.
	LatencyTrainedPhysics = "trained-physics"
	// LatencyRoofline is the analytical roofline model with per-GPU MFUs.
	LatencyRoofline = "roofline"
	// LatencyBlackbox is the per-(model, GPU, TP, vLLM version) linear regression.
	LatencyBlackbox = "blackbox"
)

// LatencyKinds lists the latency model kinds, the default first.
func LatencyKinds() []string {
	return []string{LatencyTrainedPhysics, LatencyRoofline, LatencyBlackbox}
}

// EngineSettings are the user's vLLM settings for an instance. Zero values (nil for the
// booleans) take the defaults: the model's default TP from defaults.yaml, else those of
// DefaultVLLMEngineConfig.
type EngineSettings struct {
	// TensorParallelSize is --tensor-parallel-size (0 = the model's default TP, else 1).
	TensorParallelSize int `json:"tensorParallelSize,omitempty"`
	// PipelineParallelSize is --pipeline-parallel-size (0 = 1).
	PipelineParallelSize int `json:"pipelineParallelSize,omitempty"`
	// DataParallelSize is --data-parallel-size (0 = 1); above 1 only for MoE models.
	DataParallelSize int `json:"dataParallelSize,omitempty"`
	// MaxNumSeqs is --max-num-seqs (0 = 256).
	MaxNumSeqs int64 `json:"maxNumSeqs,omitempty"`
	// MaxNumBatchedTokens is --max-num-batched-tokens (0 = 2048).
	MaxNumBatchedTokens int64 `json:"maxNumBatchedTokens,omitempty"`
	// LongPrefillTokenThreshold is --long-prefill-token-threshold (0 = no limit).
	LongPrefillTokenThreshold int64 `json:"longPrefillTokenThreshold,omitempty"`
	// MaxNumPartialPrefills is --max-num-partial-prefills (0 = 1: the classic behaviour).
	MaxNumPartialPrefills int64 `json:"maxNumPartialPrefills,omitempty"`
	// MaxLongPartialPrefills is --max-long-partial-prefills (0 = 1).
	MaxLongPartialPrefills int64 `json:"maxLongPartialPrefills,omitempty"`
	// BlockSize is --block-size (0 = 16).
	BlockSize int64 `json:"blockSize,omitempty"`
	// GPUMemoryUtilization is --gpu-memory-utilization (0 = 0.9).
	GPUMemoryUtilization float64 `json:"gpuMemoryUtilization,omitempty"`
	// TotalKVBlocks fixes the KV-cache size (0 = derive from memory).
	TotalKVBlocks int64 `json:"totalKVBlocks,omitempty"`
	// MaxModelLen is --max-model-len (0 = derive).
	MaxModelLen int64 `json:"maxModelLen,omitempty"`
	// EnableChunkedPrefill is --enable-chunked-prefill (nil = true).
	EnableChunkedPrefill *bool `json:"enableChunkedPrefill,omitempty"`
	// EnablePrefixCaching is --enable-prefix-caching (nil = true).
	EnablePrefixCaching *bool `json:"enablePrefixCaching,omitempty"`
	// VLLMVersion selects blackbox rows ("" = the model's default version).
	VLLMVersion string `json:"vllmVersion,omitempty"`
}

// InstanceSpec is everything that defines one simulated instance's model, hardware, engine and
// latency model.
type InstanceSpec struct {
	// Model is a catalog model: a BLIS id ("meta-llama/llama-3.1-8b-instruct") or a config
	// folder name ("llama-3.1-8b-instruct"), case-insensitive. It still supplies the defaults
	// (GPU, TP, blackbox rows) when an inline config is given.
	Model string `json:"model,omitempty"`
	// ModelConfigJSON is an inline Hugging Face config.json; it replaces the catalog's.
	ModelConfigJSON json.RawMessage `json:"modelConfigJSON,omitempty"`
	// ModelConfig is an already parsed architecture; it replaces ModelConfigJSON and the catalog.
	ModelConfig *HFModelConfig `json:"-"`
	// GPU names the GPU ("" = the model's default GPU, else H100).
	GPU string `json:"gpu,omitempty"`
	// HardwareOverrides replace some of the GPU's catalog figures (nil: the catalog's).
	HardwareOverrides *HardwareOverrides `json:"hardwareOverrides,omitempty"`
	// Engine are the vLLM settings.
	Engine EngineSettings `json:"engine,omitzero"`
	// LatencyModel is "trained-physics" (default), "roofline" or "blackbox".
	LatencyModel string `json:"latencyModel,omitempty"`
	// AlphaCoeffs replace the latency model's alpha coefficients (BLIS --alpha-coeffs).
	AlphaCoeffs []float64 `json:"alphaCoeffs,omitempty"`
	// BetaCoeffs replace the latency model's beta coefficients (BLIS --beta-coeffs).
	BetaCoeffs []float64 `json:"betaCoeffs,omitempty"`
	// Paths replace embedded data files.
	Paths Sources `json:"paths,omitzero"`
}

// LatencySpec is the resolved latency model choice with its coefficients.
type LatencySpec struct {
	// Kind is one of LatencyKinds().
	Kind string
	// Alpha are the alpha coefficients (nil for roofline, which has no overheads).
	Alpha []float64
	// Beta are the beta coefficients (nil for roofline).
	Beta []float64
	// Source says where the coefficients came from.
	Source string
}

// Resolved is what one simulated instance needs, with every default and derived value filled
// in. Pass it to latency.New (via latency.FromResolved) for the step-time model.
type Resolved struct {
	// ModelName is the catalog id (else the config folder, else "inline").
	ModelName string
	// Model is the validated architecture.
	Model *HFModelConfig
	// Hardware is the GPU.
	Hardware Hardware
	// Engine is the validated engine configuration with TotalKVBlocks and MaxModelLen set.
	Engine VLLMEngineConfig
	// KVCapacity is the memory breakdown when TotalKVBlocks was derived (Blocks == 0 when the
	// user fixed TotalKVBlocks).
	KVCapacity KVCapacity
	// Latency is the latency model and its coefficients.
	Latency LatencySpec
}

// Resolve resolves an instance from the catalog given by spec.Paths (the embedded data when
// empty). See Catalog.Resolve.
func Resolve(spec InstanceSpec) (*Resolved, error) {
	var c *Catalog
	var err error
	if spec.Paths == (Sources{}) {
		c, err = DefaultCatalog()
	} else {
		c, err = LoadCatalog(spec.Paths)
	}
	if err != nil {
		return nil, err
	}
	return c.Resolve(spec)
}

// Resolve fills in an instance: the model (catalog or inline), the GPU, the engine with its
// KV-cache size and max model length derived when not given, and the latency model's
// coefficients (explicit, the trained-physics defaults, or the blackbox row). spec.Paths is
// ignored (the catalog is already loaded).
func (c *Catalog) Resolve(spec InstanceSpec) (*Resolved, error) {
	var entry Entry
	haveEntry := false
	if spec.Model != "" {
		e, err := c.LookupModel(spec.Model)
		if err != nil && spec.ModelConfig == nil && spec.ModelConfigJSON == nil {
			return nil, err
		}
		entry, haveEntry = e, err == nil
	}

	r := &Resolved{}
	switch {
	case spec.ModelConfig != nil:
		m := *spec.ModelConfig
		if err := m.Validate(); err != nil {
			return nil, fmt.Errorf("inline model config: %w", err)
		}
		r.Model = &m
	case spec.ModelConfigJSON != nil:
		m, err := ParseHFConfig(spec.ModelConfigJSON)
		if err != nil {
			return nil, fmt.Errorf("inline model config: %w", err)
		}
		if err := m.Validate(); err != nil {
			return nil, fmt.Errorf("inline model config: %w", err)
		}
		r.Model = m
	case haveEntry:
		m, err := c.ModelConfig(entry)
		if err != nil {
			return nil, err
		}
		r.Model = m
	default:
		return nil, errors.New("instance: model must name a catalog model or an inline config must be given")
	}
	switch {
	case haveEntry:
		r.ModelName = entry.Name()
	case spec.Model != "":
		r.ModelName = strings.ToLower(spec.Model)
	default:
		r.ModelName = "inline"
	}
	if r.Model.ModelID == "" {
		r.Model.ModelID = r.ModelName
	}

	gpu := spec.GPU
	if gpu == "" {
		gpu = entry.DefaultGPU
	}
	if gpu == "" {
		gpu = gpuH100
	}
	hw, err := c.hardware.Lookup(gpu)
	if err != nil {
		return nil, fmt.Errorf("instance: %w", err)
	}
	if hw, err = spec.HardwareOverrides.Apply(hw); err != nil {
		return nil, fmt.Errorf("instance: %w", err)
	}
	r.Hardware = hw

	e := DefaultVLLMEngineConfig()
	s := spec.Engine
	e.TensorParallelSize = firstPositive(s.TensorParallelSize, entry.DefaultTP, 1)
	e.PipelineParallelSize = firstPositive(s.PipelineParallelSize, 1)
	e.DataParallelSize = firstPositive(s.DataParallelSize, 1)
	e.MaxNumSeqs = firstPositive64(s.MaxNumSeqs, e.MaxNumSeqs)
	e.MaxNumBatchedTokens = firstPositive64(s.MaxNumBatchedTokens, e.MaxNumBatchedTokens)
	e.LongPrefillTokenThreshold = s.LongPrefillTokenThreshold
	e.MaxNumPartialPrefills = firstPositive64(s.MaxNumPartialPrefills, e.MaxNumPartialPrefills)
	e.MaxLongPartialPrefills = firstPositive64(s.MaxLongPartialPrefills, e.MaxLongPartialPrefills)
	e.BlockSize = firstPositive64(s.BlockSize, e.BlockSize)
	if s.GPUMemoryUtilization != 0 {
		e.GPUMemoryUtilization = s.GPUMemoryUtilization
	}
	e.TotalKVBlocks = s.TotalKVBlocks
	e.MaxModelLen = s.MaxModelLen
	if s.EnableChunkedPrefill != nil {
		e.EnableChunkedPrefill = *s.EnableChunkedPrefill
	}
	if s.EnablePrefixCaching != nil {
		e.EnablePrefixCaching = *s.EnablePrefixCaching
	}
	e.VLLMVersion = s.VLLMVersion
	// Negative values are errors, not "use the default": validate what the user gave.
	for _, v := range []struct {
		name string
		val  int64
	}{{"tensor-parallel-size", int64(s.TensorParallelSize)}, {"pipeline-parallel-size", int64(s.PipelineParallelSize)},
		{"data-parallel-size", int64(s.DataParallelSize)}, {"max-num-seqs", s.MaxNumSeqs},
		{"max-num-batched-tokens", s.MaxNumBatchedTokens}, {"block-size", s.BlockSize},
		{"max-num-partial-prefills", s.MaxNumPartialPrefills}, {"max-long-partial-prefills", s.MaxLongPartialPrefills}} {
		if v.val < 0 {
			return nil, fmt.Errorf("instance: %s must be > 0 (0 = default), got %d", v.name, v.val)
		}
	}
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("instance: %w", err)
	}
	if err := CheckParallelism(r.Model, &e); err != nil {
		return nil, fmt.Errorf("instance: %w", err)
	}

	if e.TotalKVBlocks == 0 {
		kc, err := EstimateKVCapacity(r.Model, hw, &e)
		if err != nil {
			return nil, fmt.Errorf("instance: %w (set the total KV blocks explicitly to bypass the estimate)", err)
		}
		r.KVCapacity = kc
		e.TotalKVBlocks = kc.Blocks
	}
	capTokens := e.TotalKVBlocks * e.BlockSize
	modelMax := r.Model.MaxModelLen()
	if e.MaxModelLen == 0 {
		e.MaxModelLen = min(modelMax, capTokens)
	} else {
		if e.MaxModelLen > modelMax {
			return nil, fmt.Errorf("instance: max-model-len (%d) must not exceed the model's maximum context %d (max_position_embeddings with rope scaling)", e.MaxModelLen, modelMax)
		}
		if e.MaxModelLen > capTokens {
			return nil, fmt.Errorf("instance: max-model-len (%d) must not exceed the KV cache (%d blocks × %d tokens = %d tokens), as vLLM refuses to start otherwise", e.MaxModelLen, e.TotalKVBlocks, e.BlockSize, capTokens)
		}
	}
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("instance: %w", err)
	}
	r.Engine = e

	lat, err := c.resolveLatency(spec, r, entry, haveEntry)
	if err != nil {
		return nil, err
	}
	r.Latency = lat
	return r, nil
}

// CheckParallelism checks that the model can be split as the engine asks: attention heads
// (and KV heads, when there are at least as many as TP ranks) divide evenly over TP, layers
// over PP, and DP > 1 only for MoE models (as BLIS, where a dense model's DP is replicas).
// The error lists the TP degrees the model supports.
func CheckParallelism(m *HFModelConfig, e *VLLMEngineConfig) error {
	tp := e.TensorParallelSize
	ok := func(t int) bool {
		return m.NumAttentionHeads%t == 0 && (m.NumKVHeads < t || m.NumKVHeads%t == 0)
	}
	if !ok(tp) {
		var valid []string
		for t := 1; t <= 64; t *= 2 {
			if ok(t) {
				valid = append(valid, fmt.Sprint(t))
			}
		}
		return fmt.Errorf("tensor-parallel-size %d is not supported by %s: num_attention_heads (%d) and num_key_value_heads (%d) must divide evenly (supported: %s)",
			tp, m.ModelID, m.NumAttentionHeads, m.NumKVHeads, strings.Join(valid, ", "))
	}
	if e.PipelineParallelSize > m.NumLayers {
		return fmt.Errorf("pipeline-parallel-size (%d) must not exceed num_hidden_layers (%d)", e.PipelineParallelSize, m.NumLayers)
	}
	if e.DataParallelSize > 1 && !m.IsMoE() {
		return fmt.Errorf("data-parallel-size %d needs a MoE model; %s is dense, so use more replicas instead", e.DataParallelSize, m.ModelID)
	}
	return nil
}

func (c *Catalog) resolveLatency(spec InstanceSpec, r *Resolved, entry Entry, haveEntry bool) (LatencySpec, error) {
	kind := strings.ToLower(strings.TrimSpace(spec.LatencyModel))
	if kind == "" {
		kind = LatencyTrainedPhysics
	}
	for _, v := range [][]float64{spec.AlphaCoeffs, spec.BetaCoeffs} {
		for i, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return LatencySpec{}, fmt.Errorf("latency: coefficients must be finite and >= 0, got %v at index %d", x, i)
			}
		}
	}
	ls := LatencySpec{Kind: kind, Alpha: clone(spec.AlphaCoeffs), Beta: clone(spec.BetaCoeffs), Source: "explicit"}
	switch kind {
	case LatencyTrainedPhysics:
		if ls.Alpha != nil && ls.Beta != nil {
			return ls, nil
		}
		tp, err := c.TrainedPhysicsCoefficients()
		if err != nil {
			return LatencySpec{}, fmt.Errorf("latency: %w", err)
		}
		if ls.Alpha == nil {
			ls.Alpha = tp.Alpha
		}
		if ls.Beta == nil {
			ls.Beta = tp.Beta
		}
		if spec.AlphaCoeffs == nil && spec.BetaCoeffs == nil {
			ls.Source = "defaults.yaml trained_physics_coefficients"
		} else {
			ls.Source = "explicit, completed from defaults.yaml trained_physics_coefficients"
		}
		return ls, nil
	case LatencyRoofline:
		// BLIS rejects --alpha-coeffs with an explicit roofline model; roofline has no betas.
		if ls.Alpha != nil || ls.Beta != nil {
			return LatencySpec{}, errors.New("latency: roofline takes no alpha or beta coefficients (it has no overhead terms)")
		}
		ls.Source = "hardware_config.json"
		return ls, nil
	case LatencyBlackbox:
		if err := checkBlackboxOverrides(spec.HardwareOverrides, r.Hardware.Name); err != nil {
			return LatencySpec{}, err
		}
		if ls.Alpha != nil && ls.Beta != nil {
			return ls, nil
		}
		if !haveEntry || entry.ID == "" {
			return LatencySpec{}, fmt.Errorf("latency: blackbox needs alpha and beta coefficients or a catalog model id with fitted rows; %q has none", r.ModelName)
		}
		row, err := c.BlackboxCoefficients(entry.ID, r.Hardware.Name, r.Engine.TensorParallelSize, r.Engine.VLLMVersion)
		if err != nil {
			return LatencySpec{}, fmt.Errorf("latency: %w", err)
		}
		if ls.Alpha == nil {
			ls.Alpha = clone(row.Alpha)
		}
		if ls.Beta == nil {
			ls.Beta = clone(row.Beta)
		}
		if r.Engine.VLLMVersion == "" {
			r.Engine.VLLMVersion = row.VLLMVersion
		}
		ls.Source = fmt.Sprintf("blackbox row %s/%s/TP%d/%s", row.ID, row.GPU, row.TensorParallelism, row.VLLMVersion)
		return ls, nil
	}
	return LatencySpec{}, fmt.Errorf("latency: model %q is not known (known: %s)", spec.LatencyModel, strings.Join(LatencyKinds(), ", "))
}

func clone(v []float64) []float64 {
	if v == nil {
		return nil
	}
	return append([]float64(nil), v...)
}

func firstPositive(v ...int) int {
	for _, x := range v {
		if x > 0 {
			return x
		}
	}
	return 0
}

func firstPositive64(v ...int64) int64 {
	for _, x := range v {
		if x > 0 {
			return x
		}
	}
	return 0
}
