package sim

import (
	"bytes"
	"encoding/json"
	"runtime"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/metrics"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// determinismConfig is a cluster exercising routing by load, preemption, prefix caching,
// chunked prefill and timeouts.
func determinismConfig() *Config {
	m := defaultModel()
	c := &Config{Seed: 99, Router: LeastLoaded, Options: Options{RequestRecords: true}}
	for i := range 4 {
		ic := testInstance(m)
		ic.TotalKVBlocks = int32(250 + 50*i)
		ic.MaxNumBatchedTokens = 512
		ic.LongPrefillTokenThreshold = 200
		if i%2 == 1 {
			ic.Preemption = PreemptPriority
		}
		c.Instances = append(c.Instances, ic)
	}
	return c
}

func determinismWorkload() []workload.Request {
	return gen(genSpec{n: 800, gapUs: 1200, inMean: 300, inStd: 150, outMean: 100, outSd: 60,
		prefixLen: 64, prefixGroups: 5, poisson: true, timeout: 3_000_000, classes: true, seed: 31})
}

// reportJSON runs the simulation and renders its complete output (per-instance and cluster
// blocks with per-request rows, plus the engine's own records and counters).
func reportJSON(t *testing.T, cfg *Config, reqs []workload.Request) []byte {
	t.Helper()
	src := &sliceSource{reqs: reqs}
	res, err := Run(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	rep := res.Report(src.Tables(), metrics.Options{})
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, v := range []any{rep, res.Records, res.Instances, res.End, res.Events} {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// BC-9 / BC-11: the same input and seed give byte-identical output, run after run.
func TestDeterminismRepeatedRuns(t *testing.T) {
	reqs := determinismWorkload()
	first := reportJSON(t, determinismConfig(), reqs)
	for i := 1; i < 10; i++ {
		if got := reportJSON(t, determinismConfig(), reqs); !bytes.Equal(got, first) {
			t.Fatalf("run %d differs from run 0", i)
		}
	}
	// The workload must actually stress the mechanisms whose order could leak.
	var rep struct{ Cluster metrics.Output }
	if err := json.NewDecoder(bytes.NewReader(first)).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	if rep.Cluster.PreemptionCount == 0 || rep.Cluster.TimedOutRequests == 0 || rep.Cluster.CompletedRequests == 0 {
		t.Errorf("workload too easy: %+v", rep.Cluster)
	}
}

// BC-9 / BC-11: the result does not depend on the number of OS threads.
func TestDeterminismGOMAXPROCS(t *testing.T) {
	reqs := determinismWorkload()
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	one := reportJSON(t, determinismConfig(), reqs)
	runtime.GOMAXPROCS(2)
	two := reportJSON(t, determinismConfig(), reqs)
	if !bytes.Equal(one, two) {
		t.Fatal("GOMAXPROCS=1 and GOMAXPROCS=2 give different results")
	}
}

// BC-9 with the streaming distribution workload: same seed, same output; different seed,
// different output.
func TestDeterminismDistributionSeed(t *testing.T) {
	run := func(seed int64) []byte {
		dc := workload.DefaultDistributionConfig()
		dc.Rate, dc.NumRequests, dc.Poisson, dc.PrefixTokens = 40, 300, true, 32
		src, err := workload.NewDistribution(dc, seed)
		if err != nil {
			t.Fatal(err)
		}
		m := defaultModel()
		cfg := &Config{Seed: seed, Instances: []InstanceConfig{testInstance(m), testInstance(m)}, Options: Options{RequestRecords: true}}
		res, err := Run(cfg, src)
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(res.Report(src.Tables(), metrics.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	a, b, c := run(42), run(42), run(43)
	if !bytes.Equal(a, b) {
		t.Fatal("same seed, different output")
	}
	if bytes.Equal(a, c) {
		t.Fatal("different seeds gave identical output")
	}
}

// BC-10 at the simulator level: the routing policy draws from its own stream and cannot change
// the workload: the same requests (arrival, sizes) arrive under either policy.
func TestRNGIsolationAcrossRouters(t *testing.T) {
	workloadOf := func(router RouterFactory) []RequestRecord {
		dc := workload.DefaultDistributionConfig()
		dc.Rate, dc.NumRequests = 30, 200
		src, err := workload.NewDistribution(dc, 7)
		if err != nil {
			t.Fatal(err)
		}
		m := defaultModel()
		cfg := &Config{Seed: 7, Router: router, Instances: []InstanceConfig{testInstance(m), testInstance(m), testInstance(m)}, Options: Options{RequestRecords: true}}
		res, err := Run(cfg, src)
		if err != nil {
			t.Fatal(err)
		}
		return res.Records
	}
	a, b := workloadOf(RoundRobin), workloadOf(LeastLoaded)
	sameRouting := true
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Arrival != b[i].Arrival || a[i].InputLen != b[i].InputLen || a[i].OutputLen != b[i].OutputLen {
			t.Fatalf("request %d differs between routers: %+v vs %+v", i, a[i], b[i])
		}
		sameRouting = sameRouting && a[i].Instance == b[i].Instance
	}
	if sameRouting {
		t.Error("the two policies should route differently on this workload")
	}
}

// Runs share nothing mutable: the same Config (with one resolved latency model shared by every
// instance) run from several goroutines at once gives the same bytes as a run alone. The
// operator's in-process executor relies on this.
func TestConcurrentRunsAreIndependent(t *testing.T) {
	ic := benchInstance(t)
	ic.TotalKVBlocks, ic.MaxModelLen = 400, 6400 // preemption and prefix reuse
	cfg := &Config{Seed: 5, Router: LeastLoaded, Instances: []InstanceConfig{ic, ic, ic}, Options: Options{RequestRecords: true}}
	run := func() []byte {
		dc := workload.DefaultDistributionConfig()
		dc.Rate, dc.NumRequests, dc.Poisson, dc.PrefixTokens = 60, 300, true, 200
		src, err := workload.NewDistribution(dc, 5)
		if err != nil {
			t.Error(err)
			return nil
		}
		res, err := Run(cfg, src)
		if err != nil {
			t.Error(err)
			return nil
		}
		data, err := json.Marshal(res.Report(src.Tables(), metrics.Options{}))
		if err != nil {
			t.Error(err)
		}
		return data
	}
	want := run()
	const n = 4
	got := make([][]byte, n)
	done := make(chan int)
	for i := range n {
		go func() {
			got[i] = run()
			done <- i
		}()
	}
	for range n {
		<-done
	}
	for i, g := range got {
		if !bytes.Equal(g, want) {
			t.Fatalf("concurrent run %d differs", i)
		}
	}
}
