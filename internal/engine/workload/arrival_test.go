package workload

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/rng"
)

func gapsOf(t *testing.T, a ArrivalSpec, n int) []float64 {
	t.Helper()
	p, f, err := newProcess("arrival", &a)
	if err != nil {
		t.Fatal(err)
	}
	if f != nil {
		t.Fatalf("%s has a rate factor", a.Process)
	}
	r := rng.Derive(1, "test")
	out := make([]float64, n)
	for i := range out {
		out[i] = p.gap(r)
	}
	return out
}

func fp(v float64) *float64 { return &v }

// Every renewal process has mean gap 1 (so rate_fraction alone sets the rate) and the
// requested coefficient of variation.
func TestRenewalProcessesMeanAndCV(t *testing.T) {
	cases := []struct {
		a      ArrivalSpec
		wantCV float64
	}{
		{ArrivalSpec{Process: "poisson"}, 1},
		{ArrivalSpec{Process: "constant"}, 0},
		{ArrivalSpec{Process: "gamma", CV: fp(3)}, 3},
		{ArrivalSpec{Process: "gamma", CV: fp(0.5)}, 0.5},
		{ArrivalSpec{Process: "gamma", Shape: fp(4)}, 0.5},
		{ArrivalSpec{Process: "weibull", CV: fp(2)}, 2},
		{ArrivalSpec{Process: "weibull", CV: fp(0.3)}, 0.3},
		{ArrivalSpec{Process: "weibull", Shape: fp(1)}, 1},
	}
	for _, tc := range cases {
		m, cv := meanCV(gapsOf(t, tc.a, 200_000))
		name := fmt.Sprintf("%s cv=%v shape=%v", tc.a.Process, tc.a.CV, tc.a.Shape)
		if math.Abs(m-1) > 0.03 {
			t.Errorf("%s: mean gap %.3f, want 1", name, m)
		}
		if math.Abs(cv-tc.wantCV) > 0.05*math.Max(tc.wantCV, 1) {
			t.Errorf("%s: cv %.3f, want %.2f", name, cv, tc.wantCV)
		}
	}
}

func TestPeriodicJitterAndAdversarialBursts(t *testing.T) {
	j := 0.2
	gaps := gapsOf(t, ArrivalSpec{Process: "periodic", Jitter: &j}, 10_000)
	pos := 0.0
	for k, g := range gaps {
		pos += g
		if g < 0 {
			t.Fatalf("negative gap %g", g)
		}
		// Arrival k sits within ±jitter of lattice point k+1: jitter never accumulates.
		if math.Abs(pos-float64(k+1)) > j+1e-9 {
			t.Fatalf("arrival %d at %.3f drifted from its lattice point", k, pos)
		}
	}
	gaps = gapsOf(t, ArrivalSpec{Process: "adversarial", BurstSize: 5}, 20)
	want := []float64{5, 0, 0, 0, 0, 5, 0, 0, 0, 0}
	for i, w := range want {
		if gaps[i] != w {
			t.Fatalf("adversarial gaps %v, want bursts of 5 simultaneous arrivals", gaps[:10])
		}
	}
}

func TestArrivalValidation(t *testing.T) {
	cases := []struct {
		a    ArrivalSpec
		want string
	}{
		{ArrivalSpec{}, "arrival.process: required"},
		{ArrivalSpec{Process: "zipf"}, "valid: poisson, gamma"},
		{ArrivalSpec{Process: "gamma", CV: fp(-1)}, "arrival.cv"},
		{ArrivalSpec{Process: "gamma", CV: fp(1), Shape: fp(1)}, "cv or shape"},
		{ArrivalSpec{Process: "poisson", CV: fp(2)}, "only apply to gamma and weibull"},
		{ArrivalSpec{Process: "weibull", Scale: fp(2)}, "arrival.scale"},
		{ArrivalSpec{Process: "periodic", Jitter: fp(0.7)}, "arrival.jitter"},
		{ArrivalSpec{Process: "bursty", SpikeDurationUs: 10, SpikeIntervalUs: 5}, "spike_duration_us"},
		{ArrivalSpec{Process: "diurnal", PeakToTroughRatio: 0.5}, "peak_to_trough_ratio"},
		{ArrivalSpec{Process: "poisson", BurstSize: 3}, "burst_size"},
	}
	for _, tc := range cases {
		_, _, err := newProcess("arrival", &tc.a)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.a, err, tc.want)
		}
	}
}

// The profile integral inverts exactly across piecewise-constant factors.
func TestProfileAdvance(t *testing.T) {
	p := profile{&windowFactor{start: 100, end: 200, mult: 4}}
	cases := [][3]float64{{0, 50, 50}, {0, 100, 100}, {0, 500, 200}, {0, 600, 300}, {150, 100, 175}}
	for _, c := range cases {
		if got := p.advance(c[0], c[1], math.Inf(1)); math.Abs(got-c[2]) > 1e-9 {
			t.Errorf("advance(%g, %g) = %g, want %g", c[0], c[1], got, c[2])
		}
	}
	off := profile{&windowFactor{start: 0, end: 100, mult: 1, exclusive: true}}
	if got := off.advance(0, 150, math.Inf(1)); !math.IsInf(got, 1) {
		t.Errorf("exclusive window ran past its end: %g", got)
	}
	drain := profile{&drainFactor{start: 0, ramp: 1000}}
	// The ramp's total integral is 500: less than that is reachable, more is not.
	if got := drain.advance(0, 499, math.Inf(1)); got >= 1000 {
		t.Errorf("drain: 499 units reached at %g, want before the ramp ends", got)
	}
	if got := drain.advance(0, 501, math.Inf(1)); !math.IsInf(got, 1) {
		t.Errorf("drain: 501 units reached at %g, want never", got)
	}
	// A silent factor ends the search even when another factor keeps changing.
	both := profile{newDiurnal(1000, 2, 0), &drainFactor{start: 0, ramp: 1000}}
	if got := both.advance(0, 1e6, math.Inf(1)); !math.IsInf(got, 1) {
		t.Errorf("diurnal × finished drain reached at %g, want never", got)
	}
	if got := (profile{newDiurnal(1000, 2, 0)}).advance(0, 1e6, 5000); !math.IsInf(got, 1) {
		t.Errorf("advance past the limit returned %g", got)
	}
}

func specRequests(t *testing.T, y string) ([]Request, *Tables) {
	t.Helper()
	s, err := ParseSpec([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	src, err := s.Source(s.Seed)
	if err != nil {
		t.Fatal(err)
	}
	reqs := drain(t, src)
	checkWellFormed(t, reqs)
	return reqs, src.Tables()
}

const constLens = `
    input_distribution: {type: constant, params: {value: 100}}
    output_distribution: {type: constant, params: {value: 10}}`

func TestCohortDiurnalSpikeDrain(t *testing.T) {
	reqs, tb := specRequests(t, `
aggregate_rate: 2
horizon: 172800000000
cohorts:
  - id: office
    population: 10
    rate_fraction: 1
    arrival: {process: poisson}
    diurnal: {peak_hour: 12, peak_to_trough_ratio: 4}
    drain: {start_time_us: 86400000000, ramp_duration_us: 43200000000}`+strings.ReplaceAll(constLens, "\n    ", "\n    "))
	if n := len(tb.Clients); n != 11 {
		t.Fatalf("%d clients, want 10 members + default", n)
	}
	hour := make([]int, 48)
	members := map[int32]int{}
	for _, r := range reqs {
		hour[r.Arrival/3_600_000_000]++
		members[r.Client]++
	}
	if len(members) != 10 {
		t.Fatalf("%d members sent requests", len(members))
	}
	// Day 1: mean 2 req/s, peak at noon, trough at midnight, ratio 4.
	within(t, "day-1 requests", float64(sumInts(hour[:24])), 2*86400, 0.02)
	within(t, "peak/trough", float64(hour[11]+hour[12])/float64(hour[23]+hour[0]), 4, 0.12)
	// Day 2: the drain ramps to zero by 12:00 and nothing arrives afterwards.
	if n := sumInts(hour[36:]); n != 0 {
		t.Fatalf("%d requests after the drain", n)
	}
	if hour[24] <= hour[34] {
		t.Fatalf("drain does not decrease the rate: hour 24 %d, hour 34 %d", hour[24], hour[34])
	}

	reqs, _ = specRequests(t, `
aggregate_rate: 10
horizon: 60000000
cohorts:
  - id: flash
    population: 4
    rate_fraction: 1
    arrival: {process: poisson}
    spike: {start_time_us: 20000000, duration_us: 10000000, trace_rate: 100}`+constLens)
	in, out := 0, 0
	for _, r := range reqs {
		if r.Arrival >= 20e6 && r.Arrival < 30e6 {
			in++
		} else {
			out++
		}
	}
	within(t, "spike requests (100 req/s × 10 s)", float64(in), 1000, 0.08)
	within(t, "other requests (10 req/s × 50 s)", float64(out), 500, 0.12)

	reqs, _ = specRequests(t, `
aggregate_rate: 10
horizon: 60000000
cohorts:
  - id: only-spike
    population: 2
    rate_fraction: 1
    arrival: {process: constant}
    spike: {start_time_us: 20000000, duration_us: 10000000}`+constLens)
	for _, r := range reqs {
		if r.Arrival < 20e6 || r.Arrival >= 30e6 {
			t.Fatalf("arrival %d outside the spike window of a cohort without trace_rate", r.Arrival)
		}
	}
	within(t, "spike-only requests", float64(len(reqs)), 100, 0.03)
}

func sumInts(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

func TestLifecycleWindows(t *testing.T) {
	reqs, tb := specRequests(t, `
aggregate_rate: 10
clients:
  - id: phased
    rate_fraction: 1
    arrival: {process: constant}
    lifecycle:
      windows:
        - {start_us: 0, end_us: 10000000}
        - {start_us: 20000000, end_us: 30000000, trace_rate: 50, arrival: {process: poisson},
           input_distribution: {type: constant, params: {value: 7}}}`+constLens+`
  - id: always
    rate_fraction: 1
    arrival: {process: constant}`+constLens+`
    lifecycle: {windows: [{start_us: 0, end_us: 30000000}]}
`)
	count := map[string][3]int{}
	for _, r := range reqs {
		c := count[tb.Clients[r.Client]]
		c[r.Arrival/10_000_000]++
		count[tb.Clients[r.Client]] = c
		if tb.Clients[r.Client] == "phased" && r.Arrival >= 20e6 && r.InputLen != 7 {
			t.Fatalf("window input distribution not applied: %d", r.InputLen)
		}
	}
	// Co-active normalization: both clients overlap, so each gets 5 req/s in window 1
	// (constant gaps of 200 ms from the window start: 49 arrivals before 10 s); window 2 of
	// "phased" has its own 50 req/s.
	if c := count["phased"]; c[0] != 49 || c[1] != 0 {
		t.Fatalf("phased window 1/gap: %v", c)
	}
	within(t, "phased window 2", float64(count["phased"][2]), 500, 0.1)
	if c := count["always"]; c[0]+c[1]+c[2] != 149 {
		t.Fatalf("always: %v, want 149 requests at 5 req/s over 30 s", c)
	}
}

func TestConcurrencyClosedLoop(t *testing.T) {
	s, err := ParseSpec([]byte(`
num_requests: 200
clients:
  - id: users
    concurrency: 4
    think_time_us: 1000` + constLens))
	if err != nil {
		t.Fatal(err)
	}
	src, _ := s.Source(1)
	reqs := simulate(t, src, fixedService(10_000), nil)
	if len(reqs) != 200 {
		t.Fatalf("%d requests, want 200", len(reqs))
	}
	// At most 4 requests are ever in flight, and each user's next request comes one think
	// time after its previous one finished.
	for i, r := range reqs {
		inflight := 0
		for _, q := range reqs[:i] {
			if q.finish > r.Arrival {
				inflight++
			}
		}
		if inflight >= 4 {
			t.Fatalf("request %d arrives with %d in flight", r.ID, inflight)
		}
	}
	if reqs[4].Arrival != reqs[0].finish+1000 {
		t.Fatalf("fifth request at %d, want first finish %d + think 1000", reqs[4].Arrival, reqs[0].finish)
	}
}

func TestOpenLoopAndSingleSessionTurns(t *testing.T) {
	reqs, _ := specRequests(t, `
aggregate_rate: 1
num_requests: 30
clients:
  - id: chat
    rate_fraction: 1
    closed_loop: false
    arrival: {process: constant}
    reasoning: {multi_turn: {max_rounds: 3, think_time_us: 100000, context_growth: accumulate}}`+constLens)
	if len(reqs) != 30 {
		t.Fatalf("%d requests", len(reqs))
	}
	for _, r := range reqs {
		// Session k starts at k s; round j arrives 100 ms × j later with 100 new tokens per
		// round and the 10-token answers before it.
		start := int64(r.Session) * 1_000_000
		if r.Arrival != start+int64(r.Round)*100_000 || r.InputLen != 100+110*r.Round {
			t.Fatalf("open-loop round %+v", r)
		}
	}
	reqs, _ = specRequests(t, `
aggregate_rate: 1
num_requests: 7
clients:
  - id: chat
    rate_fraction: 1
    prefix_group: sys
    prefix_length: 20
    arrival: {process: constant}
    reasoning:
      reason_ratio_distribution: {type: constant, params: {value: 0.5}}
      multi_turn: {max_rounds: 3, context_growth: accumulate, single_session: true}`+constLens)
	sessions := map[uint64]int{}
	for i, r := range reqs {
		sessions[r.Session]++
		// Rounds 0,1,2 then a new conversation: 20 prefix + 100 per round + 5 of each
		// 10-token answer (half of it is reasoning and is not carried forward).
		if want := int32(20 + 100 + 105*(i%3)); r.InputLen != want || r.Round != int32(i%3) {
			t.Fatalf("single-session request %d: input %d round %d, want %d round %d", i, r.InputLen, r.Round, want, i%3)
		}
	}
	if len(sessions) != 3 {
		t.Fatalf("%d sessions, want 3 (3+3+1 rounds)", len(sessions))
	}
}

func TestEmpiricalAndMultimodal(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lens.csv"), []byte("tokens,weight\n100,1\n300,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := `
aggregate_rate: 100
num_requests: 4000
clients:
  - id: emp
    rate_fraction: 1
    arrival: {process: poisson}
    input_distribution: {type: empirical, file: lens.csv}
    output_distribution: {type: empirical, params: {"5": 1, "9": 1}}
  - id: mm
    rate_fraction: 1
    arrival: {process: poisson}
    multimodal:
      text_distribution: {type: constant, params: {value: 50}}
      image_distribution: {type: constant, params: {value: 576}}
      image_count_distribution: {type: constant, params: {value: 2}}
    output_distribution: {type: constant, params: {value: 1}}
`
	if err := os.WriteFile(filepath.Join(dir, "w.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSpecFile(filepath.Join(dir, "w.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src, _ := s.Source(3)
	reqs := drain(t, src)
	tb := src.Tables()
	n300, nEmp := 0, 0
	for _, r := range reqs {
		switch tb.Clients[r.Client] {
		case "emp":
			nEmp++
			if r.InputLen == 300 {
				n300++
			} else if r.InputLen != 100 {
				t.Fatalf("empirical input %d", r.InputLen)
			}
			if r.OutputLen != 5 && r.OutputLen != 9 {
				t.Fatalf("inline empirical output %d", r.OutputLen)
			}
		case "mm":
			if r.InputLen != 50+2*576 {
				t.Fatalf("multimodal input %d, want text 50 + 2 images × 576", r.InputLen)
			}
		}
	}
	within(t, "P(300)", float64(n300)/float64(nEmp), 0.75, 0.05)
}

func TestAddingClientDoesNotPerturbOthers(t *testing.T) {
	one := `
aggregate_rate: 10
horizon: 20000000
clients:
  - id: a
    rate_fraction: 1
    arrival: {process: poisson}
    input_distribution: {type: exponential, params: {mean: 100}}
    output_distribution: {type: exponential, params: {mean: 10}}
`
	two := strings.Replace(one, "aggregate_rate: 10", "aggregate_rate: 20", 1) + `  - id: b
    rate_fraction: 1
    arrival: {process: gamma, cv: 2}` + constLens + "\n"
	ra, _ := specRequests(t, one)
	rb, tb := specRequests(t, two)
	var onlyA []Request
	for _, r := range rb {
		if tb.Clients[r.Client] == "a" {
			onlyA = append(onlyA, r)
		}
	}
	if len(onlyA) != len(ra) {
		t.Fatalf("client a sent %d requests alone, %d next to b", len(ra), len(onlyA))
	}
	for i := range ra {
		if ra[i].Arrival != onlyA[i].Arrival || ra[i].InputLen != onlyA[i].InputLen || ra[i].Segments[0] != onlyA[i].Segments[0] {
			t.Fatalf("client a's request %d changed when client b was added", i)
		}
	}
}

func BenchmarkSpecMergedClients(b *testing.B) {
	s, err := Scenario("prefix-heavy")
	if err != nil {
		b.Fatal(err)
	}
	s.Horizon = 0
	src, _ := s.Source(1)
	var r Request
	b.ReportAllocs()
	for b.Loop() {
		if !src.Next(&r) {
			b.Fatal("source ended")
		}
	}
}

// A million requests from a multi-client spec (merged through the client heap) also stream
// with a flat heap.
func TestSpecMillionRequestsBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 1,000,000 requests")
	}
	s, err := Scenario("prefix-heavy")
	if err != nil {
		t.Fatal(err)
	}
	s.Horizon, s.NumRequests = 0, 1_000_000
	src, err := s.Source(9)
	if err != nil {
		t.Fatal(err)
	}
	var r Request
	n := 0
	for ; n < 1000 && src.Next(&r); n++ {
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for src.Next(&r) {
		n++
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if n != 1_000_000 {
		t.Fatalf("generated %d requests", n)
	}
	if growth := int64(after.HeapAlloc) - int64(before.HeapAlloc); growth > 4<<20 {
		t.Fatalf("live heap grew by %d bytes over 1M requests", growth)
	}
}

func TestLifecycleWindowsInAnyOrder(t *testing.T) {
	spec := `
aggregate_rate: 10
clients:
  - id: c
    rate_fraction: 1
    arrival: {process: poisson}` + constLens + `
    lifecycle: {windows: [%s]}
`
	a, _ := specRequests(t, fmt.Sprintf(spec, "{start_us: 0, end_us: 1000000}, {start_us: 5000000, end_us: 6000000}"))
	b, _ := specRequests(t, fmt.Sprintf(spec, "{start_us: 5000000, end_us: 6000000}, {start_us: 0, end_us: 1000000}"))
	if len(a) != len(b) || len(a) < 10 {
		t.Fatalf("%d and %d requests", len(a), len(b))
	}
	for i := range a {
		if a[i].Arrival != b[i].Arrival {
			t.Fatalf("request %d differs with the windows listed in another order", i)
		}
	}
}
