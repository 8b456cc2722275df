package latency

import (
	"fmt"
	"math"
)

// roofline is the analytical model (blis-upstream §2.2): one forward pass per step,
// step = max(T_compute, T_memory), no overhead terms.
//
//	T_compute = Σ_prefill FLOPs / (TP·peak·mfuPrefill) + Σ_decode FLOPs / (TP·peak·mfuDecode)
//	FLOPs(n new tokens at context p) = n·A + n·ctx·C + R,  ctx = p + (n−1)/2 (n>1) else p
//	    A = L·(2·attention params + 2·d) + 2·MLP params per token (SwiGLU, 3 matrices;
//	        MoE: top-k experts + shared experts + router)
//	    C = L·(2·H·(d_qk + d_v) + 5·H)            attention GEMMs and softmax/mask
//	    R = 2·V·d                                 logits of one position per request
//	T_memory  = [weights + MoE experts·n_eff + Σ (KV write + activations)·n + KV read·p] / BW
//	    n_eff = N·(1 − ((N−k)/N)^B), B = new tokens in the step (distinct experts touched)
//
// Departures from BLIS's roofline, all towards physics: SwiGLU MLPs are 3 matrices for FLOPs
// and weight bytes (BLIS uses 2 for both, calibrated against its MFUs), the lm_head is read and
// its logits computed, MLA caches its latent, and explicit head_dim is honoured. The first two
// keep a decode step above the HBM floor of reading every weight once. The result is rounded
// to the nearest µs as BLIS does (math.Round), at least 1.
//
// Per-request terms are linear in n, n·p and p, so decode requests enter through their count
// and context sum; only prefill chunks are visited one by one.
type roofline struct {
	perToken   float64 // A, FLOPs per new token
	perCtx     float64 // C, FLOPs per new token per context token
	perRequest float64 // R, FLOPs per request
	peakPf     float64 // FLOP per µs for prefill: TP·peak·mfuPrefill
	peakDc     float64 // FLOP per µs for decode: TP·peak·mfuDecode

	weightBytes    float64 // non-expert weights per GPU
	expertBytes    float64 // bytes of one routed expert over all MoE layers, per GPU
	numExperts     float64 // N, 0 for dense models
	logMissOdds    float64 // ln((N−k)/N), −Inf when k == N
	tokenBytes     float64 // KV write + activations per new token per GPU
	ctxBytes       float64 // KV read per context token per GPU
	bytesPerMicros float64 // HBM bytes per µs
}

func newRoofline(cfg Config) (Model, error) {
	if err := checkArchitecture(KindRoofline, cfg); err != nil {
		return nil, err
	}
	if cfg.Alpha != nil || cfg.Beta != nil {
		return nil, fmt.Errorf("latency: roofline takes no alpha or beta coefficients, got %d and %d (BLIS rejects --alpha-coeffs with --latency-model roofline)", len(cfg.Alpha), len(cfg.Beta))
	}
	if cfg.Engine.DataParallelSize > 1 {
		return nil, fmt.Errorf("latency: roofline models one data-parallel rank; data-parallel-size must be 1, got %d", cfg.Engine.DataParallelSize)
	}
	m, hw := cfg.Model, cfg.Hardware
	tp := float64(cfg.Engine.TensorParallelSize)
	L := float64(m.NumLayers)
	d := float64(m.HiddenSize)
	h := float64(m.NumAttentionHeads)
	v := float64(m.VocabSize)
	wbpp := m.WeightBytesPerParam

	peak := hw.TFlopsPeak * 1e6
	if wbpp == 1 && hw.TFlopsFP8 > 0 {
		peak = hw.TFlopsFP8 * 1e6
	}

	attnParams := float64(m.AttentionParamsPerLayer())
	nDense := float64(m.NumDenseLayers())
	denseMLP := nDense * 3 * d * float64(m.DenseMLPWidth())
	mlpActive := denseMLP // parameters one token multiplies through
	mlpStatic := denseMLP // parameters read every step whatever the routing
	r := &roofline{}
	if m.IsMoE() {
		moe := m.MoE
		nMoE := float64(m.NumMoELayers())
		expert := 3 * d * float64(moe.ExpertIntermediateSize)
		shared := 3*d*float64(moe.SharedExpertIntermediateSize) + float64(moe.NumLocalExperts)*d
		mlpActive += nMoE * (expert*float64(moe.NumExpertsPerTok) + shared)
		mlpStatic += nMoE * shared
		r.numExperts = float64(moe.NumLocalExperts)
		r.expertBytes = nMoE * expert * wbpp / tp
		r.logMissOdds = math.Log(float64(moe.NumLocalExperts-moe.NumExpertsPerTok) / float64(moe.NumLocalExperts))
	}
	r.perToken = L*(2*attnParams+2*d) + 2*mlpActive
	r.perCtx = L * (2*h*float64(m.QKHeadDim()+m.VHeadDim()) + 5*h)
	r.perRequest = 2 * v * d
	r.peakPf = tp * peak * hw.MfuPrefill
	r.peakDc = tp * peak * hw.MfuDecode

	r.weightBytes = (L*attnParams + mlpStatic + v*d) * wbpp / tp
	kv := m.KVCacheBytesPerTokenPerGPU(cfg.Engine.TensorParallelSize)
	r.tokenBytes = kv + L*d*float64(m.BytesPerParam)/tp
	r.ctxBytes = kv
	r.bytesPerMicros = hw.BwPeakTBs * 1e6
	return r, nil
}

// Name implements Model.
func (r *roofline) Name() string { return KindRoofline }

// StepTime implements Model.
func (r *roofline) StepTime(s *StepShape) int64 {
	if len(s.Prefill) == 0 && s.DecodeRequests == 0 {
		return 1
	}
	var pfFlops, ctxTokens float64
	for i := range s.Prefill {
		c := &s.Prefill[i]
		n := float64(c.NewTokens)
		p := float64(c.Context)
		ctx := p
		if n > 1 {
			ctx = p + (n-1)/2
		}
		pfFlops += n*r.perToken + n*ctx*r.perCtx + r.perRequest
		ctxTokens += p
	}
	dReq := float64(s.DecodeRequests)
	dCtx := float64(s.DecodeContext)
	dcFlops := dReq*(r.perToken+r.perRequest) + dCtx*r.perCtx
	compute := pfFlops/r.peakPf + dcFlops/r.peakDc

	newTokens := float64(s.PrefillTokens) + dReq
	bytes := r.weightBytes + newTokens*r.tokenBytes + (ctxTokens+dCtx)*r.ctxBytes
	if r.numExperts > 0 && newTokens > 0 {
		// Expected distinct experts touched by B tokens under uniform routing.
		bytes += r.expertBytes * r.numExperts * (1 - math.Exp(newTokens*r.logMissOdds))
	}
	memory := bytes / r.bytesPerMicros
	us := math.Round(math.Max(compute, memory))
	if us < 1 {
		return 1
	}
	if us >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(us)
}

// QueueingTime implements Model: roofline has no overheads.
func (r *roofline) QueueingTime(int64) int64 { return 0 }

// OutputTokenProcessingTime implements Model: roofline has no overheads.
func (r *roofline) OutputTokenProcessingTime() int64 { return 0 }

// PostDecodeFixedOverhead implements Model: roofline has no overheads.
func (r *roofline) PostDecodeFixedOverhead() int64 { return 0 }
