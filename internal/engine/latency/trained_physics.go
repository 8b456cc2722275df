package latency

import (
	"fmt"
	"math"

	"github.com/inference-sim/blis-operator/internal/engine/model"
)

// kvElementBytes is the KV-cache element size the trained-physics basis assumes (FP16/BF16),
// whatever the weight quantization, as BLIS does.
const kvElementBytes = 2.0

// trainedPhysics is BLIS's default step-time model (blis-upstream §2.3): roofline-shaped basis
// functions evaluated at raw peak FLOPs and bandwidth, weighted by globally fitted betas.
//
//	step = β1a·T_pf_compute + β1b·T_pf_kv + β2a·T_dc_compute + β2b·T_dc_kv     (≥10 betas;
//	       fewer betas use β·max(compute, kv) for the unsplit phase)
//	     + β3·T_weight + β4·T_tp + β_EP·T_dispatch + β5·L + β6·B + β7 + β8·nMoE(interleaved)
//
// Every basis is linear in the step's aggregates (prefill tokens, decode requests, decode
// context sum, batch size) except the prefill attention term Σ t_i·(s_i + t_i/2), which is
// summed over the prefill chunks; the max() of the unsplit forms is taken per step, as BLIS
// does. So StepTime is exact with respect to BLIS's per-request loop, not an approximation.
type trainedPhysics struct {
	alpha [3]int64 // queueing, post-decode, per output token (µs, truncated as BLIS does)

	b1a, b2a, b1b, b2b float64
	prefillSplit       bool
	decodeSplit        bool
	perRequest         float64 // β6

	tokenCompute float64 // µs of projection + FFN compute per token (before β1a/β2a)
	attnCompute  float64 // µs of attention compute per unit of t·(s+t/2) or decode context
	kvPerToken   float64 // µs of KV traffic per token written or read
	commPerToken float64 // β4·T_tp + β_EP·T_dispatch per token (already weighted)
	fixed        float64 // β3·T_weight + β5·L + β7 + β8·nMoE (already weighted)
}

func newTrainedPhysics(cfg Config) (Model, error) {
	if err := checkArchitecture(KindTrainedPhysics, cfg); err != nil {
		return nil, err
	}
	alpha, beta := cfg.Alpha, cfg.Beta
	if alpha == nil || beta == nil {
		cat, err := model.DefaultCatalog()
		if err != nil {
			return nil, fmt.Errorf("latency: trained-physics defaults: %w", err)
		}
		def, err := cat.TrainedPhysicsCoefficients()
		if err != nil {
			return nil, fmt.Errorf("latency: trained-physics defaults: %w", err)
		}
		if alpha == nil {
			alpha = def.Alpha
		}
		if beta == nil {
			beta = def.Beta
		}
	}
	if len(alpha) < 3 {
		return nil, fmt.Errorf("latency: trained-physics needs at least 3 alpha coefficients [queueing, post-decode, per output token], got %d", len(alpha))
	}
	if len(beta) < 7 || len(beta) > 11 {
		return nil, fmt.Errorf("latency: trained-physics needs 7 to 11 beta coefficients [β1a, β2a, β3, β4, β5, β6, β7, β8, β1b, β2b, β_EP], got %d", len(beta))
	}
	var b [11]float64
	copy(b[:], beta)
	if len(beta) < 11 {
		b[10] = b[3] // β_EP defaults to β4: both collectives run over the same fabric
	}

	m := cfg.Model
	e := cfg.Engine
	hw := cfg.Hardware
	tp := float64(e.TensorParallelSize)
	dp := float64(e.DataParallelSize)
	tpdp := tp * dp

	flops := hw.TFlopsPeak * 1e6 // FLOP per µs
	if m.WeightBytesPerParam == 1 && hw.TFlopsFP8 > 0 {
		flops = hw.TFlopsFP8 * 1e6
	}
	bw := hw.BwPeakTBs * 1e6 // bytes per µs

	L := float64(m.NumLayers)
	d := float64(m.HiddenSize)
	heads := float64(m.NumAttentionHeads)
	wbpp := m.WeightBytesPerParam
	split := trainedLayerSplit(m)
	nMoE, nDense := float64(split.moeLayers), float64(split.denseLayers)
	moeGroup := tp
	if m.IsMoE() {
		moeGroup = tpdp // vLLM flattens TP across DP for the experts
	}

	// Per-token compute: attention projections, then the FFNs (routed experts spread over the
	// MoE group, shared experts and dense FFNs sharded like other token work).
	proj := L * 2 * float64(m.AttentionParamsPerLayer()) / tpdp
	ffn := nDense * 6 * d * float64(split.denseWidth) / tpdp
	var expertWeights float64
	if m.IsMoE() {
		k := float64(max(1, m.MoE.NumExpertsPerTok))
		n := float64(m.MoE.NumLocalExperts)
		ffn += nMoE * k / moeGroup * 6 * d * float64(m.MoE.ExpertIntermediateSize)
		ffn += nMoE * 6 * d * float64(split.sharedWidth) / tpdp
		expertWeights = nMoE*(n/moeGroup)*3*d*float64(m.MoE.ExpertIntermediateSize)*wbpp +
			nMoE*3*d*float64(split.sharedWidth)*wbpp/tp
	}
	// Attention score and value FLOPs per head: 2·(d_qk + d_v), i.e. 4·d_h for standard heads.
	attn := L * 2 * (heads / tp) * float64(m.QKHeadDim()+m.VHeadDim()) / dp

	// KV bytes per token and GPU: the MLA latent is replicated on every TP rank.
	kvShard := tp
	if m.IsMLA() {
		kvShard = 1
	}
	kv := L * float64(m.KVElementsPerTokenLayer()) / (kvShard * dp) * kvElementBytes

	weights := L*float64(m.AttentionParamsPerLayer())*wbpp/tp +
		nDense*3*d*float64(split.denseWidth)*wbpp/tp + expertWeights

	// Ring all-reduce: per token and unit, hidden × 2 bytes × 2 phases × (tp−1)/tp.
	var tpComm, dispatch float64
	if e.TensorParallelSize > 1 {
		unit := d * 2 * 2 * (tp - 1) / tp / bw
		tpComm = (L + nDense) * unit / dp
		if m.IsMoE() && e.DataParallelSize == 1 {
			tpComm += nMoE * unit // the MoE FFN all-reduces over TP like a dense FFN
		}
	}
	if m.IsMoE() && e.DataParallelSize > 1 {
		// All-gather / reduce-scatter of hidden states over the DP group (vLLM's default
		// allgather_reducescatter backend), per MoE layer.
		dispatch = nMoE * (moeGroup - 1) / moeGroup * 2 * d * wbpp / dp / bw
	}
	interleaved := 0.0
	if split.interleaved {
		interleaved = nMoE
	}

	return &trainedPhysics{
		alpha:        [3]int64{toTicks(alpha[0]), toTicks(alpha[1]), toTicks(alpha[2])},
		b1a:          b[0],
		b2a:          b[1],
		b1b:          b[8],
		b2b:          b[9],
		prefillSplit: len(beta) >= 9,
		decodeSplit:  len(beta) >= 10,
		perRequest:   b[5],
		tokenCompute: (proj + ffn) / flops,
		attnCompute:  attn / flops,
		kvPerToken:   kv / bw,
		commPerToken: b[3]*tpComm + b[10]*dispatch,
		fixed:        b[2]*weights/bw + b[4]*L + b[6] + b[7]*interleaved,
	}, nil
}

// layerSplit is the MoE/dense layer split the trained-physics basis uses.
type layerSplit struct {
	moeLayers, denseLayers  int
	denseWidth, sharedWidth int
	interleaved             bool
}

// trainedLayerSplit returns the layer split. For Llama-4 style configs
// (interleave_moe_layer_step) it reproduces BLIS's reading, which the global coefficients were
// fitted with: L/(step+1) MoE layers, the rest dense at intermediate_size_mlp, no shared
// expert, and β8 charged per MoE layer. (Hugging Face's reading of step 1 is "every layer MoE";
// HFModelConfig.NumMoELayers and the roofline model use that.) Other MoE models use their real
// split (DeepSeek/GLM dense prefix, shared experts).
func trainedLayerSplit(m *model.HFModelConfig) layerSplit {
	if !m.IsMoE() {
		return layerSplit{denseLayers: m.NumLayers, denseWidth: m.DenseMLPWidth()}
	}
	if m.MoE.Interleaved && m.MoE.InterleaveStep > 0 {
		moe := m.NumLayers / (m.MoE.InterleaveStep + 1)
		return layerSplit{moeLayers: moe, denseLayers: m.NumLayers - moe, denseWidth: m.DenseMLPWidth(), interleaved: true}
	}
	return layerSplit{
		moeLayers:   m.NumMoELayers(),
		denseLayers: m.NumDenseLayers(),
		denseWidth:  m.DenseMLPWidth(),
		sharedWidth: m.MoE.SharedExpertIntermediateSize,
	}
}

// toTicks truncates a non-negative µs coefficient to ticks (BLIS's clampToInt64).
func toTicks(us float64) int64 {
	if math.IsNaN(us) || us >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(us)
}

// Name implements Model.
func (t *trainedPhysics) Name() string { return KindTrainedPhysics }

// StepTime implements Model.
func (t *trainedPhysics) StepTime(s *StepShape) int64 {
	if len(s.Prefill) == 0 && s.DecodeRequests == 0 {
		return 1
	}
	var attnUnits float64 // Σ t_i·(s_i + t_i/2), s_i the full prompt length as in BLIS
	for i := range s.Prefill {
		c := &s.Prefill[i]
		n := float64(c.NewTokens)
		attnUnits += n * (float64(c.PromptLen) + n/2)
	}
	pTok := float64(s.PrefillTokens)
	dReq := float64(s.DecodeRequests)
	dCtx := float64(s.DecodeContext)

	pfCompute := pTok*t.tokenCompute + attnUnits*t.attnCompute
	pfKV := pTok * t.kvPerToken
	dcCompute := dReq*t.tokenCompute + dCtx*t.attnCompute
	dcKV := (dCtx + dReq) * t.kvPerToken // read the context, write the new token

	var step float64
	if t.prefillSplit {
		step = t.b1a*pfCompute + t.b1b*pfKV
	} else {
		step = t.b1a * math.Max(pfCompute, pfKV)
	}
	if t.decodeSplit {
		step += t.b2a*dcCompute + t.b2b*dcKV
	} else {
		step += t.b2a * math.Max(dcCompute, dcKV)
	}
	step += t.fixed + (pTok+dReq)*t.commPerToken + t.perRequest*float64(int64(len(s.Prefill))+s.DecodeRequests)
	return toMicros(step)
}

// QueueingTime implements Model: α0, independent of the input length.
func (t *trainedPhysics) QueueingTime(int64) int64 { return t.alpha[0] }

// OutputTokenProcessingTime implements Model: α2.
func (t *trainedPhysics) OutputTokenProcessingTime() int64 { return t.alpha[2] }

// PostDecodeFixedOverhead implements Model: α1.
func (t *trainedPhysics) PostDecodeFixedOverhead() int64 { return t.alpha[1] }
