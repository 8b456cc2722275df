package workload

import (
	"strings"
	"testing"
)

func scenarioRequests(t *testing.T, name string) ([]Request, *Tables) {
	t.Helper()
	s, err := Scenario(name)
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

func TestScenarioNamesAndErrors(t *testing.T) {
	want := []string{"bursty-traffic", "diurnal-cycle", "unfair-tenants", "prefix-heavy", "mixed-slo", "agentic-react", "agentic-mcts", "agentic-fork-join"}
	if got := strings.Join(ScenarioNames(), ","); got != strings.Join(want, ",") {
		t.Fatalf("ScenarioNames() = %s", got)
	}
	for _, n := range want {
		if ScenarioDescription(n) == "" {
			t.Errorf("%s has no description", n)
		}
		y, err := ScenarioYAML(n)
		if err != nil || !strings.HasPrefix(y, "version:") {
			t.Errorf("ScenarioYAML(%s) = %q, %v", n, y, err)
		}
	}
	_, err := Scenario("flash-crowd")
	if err == nil || !strings.Contains(err.Error(), strings.Join(want, ", ")) {
		t.Fatalf("unknown scenario error %v does not list the valid names", err)
	}
}

func TestScenarioBurstyTraffic(t *testing.T) {
	reqs, _ := scenarioRequests(t, "bursty-traffic")
	in, out := 0, 0
	for _, r := range reqs {
		if r.Arrival%60_000_000 < 5_000_000 {
			in++
		} else {
			out++
		}
	}
	// 10 minutes: 50 s of spikes at 200 req/s, 550 s at 20 req/s.
	within(t, "requests in spikes", float64(in), 10_000, 0.05)
	within(t, "requests outside spikes", float64(out), 11_000, 0.05)
}

func TestScenarioDiurnalCycle(t *testing.T) {
	reqs, _ := scenarioRequests(t, "diurnal-cycle")
	within(t, "requests per day", float64(len(reqs)), 5*86400, 0.02)
	hour := make([]int, 24)
	for _, r := range reqs {
		hour[r.Arrival/3_600_000_000]++
	}
	// The rate peaks at 14:00 and bottoms out at 02:00 with a 10x ratio.
	peak, trough := hour[13]+hour[14], hour[1]+hour[2]
	if ratio := float64(peak) / float64(trough); ratio < 7 || ratio > 12 {
		t.Fatalf("peak/trough hourly ratio %.1f, want about 10 (hours %v)", ratio, hour)
	}
	for h := range 24 {
		if hour[h] > hour[13]+hour[13]/10 && h != 14 {
			t.Fatalf("hour %d (%d requests) busier than the peak (%d)", h, hour[h], hour[13])
		}
	}
}

func TestScenarioUnfairTenants(t *testing.T) {
	reqs, tb := scenarioRequests(t, "unfair-tenants")
	per := map[string]int{}
	for _, r := range reqs {
		per[tb.Tenants[r.Tenant]+"/"+tb.SLOClasses[r.Class]]++
	}
	within(t, "bulk/batch share", float64(per["bulk/batch"])/float64(len(reqs)), 0.9, 0.02)
	within(t, "realtime/critical share", float64(per["realtime/critical"])/float64(len(reqs)), 0.1, 0.1)
}

func TestScenarioPrefixHeavy(t *testing.T) {
	reqs, _ := scenarioRequests(t, "prefix-heavy")
	shared := 0
	groups := map[uint64]bool{}
	for _, r := range reqs {
		if len(r.Segments) == 2 && r.Segments[0].Length == 1024 {
			shared++
			groups[r.Segments[0].Key] = true
		}
	}
	within(t, "shared-prefix share", float64(shared)/float64(len(reqs)), 0.8, 0.03)
	if len(groups) != 4 {
		t.Fatalf("%d prefix groups, want 4", len(groups))
	}
}

func TestScenarioMixedSLO(t *testing.T) {
	reqs, tb := scenarioRequests(t, "mixed-slo")
	per := map[string]int{}
	for _, r := range reqs {
		per[tb.SLOClasses[r.Class]]++
	}
	for _, c := range []string{"critical", "standard", "batch"} {
		within(t, c+" share", float64(per[c])/float64(len(reqs)), 1.0/3, 0.06)
	}
}
