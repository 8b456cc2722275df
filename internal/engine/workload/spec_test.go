package workload

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

func loadExample(t *testing.T, name string) *Spec {
	t.Helper()
	s, err := LoadSpecFile(filepath.Join("testdata", "blis", name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

func within(t *testing.T, what string, got, want, relTol float64) {
	t.Helper()
	if math.Abs(got-want) > relTol*math.Abs(want) {
		t.Errorf("%s = %.4g, want %.4g ±%.0f%%", what, got, want, relTol*100)
	}
}

func TestExampleInferencePerfSharedPrefix(t *testing.T) {
	s := loadExample(t, "inference-perf-shared-prefix.yaml")
	src, err := s.Source(s.Seed)
	if err != nil {
		t.Fatal(err)
	}
	if h := s.EffectiveHorizon(); h != 1_200_000_000 {
		t.Fatalf("effective horizon %d, want the end of the second stage", h)
	}
	if n := len(src.Tables().Clients); n != 91 {
		t.Fatalf("%d clients in the table, want 90 (2 stages × 9 prompts × 5 users) + default", n)
	}
	reqs := drain(t, src)
	checkWellFormed(t, reqs)
	stage := [2]int{}
	prefixes := map[uint64]int{}
	for _, r := range reqs {
		if r.Arrival >= 1_200_000_000 {
			t.Fatalf("arrival %d after the last stage", r.Arrival)
		}
		stage[r.Arrival/600_000_000]++
		if r.InputLen != 100+447 || r.OutputLen != 248 || len(r.Segments) != 2 || r.Segments[0].Length != 100 {
			t.Fatalf("request %+v: want a 100-token group prefix + 447 question tokens, 248 output", r)
		}
		prefixes[r.Segments[0].Key]++
	}
	// Poisson counts: sd ≈ sqrt(4800) ≈ 69 and sqrt(12000) ≈ 110.
	within(t, "stage 1 requests", float64(stage[0]), 4800, 0.05)
	within(t, "stage 2 requests", float64(stage[1]), 12000, 0.05)
	if len(prefixes) != 9 {
		t.Fatalf("%d distinct system prompts, want 9", len(prefixes))
	}
	for _, n := range prefixes {
		within(t, "requests per system prompt", float64(n), float64(len(reqs))/9, 0.1)
	}
}

func TestExampleCacheWarmup(t *testing.T) {
	s := loadExample(t, "regression_workload_cache_warmup.yaml")
	src, err := s.Source(s.Seed)
	if err != nil {
		t.Fatal(err)
	}
	reqs := drain(t, src)
	checkWellFormed(t, reqs)
	if len(reqs) != 5000 {
		t.Fatalf("%d requests, want num_requests 5000", len(reqs))
	}
	tb := src.Tables()
	per := map[string]int{}
	prefixLen := map[string]int32{}
	var gammaGaps []float64
	last := int64(-1)
	for _, r := range reqs {
		name := tb.Clients[r.Client]
		per[name]++
		if len(r.Segments) == 2 {
			prefixLen[name] = r.Segments[0].Length
		}
		if name == "unique-requests" {
			if len(r.Segments) != 1 {
				t.Fatalf("unique request with %d segments", len(r.Segments))
			}
			if last >= 0 {
				gammaGaps = append(gammaGaps, float64(r.Arrival-last))
			}
			last = r.Arrival
		}
	}
	within(t, "prefix-group-a share", float64(per["prefix-group-a"])/5000, 0.30, 0.07)
	within(t, "prefix-group-b share", float64(per["prefix-group-b"])/5000, 0.30, 0.07)
	within(t, "prefix-group-c share", float64(per["prefix-group-c"])/5000, 0.25, 0.08)
	within(t, "unique share", float64(per["unique-requests"])/5000, 0.15, 0.25)
	if prefixLen["prefix-group-a"] != 512 || prefixLen["prefix-group-b"] != 384 || prefixLen["prefix-group-c"] != 128 {
		t.Fatalf("prefix lengths %v", prefixLen)
	}
	// 5000 requests at 1000 req/s take about 5 s.
	within(t, "duration (s)", float64(reqs[len(reqs)-1].Arrival)/1e6, 5, 0.08)
	if _, cv := meanCV(gammaGaps); cv < 2 {
		t.Errorf("gamma cv=3 client has gap cv %.2f, want clearly bursty (> 2)", cv)
	}
	if tb.SLOClasses[reqs[0].Class] == "" {
		t.Fatal("empty SLO class name")
	}
}

func TestExampleMultiturnChatDemo(t *testing.T) {
	s := loadExample(t, "multiturn-chat-demo.yaml")
	src, err := s.Source(s.Seed)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := src.(Reactive); !ok {
		t.Fatal("a closed-loop multi-turn workload must be Reactive")
	}
	reqs := simulate(t, src, fixedService(20_000), nil)
	if len(reqs) != 500 {
		t.Fatalf("%d requests, want num_requests 500", len(reqs))
	}
	sessions := map[uint64][]served{}
	var order []uint64
	for _, r := range reqs {
		if _, ok := sessions[r.Session]; !ok {
			order = append(order, r.Session)
		}
		sessions[r.Session] = append(sessions[r.Session], r)
	}
	if len(sessions) != 100 {
		t.Fatalf("%d sessions, want 100 × 5 rounds", len(sessions))
	}
	// Sessions start as a Poisson process at aggregate_rate 500/s: 100 starts take ~0.2 s
	// (sd of the 100th arrival time ≈ 0.02 s).
	lastStart := sessions[order[len(order)-1]][0].Arrival
	within(t, "time of the 100th session start (s)", float64(lastStart)/1e6, 0.2, 0.25)
	for _, id := range order {
		rs := sessions[id]
		if len(rs) != 5 {
			t.Fatalf("session %d has %d rounds, want 5", id, len(rs))
		}
		for k := 1; k < len(rs); k++ {
			prev, cur := rs[k-1], rs[k]
			if cur.Round != int32(k) {
				t.Fatalf("session %d round %d labelled %d", id, k, cur.Round)
			}
			if cur.Arrival != prev.finish+500_000 {
				t.Fatalf("round %d arrives at %d, want previous finish %d + 500 ms think time", k, cur.Arrival, prev.finish)
			}
			// Accumulated context: the previous prompt, its answer, then the new message.
			if len(cur.Segments) != len(prev.Segments)+2 {
				t.Fatalf("round %d has %d segments after %d", k, len(cur.Segments), len(prev.Segments))
			}
			for j, sg := range prev.Segments {
				if cur.Segments[j] != sg {
					t.Fatalf("round %d does not repeat round %d's prompt", k, k-1)
				}
			}
			if ans := cur.Segments[len(prev.Segments)]; ans.Length != prev.OutputLen {
				t.Fatalf("round %d carries %d answer tokens, previous output was %d", k, ans.Length, prev.OutputLen)
			}
			if cur.InputLen <= prev.InputLen+prev.OutputLen {
				t.Fatalf("round %d input %d does not grow past %d", k, cur.InputLen, prev.InputLen+prev.OutputLen)
			}
		}
	}
}

func TestExampleRegressionMultiturn(t *testing.T) {
	s := loadExample(t, "regression_workload_multiturn.yaml")
	src, err := s.Source(s.Seed)
	if err != nil {
		t.Fatal(err)
	}
	reqs := simulate(t, src, fixedService(5_000), nil)
	if len(reqs) > 1500 || len(reqs) < 1490 {
		t.Fatalf("%d requests, want num_requests 1500 (the last session may be cut)", len(reqs))
	}
	tb := src.Tables()
	maxRounds := map[string]int32{"heavy-coding-sessions": 5, "chat-sessions": 4, "qa-sessions": 3, "realtime-api": 1}
	prefix := map[string]int32{"heavy-coding-sessions": 4096, "chat-sessions": 2048, "qa-sessions": 1024}
	rounds := map[uint64]int32{}
	starts := map[string]int{}
	for _, r := range reqs {
		name := tb.Clients[r.Client]
		if r.Round >= maxRounds[name] {
			t.Fatalf("%s round %d, max_rounds %d", name, r.Round, maxRounds[name])
		}
		if p := prefix[name]; p > 0 && (r.Segments[0].Length != p || r.Segments[0].Key != PrefixKey(name[:strings.Index(name, "-")]+"-system-prompt")) {
			if r.Segments[0].Length != p {
				t.Fatalf("%s prefix %d, want %d", name, r.Segments[0].Length, p)
			}
		}
		if p := prefix[name]; p == 0 && len(r.Segments) != 1 {
			t.Fatalf("realtime request with %d segments", len(r.Segments))
		}
		rounds[r.Session] = max(rounds[r.Session], r.Round+1)
		if r.Round == 0 {
			starts[name]++
		}
	}
	// Sessions start in proportion to rate_fraction.
	total := 0
	for _, n := range starts {
		total += n
	}
	within(t, "heavy-coding share of session starts", float64(starts["heavy-coding-sessions"])/float64(total), 0.40, 0.1)
	within(t, "realtime share of session starts", float64(starts["realtime-api"])/float64(total), 0.20, 0.15)
}

func TestExamplePrefixAffinityDemo(t *testing.T) {
	s := loadExample(t, "prefix-affinity-demo.yaml")
	src, err := s.Source(s.Seed)
	if err != nil {
		t.Fatal(err)
	}
	reqs := drain(t, src)
	checkWellFormed(t, reqs)
	if len(reqs) != 200 {
		t.Fatalf("%d requests, want 200", len(reqs))
	}
	shared := 0
	for _, r := range reqs {
		if len(r.Segments) == 2 && r.Segments[0].Key == PrefixKey("long-system-prompt") && r.Segments[0].Length == 256 {
			shared++
		}
	}
	within(t, "shared-prefix share", float64(shared)/200, 0.8, 0.1)
}

// Policy bundles are not workloads: strict parsing names the first unknown key.
func TestPolicyFilesAreRejected(t *testing.T) {
	for _, f := range []string{"policy-config.yaml", "weighted-routing.yaml", "epp-estimate-prefix.yaml", "epp-precise-prefix.yaml"} {
		_, err := LoadSpecFile(filepath.Join("testdata", "blis", f))
		if err == nil || !strings.Contains(err.Error(), "unknown key") {
			t.Errorf("%s: want an unknown-key error, got %v", f, err)
		}
	}
}

func TestV1Upgrade(t *testing.T) {
	s, err := ParseSpec([]byte(`
version: "1"
aggregate_rate: 10
num_requests: 10
goodput_slo_targets: {realtime: {ttft: 100}}
clients:
  - id: a
    slo_class: realtime
    rate_fraction: 1
    arrival: {process: poisson}
    input_distribution: {type: constant, params: {value: 10}}
    output_distribution: {type: constant, params: {value: 10}}
  - id: b
    slo_class: interactive
    rate_fraction: 1
    arrival: {process: constant}
    input_distribution: {type: constant, params: {value: 10}}
    output_distribution: {type: constant, params: {value: 10}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if s.GoodputSLOTargets["critical"].TTFT != 100 {
		t.Fatalf("goodput targets not upgraded: %+v", s.GoodputSLOTargets)
	}
	if s.Version != "2" || s.Clients[0].SLOClass != "critical" || s.Clients[1].SLOClass != "standard" {
		t.Fatalf("upgrade gave version %q classes %q %q", s.Version, s.Clients[0].SLOClass, s.Clients[1].SLOClass)
	}
}

const baseClient = `
aggregate_rate: 10
num_requests: 100
clients:
  - id: chat
    rate_fraction: 1
    arrival: {process: poisson}
    input_distribution: {type: gaussian, params: {mean: 100, std_dev: 10, min: 10, max: 200}}
    output_distribution: {type: exponential, params: {mean: 50}}
`

func TestSpecErrorsNameClientAndField(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown client key", strings.Replace(baseClient, "rate_fraction: 1", "rate_fractoin: 1", 1),
			[]string{`clients[0] (id "chat")`, `unknown key "rate_fractoin"`, "line 6", "rate_fraction"}},
		{"unknown nested key", strings.Replace(baseClient, "{process: poisson}", "{process: poisson, cvv: 2}", 1),
			[]string{`clients[0] (id "chat").arrival`, `"cvv"`}},
		{"unknown top key", baseClient + "scenario: x\n", []string{"top level", `"scenario"`}},
		{"unknown process", strings.Replace(baseClient, "process: poisson", "process: lognormal", 1),
			[]string{`client "chat".arrival.process`, "poisson, gamma, weibull, constant, bursty, diurnal, periodic, adversarial"}},
		{"unknown distribution", strings.Replace(baseClient, "type: exponential", "type: zipf", 1),
			[]string{`client "chat".output_distribution.type`, `"zipf"`, "gaussian, exponential, pareto_lognormal, lognormal, constant, empirical"}},
		{"missing param", strings.Replace(baseClient, "std_dev: 10, ", "", 1),
			[]string{`client "chat".input_distribution.params.std_dev`, "required"}},
		{"bad rate fraction", strings.Replace(baseClient, "rate_fraction: 1", "rate_fraction: -1", 1),
			[]string{`client "chat".rate_fraction`}},
		{"bad slo class", strings.Replace(baseClient, "rate_fraction: 1", "rate_fraction: 1\n    slo_class: urgent", 1),
			[]string{`client "chat".slo_class`, "critical, standard, sheddable, batch, background"}},
		{"weibull cv", strings.Replace(baseClient, "{process: poisson}", "{process: weibull, cv: 20}", 1),
			[]string{`client "chat".arrival.cv`}},
		{"max rounds", strings.Replace(baseClient, "rate_fraction: 1", "rate_fraction: 1\n    reasoning: {multi_turn: {max_rounds: 0}}", 1),
			[]string{`client "chat".reasoning.multi_turn.max_rounds`}},
		{"no aggregate", strings.Replace(baseClient, "aggregate_rate: 10", "", 1), []string{"aggregate_rate"}},
		{"bad version", "version: \"3\"\n" + baseClient, []string{"version", `"3"`}},
		{"window order", strings.Replace(baseClient, "rate_fraction: 1", "rate_fraction: 1\n    lifecycle: {windows: [{start_us: 10, end_us: 5}]}", 1),
			[]string{`client "chat".lifecycle.windows[0]`}},
		{"window overlap", strings.Replace(baseClient, "rate_fraction: 1", "rate_fraction: 1\n    lifecycle: {windows: [{start_us: 50, end_us: 60}, {start_us: 0, end_us: 55}]}", 1),
			[]string{`client "chat".lifecycle.windows[0].start_us: overlaps windows[1]`}},
		{"duplicate id", baseClient + `  - id: chat
    rate_fraction: 1
    arrival: {process: poisson}
    input_distribution: {type: constant, params: {value: 1}}
    output_distribution: {type: constant, params: {value: 1}}
`, []string{`client "chat".id`, "duplicate"}},
	}
	for _, tc := range cases {
		_, err := ParseSpec([]byte(tc.yaml))
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", tc.name, err, w)
			}
		}
	}
}

func TestSpecSourceSeedsAndReactivity(t *testing.T) {
	s, err := ParseSpec([]byte(baseClient))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.Source(1)
	b, _ := s.Source(1)
	c, _ := s.Source(2)
	if _, ok := a.(Reactive); ok {
		t.Fatal("an open-loop spec must not ask for completions")
	}
	ra, rb, rc := drain(t, a), drain(t, b), drain(t, c)
	if len(ra) != 100 || ra[7].Arrival != rb[7].Arrival || ra[7].InputLen != rb[7].InputLen {
		t.Fatal("the same seed must give the same requests")
	}
	if ra[7].Arrival == rc[7].Arrival {
		t.Fatal("different seeds gave the same arrivals")
	}
}
