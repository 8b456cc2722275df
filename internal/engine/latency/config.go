package latency

import (
	"fmt"
	"math"
	"strings"

	"github.com/inference-sim/blis-operator/internal/engine/model"
)

// Latency model kinds accepted by New.
const (
	// KindTrainedPhysics is the default: roofline-shaped basis functions weighted by BLIS's
	// globally fitted coefficients.
	KindTrainedPhysics = model.LatencyTrainedPhysics
	// KindRoofline is the analytical roofline with per-GPU MFUs and no overheads.
	KindRoofline = model.LatencyRoofline
	// KindBlackbox is the per-(model, GPU, TP, vLLM version) linear regression.
	KindBlackbox = model.LatencyBlackbox
)

// Config selects and parameterises a latency model.
type Config struct {
	// Kind is KindTrainedPhysics (also when empty), KindRoofline or KindBlackbox.
	Kind string
	// Model is the architecture (required by trained-physics and roofline).
	Model *model.HFModelConfig
	// Hardware is the GPU (required by trained-physics and roofline).
	Hardware model.Hardware
	// Engine gives the parallelism (TP, DP).
	Engine model.VLLMEngineConfig
	// Alpha are the overhead coefficients, BLIS --alpha-coeffs semantics. Trained-physics: at
	// least [α0 queueing, α1 post-decode, α2 per output token], nil = defaults.yaml. Blackbox:
	// exactly [α0, α1 per input token, α2 per output token]; nil together with Beta = the
	// embedded row for (Model.ModelID, Hardware.Name, TP, Engine.VLLMVersion). Roofline: must
	// be nil.
	Alpha []float64
	// Beta are the step-time coefficients, BLIS --beta-coeffs semantics. Trained-physics: 7 to
	// 11 values [β1a, β2a, β3, β4, β5, β6, β7, β8, β1b, β2b, β_EP], nil = defaults.yaml.
	// Blackbox: exactly [β0, β1 per prefill token, β2 per decode request], nil as for Alpha.
	// Roofline: must be nil.
	Beta []float64
}

// FromResolved builds the Config of a resolved instance.
func FromResolved(r *model.Resolved) Config {
	return Config{
		Kind:     r.Latency.Kind,
		Model:    r.Model,
		Hardware: r.Hardware,
		Engine:   r.Engine,
		Alpha:    r.Latency.Alpha,
		Beta:     r.Latency.Beta,
	}
}

// New builds the latency model cfg selects. Every per-model constant is computed here so that
// StepTime is O(len(Prefill)) and allocation-free.
func New(cfg Config) (Model, error) {
	kind := strings.ToLower(strings.TrimSpace(cfg.Kind))
	if kind == "" {
		kind = KindTrainedPhysics
	}
	if err := checkCoeffs("alpha", cfg.Alpha); err != nil {
		return nil, err
	}
	if err := checkCoeffs("beta", cfg.Beta); err != nil {
		return nil, err
	}
	switch kind {
	case KindTrainedPhysics:
		return newTrainedPhysics(cfg)
	case KindRoofline:
		return newRoofline(cfg)
	case KindBlackbox:
		return newBlackbox(cfg)
	}
	return nil, fmt.Errorf("latency: kind %q is not known (known: %s)", cfg.Kind, strings.Join(model.LatencyKinds(), ", "))
}

// checkCoeffs rejects NaN, infinite and negative coefficients, as BLIS does.
func checkCoeffs(name string, v []float64) error {
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return fmt.Errorf("latency: %s coefficient %d must be finite and >= 0, got %v", name, i, x)
		}
	}
	return nil
}

// checkArchitecture validates what the analytical models read.
func checkArchitecture(kind string, cfg Config) error {
	if cfg.Model == nil {
		return fmt.Errorf("latency: %s needs a model architecture", kind)
	}
	if err := cfg.Model.Validate(); err != nil {
		return fmt.Errorf("latency: %s: %w", kind, err)
	}
	hw := cfg.Hardware
	if err := hw.Validate(); err != nil {
		return fmt.Errorf("latency: %s: %w", kind, err)
	}
	if err := cfg.Engine.Validate(); err != nil {
		return fmt.Errorf("latency: %s: %w", kind, err)
	}
	if err := model.CheckParallelism(cfg.Model, &cfg.Engine); err != nil {
		return fmt.Errorf("latency: %s: %w", kind, err)
	}
	return nil
}

// toMicros converts a step time in µs to ticks by truncation (BLIS's clampToInt64), at least 1.
func toMicros(us float64) int64 {
	if math.IsNaN(us) || us >= math.MaxInt64 {
		return math.MaxInt64
	}
	if us < 1 {
		return 1
	}
	return int64(us)
}
