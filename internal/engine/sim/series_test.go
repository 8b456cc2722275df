package sim

import (
	"bytes"
	"encoding/json"
	"runtime"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// seriesRun runs cfg on reqs with series recording and returns the result.
func seriesRun(t *testing.T, cfg *Config, reqs []workload.Request) *Result {
	t.Helper()
	cfg.Options.Series = true
	res, err := Run(cfg, &sliceSource{reqs: reqs})
	if err != nil {
		t.Fatal(err)
	}
	if res.Series == nil {
		t.Fatal("no series recorded")
	}
	return res
}

// checkSeries asserts the invariants every recorded series must satisfy.
func checkSeries(t *testing.T, cfg *Config, res *Result, arrivals int64) {
	t.Helper()
	s := res.Series
	n := s.Buckets()
	if n < 1 || n > MaxSeriesBuckets {
		t.Fatalf("%d buckets, want 1..%d", n, MaxSeriesBuckets)
	}
	if s.End != res.End {
		t.Fatalf("series end %d, run end %d", s.End, res.End)
	}
	if s.End > 0 && (int64(n-1)*s.BucketUs >= s.End || int64(n)*s.BucketUs < s.End) {
		t.Fatalf("%d buckets of %d µs do not end at %d", n, s.BucketUs, s.End)
	}
	var arr, done, completed int64
	for k := range n {
		arr += s.Arrivals[k]
		done += s.Completions[k]
	}
	for i := range res.Instances {
		completed += res.Instances[i].Completed
	}
	if arr != arrivals || done != completed {
		t.Fatalf("series count %d arrivals and %d completions, want %d and %d", arr, done, arrivals, completed)
	}
	if len(s.Instances) != len(cfg.Instances) || len(s.ReadyInstances) != n || len(s.Completions) != n {
		t.Fatalf("series shape: %d instances, %d ready, %d completions for %d buckets", len(s.Instances), len(s.ReadyInstances), len(s.Completions), n)
	}
	var covered int64
	for k := range n {
		covered += s.BucketDuration(k)
		if r := s.ReadyInstances[k]; r < 0 || r > float64(len(cfg.Instances))+1e-9 {
			t.Fatalf("bucket %d: %v ready instances", k, r)
		}
	}
	if covered != s.End {
		t.Fatalf("buckets cover %d µs, run ends at %d", covered, s.End)
	}
	for i, is := range s.Instances {
		maxSeqs := float64(cfg.Instances[i].MaxNumSeqs)
		for _, v := range [][]float64{is.QueueDepth, is.BatchSize, is.KVUtilization, is.CacheHitRate} {
			if len(v) != n {
				t.Fatalf("instance %d: a series has %d values for %d buckets", i, len(v), n)
			}
		}
		for k := range n {
			switch {
			case is.KVUtilization[k] < 0 || is.KVUtilization[k] > 1:
				t.Fatalf("instance %d bucket %d: KV utilization %v", i, k, is.KVUtilization[k])
			case is.CacheHitRate[k] < 0 || is.CacheHitRate[k] > 1:
				t.Fatalf("instance %d bucket %d: cache hit rate %v", i, k, is.CacheHitRate[k])
			case is.BatchSize[k] < 0 || is.BatchSize[k] > maxSeqs+1e-9:
				t.Fatalf("instance %d bucket %d: batch size %v > max-num-seqs %v", i, k, is.BatchSize[k], maxSeqs)
			case is.QueueDepth[k] < 0:
				t.Fatalf("instance %d bucket %d: queue depth %v", i, k, is.QueueDepth[k])
			}
		}
	}
}

func TestSeriesInvariants(t *testing.T) {
	reqs := determinismWorkload()
	cfg := determinismConfig()
	res := seriesRun(t, cfg, reqs)
	checkSeries(t, cfg, res, int64(len(reqs)))
	s := res.Series
	if s.BucketUs != DefaultSeriesBucketUs {
		t.Fatalf("a %d µs run has %d µs buckets, want %d", s.End, s.BucketUs, DefaultSeriesBucketUs)
	}
	// The workload loads every instance and shares prefixes: something must show.
	var busy, hits bool
	for _, is := range s.Instances {
		for k := range s.Buckets() {
			busy = busy || is.BatchSize[k] > 0 && is.KVUtilization[k] > 0
			hits = hits || is.CacheHitRate[k] > 0
		}
	}
	if !busy || !hits {
		t.Fatalf("series show no load (busy %v) or no prefix hits (%v)", busy, hits)
	}
	for k := range s.Buckets() {
		if s.ReadyInstances[k] != 4 && k < s.Buckets()-1 {
			t.Fatalf("bucket %d: %v ready instances in a fixed cluster of 4", k, s.ReadyInstances[k])
		}
	}
}

// A run much longer than 512 default buckets doubles its width until it fits.
func TestSeriesLongRunMerges(t *testing.T) {
	reqs := gen(genSpec{n: 3000, gapUs: 60_000, inMean: 200, inStd: 50, outMean: 40, outSd: 10, seed: 5})
	cfg := &Config{Seed: 1, Instances: []InstanceConfig{testInstance(defaultModel())}}
	res := seriesRun(t, cfg, reqs)
	checkSeries(t, cfg, res, int64(len(reqs)))
	s := res.Series
	if s.BucketUs <= DefaultSeriesBucketUs || s.BucketUs%DefaultSeriesBucketUs != 0 {
		t.Fatalf("a %d s run kept %d µs buckets", s.End/1_000_000, s.BucketUs)
	}
	if int64(MaxSeriesBuckets/2)*s.BucketUs >= s.End {
		t.Fatalf("width %d µs is more than needed for %d µs", s.BucketUs, s.End)
	}
	// One request every 60 ms: about BucketUs/60ms arrivals per full bucket.
	want := s.BucketUs / 60_000
	for k := range s.Buckets() - 1 {
		if d := s.Arrivals[k] - want; d < -1 || d > 1 {
			t.Fatalf("bucket %d of %d µs has %d arrivals, want %d±1", k, s.BucketUs, s.Arrivals[k], want)
		}
	}
}

// Merging pairs keeps every total: the sums of a run recorded from the start with wide buckets
// equal the merged sums of narrow ones.
func TestSeriesMergeKeepsTotals(t *testing.T) {
	reqs := determinismWorkload()
	narrow := seriesRun(t, determinismConfig(), reqs).Series
	// Recording with a horizon far past the end starts with wide buckets directly.
	cfgWide := determinismConfig()
	cfgWide.Horizon = 512 * 4 * narrow.BucketUs
	wide := seriesRun(t, cfgWide, reqs).Series
	if wide.BucketUs != 4*narrow.BucketUs {
		t.Fatalf("wide buckets %d µs, narrow %d µs", wide.BucketUs, narrow.BucketUs)
	}
	for k := range wide.Buckets() {
		var arr, done int64
		var queue, kv float64
		for j := 4 * k; j < min(4*k+4, narrow.Buckets()); j++ {
			arr += narrow.Arrivals[j]
			done += narrow.Completions[j]
			d := float64(narrow.BucketDuration(j))
			queue += narrow.Instances[0].QueueDepth[j] * d
			kv += narrow.Instances[2].KVUtilization[j] * d
		}
		d := float64(wide.BucketDuration(k))
		if arr != wide.Arrivals[k] || done != wide.Completions[k] {
			t.Fatalf("bucket %d: %d/%d arrivals, %d/%d completions", k, wide.Arrivals[k], arr, wide.Completions[k], done)
		}
		if !near(queue, wide.Instances[0].QueueDepth[k]*d) || !near(kv, wide.Instances[2].KVUtilization[k]*d) {
			t.Fatalf("bucket %d: queue integral %v vs %v, KV integral %v vs %v", k,
				queue, wide.Instances[0].QueueDepth[k]*d, kv, wide.Instances[2].KVUtilization[k]*d)
		}
	}
}

func near(a, b float64) bool {
	d := a - b
	return d < 1e-6*max(1, a, -a) && d > -1e-6*max(1, a, -a)
}

// Recording series and reporting progress change nothing in the simulated results.
func TestSeriesDoesNotChangeResults(t *testing.T) {
	reqs := determinismWorkload()
	off := reportJSON(t, determinismConfig(), reqs)
	cfg := determinismConfig()
	cfg.Options.Series = true
	var calls int
	cfg.Options.Progress = func(Progress) { calls++ }
	on := reportJSON(t, cfg, reqs)
	if !bytes.Equal(off, on) {
		t.Fatal("recording series changed the results")
	}
	if calls != 1 {
		t.Fatalf("a run of fewer than 65,536 events reported progress %d times, want once at the end", calls)
	}
}

// Series are deterministic at any GOMAXPROCS.
func TestSeriesDeterministic(t *testing.T) {
	reqs := determinismWorkload()
	encode := func() []byte {
		res := seriesRun(t, determinismConfig(), reqs)
		b, err := json.Marshal(res.Series)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	first := encode()
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	if !bytes.Equal(first, encode()) {
		t.Fatal("series differ between runs")
	}
}

// Progress is reported every 65,536 events and at the end, with the final counts last.
func TestProgressReports(t *testing.T) {
	reqs := gen(genSpec{n: 6000, gapUs: 2000, inMean: 100, inStd: 20, outMean: 60, outSd: 10, seed: 9})
	cfg := &Config{Seed: 1, Instances: []InstanceConfig{testInstance(defaultModel()), testInstance(defaultModel())}}
	var got []Progress
	cfg.Options.Progress = func(p Progress) { got = append(got, p) }
	res, err := Run(cfg, &sliceSource{reqs: reqs})
	if err != nil {
		t.Fatal(err)
	}
	if want := int(res.Events/progressEvery) + 1; len(got) != want {
		t.Fatalf("%d progress reports for %d events, want %d", len(got), res.Events, want)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Now < got[i-1].Now || got[i].Finished < got[i-1].Finished || got[i].Generated < got[i-1].Generated {
			t.Fatalf("progress went backwards: %+v then %+v", got[i-1], got[i])
		}
	}
	last := got[len(got)-1]
	if last.Generated != int64(len(reqs)) || last.Finished != int64(len(reqs)) || last.Horizon != 0 {
		t.Fatalf("final progress %+v, want %d generated and finished", last, len(reqs))
	}
}

// With autoscaling the ready-instance series follows the lifecycle.
func TestSeriesReadyInstancesAutoscaled(t *testing.T) {
	cfg := autoscaledCluster(policy.AutoscaleSpec{Template: policy.AutoscaleThreshold}, DrainWait)
	reqs := burstWorkload()
	res := seriesRun(t, cfg, reqs)
	checkSeries(t, cfg, res, int64(len(reqs)))
	s := res.Series
	lo, hi := s.ReadyInstances[0], s.ReadyInstances[0]
	for k := range s.Buckets() {
		lo, hi = min(lo, s.ReadyInstances[k]), max(hi, s.ReadyInstances[k])
	}
	if hi <= lo {
		t.Fatalf("ready instances stayed at %v in an autoscaled burst", lo)
	}
}

// Disaggregation, a CPU KV tier and a horizon that cuts the run keep the invariants, and
// recording still changes nothing.
func TestSeriesDynamicsAndHorizon(t *testing.T) {
	reqs := determinismWorkload()
	build := func() *Config {
		cfg := determinismConfig()
		for i := range cfg.Instances {
			cfg.Instances[i].Preemption = ""
			cfg.Instances[i].BlockSize = 16
			cfg.Instances[i].CPUTier = &KVTierConfig{CapacityBlocks: 500, BandwidthGBps: 20, BlockBytes: 1 << 17, OffloadThreshold: 0.5}
		}
		cfg.PD = &PDConfig{PrefillInstances: 2, BandwidthGBps: 50, BaseLatencyUs: 200, BytesPerToken: 1 << 13}
		cfg.Horizon = 600_000 // about two thirds of the arrivals
		return cfg
	}
	off := reportJSON(t, build(), reqs)
	cfg := build()
	cfg.Options.Series = true
	if on := reportJSON(t, cfg, reqs); !bytes.Equal(off, on) {
		t.Fatal("recording series changed the results of a disaggregated run")
	}
	res := seriesRun(t, cfg, reqs)
	var arrived int64
	for _, r := range reqs {
		if r.Arrival <= cfg.Horizon {
			arrived++
		}
	}
	checkSeries(t, cfg, res, arrived)
	if res.Series.End != cfg.Horizon || res.Series.BucketUs != 2000 {
		t.Fatalf("series end %d with %d µs buckets, want the horizon %d in 2 ms buckets", res.Series.End, res.Series.BucketUs, cfg.Horizon)
	}
}
