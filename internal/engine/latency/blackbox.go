package latency

import (
	"fmt"

	"github.com/inference-sim/blis-operator/internal/engine/model"
)

// blackbox is BLIS's per-deployment linear regression (blis-upstream §2.1, last present in
// BLIS at b563c440):
//
//	step          = β0 + β1·prefill (cache-miss) tokens + β2·decode tokens
//	queueing      = α0 + α1·input tokens
//	output token  = α2
//	post-decode   = 0
//
// Results are truncated to whole µs as BLIS does; a step is at least 1 µs.
type blackbox struct {
	b0, b1, b2  float64
	a0, a1      float64
	outputToken int64
}

func newBlackbox(cfg Config) (Model, error) {
	if cfg.Alpha == nil && cfg.Beta == nil && cfg.Model != nil {
		// No coefficients: the embedded row for (model id, GPU, TP, vLLM version), as
		// model.Resolve would select it.
		cat, err := model.DefaultCatalog()
		if err != nil {
			return nil, fmt.Errorf("latency: blackbox rows: %w", err)
		}
		row, err := cat.BlackboxCoefficients(cfg.Model.ModelID, cfg.Hardware.Name, cfg.Engine.TensorParallelSize, cfg.Engine.VLLMVersion)
		if err != nil {
			return nil, fmt.Errorf("latency: %w", err)
		}
		cfg.Alpha, cfg.Beta = row.Alpha, row.Beta
	}
	if len(cfg.Alpha) != 3 {
		return nil, fmt.Errorf("latency: blackbox needs exactly 3 alpha coefficients [α0 µs, α1 µs per input token, α2 µs per output token], got %d", len(cfg.Alpha))
	}
	if len(cfg.Beta) != 3 {
		return nil, fmt.Errorf("latency: blackbox needs exactly 3 beta coefficients [β0 µs, β1 µs per prefill token, β2 µs per decode token], got %d", len(cfg.Beta))
	}
	if cfg.Engine.DataParallelSize > 1 {
		return nil, fmt.Errorf("latency: blackbox rows are fitted per TP degree only; data-parallel-size must be 1, got %d", cfg.Engine.DataParallelSize)
	}
	return &blackbox{
		b0: cfg.Beta[0], b1: cfg.Beta[1], b2: cfg.Beta[2],
		a0: cfg.Alpha[0], a1: cfg.Alpha[1],
		outputToken: toTicks(cfg.Alpha[2]),
	}, nil
}

// Name implements Model.
func (b *blackbox) Name() string { return KindBlackbox }

// StepTime implements Model.
func (b *blackbox) StepTime(s *StepShape) int64 {
	return toMicros(b.b0 + b.b1*float64(s.PrefillTokens) + b.b2*float64(s.DecodeRequests))
}

// QueueingTime implements Model.
func (b *blackbox) QueueingTime(inputLen int64) int64 {
	return toTicks(b.a0 + b.a1*float64(inputLen))
}

// OutputTokenProcessingTime implements Model.
func (b *blackbox) OutputTokenProcessingTime() int64 { return b.outputToken }

// PostDecodeFixedOverhead implements Model: blackbox has none.
func (b *blackbox) PostDecodeFixedOverhead() int64 { return 0 }
