package sim

import (
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/metrics"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// mixedLongPrompts alternates long-prompt requests (6000 tokens, short output) with chat
// requests (200 tokens, long output).
func mixedLongPrompts() []workload.Request {
	var reqs []workload.Request
	for i := range 400 {
		r := workload.Request{ID: uint64(i), Arrival: int64(i) * 25_000, InputLen: 200, OutputLen: 200}
		if i%4 == 0 {
			r.InputLen, r.OutputLen = 6000, 20
		}
		reqs = append(reqs, r)
	}
	return reqs
}

func pdCluster(pd *PDConfig) *Config {
	ic := testInstance(&linearModel{base: 2000, perPrefill: 4, perDecode: 50})
	ic.MaxNumBatchedTokens = 8192
	ic.TotalKVBlocks = 1500
	return &Config{
		Instances: []InstanceConfig{ic, ic, ic, ic},
		Router:    LeastLoaded,
		PD:        pd,
		Options:   Options{CheckInvariants: true, RequestRecords: true},
	}
}

func pdRun(t *testing.T, cfg *Config) (*Result, metrics.Output) {
	t.Helper()
	src := &sliceSource{reqs: mixedLongPrompts()}
	res, err := Run(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	return res, res.Report(src.Tables(), metrics.Options{}).Cluster
}

func TestPDReducesInterference(t *testing.T) {
	_, mono := pdRun(t, pdCluster(nil))
	pdc := &PDConfig{PrefillInstances: 2, Decider: DecideAlways, BandwidthGBps: 50, BaseLatencyUs: 200, BytesPerToken: 128 << 10}
	res, pd := pdRun(t, pdCluster(pdc))
	st := res.PD
	t.Logf("monolithic: TTFT p99 %.1f ms, ITL p99 %.2f ms, E2E mean %.1f ms", mono.TTFTP99Ms, mono.ITLP99Ms, mono.E2EMeanMs)
	t.Logf("P/D:        TTFT p99 %.1f ms, ITL p99 %.2f ms, E2E mean %.1f ms; %+v", pd.TTFTP99Ms, pd.ITLP99Ms, pd.E2EMeanMs, *st)
	if pd.CompletedRequests != 400 || mono.CompletedRequests != 400 {
		t.Fatalf("completed %d (P/D) and %d (monolithic) of 400", pd.CompletedRequests, mono.CompletedRequests)
	}
	if st.Disaggregated != 400 || st.Transfers != 400 || st.TransferredBytes != 100*6000*(128<<10)+300*200*(128<<10) {
		t.Errorf("stats %+v", *st)
	}
	if !(pd.ITLP99Ms < mono.ITLP99Ms) {
		t.Errorf("decode pool ITL p99 %.2f ms should be below monolithic %.2f ms", pd.ITLP99Ms, mono.ITLP99Ms)
	}
	if !(pd.TTFTP99Ms < mono.TTFTP99Ms) {
		t.Errorf("P/D TTFT p99 %.2f ms should be below monolithic %.2f ms", pd.TTFTP99Ms, mono.TTFTP99Ms)
	}
	// Requests complete on the decode pool; the prefill pool hands every one off.
	var handed int64
	for i := range res.Instances {
		in := &res.Instances[i]
		if i < 2 {
			handed += in.HandedOff
			if in.Completed != 0 {
				t.Errorf("prefill instance %d completed %d requests", i, in.Completed)
			}
		}
		if i >= 2 && in.HandedOff != 0 {
			t.Errorf("decode instance %d handed off %d", i, in.HandedOff)
		}
	}
	if handed != 400 {
		t.Errorf("the prefill pool handed off %d of 400", handed)
	}
	// E2E includes the handoff: it is at least TTFT + the inter-token gaps.
	for _, r := range res.Records {
		if r.E2E < r.TTFT+r.ITLSum {
			t.Fatalf("request %d: E2E %d < TTFT %d + ITL %d", r.ID, r.E2E, r.TTFT, r.ITLSum)
		}
	}
}

func TestPDDeciders(t *testing.T) {
	base := PDConfig{PrefillInstances: 2, BandwidthGBps: 50, BytesPerToken: 1 << 10}
	never := base
	never.Decider = DecideNever
	res, _ := pdRun(t, pdCluster(&never))
	if res.PD.Disaggregated != 0 || res.PD.Local != 400 || res.Instances[0].Injected != 0 {
		t.Errorf("never: %+v, prefill instance 0 got %d", *res.PD, res.Instances[0].Injected)
	}
	// Only the 6000-token prompts exceed 1000 non-cached tokens.
	thr := base
	thr.Decider, thr.NonCachedTokens = DecidePrefixThreshold, 1000
	res, _ = pdRun(t, pdCluster(&thr))
	if res.PD.Disaggregated != 100 || res.PD.Local != 300 {
		t.Errorf("prefix-threshold: %+v", *res.PD)
	}
}

func TestPDWithBundleAndContention(t *testing.T) {
	slow := &PDConfig{PrefillInstances: 2, BandwidthGBps: 0.5, BytesPerToken: 128 << 10}
	cfg := pdCluster(slow)
	cfg.Router = nil
	cfg.Policy = parseBundle(t, "routing: {policy: round-robin}")
	res, out := pdRun(t, cfg)
	if out.CompletedRequests != 400 {
		t.Fatalf("completed %d", out.CompletedRequests)
	}
	if res.PD.LinkWaitUs == 0 {
		t.Error("a 0.5 GB/s link shared by 400 transfers never made one wait")
	}
	for i := 2; i < 4; i++ {
		if res.Instances[i].HandedOff != 0 || res.Instances[i].Completed == 0 {
			t.Errorf("decode instance %d: %+v", i, res.Instances[i])
		}
	}
}

func TestPDValidation(t *testing.T) {
	for _, c := range []struct {
		pd   PDConfig
		want string
	}{
		{PDConfig{PrefillInstances: 0, BandwidthGBps: 1, BytesPerToken: 1}, "at least one instance each"},
		{PDConfig{PrefillInstances: 4, BandwidthGBps: 1, BytesPerToken: 1}, "at least one instance each"},
		{PDConfig{PrefillInstances: 2, BandwidthGBps: 0, BytesPerToken: 1}, "bandwidth"},
		{PDConfig{PrefillInstances: 2, BandwidthGBps: 1, BytesPerToken: 1, Decider: "sometimes"}, "decider"},
	} {
		pd := c.pd
		if _, err := Run(pdCluster(&pd), &sliceSource{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.pd, err, c.want)
		}
	}
}
