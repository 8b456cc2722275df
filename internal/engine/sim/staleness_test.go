package sim

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/metrics"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// firstScaleUp returns the time of the run's first scale-up (-1 if none).
func firstScaleUp(as *AutoscaleStats) int64 {
	for _, a := range as.Actions {
		if a.To > a.From {
			return a.Time
		}
	}
	return -1
}

func TestScrapeDelayPostponesScaleUp(t *testing.T) {
	reqs := burstWorkload()
	live, _, _ := runWatching(t, autoscaledCluster(policy.AutoscaleSpec{Template: policy.AutoscaleThreshold}, DrainWait), reqs)
	cfg := autoscaledCluster(policy.AutoscaleSpec{Template: policy.AutoscaleThreshold}, DrainWait)
	cfg.Autoscale.ScrapeDelay = Delay{MeanUs: 10 * sec}
	cfg.Options.CheckInvariants = true
	late, _, bad := runWatching(t, cfg, reqs)
	if bad {
		t.Error("a request reached a replica that was not ready")
	}
	t0, t1 := firstScaleUp(live.Autoscale), firstScaleUp(late.Autoscale)
	t.Logf("first scale-up: live %d, 10 s scrape delay %d", t0, t1)
	if t0 < 0 || t1 < 0 {
		t.Fatal("no scale-up")
	}
	// Samples are taken every evaluation (1 s), so the lag is the delay to within an interval.
	if d := t1 - t0; d < 9*sec || d > 11*sec {
		t.Errorf("the scale-up came %d µs later, want about 10 s", d)
	}
	var done int64
	for i := range late.Instances {
		done += late.Instances[i].Completed
	}
	if done != int64(len(reqs)) {
		t.Errorf("completed %d of %d requests", done, len(reqs))
	}
}

// steadyWorkload is 40 requests/s for 120 s: two or three replicas' worth of load.
func steadyWorkload() []workload.Request {
	var reqs []workload.Request
	for t := int64(0); t < 120*sec; t += sec / 40 {
		reqs = append(reqs, workload.Request{ID: uint64(len(reqs)), Arrival: t, InputLen: 512, OutputLen: 128})
	}
	return reqs
}

func TestScrapeDelayOscillatesMore(t *testing.T) {
	run := func(delay int64) *AutoscaleStats {
		// No scale-down cooldown and a 1 s start: the threshold policy follows what it reads.
		cfg := autoscaledCluster(policy.AutoscaleSpec{Template: policy.AutoscaleThreshold}, DrainWait)
		cfg.Autoscale.ScaleDownCooldownUs = 0
		cfg.Autoscale.Provisioning = Delay{MeanUs: sec}
		cfg.Autoscale.ModelLoad = Delay{}
		cfg.Autoscale.Warmup = Delay{}
		cfg.Autoscale.ScrapeDelay = Delay{MeanUs: delay}
		cfg.Options.CheckInvariants = delay > 0
		res, _, _ := runWatching(t, cfg, steadyWorkload())
		return res.Autoscale
	}
	live, late := run(0), run(3*sec)
	t.Logf("live: %d up, %d down, %d oscillations; 3 s scrape delay: %d up, %d down, %d oscillations",
		live.ScaleUps, live.ScaleDowns, live.Oscillations, late.ScaleUps, late.ScaleDowns, late.Oscillations)
	// Acting on 3 s old load, it keeps adding replicas after enough have started, then removes
	// them after the load per replica fell: the delayed feedback loop oscillates.
	if late.Oscillations < 5 || late.Oscillations <= 3*live.Oscillations {
		t.Errorf("a 3 s scrape delay gave %d oscillations, live signals %d: want many more", late.Oscillations, live.Oscillations)
	}
}

func TestScrapeDelayRandomIsDeterministic(t *testing.T) {
	out := func() []byte {
		cfg := autoscaledCluster(policy.AutoscaleSpec{}, DrainRedirect)
		cfg.Autoscale.ScrapeDelay = Delay{MeanUs: 3 * sec, StddevUs: 2 * sec}
		cfg.Options.CheckInvariants = true
		cfg.Seed = 5
		src := &sliceSource{reqs: burstWorkload()}
		res, err := Run(cfg, src)
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal([]any{res.Report(src.Tables(), metrics.Options{}), res.Records, res.Autoscale})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	if a, b := out(), out(); !bytes.Equal(a, b) {
		t.Error("two runs with a random scrape delay differ")
	}
	cfg := autoscaledCluster(policy.AutoscaleSpec{}, DrainWait)
	cfg.Autoscale.ScrapeDelay = Delay{MeanUs: -1}
	if _, err := Run(cfg, &sliceSource{}); err == nil {
		t.Error("a negative scrape delay was accepted")
	}
}

// herdingRun routes a steady load with least-loaded over queue depth on 4 instances and
// returns the largest spread of requests waiting (routed, not yet running) between instances
// seen after any event, and the result.
func herdingRun(t *testing.T, bundle string) (int32, *Result) {
	t.Helper()
	ic := testInstance(plainModel())
	ic.MaxNumSeqs = 4
	cfg := &Config{Instances: []InstanceConfig{ic, ic, ic, ic}, Policy: parseBundle(t, bundle)}
	reqs := gen(genSpec{n: 600, gapUs: 2000, inMean: 256, inStd: 64, outMean: 64, outSd: 16, seed: 3})
	s := mustSim(t, cfg, &sliceSource{reqs: reqs})
	var spread int32
	s.observe = func(event) {
		lo, hi := int32(1<<30), int32(0)
		for i := range s.insts {
			w := s.insts[i].waitQ.live + s.insts[i].pending
			lo, hi = min(lo, w), max(hi, w)
		}
		spread = max(spread, hi-lo)
	}
	if err := s.run(); err != nil {
		t.Fatal(err)
	}
	return spread, s.res
}

func TestSnapshotRefreshIntervalHerds(t *testing.T) {
	const route = "routing: {policy: least-loaded, params: {signal: queue-depth}}\n"
	live, liveRes := herdingRun(t, route)
	stale, _ := herdingRun(t, route+"observability: {snapshot_refresh_interval_us: 100000}\n")
	// A field's own mode wins over the interval: queue depth immediate is the live run.
	own, ownRes := herdingRun(t, route+"observability: {snapshot_refresh_interval_us: 100000, queue_depth: {mode: immediate}}\n")
	t.Logf("largest waiting spread: live %d, 100 ms refresh %d, queue depth kept immediate %d", live, stale, own)
	if stale <= 2*live {
		t.Errorf("with 100 ms snapshots the waiting spread is %d, live %d: want the router to herd", stale, live)
	}
	a, _ := json.Marshal(liveRes.Report(nil, metrics.Options{}))
	b, _ := json.Marshal(ownRes.Report(nil, metrics.Options{}))
	if !bytes.Equal(a, b) {
		t.Error("a bundle's own immediate queue depth did not override the refresh interval")
	}
}

// prefixBurstWorkload has 40 prefix groups; each appears at a new second and is then reused by
// 20 requests 10 ms apart.
func prefixBurstWorkload() []workload.Request {
	var reqs []workload.Request
	for g := 0; g < 40; g++ {
		base := int64(g) * sec
		for k := int64(0); k < 20; k++ {
			reqs = append(reqs, workload.Request{
				ID: uint64(len(reqs)), Arrival: base + k*10_000, InputLen: 1024 + 32, OutputLen: 32,
				Segments: []workload.Segment{{Key: 5000 + uint64(g), Length: 1024}, {Key: 1 << 40, Offset: int32(len(reqs)) * 32, Length: 32}},
			})
		}
	}
	return reqs
}

// hitRate is the run's prefix-cache hit rate over all instances.
func hitRate(res *Result) float64 {
	var hit, look int64
	for i := range res.Instances {
		hit += res.Instances[i].PrefixHitTokens
		look += res.Instances[i].PrefixLookupTokens
	}
	return float64(hit) / float64(look)
}

func TestCacheSignalDelayLowersPreciseHits(t *testing.T) {
	const route = "routing: {policy: weighted, scorers: [{name: precise-prefix-cache, weight: 3}, {name: queue-scorer, weight: 2}]}\n"
	run := func(extra string) *Result {
		ic := testInstance(plainModel())
		cfg := &Config{Instances: []InstanceConfig{ic, ic, ic, ic}, Policy: parseBundle(t, route+extra)}
		cfg.Options.CheckInvariants = extra != ""
		res, err := Run(cfg, &sliceSource{reqs: prefixBurstWorkload()})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	live, late, long := run(""), run("observability: {cache_signal_delay_us: 100000}\n"), run("observability: {cache_signal_delay_us: 5000000}\n")
	t.Logf("prefix-cache hit rate: live %.3f, 100 ms cache-signal delay %.3f, 5 s %.3f", hitRate(live), hitRate(late), hitRate(long))
	if hitRate(late) >= hitRate(live) {
		t.Errorf("a 100 ms cache-signal delay gave hit rate %.3f, live %.3f: want fewer hits", hitRate(late), hitRate(live))
	}
	if hitRate(long) > hitRate(late) {
		t.Errorf("a 5 s delay hit more (%.3f) than 100 ms (%.3f)", hitRate(long), hitRate(late))
	}
	// The approximate producer is the router's own books: the delay does not touch it.
	approx := "routing: {policy: weighted, scorers: [{name: prefix-cache-scorer, weight: 3}, {name: queue-scorer, weight: 2}]}\n"
	ic := testInstance(plainModel())
	a, err := Run(&Config{Instances: []InstanceConfig{ic, ic, ic, ic}, Policy: parseBundle(t, approx)}, &sliceSource{reqs: prefixBurstWorkload()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(&Config{Instances: []InstanceConfig{ic, ic, ic, ic}, Policy: parseBundle(t, approx+"observability: {cache_signal_delay_us: 100000}\n")}, &sliceSource{reqs: prefixBurstWorkload()})
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a.Report(nil, metrics.Options{}))
	jb, _ := json.Marshal(b.Report(nil, metrics.Options{}))
	if !bytes.Equal(ja, jb) {
		t.Error("the cache-signal delay changed a run with the approximate prefix producer")
	}
}
