package latency

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/model"
)

func build(t testing.TB, spec model.InstanceSpec) (Model, *model.Resolved) {
	t.Helper()
	r, err := model.Resolve(spec)
	if err != nil {
		t.Fatalf("resolve %+v: %v", spec, err)
	}
	m, err := New(FromResolved(r))
	if err != nil {
		t.Fatalf("new %+v: %v", spec, err)
	}
	return m, r
}

func decodes(n, ctx int64) *StepShape { return &StepShape{DecodeRequests: n, DecodeContext: n * ctx} }

func prefill(tokens int64) *StepShape {
	return &StepShape{Prefill: []PrefillChunk{{NewTokens: tokens, PromptLen: tokens}}, PrefillTokens: tokens}
}

// blis-upstream §2.3 quick sanity calc: llama-3.1-8b/H100/TP1, 100 decode requests at
// context ≈ 1000 ⇒ ≈ 14.9 ms; a 2048-token prefill ⇒ ≈ 12 ms.
func TestTrainedPhysicsSanityNumbers(t *testing.T) {
	m, _ := build(t, model.InstanceSpec{Model: "meta-llama/llama-3.1-8b-instruct"})
	if m.Name() != KindTrainedPhysics {
		t.Fatalf("default kind = %s", m.Name())
	}
	if got := m.StepTime(decodes(100, 1000)); got < 14700 || got > 15100 {
		t.Errorf("100 decodes at ctx 1000: %d µs, want ≈ 14.9 ms", got)
	}
	if got := m.StepTime(prefill(2048)); got < 11500 || got > 12500 {
		t.Errorf("2048-token prefill: %d µs, want ≈ 12 ms", got)
	}
	// Alphas of defaults.yaml, truncated to µs.
	if m.QueueingTime(5000) != 15563 || m.PostDecodeFixedOverhead() != 777 || m.OutputTokenProcessingTime() != 45 {
		t.Errorf("overheads = %d %d %d", m.QueueingTime(5000), m.PostDecodeFixedOverhead(), m.OutputTokenProcessingTime())
	}
}

// Batch-1 decode of llama-3.1-8b on one H100. Measured vLLM is about 6.5–7.4 ms per token;
// reading all 16.06 GB of weights at 3.35 TB/s takes 4.79 ms, of which the input embedding
// table (1.05 GB, 0.31 ms) is not read by a decode step.
func TestBatchOneDecode(t *testing.T) {
	step := decodes(1, 1000)
	got := map[string]int64{}
	for _, kind := range model.LatencyKinds() {
		m, r := build(t, model.InstanceSpec{Model: "llama-3.1-8b-instruct", LatencyModel: kind})
		got[kind] = m.StepTime(step)
		t.Logf("%-16s batch-1 decode at ctx 1000: %.2f ms (ITL with output processing %.2f ms)", kind,
			float64(got[kind])/1000, float64(got[kind]+m.OutputTokenProcessingTime())/1000)
		if kind == KindRoofline {
			mc := r.Model
			d := float64(mc.HiddenSize)
			layerWeights := float64(mc.NumLayers)*float64(mc.AttentionParamsPerLayer()) +
				float64(mc.NumLayers)*3*d*float64(mc.IntermediateSize)
			lmHead := float64(mc.VocabSize) * d
			kv := 1000 * float64(mc.KVCacheBytesPerToken())
			floor := ((layerWeights+lmHead)*mc.WeightBytesPerParam + kv) / (r.Hardware.BwPeakTBs * 1e6)
			allWeights := float64(mc.WeightBytes()) / (r.Hardware.BwPeakTBs * 1e6)
			t.Logf("HBM floor: %.2f ms for the bytes a decode step reads, %.2f ms for every weight", floor/1000, allWeights/1000)
			if float64(got[kind]) < math.Floor(floor) {
				t.Errorf("roofline %d µs is below the HBM floor %.0f µs", got[kind], floor)
			}
		}
	}
	for _, kind := range []string{KindTrainedPhysics, KindBlackbox} {
		if got[kind] < 6000 || got[kind] > 8000 {
			t.Errorf("%s batch-1 decode %d µs outside the sensible band 6–8 ms", kind, got[kind])
		}
	}
}

// MoE (with MLA, shared experts, interleaving, FP8) and GQA models give finite, positive step
// times that grow with the batch.
func TestMoEAndGQAModels(t *testing.T) {
	cases := []struct {
		model string
		tp    int
	}{
		{"mixtral-8x7b-v0.1", 2},
		{"qwen3-30b-a3b", 1},
		{"deepseek-v2-lite", 1},
		{"glm-5.2-fp8", 8},
		{"llama-4-scout-17b-16e-instruct-fp8-dynamic", 2},
		{"qwen2.5-7b-instruct", 1},
		{"mistral-nemo-instruct-2407", 1},
	}
	shapes := []*StepShape{decodes(1, 100), decodes(64, 2000), prefill(512), prefill(4096),
		{Prefill: []PrefillChunk{{NewTokens: 1000, Context: 3000, PromptLen: 8000}}, PrefillTokens: 1000, DecodeRequests: 40, DecodeContext: 40 * 1500}}
	for _, tc := range cases {
		for _, kind := range []string{KindTrainedPhysics, KindRoofline} {
			spec := model.InstanceSpec{Model: tc.model, LatencyModel: kind, Engine: model.EngineSettings{TensorParallelSize: tc.tp}}
			if tc.model == "glm-5.2-fp8" {
				spec.Engine.TotalKVBlocks = 100000 // 744B parameters do not fit 8 H100s; the step model still applies
			}
			m, _ := build(t, spec)
			prev := int64(0)
			for i, s := range shapes {
				st := m.StepTime(s)
				if st <= 1 || st == math.MaxInt64 {
					t.Errorf("%s/%s shape %d: step %d", tc.model, kind, i, st)
				}
				if i == 1 && st <= prev {
					t.Errorf("%s/%s: 64 decodes (%d) not slower than 1 (%d)", tc.model, kind, st, prev)
				}
				prev = st
			}
			if st1, st2 := m.StepTime(decodes(16, 1000)), m.StepTime(decodes(16, 4000)); st2 <= st1 {
				t.Errorf("%s/%s: longer contexts not slower: %d vs %d", tc.model, kind, st2, st1)
			}
		}
	}
}

func TestTensorParallelismReducesStepTime(t *testing.T) {
	for _, mdl := range []string{"llama-3.1-8b-instruct", "llama-3.1-70b-instruct", "mixtral-8x7b-v0.1"} {
		for _, kind := range []string{KindTrainedPhysics, KindRoofline} {
			for _, s := range []*StepShape{decodes(1, 1000), decodes(32, 1000), prefill(2048)} {
				prev := int64(math.MaxInt64)
				for _, tp := range []int{2, 4, 8} {
					if mdl == "llama-3.1-8b-instruct" && tp == 8 {
						continue
					}
					m, _ := build(t, model.InstanceSpec{Model: mdl, LatencyModel: kind, Engine: model.EngineSettings{TensorParallelSize: tp, TotalKVBlocks: 10000}})
					st := m.StepTime(s)
					if st >= prev {
						t.Errorf("%s/%s %+v: TP%d step %d not below the previous TP's %d", mdl, kind, *s, tp, st, prev)
					}
					prev = st
				}
			}
		}
	}
	// And TP1 → TP2 for the 8B model.
	one, _ := build(t, model.InstanceSpec{Model: "llama-3.1-8b-instruct"})
	two, _ := build(t, model.InstanceSpec{Model: "llama-3.1-8b-instruct", Engine: model.EngineSettings{TensorParallelSize: 2}})
	if a, b := one.StepTime(decodes(32, 1000)), two.StepTime(decodes(32, 1000)); b >= a {
		t.Errorf("TP2 %d not below TP1 %d", b, a)
	}
}

// refTrainedPhysics evaluates blis-upstream §2.3 request by request for a dense model at DP=1
// (BLIS's loop), with the 11-beta split form.
func refTrainedPhysics(r *model.Resolved, beta []float64, reqs []refReq) float64 {
	mc, hw := r.Model, r.Hardware
	tp := float64(r.Engine.TensorParallelSize)
	L, d := float64(mc.NumLayers), float64(mc.HiddenSize)
	dh := float64(mc.HeadDim())
	dkv := float64(mc.KVDim())
	dff := float64(mc.IntermediateSize)
	flops, bw := hw.TFlopsPeak*1e6, hw.BwPeakTBs*1e6
	var tPfC, tPfK, tDcC, tDcK, tokens float64
	for _, q := range reqs {
		if q.prefill {
			t, s := float64(q.n), float64(q.prompt)
			tPfC += (L*2*t*d*(2*d+2*dkv)/tp + L*4*(float64(mc.NumAttentionHeads)/tp)*t*(s+t/2)*dh + L*t*6*d*dff/tp) / flops
			tPfK += L * 2 * (dkv / tp) * t * 2 / bw
			tokens += t
		} else {
			p := float64(q.ctx)
			tDcC += (L*2*d*(2*d+2*dkv)/tp + L*4*(float64(mc.NumAttentionHeads)/tp)*p*dh + L*6*d*dff/tp) / flops
			tDcK += L * 2 * (dkv / tp) * 2 * (p + 1) / bw
			tokens++
		}
	}
	tW := (L*d*(2*d+2*dkv)*mc.WeightBytesPerParam/tp + L*3*d*dff*mc.WeightBytesPerParam/tp) / bw
	var tTP float64
	if tp > 1 {
		tTP = 2 * L * tokens * d * 2 * 2 * (tp - 1) / tp / bw
	}
	return beta[0]*tPfC + beta[8]*tPfK + beta[1]*tDcC + beta[9]*tDcK + beta[2]*tW + beta[3]*tTP +
		beta[4]*L + beta[5]*float64(len(reqs)) + beta[6]
}

// refRoofline evaluates the roofline request by request.
func refRoofline(r *model.Resolved, reqs []refReq) float64 {
	mc, hw := r.Model, r.Hardware
	tp := float64(r.Engine.TensorParallelSize)
	L, d, h, v := float64(mc.NumLayers), float64(mc.HiddenSize), float64(mc.NumAttentionHeads), float64(mc.VocabSize)
	dh := float64(mc.HeadDim())
	attnParams := d*d + 2*d*float64(mc.KVDim()) + d*d
	mlp := 3 * d * float64(mc.IntermediateSize)
	kvTok := L * 2 * float64(mc.KVDim()) * float64(mc.BytesPerParam) / tp
	var compute, bytes float64
	for _, q := range reqs {
		n, p := float64(q.n), float64(q.ctx)
		ctx := p
		if n > 1 {
			ctx = p + (n-1)/2
		}
		f := L*(2*n*attnParams+4*h*n*ctx*dh) + L*(5*h*n*ctx+2*n*d) + L*2*n*mlp + 2*v*d
		mfu := hw.MfuDecode
		if q.prefill {
			mfu = hw.MfuPrefill
		}
		compute += f / (tp * hw.TFlopsPeak * 1e6 * mfu)
		bytes += kvTok*n + kvTok*p + L*d*float64(mc.BytesPerParam)*n/tp
	}
	bytes += (L*(attnParams+mlp) + v*d) * mc.WeightBytesPerParam / tp
	return math.Round(math.Max(compute, bytes/(hw.BwPeakTBs*1e6)))
}

type refReq struct {
	prefill        bool
	n, ctx, prompt int64
}

func shapeOf(reqs []refReq) *StepShape {
	s := &StepShape{}
	for _, q := range reqs {
		if q.prefill {
			s.Prefill = append(s.Prefill, PrefillChunk{NewTokens: q.n, Context: q.ctx, PromptLen: q.prompt})
			s.PrefillTokens += q.n
		} else {
			s.DecodeRequests++
			s.DecodeContext += q.ctx
		}
	}
	return s
}

// The aggregate evaluation equals the per-request formulas (to float rounding) on random
// batches: the linear-in-sums rewrite is exact.
func TestAggregatesMatchPerRequestFormulas(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tp := range []int{1, 2} {
		spec := model.InstanceSpec{Model: "llama-3.1-8b-instruct", Engine: model.EngineSettings{TensorParallelSize: tp}}
		tpm, r := build(t, spec)
		spec.LatencyModel = KindRoofline
		rl, _ := build(t, spec)
		for i := 0; i < 200; i++ {
			var reqs []refReq
			for j := rng.IntN(4); j > 0; j-- {
				prompt := 1 + rng.Int64N(8000)
				ctx := rng.Int64N(prompt)
				reqs = append(reqs, refReq{prefill: true, n: 1 + rng.Int64N(prompt-ctx), ctx: ctx, prompt: prompt})
			}
			for j := rng.IntN(200); j > 0; j-- {
				reqs = append(reqs, refReq{n: 1, ctx: 1 + rng.Int64N(10000)})
			}
			if len(reqs) == 0 {
				continue
			}
			s := shapeOf(reqs)
			want := refTrainedPhysics(r, r.Latency.Beta, reqs)
			if got := tpm.StepTime(s); math.Abs(float64(got)-want) > 1 {
				t.Fatalf("TP%d trained-physics: aggregate %d, per-request %.3f for %+v", tp, got, want, reqs)
			}
			if got, want := rl.StepTime(s), refRoofline(r, reqs); math.Abs(float64(got)-want) > 1 {
				t.Fatalf("TP%d roofline: aggregate %d, per-request %.0f for %+v", tp, got, want, reqs)
			}
		}
	}
}

func TestBlackboxFormulaAndTruncation(t *testing.T) {
	r, err := model.Resolve(model.InstanceSpec{Model: "llama-3.1-8b-instruct"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := FromResolved(r)
	cfg.Kind, cfg.Alpha, cfg.Beta = KindBlackbox, []float64{100.9, 0.5, 7.99}, []float64{10.9, 1.5, 2.25}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &StepShape{Prefill: []PrefillChunk{{NewTokens: 3, PromptLen: 3}}, PrefillTokens: 3, DecodeRequests: 2, DecodeContext: 500}
	if got := m.StepTime(s); got != 19 { // 10.9 + 1.5·3 + 2.25·2 = 19.9, truncated
		t.Errorf("step = %d, want 19", got)
	}
	if got := m.QueueingTime(7); got != 104 { // 100.9 + 0.5·7 = 104.4
		t.Errorf("queueing = %d, want 104", got)
	}
	if m.OutputTokenProcessingTime() != 7 || m.PostDecodeFixedOverhead() != 0 {
		t.Errorf("overheads %d %d", m.OutputTokenProcessingTime(), m.PostDecodeFixedOverhead())
	}
	cfg.Beta = []float64{0, 0, 0}
	m, _ = New(cfg)
	if got := m.StepTime(s); got != 1 {
		t.Errorf("zero step = %d, want the floor 1", got)
	}
	// Without coefficients the embedded row is looked up from the model id, GPU and TP.
	cfg = FromResolved(r)
	cfg.Kind, cfg.Alpha, cfg.Beta = KindBlackbox, nil, nil
	if m, err := New(cfg); err != nil || m.StepTime(decodes(1, 1000)) != 6776 {
		t.Errorf("row lookup in New: %v", err)
	}
	cfg.Hardware.Name = "L40S"
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "rows for this model:") {
		t.Errorf("missing row in New: error = %v", err)
	}
	// The fitted row for llama-3.1-8b/H100/TP1 (v0.11.0): 6472 + 304.4 per decode request.
	bb, _ := build(t, model.InstanceSpec{Model: "llama-3.1-8b-instruct", LatencyModel: KindBlackbox})
	if got := bb.StepTime(decodes(1, 1000)); got != 6776 {
		t.Errorf("fitted row batch-1 decode = %d, want 6776", got)
	}
	if got := bb.QueueingTime(1000); got != 10326 {
		t.Errorf("fitted row queueing = %d, want 10326", got)
	}
}

func TestTrainedPhysicsBetaModes(t *testing.T) {
	r, err := model.Resolve(model.InstanceSpec{Model: "llama-3.1-8b-instruct"})
	if err != nil {
		t.Fatal(err)
	}
	with := func(beta []float64) Model {
		cfg := FromResolved(r)
		cfg.Beta = beta
		m, err := New(cfg)
		if err != nil {
			t.Fatalf("%v: %v", beta, err)
		}
		return m
	}
	// 7 betas: β·max(compute, kv) per phase, β8 = 0. With only the decode term on, a decode-only
	// step is β2·max(T_dc_compute, T_dc_kv) + ... ; with β2 = 1 and no fixed terms the result is
	// the larger basis.
	seven := with([]float64{0, 1, 0, 0, 0, 0, 0})
	splitCompute := with([]float64{0, 1, 0, 0, 0, 0, 0, 0, 0, 0})
	splitKV := with([]float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	s := decodes(8, 1000)
	c, k := splitCompute.StepTime(s), splitKV.StepTime(s)
	if got := seven.StepTime(s); got != max(c, k) {
		t.Errorf("7-beta decode term = %d, want max(%d, %d)", got, c, k)
	}
	// β6 per request and β7 per step.
	base := with([]float64{0, 0, 0, 0, 0, 0, 100})
	perReq := with([]float64{0, 0, 0, 0, 0, 10, 100})
	if a, b := base.StepTime(s), perReq.StepTime(s); a != 100 || b != 180 {
		t.Errorf("β7 step %d (want 100), β6·8+β7 step %d (want 180)", a, b)
	}
	for _, n := range []int{6, 12} {
		cfg := FromResolved(r)
		cfg.Beta = make([]float64, n)
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "7 to 11 beta coefficients") {
			t.Errorf("%d betas: error = %v", n, err)
		}
	}
	cfg := FromResolved(r)
	cfg.Alpha = []float64{1, 2}
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "at least 3 alpha coefficients") {
		t.Errorf("2 alphas: error = %v", err)
	}
}

// β_EP defaults to β4 when the 11th beta is absent; it only matters for MoE at DP > 1.
func TestExpertParallelCommCoefficient(t *testing.T) {
	r, err := model.Resolve(model.InstanceSpec{Model: "qwen3-30b-a3b", Engine: model.EngineSettings{TensorParallelSize: 2, DataParallelSize: 2}})
	if err != nil {
		t.Fatal(err)
	}
	def := r.Latency.Beta
	mk := func(beta []float64) int64 {
		cfg := FromResolved(r)
		cfg.Beta = beta
		m, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return m.StepTime(prefill(4096))
	}
	ten := mk(def[:10])
	eleven := mk(append(append([]float64(nil), def[:10]...), def[3]))
	bigger := mk(append(append([]float64(nil), def[:10]...), 10*def[3]))
	if ten != eleven || bigger <= eleven {
		t.Errorf("10 betas %d, 11 with β_EP=β4 %d, 11 with 10×β4 %d", ten, eleven, bigger)
	}
}

// Llama-4's interleave step charges β8 per MoE layer as BLIS counts them (48/(1+1) = 24).
func TestInterleavedMoEOverhead(t *testing.T) {
	r, err := model.Resolve(model.InstanceSpec{Model: "llama-4-scout-17b-16e-instruct-fp8-dynamic"})
	if err != nil {
		t.Fatal(err)
	}
	beta := append([]float64(nil), r.Latency.Beta...)
	cfg := FromResolved(r)
	a, _ := New(cfg)
	beta[7] = 0
	cfg.Beta = beta
	b, _ := New(cfg)
	s := decodes(4, 1000)
	if d := a.StepTime(s) - b.StepTime(s); d < int64(24*r.Latency.Beta[7])-1 || d > int64(24*r.Latency.Beta[7])+1 {
		t.Errorf("β8 contribution %d µs, want 24 × %.1f", d, r.Latency.Beta[7])
	}
	// Not for uniform MoE (Mixtral).
	r, _ = model.Resolve(model.InstanceSpec{Model: "mixtral-8x7b-v0.1", Engine: model.EngineSettings{TensorParallelSize: 2}})
	cfg = FromResolved(r)
	a, _ = New(cfg)
	beta = append([]float64(nil), r.Latency.Beta...)
	beta[7] = 0
	cfg.Beta = beta
	b, _ = New(cfg)
	if a.StepTime(s) != b.StepTime(s) {
		t.Errorf("β8 applied to uniform MoE")
	}
}

func TestConfigErrors(t *testing.T) {
	r, err := model.Resolve(model.InstanceSpec{Model: "llama-3.1-8b-instruct"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.Kind = "vidur" }, `kind "vidur" is not known (known: trained-physics, roofline, blackbox)`},
		{func(c *Config) { c.Kind, c.Alpha, c.Beta = KindRoofline, []float64{1, 2, 3}, nil }, "roofline takes no alpha or beta coefficients"},
		{func(c *Config) { c.Kind = KindBlackbox; c.Beta = []float64{1, 2} }, "exactly 3 beta coefficients"},
		{func(c *Config) { c.Kind, c.Alpha, c.Beta = KindBlackbox, []float64{1}, []float64{1, 2, 3} }, "exactly 3 alpha coefficients"},
		{func(c *Config) { c.Beta = []float64{1, 1, 1, 1, math.NaN(), 1, 1} }, "beta coefficient 4 must be finite and >= 0"},
		{func(c *Config) { c.Model = nil }, "trained-physics needs a model architecture"},
		{func(c *Config) { c.Engine.TensorParallelSize = 3 }, "tensor-parallel-size 3 is not supported"},
		{func(c *Config) { c.Hardware.BwPeakTBs = 0 }, "BwPeakTBs must be a positive number"},
		{func(c *Config) { c.Kind, c.Alpha, c.Beta = KindRoofline, nil, nil; c.Engine.DataParallelSize = 2 }, "data-parallel-size"},
	}
	for _, tc := range cases {
		cfg := FromResolved(r)
		tc.mutate(&cfg)
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error = %v, want %q", err, tc.want)
		}
	}
	// Nil coefficients take the trained-physics defaults.
	cfg := FromResolved(r)
	cfg.Alpha, cfg.Beta = nil, nil
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	full, _ := New(FromResolved(r))
	if m.StepTime(decodes(10, 500)) != full.StepTime(decodes(10, 500)) {
		t.Error("nil coefficients differ from the resolved defaults")
	}
}

func TestEmptyStepAndFloor(t *testing.T) {
	for _, kind := range model.LatencyKinds() {
		m, _ := build(t, model.InstanceSpec{Model: "llama-3.1-8b-instruct", LatencyModel: kind})
		if got := m.StepTime(&StepShape{}); got < 1 {
			t.Errorf("%s empty step = %d", kind, got)
		}
	}
}

func TestStepTimeDoesNotAllocate(t *testing.T) {
	s := &StepShape{Prefill: []PrefillChunk{{NewTokens: 512, Context: 100, PromptLen: 2000}, {NewTokens: 64, PromptLen: 64}},
		PrefillTokens: 576, DecodeRequests: 100, DecodeContext: 150000}
	for _, kind := range model.LatencyKinds() {
		m, _ := build(t, model.InstanceSpec{Model: "llama-3.1-8b-instruct", LatencyModel: kind})
		if n := testing.AllocsPerRun(100, func() { m.StepTime(s) }); n != 0 {
			t.Errorf("%s StepTime allocates %v times", kind, n)
		}
	}
	m, _ := build(t, model.InstanceSpec{Model: "mixtral-8x7b-v0.1", LatencyModel: KindRoofline, Engine: model.EngineSettings{TensorParallelSize: 2}})
	if n := testing.AllocsPerRun(100, func() { m.StepTime(s) }); n != 0 {
		t.Errorf("MoE roofline StepTime allocates %v times", n)
	}
}

func benchmarkStep(b *testing.B, kind string) {
	m, _ := build(b, model.InstanceSpec{Model: "llama-3.1-8b-instruct", LatencyModel: kind})
	s := &StepShape{Prefill: []PrefillChunk{{NewTokens: 512, Context: 100, PromptLen: 2000}, {NewTokens: 64, PromptLen: 64}},
		PrefillTokens: 576, DecodeRequests: 100, DecodeContext: 150000}
	b.ReportAllocs()
	var sink int64
	for b.Loop() {
		sink += m.StepTime(s)
	}
	if sink == 0 {
		b.Fatal("no work")
	}
}

func BenchmarkStepTimeTrainedPhysics(b *testing.B) { benchmarkStep(b, KindTrainedPhysics) }
func BenchmarkStepTimeRoofline(b *testing.B)       { benchmarkStep(b, KindRoofline) }
func BenchmarkStepTimeBlackbox(b *testing.B)       { benchmarkStep(b, KindBlackbox) }

// Example_referenceTable prints the step-time table of docs/latency-models.md (llama-3.1-8b,
// one H100); the output is checked, so a change to any model shows up here.
func Example_referenceTable() {
	shapes := []struct {
		name string
		s    *StepShape
	}{
		{"batch-1 decode, ctx 1000", decodes(1, 1000)},
		{"32 decodes, ctx 1000", decodes(32, 1000)},
		{"128 decodes, ctx 1000", decodes(128, 1000)},
		{"2048-token prefill", prefill(2048)},
		{"512-token chunk at ctx 1536 + 64 decodes", &StepShape{Prefill: []PrefillChunk{{NewTokens: 512, Context: 1536, PromptLen: 2048}}, PrefillTokens: 512, DecodeRequests: 64, DecodeContext: 64 * 1000}},
	}
	models := map[string]Model{}
	for _, kind := range model.LatencyKinds() {
		r, _ := model.Resolve(model.InstanceSpec{Model: "llama-3.1-8b-instruct", LatencyModel: kind})
		models[kind], _ = New(FromResolved(r))
	}
	fmt.Println("| step | trained-physics ms | roofline ms | blackbox ms |")
	fmt.Println("|---|---|---|---|")
	for _, sh := range shapes {
		fmt.Printf("| %s |", sh.name)
		for _, kind := range model.LatencyKinds() {
			fmt.Printf(" %.2f |", float64(models[kind].StepTime(sh.s))/1000)
		}
		fmt.Println()
	}
	fmt.Printf("| overheads: queueing / per output token / post-decode (µs) |")
	for _, kind := range model.LatencyKinds() {
		m := models[kind]
		fmt.Printf(" %d / %d / %d |", m.QueueingTime(1000), m.OutputTokenProcessingTime(), m.PostDecodeFixedOverhead())
	}
	fmt.Println()
	// Output:
	// | step | trained-physics ms | roofline ms | blackbox ms |
	// |---|---|---|---|
	// | batch-1 decode, ctx 1000 | 6.91 | 4.52 | 6.78 |
	// | 32 decodes, ctx 1000 | 9.41 | 5.74 | 16.21 |
	// | 128 decodes, ctx 1000 | 17.16 | 9.50 | 45.44 |
	// | 2048-token prefill | 11.74 | 66.70 | 47.02 |
	// | 512-token chunk at ctx 1536 + 64 decodes | 13.19 | 20.49 | 36.09 |
	// | overheads: queueing / per output token / post-decode (µs) | 15563 / 45 / 777 | 0 / 0 / 0 | 10326 / 0 / 0 |
}

// Example_otherModels prints the second step-time table of docs/latency-models.md: larger,
// MoE and MLA models on H100s (step times in ms, trained-physics / roofline).
func Example_otherModels() {
	rows := []struct {
		model string
		tp    int
	}{
		{"llama-3.1-70b-instruct", 4},
		{"qwen3-14b", 1},
		{"mixtral-8x7b-v0.1", 2},
		{"qwen3-30b-a3b", 1},
		{"deepseek-v2-lite", 1},
		{"llama-4-scout-17b-16e-instruct-fp8-dynamic", 2},
	}
	fmt.Println("| model | TP | batch-1 decode | 32 decodes, ctx 1000 | 2048-token prefill |")
	fmt.Println("|---|---|---|---|---|")
	for _, row := range rows {
		var ms [2]Model
		for i, kind := range []string{KindTrainedPhysics, KindRoofline} {
			r, err := model.Resolve(model.InstanceSpec{Model: row.model, LatencyModel: kind, Engine: model.EngineSettings{TensorParallelSize: row.tp}})
			if err != nil {
				fmt.Println(err)
				return
			}
			ms[i], _ = New(FromResolved(r))
		}
		fmt.Printf("| %s | %d |", row.model, row.tp)
		for _, s := range []*StepShape{decodes(1, 1000), decodes(32, 1000), prefill(2048)} {
			fmt.Printf(" %.2f / %.2f |", float64(ms[0].StepTime(s))/1000, float64(ms[1].StepTime(s))/1000)
		}
		fmt.Println()
	}
	// Output:
	// | model | TP | batch-1 decode | 32 decodes, ctx 1000 | 2048-token prefill |
	// |---|---|---|---|---|
	// | llama-3.1-70b-instruct | 4 | 16.67 / 10.40 | 18.31 / 11.16 | 29.84 / 160.53 |
	// | qwen3-14b | 1 | 12.26 / 8.40 | 15.35 / 9.92 | 21.27 / 125.44 |
	// | mixtral-8x7b-v0.1 | 2 | 20.08 / 3.83 | 21.41 / 14.53 | 24.51 / 59.28 |
	// | qwen3-30b-a3b | 1 | 26.05 / 1.84 | 27.96 / 16.79 | 28.46 / 28.86 |
	// | deepseek-v2-lite | 1 | 13.45 / 1.47 | 14.14 / 9.18 | 15.11 / 21.93 |
	// | llama-4-scout-17b-16e-instruct-fp8-dynamic | 2 | 24.96 / 2.44 | 26.88 / 15.04 | 27.50 / 35.90 |
}

// A batch-1 decode of llama-3.1-8b is bound by HBM bandwidth under roofline, so doubling
// bwPeakTBs halves it (to the µs), and the FLOPs and MFU overrides leave it alone. Trained
// physics reads the bandwidth too, so its step gets shorter.
func TestHardwareOverridesStepTime(t *testing.T) {
	spec := model.InstanceSpec{Model: "llama-3.1-8b-instruct", GPU: "H100", LatencyModel: KindRoofline}
	base, r := build(t, spec)
	bw := 2 * r.Hardware.BwPeakTBs
	fast := spec
	fast.HardwareOverrides = &model.HardwareOverrides{BwPeakTBs: &bw}
	fm, _ := build(t, fast)
	step := decodes(1, 1000)
	b, f := base.StepTime(step), fm.StepTime(step)
	if d := 2*f - b; d < -1 || d > 1 {
		t.Fatalf("roofline decode %d µs at 2× bandwidth = %d µs, want half", b, f)
	}
	mfu := 0.9
	flops := spec
	flops.HardwareOverrides = &model.HardwareOverrides{MfuDecode: &mfu}
	if m, _ := build(t, flops); m.StepTime(step) != b {
		t.Fatalf("a memory-bound decode changed with mfuDecode: %d µs, want %d", m.StepTime(step), b)
	}
	tp := model.InstanceSpec{Model: "llama-3.1-8b-instruct", GPU: "H100"}
	tb, _ := build(t, tp)
	tp.HardwareOverrides = &model.HardwareOverrides{BwPeakTBs: &bw}
	tf, _ := build(t, tp)
	if tf.StepTime(step) >= tb.StepTime(step) {
		t.Fatalf("trained-physics decode at 2× bandwidth %d µs, not below %d µs", tf.StepTime(step), tb.StepTime(step))
	}
}
