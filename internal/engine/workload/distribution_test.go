package workload

import (
	"math"
	"runtime"
	"strings"
	"testing"
)

// drain pulls every request of an open-loop source.
func drain(t testing.TB, src Source) []Request {
	t.Helper()
	var out []Request
	var r Request
	for src.Next(&r) {
		c := r
		c.Segments = append([]Segment(nil), r.Segments...)
		out = append(out, c)
	}
	return out
}

func checkWellFormed(t testing.TB, reqs []Request) {
	t.Helper()
	var lastID uint64
	var lastArr int64
	for i, r := range reqs {
		if r.ID <= lastID {
			t.Fatalf("request %d: ID %d not increasing after %d", i, r.ID, lastID)
		}
		if r.Arrival < lastArr {
			t.Fatalf("request %d: arrival %d before previous %d", i, r.Arrival, lastArr)
		}
		sum := int32(0)
		for _, s := range r.Segments {
			if s.Length <= 0 {
				t.Fatalf("request %d: segment with length %d", i, s.Length)
			}
			sum += s.Length
		}
		if len(r.Segments) > 0 && sum != r.InputLen {
			t.Fatalf("request %d: segments sum to %d, InputLen %d", i, sum, r.InputLen)
		}
		if r.InputLen <= 0 || r.OutputLen < 0 {
			t.Fatalf("request %d: bad lengths in=%d out=%d", i, r.InputLen, r.OutputLen)
		}
		lastID, lastArr = r.ID, r.Arrival
	}
}

func TestDistributionConstantArrivals(t *testing.T) {
	cfg := DefaultDistributionConfig()
	cfg.Rate = 4
	cfg.NumRequests = 1000
	src, err := NewDistribution(cfg, 42)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := src.(Reactive); ok {
		t.Fatal("the distribution workload is open loop and must not ask for completions")
	}
	reqs := drain(t, src)
	if len(reqs) != 1000 {
		t.Fatalf("got %d requests, want 1000", len(reqs))
	}
	checkWellFormed(t, reqs)
	for i, r := range reqs {
		if want := int64(i+1) * 250_000; r.Arrival != want {
			t.Fatalf("request %d arrives at %d, want %d (constant 4 req/s)", i, r.Arrival, want)
		}
		if r.Client != 0 || r.Tenant != 0 || r.Class != 0 || r.Session != 0 {
			t.Fatalf("request %d: unexpected indices %+v", i, r)
		}
		if r.InputLen < 2 || r.InputLen > 7000 || r.OutputLen < 2 || r.OutputLen > 7000 {
			t.Fatalf("request %d: lengths outside [2, 7000]: %d/%d", i, r.InputLen, r.OutputLen)
		}
	}
	tb := src.Tables()
	if tb.Clients[0] != "default" || tb.Tenants[0] != "" || tb.SLOClasses[0] != "standard" {
		t.Fatalf("tables: %+v", tb)
	}
}

func TestDistributionPoissonRate(t *testing.T) {
	cfg := DefaultDistributionConfig()
	cfg.Rate = 50
	cfg.Poisson = true
	cfg.NumRequests = 20000
	src, err := NewDistribution(cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	reqs := drain(t, src)
	checkWellFormed(t, reqs)
	var gaps []float64
	prev := int64(0)
	for _, r := range reqs {
		gaps = append(gaps, float64(r.Arrival-prev))
		prev = r.Arrival
	}
	mean, cv := meanCV(gaps)
	// 20000 exponential gaps: the mean's relative standard error is 0.7%.
	if math.Abs(mean-20_000)/20_000 > 0.03 {
		t.Fatalf("mean gap %.0f µs, want 20000 ±3%%", mean)
	}
	if math.Abs(cv-1) > 0.05 {
		t.Fatalf("gap cv %.3f, want 1 for Poisson", cv)
	}
}

func meanCV(xs []float64) (float64, float64) {
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	v /= float64(len(xs))
	return m, math.Sqrt(v) / m
}

// BLIS clamps out-of-range Gaussian samples to the bounds (it does not resample), so the
// bounds carry the tail mass.
func TestDistributionGaussianClampsToBounds(t *testing.T) {
	cfg := DefaultDistributionConfig()
	cfg.NumRequests = 20000
	cfg.Input = LengthConfig{Mean: 100, Stdev: 100, Min: 100, Max: 150}
	cfg.Output = LengthConfig{Mean: 300, Stdev: 20, Min: 1, Max: 10000}
	src, err := NewDistribution(cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	reqs := drain(t, src)
	atMin, atMax := 0, 0
	var outs []float64
	for _, r := range reqs {
		switch {
		case r.InputLen == 100:
			atMin++
		case r.InputLen == 150:
			atMax++
		case r.InputLen < 100 || r.InputLen > 150:
			t.Fatalf("input %d outside [100, 150]", r.InputLen)
		}
		outs = append(outs, float64(r.OutputLen))
	}
	// P(X <= 100) = 0.5 and P(X >= 150) = 1 - Φ(0.5) ≈ 0.3085.
	if f := float64(atMin) / 20000; math.Abs(f-0.5) > 0.02 {
		t.Fatalf("fraction clamped to min %.3f, want 0.5", f)
	}
	if f := float64(atMax) / 20000; math.Abs(f-0.3085) > 0.02 {
		t.Fatalf("fraction clamped to max %.3f, want 0.3085", f)
	}
	m, cv := meanCV(outs)
	if math.Abs(m-300) > 1 || math.Abs(cv*m-20) > 1 {
		t.Fatalf("output mean %.1f sd %.1f, want 300 and 20", m, cv*m)
	}
}

func TestDistributionSharedPrefix(t *testing.T) {
	cfg := DefaultDistributionConfig()
	cfg.PrefixTokens = 64
	src, err := NewDistribution(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	reqs := drain(t, src)
	checkWellFormed(t, reqs)
	first := reqs[0].Segments[0]
	keys := map[uint64]bool{}
	for i, r := range reqs {
		if len(r.Segments) != 2 || r.Segments[0] != first || first.Length != 64 || first.Offset != 0 {
			t.Fatalf("request %d: segments %+v, want the shared 64-token prefix first", i, r.Segments)
		}
		if r.InputLen < 64+2 {
			t.Fatalf("request %d: input %d does not include the prefix", i, r.InputLen)
		}
		if keys[r.Segments[1].Key] {
			t.Fatalf("request %d reuses unique content", i)
		}
		keys[r.Segments[1].Key] = true
	}
}

func TestDistributionDeterminism(t *testing.T) {
	cfg := DefaultDistributionConfig()
	cfg.Poisson = true
	a, _ := NewDistribution(cfg, 11)
	b, _ := NewDistribution(cfg, 11)
	c, _ := NewDistribution(cfg, 12)
	ra, rb, rc := drain(t, a), drain(t, b), drain(t, c)
	same := true
	for i := range ra {
		if ra[i].Arrival != rb[i].Arrival || ra[i].InputLen != rb[i].InputLen || ra[i].Segments[0] != rb[i].Segments[0] {
			t.Fatalf("request %d differs between runs with the same seed", i)
		}
		same = same && ra[i].Arrival == rc[i].Arrival
	}
	if same {
		t.Fatal("different seeds gave identical arrivals")
	}
}

func TestDistributionHorizon(t *testing.T) {
	cfg := DefaultDistributionConfig()
	cfg.Rate = 10
	cfg.NumRequests = 1000
	cfg.Horizon = 5_000_000
	src, _ := NewDistribution(cfg, 1)
	if n := len(drain(t, src)); n != 50 {
		t.Fatalf("got %d requests within a 5 s horizon at 10 req/s, want 50", n)
	}
}

func TestDistributionValidation(t *testing.T) {
	cases := []struct {
		mut  func(*DistributionConfig)
		want string
	}{
		{func(c *DistributionConfig) { c.Rate = 0 }, "Rate"},
		{func(c *DistributionConfig) { c.Rate = math.Inf(1) }, "Rate"},
		{func(c *DistributionConfig) { c.NumRequests = 0 }, "NumRequests"},
		{func(c *DistributionConfig) { c.PrefixTokens = -1 }, "PrefixTokens"},
		{func(c *DistributionConfig) { c.Input.Min = 0 }, "Input.Min"},
		{func(c *DistributionConfig) { c.Output.Max = 1 }, "Output.Max"},
		{func(c *DistributionConfig) { c.Input.Stdev = -1 }, "Input.Stdev"},
		{func(c *DistributionConfig) { c.Output.Mean = math.NaN() }, "Output.Mean"},
	}
	for _, tc := range cases {
		cfg := DefaultDistributionConfig()
		tc.mut(&cfg)
		_, err := NewDistribution(cfg, 1)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error naming %s, got %v", tc.want, err)
		}
	}
	if _, err := ParseArrival("gamma"); err == nil || !strings.Contains(err.Error(), "constant, poisson") {
		t.Errorf("ParseArrival(gamma) = %v, want an error listing the valid names", err)
	}
}

// A million-request workload streams: the heap stays flat however many requests are pulled.
func TestDistributionMillionRequestsBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 1,000,000 requests")
	}
	cfg := DefaultDistributionConfig()
	cfg.Poisson = true
	cfg.Rate = 1000
	cfg.PrefixTokens = 32
	cfg.NumRequests = 1_000_000
	src, err := NewDistribution(cfg, 5)
	if err != nil {
		t.Fatal(err)
	}
	var r Request
	var before, after runtime.MemStats
	n := 0
	for ; n < 1000 && src.Next(&r); n++ {
	}
	runtime.GC()
	runtime.ReadMemStats(&before)
	for src.Next(&r) {
		n++
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if n != 1_000_000 {
		t.Fatalf("generated %d requests, want 1000000", n)
	}
	// Materializing the requests would take > 60 MB; streaming keeps the live heap flat.
	if growth := int64(after.HeapAlloc) - int64(before.HeapAlloc); growth > 4<<20 {
		t.Fatalf("live heap grew by %d bytes over 1M requests", growth)
	}
}

func BenchmarkDistributionPoisson(b *testing.B) {
	cfg := DefaultDistributionConfig()
	cfg.Poisson = true
	cfg.PrefixTokens = 32
	cfg.NumRequests = math.MaxInt64
	src, _ := NewDistribution(cfg, 1)
	var r Request
	b.ReportAllocs()
	for b.Loop() {
		if !src.Next(&r) {
			b.Fatal("source ended")
		}
	}
}
