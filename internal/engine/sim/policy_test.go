package sim

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/metrics"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// parseBundle decodes a policy-config YAML for a test.
func parseBundle(t testing.TB, yaml string) *policy.Bundle {
	t.Helper()
	b, err := policy.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withPolicy returns a copy of cfg with the bundle set (and the lower-level router and
// per-instance preemption cleared).
func withPolicy(cfg *Config, b *policy.Bundle) *Config {
	c := *cfg
	c.Policy, c.Router = b, nil
	c.Instances = append([]InstanceConfig(nil), cfg.Instances...)
	for i := range c.Instances {
		c.Instances[i].Preemption = ""
	}
	return &c
}

// clusterOf runs cfg on src and returns the result and the cluster block of its report.
func clusterOf(t testing.TB, cfg *Config, src workload.Source) (*Result, metrics.Output) {
	t.Helper()
	res, err := Run(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	return res, res.Report(src.Tables(), metrics.Options{}).Cluster
}

// outputJSON renders a run's report, records and counters, but not its event count.
func outputJSON(t *testing.T, cfg *Config, reqs []workload.Request) []byte {
	t.Helper()
	src := &sliceSource{reqs: reqs}
	res, err := Run(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal([]any{res.Report(src.Tables(), metrics.Options{}), res.Records, res.Instances, res.End})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// contendedCluster is four identical small instances that queue under the workload of
// contendedWorkload.
func contendedCluster() *Config {
	m := defaultModel()
	c := &Config{Seed: 11}
	for range 4 {
		ic := testInstance(m)
		ic.MaxNumSeqs = 8
		c.Instances = append(c.Instances, ic)
	}
	return c
}

func contendedWorkload() []workload.Request {
	return gen(genSpec{n: 1500, gapUs: 18000, poisson: true, inMean: 400, inStd: 200, outMean: 80, outSd: 40, classes: true, seed: 5})
}

// An empty bundle is BLIS's defaults: the pipeline path gives byte-identical output to the
// nil-policy fast path, and the least-loaded template on in-flight requests routes exactly as
// the built-in least-loaded router (the snapshot's in-flight count is the same signal).
func TestPolicyDefaultsMatchFastPath(t *testing.T) {
	reqs := determinismWorkload()
	base := determinismConfig()
	for i := range base.Instances {
		base.Instances[i].Preemption = ""
	}
	rr := *base
	rr.Router = nil
	want := reportJSON(t, &rr, reqs)
	if got := reportJSON(t, withPolicy(&rr, &policy.Bundle{}), reqs); !bytes.Equal(got, want) {
		t.Error("an empty bundle differs from the nil-policy run")
	}
	// (The load-aware run also refreshes the periodic snapshot fields on their grid: more
	// events, same results.)
	want = outputJSON(t, base, reqs) // Router: LeastLoaded
	ll := parseBundle(t, "routing: {policy: least-loaded, params: {signal: in-flight}}")
	if got := outputJSON(t, withPolicy(base, ll), reqs); !bytes.Equal(got, want) {
		t.Error("least-loaded on in-flight requests differs from the built-in least-loaded router")
	}
}

// Under contention, routing to the least-loaded instance beats routing to the busiest one on
// p99 TTFT (by a wide margin: always-busiest piles requests on one replica).
func TestPolicyLeastLoadedBeatsAlwaysBusiest(t *testing.T) {
	reqs := contendedWorkload()
	p99 := func(yaml string) float64 {
		_, c := clusterOf(t, withPolicy(contendedCluster(), parseBundle(t, yaml)), &sliceSource{reqs: reqs})
		if c.CompletedRequests == 0 {
			t.Fatalf("%s: nothing completed", yaml)
		}
		return c.TTFTP99Ms
	}
	least, busiest := p99("routing: {policy: least-loaded}"), p99("routing: {policy: always-busiest}")
	t.Logf("p99 TTFT: least-loaded %.1f ms, always-busiest %.1f ms", least, busiest)
	if !(least*2 < busiest) {
		t.Errorf("least-loaded p99 TTFT %.1f ms should be far below always-busiest %.1f ms", least, busiest)
	}
}

// prefixHeavy is the prefix-heavy scenario (four 1024-token system prompts shared by 80 % of
// the requests) at a rate that loads four instances whose caches cannot keep every prompt.
func prefixHeavy(t testing.TB) workload.Source {
	t.Helper()
	spec, err := workload.Scenario("prefix-heavy")
	if err != nil {
		t.Fatal(err)
	}
	spec.NumRequests, spec.AggregateRate = 3000, 20
	src, err := spec.Source(42)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func prefixCluster(t testing.TB) *Config {
	ic := benchInstance(t)
	ic.TotalKVBlocks, ic.MaxModelLen = 400, 6400
	c := &Config{Seed: 42}
	for range 4 {
		c.Instances = append(c.Instances, ic)
	}
	return c
}

// Prefix-aware routing (the prefix-affinity template, and weighted scoring with llm-d's
// prefix-cache-scorer) beats round-robin on cache hit rate and TTFT for a shared-prefix
// workload.
func TestPolicyPrefixAffinityBeatsRoundRobin(t *testing.T) {
	run := func(yaml string) metrics.Output {
		_, c := clusterOf(t, withPolicy(prefixCluster(t), parseBundle(t, yaml)), prefixHeavy(t))
		if c.CacheHitRate == nil {
			t.Fatalf("%s: no cache lookups", yaml)
		}
		t.Logf("%-90s hit rate %.3f  TTFT mean %.1f ms p99 %.1f ms", yaml, *c.CacheHitRate, c.TTFTMeanMs, c.TTFTP99Ms)
		return c
	}
	rr := run("routing: {policy: round-robin}")
	for _, yaml := range []string{
		"routing: {policy: prefix-affinity}",
		"routing: {policy: weighted, scorers: [{name: prefix-cache-scorer, weight: 3}, {name: queue-scorer, weight: 2}, {name: kv-cache-utilization-scorer, weight: 2}]}",
	} {
		c := run(yaml)
		if *c.CacheHitRate <= *rr.CacheHitRate+0.05 {
			t.Errorf("%s: hit rate %.3f, round-robin %.3f", yaml, *c.CacheHitRate, *rr.CacheHitRate)
		}
		if c.TTFTMeanMs >= rr.TTFTMeanMs {
			t.Errorf("%s: mean TTFT %.1f ms, round-robin %.1f ms", yaml, c.TTFTMeanMs, rr.TTFTMeanMs)
		}
	}
}

// Stale snapshots measurably degrade load-aware routing: with the queue depth scraped every
// 200 ms instead of read at every decision, least-loaded on queue depth herds requests onto
// the instance that looked idle at the last scrape.
func TestPolicyStaleSnapshotsDegradeLoadAwareRouting(t *testing.T) {
	reqs := contendedWorkload()
	const routing = "routing: {policy: least-loaded, params: {signal: queue-depth}}\n"
	_, fresh := clusterOf(t, withPolicy(contendedCluster(), parseBundle(t, routing)), &sliceSource{reqs: reqs})
	_, stale := clusterOf(t, withPolicy(contendedCluster(), parseBundle(t, routing+
		"observability: {queue_depth: {mode: periodic, interval_us: 200000}}")), &sliceSource{reqs: reqs})
	t.Logf("p99 TTFT: immediate %.1f ms, periodic 200 ms %.1f ms; mean %.1f vs %.1f", fresh.TTFTP99Ms, stale.TTFTP99Ms, fresh.TTFTMeanMs, stale.TTFTMeanMs)
	if !(stale.TTFTP99Ms > 1.5*fresh.TTFTP99Ms) || !(stale.TTFTMeanMs > fresh.TTFTMeanMs) {
		t.Errorf("stale queue depth should degrade TTFT: immediate p99 %.1f mean %.1f, stale p99 %.1f mean %.1f",
			fresh.TTFTP99Ms, fresh.TTFTMeanMs, stale.TTFTP99Ms, stale.TTFTMeanMs)
	}
}
