package sim

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/metrics"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
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

// pdAutoscaled is 3 prefill and 3 decode slots of a small instance (8 sequences each), one of
// each ready at first, each pool autoscaled on its own within [1, 3] with the autoscaledCluster
// delays and cooldown. The prefill pool has its own, slower hardware (three times the prefill
// cost per token), so a burst of long prompts loads it.
func pdAutoscaled(spec policy.AutoscaleSpec, drain DrainPolicy) *Config {
	cfg := autoscaledCluster(spec, drain)
	ic := cfg.Instances[0]
	ic.TotalKVBlocks = 2000
	pre := ic
	pre.Latency = &linearModel{base: 1000, perPrefill: 20, perDecode: 100}
	cfg.Instances = []InstanceConfig{pre, pre, pre, ic, ic, ic}
	a := cfg.Autoscale
	a.MinReplicas, a.MaxReplicas = 0, 0
	a.Prefill = &PoolBounds{MinReplicas: 1, MaxReplicas: 3}
	a.Decode = &PoolBounds{MinReplicas: 1, MaxReplicas: 3}
	cfg.PD = &PDConfig{PrefillInstances: 3, Decider: DecideAlways, BandwidthGBps: 25, BaseLatencyUs: 100, BytesPerToken: 128 << 10}
	cfg.Options.CheckInvariants = true
	return cfg
}

// pdBurst is a light load (1 request/s) for 10 s, a burst (40 requests/s) for burst seconds,
// then the light load for 10 s; 4,096-token prompts and 128-token outputs, so both pools see
// load.
func pdBurst(burst int64) []workload.Request {
	var reqs []workload.Request
	add := func(from, to, gap int64) {
		for t := from; t < to; t += gap {
			reqs = append(reqs, workload.Request{ID: uint64(len(reqs)), Arrival: t, InputLen: 4096, OutputLen: 128})
		}
	}
	add(0, 10*sec, sec)
	add(10*sec, (10+burst)*sec, sec/40)
	add((10+burst)*sec, (20+burst)*sec, sec)
	return reqs
}

// runPDWatching runs cfg and reports whether a request was ever routed to an instance that was
// not ready or not in the pool of its phase (prefill requests to the prefill pool, transferred
// and local ones to the decode pool).
func runPDWatching(t *testing.T, cfg *Config, reqs []workload.Request) (*Result, bool) {
	t.Helper()
	s := mustSim(t, cfg, &sliceSource{reqs: reqs})
	bad := false
	np := int32(cfg.PD.PrefillInstances)
	s.observe = func(ev event) {
		if ev.kind() != evRouting {
			return
		}
		r := &s.slab.reqs[ev.req]
		if r.inst < 0 {
			return
		}
		inPrefill := r.inst < np
		if s.insts[r.inst].life != lifeReady || inPrefill != (r.pd == pdPrefill) {
			t.Logf("request %d (phase %d) routed to instance %d (%s) at %d", r.id, r.pd, r.inst, s.insts[r.inst].life, s.now)
			bad = true
		}
	}
	if err := s.run(); err != nil {
		t.Fatal(err)
	}
	return s.res, bad
}

func TestPDAutoscaleScalesEachPool(t *testing.T) {
	cfg := pdAutoscaled(policy.AutoscaleSpec{Template: policy.AutoscaleThreshold}, DrainWait)
	reqs := pdBurst(20)
	res, bad := runPDWatching(t, cfg, reqs)
	as := res.Autoscale
	t.Logf("%+v", as.Pools)
	if bad {
		t.Error("a request was routed to a non-ready instance or to the wrong pool")
	}
	if len(as.Pools) != 2 || as.Pools[0].Pool != "prefill" || as.Pools[1].Pool != "decode" {
		t.Fatalf("pool stats %+v", as.Pools)
	}
	var ups, downs int64
	var secs float64
	for k, p := range as.Pools {
		if p.ScaleUps == 0 || p.ScaleDowns == 0 {
			t.Errorf("%s pool: want scale-ups and scale-downs, got %d and %d", p.Pool, p.ScaleUps, p.ScaleDowns)
		}
		if p.PeakActive < 2 || p.PeakActive > 3 || p.MinReady < 1 {
			t.Errorf("%s pool: peak %d, min ready %d", p.Pool, p.PeakActive, p.MinReady)
		}
		ups, downs, secs = ups+p.ScaleUps, downs+p.ScaleDowns, secs+p.ReplicaSeconds
		_ = k
	}
	if ups != as.ScaleUps || downs != as.ScaleDowns || math.Abs(secs-as.ReplicaSeconds) > 1e-6 {
		t.Errorf("pool sums %d/%d/%.3f != cluster %d/%d/%.3f", ups, downs, secs, as.ScaleUps, as.ScaleDowns, as.ReplicaSeconds)
	}
	// Every action stays within its pool's bounds, and the last of each pool brings it back to 1.
	last := map[string]ScaleAction{}
	for _, a := range as.Actions {
		if a.Pool != "prefill" && a.Pool != "decode" {
			t.Fatalf("action without a pool: %+v", a)
		}
		if a.From < 1 || a.From > 3 || a.To < 1 || a.To > 3 {
			t.Errorf("action %+v outside [1, 3]", a)
		}
		last[a.Pool] = a
	}
	for pool, a := range last {
		if a.To != 1 {
			t.Errorf("%s pool's last action %+v should return it to 1 replica", pool, a)
		}
	}
	// Request conservation across pools: every request is prefilled on the prefill pool, handed
	// off once and completed on the decode pool.
	var handed, prefillDone, decodeDone int64
	for i := range res.Instances {
		if i < 3 {
			handed += res.Instances[i].HandedOff
			prefillDone += res.Instances[i].Completed
		} else {
			decodeDone += res.Instances[i].Completed
		}
	}
	n := int64(len(reqs))
	if res.PD.Disaggregated != n || res.PD.Transfers != n || handed != n || prefillDone != 0 || decodeDone != n {
		t.Errorf("disaggregated %d, transfers %d, handed off %d, completed %d (prefill) + %d (decode) of %d",
			res.PD.Disaggregated, res.PD.Transfers, handed, prefillDone, decodeDone, n)
	}
}

// TestPDAutoscaleDrainPolicies runs the oscillator on both pools (a scaling action at every
// evaluation) with each drain policy, so instances of both pools are drained while prefills
// run and transfers are on the link. The invariants (each pool within its bounds with a ready
// replica, request conservation with hand-offs and redirects, single KV ownership) are checked
// after every event; every request ends exactly once.
func TestPDAutoscaleDrainPolicies(t *testing.T) {
	for _, drain := range []DrainPolicy{DrainWait, DrainRedirect, DrainImmediate} {
		t.Run(string(drain), func(t *testing.T) {
			cfg := pdAutoscaled(policy.AutoscaleSpec{Template: policy.AutoscaleOscillator}, drain)
			// Replicas ready within an interval, so a scale-down after a scale-up drains a
			// ready replica (instead of cancelling a starting one).
			a := cfg.Autoscale
			a.ScaleDownCooldownUs = 0
			a.Provisioning, a.ModelLoad, a.Warmup = Delay{MeanUs: sec / 5}, Delay{MeanUs: sec / 5}, Delay{MeanUs: sec / 10}
			a.Decode.InitialReplicas = 2
			reqs := pdBurst(8)
			res, bad := runPDWatching(t, cfg, reqs)
			if bad {
				t.Error("a request was routed to a non-ready instance or to the wrong pool")
			}
			as := res.Autoscale
			var done, dropped, redirected, outcomes int64
			for i := range res.Instances {
				st := &res.Instances[i]
				done += st.Completed
				dropped += st.DroppedScaledDown
				redirected += st.Redirected
				outcomes += st.Completed + st.TimedOut + st.Dropped + st.StillQueued + st.StillRunning
			}
			t.Logf("%s: completed %d, drain-dropped %d, redirected %d, oscillations %d, %+v", drain, done, dropped, redirected, as.Oscillations, as.Pools)
			if outcomes+res.Unrouted != int64(len(reqs)) {
				t.Errorf("outcomes %d + unrouted %d != %d requests", outcomes, res.Unrouted, len(reqs))
			}
			if as.Pools[0].Oscillations == 0 || as.Pools[1].Oscillations == 0 {
				t.Errorf("oscillator: pool oscillations %d and %d", as.Pools[0].Oscillations, as.Pools[1].Oscillations)
			}
			switch drain {
			case DrainImmediate:
				if dropped == 0 {
					t.Error("immediate drains dropped nothing")
				}
			case DrainRedirect:
				if redirected == 0 || dropped != 0 {
					t.Errorf("redirect drains: %d redirected, %d dropped", redirected, dropped)
				}
			case DrainWait:
				if done != int64(len(reqs)) {
					t.Errorf("wait drains completed %d of %d", done, len(reqs))
				}
			}
		})
	}
}

func TestPDAutoscaleDeterministic(t *testing.T) {
	run := func() *Result {
		cfg := pdAutoscaled(policy.AutoscaleSpec{Template: policy.AutoscaleThreshold}, DrainRedirect)
		cfg.Autoscale.Provisioning.StddevUs = 2 * sec
		cfg.Options.CheckInvariants = false
		res, err := Run(cfg, &sliceSource{reqs: pdBurst(20)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b := run(), run()
	if !reflect.DeepEqual(a.Autoscale, b.Autoscale) || !reflect.DeepEqual(a.Records, b.Records) || !reflect.DeepEqual(a.PD, b.PD) {
		t.Error("two runs of the same autoscaled P/D input differ")
	}
}

func TestPDAutoscaleValidation(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"cluster-wide bounds", func(c *Config) {
			c.Autoscale.Prefill, c.Autoscale.Decode = nil, nil
			c.Autoscale.MinReplicas, c.Autoscale.MaxReplicas = 2, 6
		}, "scales each pool on its own"},
		{"both bounds", func(c *Config) { c.Autoscale.MinReplicas = 1 }, "cluster-wide min, max and initial replicas must be 0"},
		{"one pool", func(c *Config) { c.Autoscale.Decode = nil }, "both the prefill and the decode pool"},
		{"pool min>max", func(c *Config) { c.Autoscale.Decode.MinReplicas = 4 }, "decode pool min replicas (4) must not exceed max replicas (3)"},
		{"pool min 0", func(c *Config) { c.Autoscale.Prefill.MinReplicas = 0 }, "prefill pool min replicas must be >= 1"},
		{"slots", func(c *Config) { c.Autoscale.Decode.MaxReplicas = 2 }, "must equal the number of instance slots (6)"},
		{"prefill slots", func(c *Config) { c.Autoscale.Prefill.MaxReplicas, c.Autoscale.Decode.MaxReplicas = 2, 4 }, "prefill pool's max replicas (2) must equal its instance slots (3)"},
		{"no pd", func(c *Config) { c.PD = nil }, "need prefill/decode disaggregation"},
		{"block sizes", func(c *Config) {
			for i := 3; i < 6; i++ {
				c.Instances[i].BlockSize = 32
			}
		}, "KV transfer between pools needs equal block sizes"},
		{"mixed pool", func(c *Config) { c.Instances[1].BlockSize = 32 }, "instance 1: the prefill pool's instances must share one KV block size"},
	} {
		cfg := pdAutoscaled(policy.AutoscaleSpec{}, DrainWait)
		c.mod(cfg)
		_, err := Run(cfg, &sliceSource{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// TestPDPoolReports: with every request disaggregated, the prefill pool's block holds one
// completed record per handoff with the cluster's TTFT distribution, and the decode pool's
// block every request with the cluster's E2E and ITL.
func TestPDPoolReports(t *testing.T) {
	pdc := &PDConfig{PrefillInstances: 2, Decider: DecideAlways, BandwidthGBps: 50, BaseLatencyUs: 200, BytesPerToken: 128 << 10}
	cfg := pdCluster(pdc)
	src := &sliceSource{reqs: mixedLongPrompts()}
	res, err := Run(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	cluster := res.Report(src.Tables(), metrics.Options{}).Cluster
	pools := res.PoolReports(src.Tables(), metrics.Options{})
	if len(pools) != 2 || pools[0].Pool != "prefill" || pools[1].Pool != "decode" || pools[0].Instances != 2 || pools[1].Instances != 2 {
		t.Fatalf("pools %+v", pools)
	}
	pre, dec := pools[0].Metrics, pools[1].Metrics
	if pre.InstanceID != "prefill-pool" || pre.CompletedRequests != 400 || pre.TTFTP99Ms != cluster.TTFTP99Ms || pre.TTFTMeanMs != cluster.TTFTMeanMs {
		t.Errorf("prefill pool: completed %d, TTFT p99 %.3f mean %.3f; cluster TTFT p99 %.3f mean %.3f",
			pre.CompletedRequests, pre.TTFTP99Ms, pre.TTFTMeanMs, cluster.TTFTP99Ms, cluster.TTFTMeanMs)
	}
	if dec.CompletedRequests != 400 || dec.E2EMeanMs != cluster.E2EMeanMs || dec.ITLP99Ms != cluster.ITLP99Ms {
		t.Errorf("decode pool: completed %d, E2E mean %.3f, ITL p99 %.3f; cluster %.3f, %.3f", dec.CompletedRequests, dec.E2EMeanMs, dec.ITLP99Ms, cluster.E2EMeanMs, cluster.ITLP99Ms)
	}
	for _, p := range pools {
		if !(p.PeakKVUtilization > 0 && p.PeakKVUtilization <= 1) {
			t.Errorf("%s pool peak KV utilization %v", p.Pool, p.PeakKVUtilization)
		}
	}
	if (&Result{}).PoolReports(nil, metrics.Options{}) != nil {
		t.Error("a run without disaggregation has pool reports")
	}
}
