package sim

import "github.com/inference-sim/blis-operator/internal/engine/latency"

func benchModel() latency.Model {
	return &linearModel{base: 6500, perPrefill: 20, perDecode: 30, perCtx: 50, queueing: 15563, outTok: 46, post: 777}
}
