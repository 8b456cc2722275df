package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type fakePrecise struct{ matched []int32 }

func (f fakePrecise) CachedPrefix(i int, r *RequestView) (int32, int32, int32) {
	return f.matched[i], 10, 16
}

func TestBLISPolicyFilesLoadUnchanged(t *testing.T) {
	for _, tc := range []struct {
		file    string
		routing string
		scorers []string
	}{
		{"policy-config.yaml", "round-robin", nil},
		{"weighted-routing.yaml", "weighted", []string{"prefix-cache-scorer(precise)", ScorerQueue, ScorerKVCache}},
		{"epp-estimate-prefix.yaml", "weighted", []string{ScorerPrefixCache, ScorerLoadBalance}},
		{"epp-precise-prefix.yaml", "weighted", []string{ScorerPrefixCache, ScorerKVCache, ScorerQueue}},
	} {
		b, err := Load(filepath.Join("testdata", "blis", tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if err := b.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		p, err := Build(b, BuildEnv{Instances: make([]InstanceInfo, 4), Precise: fakePrecise{matched: []int32{0, 5, 0, 0}}})
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		adm, pri, rt := p.Names()
		if adm != "always-admit" || pri != "constant" || rt != tc.routing || p.Scheduler().Name() != "fcfs" {
			t.Fatalf("%s: policies %s %s %s %s", tc.file, adm, pri, rt, p.Scheduler().Name())
		}
		if got := strings.Join(p.ScorerNames(), ","); got != strings.Join(tc.scorers, ",") {
			t.Fatalf("%s: scorers %s, want %v", tc.file, got, tc.scorers)
		}
		d := p.Route(req(1, 0, 0, 256, 1, 2, 3, 4), idle(4), 0)
		if tc.file == "weighted-routing.yaml" && d.Target != 1 {
			t.Fatalf("precise prefix: instance 1 holds 5 of 10 blocks, routed to %d", d.Target)
		}
	}
}

func TestPreciseScorerNeedsTheCacheView(t *testing.T) {
	b, err := Load(filepath.Join("testdata", "blis", "weighted-routing.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(b, BuildEnv{Instances: make([]InstanceInfo, 2)}); err == nil || !strings.Contains(err.Error(), "BuildEnv.Precise") {
		t.Fatalf("got %v", err)
	}
}

func TestWorkloadFileIsNotAPolicyConfig(t *testing.T) {
	_, err := Load(filepath.Join("testdata", "blis", "prefix-affinity-demo.yaml"))
	if err == nil || !strings.Contains(err.Error(), "field version not found") {
		t.Fatalf("strict loading must reject a workload spec, got %v", err)
	}
}

func TestFromFlagsOverridesTheFile(t *testing.T) {
	s := func(v string) *string { return &v }
	lat := int64(150)
	// The commands in prefix-affinity-demo.yaml.
	b, err := FromFlags(Flags{RoutingPolicy: s("weighted"), RoutingScorers: s("prefix-affinity:5,queue-depth:1")})
	if err != nil {
		t.Fatal(err)
	}
	if b.Routing.Policy != "weighted" || len(b.Routing.Scorers) != 2 || b.Routing.Scorers[0].Weight != 5 {
		t.Fatalf("%+v", b.Routing)
	}
	b, err = FromFlags(Flags{
		PolicyConfig:    filepath.Join("testdata", "blis", "epp-precise-prefix.yaml"),
		AdmissionPolicy: s("token-bucket"), Scheduler: s("priority-fcfs"), PriorityPolicy: s("slo-based"),
		RoutingLatency: &lat, RoutingScorers: s("kv-utilization:1"),
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(b, BuildEnv{Instances: make([]InstanceInfo, 2)})
	if err != nil {
		t.Fatal(err)
	}
	adm, pri, _ := p.Names()
	if adm != "token-bucket" || pri != "slo-based" || p.Scheduler().Name() != "priority-fcfs" ||
		p.RoutingLatency() != 150 || p.AdmissionLatency() != 0 || len(p.ScorerNames()) != 1 {
		t.Fatalf("overrides not applied: %s %s %s %d %v", adm, pri, p.Scheduler().Name(), p.RoutingLatency(), p.ScorerNames())
	}
	for _, bad := range []Flags{
		{RoutingScorers: s("queue-depth")},
		{RoutingScorers: s("queue-depth:x")},
		{RoutingScorers: s("warp:1")},
		{AdmissionPolicy: s("maybe")},
	} {
		if _, err := FromFlags(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestExtendedBundleRoundTrip(t *testing.T) {
	text := `admission:
  policy: tier-shed
  tier_shed_threshold: 4
  latency_us: 20
routing:
  policy: weighted-scoring
  latency_us: 100
  scorers:
    - {name: queue-scorer, weight: 2}
    - {name: load-aware-scorer, weight: 1, params: {threshold: 64}}
    - {name: no-hit-lru-scorer, weight: 1, params: {lruSize: 8}}
  params: {picker: max-score, tie_break: lowest}
priority:
  policy: deadline-aware
  params: {default_target_us: 500000}
scheduler: sjf
scheduler_params: {by: total}
preemption: {policy: priority}
observability:
  kv_utilization: {mode: periodic, interval_us: 50000}
metadata: {generation: 3, parent: gen2-7, mutations: [routing.scorers.0.weight]}
node_pools:
  - {name: h100, gpu_type: H100, gpus_per_node: 8, gpu_memory_gib: 80, initial_nodes: 1, min_nodes: 1, max_nodes: 4, provisioning_delay: {mean: 60, stddev: 5}, cost_per_hour: 30}
autoscaler: {interval_us: 1000000, analyzer: {kv_cache_threshold: 0.8}}
instance_lifecycle: {loading_delay: {mean: 30}, warm_start_initial_instances: true}
`
	dir := t.TempDir()
	path := filepath.Join(dir, "bundle.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(b, BuildEnv{Instances: make([]InstanceInfo, 3)})
	if err != nil {
		t.Fatal(err)
	}
	if p.AdmissionLatency() != 20 || p.RoutingLatency() != 100 || p.Preemption().Name() != "priority" ||
		p.Observability().KVUtilization.IntervalUs != 50000 || p.Observability().RecentTTFT.IntervalUs != 100000 ||
		b.Metadata.Generation != 3 || b.NodePools[0].MaxNodes != 4 {
		t.Fatalf("extended fields lost: %+v", b)
	}
	b.NodePools[0].MinNodes = 5
	if err := b.Validate(); err == nil {
		t.Fatal("inconsistent node pool accepted")
	}
}

func TestEachBuildHasFreshState(t *testing.T) {
	b, _ := Parse([]byte("admission: {policy: token-bucket, params: {capacity: 10, refill_rate: 1}}"))
	env := BuildEnv{Instances: make([]InstanceInfo, 1)}
	for run := 0; run < 2; run++ {
		p, err := Build(b, env)
		if err != nil {
			t.Fatal(err)
		}
		if p.Admit(req(1, 0, 0, 10), idle(1), 0).Action != Admit {
			t.Fatalf("run %d: the bucket must start full", run)
		}
	}
}

// Runs of an in-process executor build pipelines concurrently; the shared CEL environments
// must be safe for that (run with -race).
func TestConcurrentBuilds(t *testing.T) {
	b, err := Parse([]byte("admission: {cel: 'global.saturation < 1.0'}\nrouting: {cel: 'score.queue'}\npriority: {cel: '1.0'}"))
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			p, err := Build(b, BuildEnv{Instances: make([]InstanceInfo, 2)})
			if err == nil {
				p.Route(req(1, 0, 0, 10), idle(2), 0)
			}
			errs <- err
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
