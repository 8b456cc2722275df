package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"strings"
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
	// (The load-aware run also refreshes the periodic snapshot fields on their grid; that
	// changes nothing.)
	want = reportJSON(t, base, reqs) // Router: LeastLoaded
	ll := parseBundle(t, "routing: {policy: least-loaded, params: {signal: in-flight}}\nobservability: {batch_size: {mode: periodic, interval_us: 7000}}")
	if got := reportJSON(t, withPolicy(base, ll), reqs); !bytes.Equal(got, want) {
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
		// The precise producer reads the instances' real caches.
		"routing: {policy: weighted, scorers: [{name: precise-prefix-cache, weight: 3}, {name: queue-scorer, weight: 2}, {name: kv-cache-utilization-scorer, weight: 2}]}",
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

// reject-all refuses every request: nothing reaches an instance, every request is reported
// rejected (on the gateway collector and to reactive sources) and conserved.
func TestPolicyRejectAll(t *testing.T) {
	reqs := gen(genSpec{n: 200, gapUs: 1000, inMean: 100, outMean: 20, seed: 3})
	cfg := withPolicy(contendedCluster(), parseBundle(t, "admission: {policy: reject-all}"))
	cfg.Options = Options{RequestRecords: true, CheckInvariants: true}
	res, c := clusterOf(t, cfg, &sliceSource{reqs: reqs})
	if res.Rejected != 200 || c.RejectedRequests != 200 || c.CompletedRequests != 0 {
		t.Fatalf("rejected %d (report %d), completed %d", res.Rejected, c.RejectedRequests, c.CompletedRequests)
	}
	for i := range res.Instances {
		if res.Instances[i].Injected != 0 {
			t.Errorf("instance %d got %d requests", i, res.Instances[i].Injected)
		}
	}
	for _, r := range res.Records {
		if r.Outcome != OutcomeRejected || r.Instance != -1 || r.Done != r.Arrival {
			t.Fatalf("record %+v", r)
		}
	}
	src := &reactiveSource{sliceSource: sliceSource{reqs: reqs[:5]}}
	if _, err := Run(withPolicy(contendedCluster(), parseBundle(t, "admission: {policy: reject-all}")), src); err != nil {
		t.Fatal(err)
	}
	if len(src.outcomes) != 5 || src.outcomes[0] != workload.Rejected {
		t.Errorf("reactive source saw %v", src.outcomes)
	}
}

// reactiveSource records the outcomes the simulator reports.
type reactiveSource struct {
	sliceSource
	outcomes []workload.Outcome
}

func (s *reactiveSource) Finished(_ uint64, o workload.Outcome, _ int32, _ int64, _ func(*workload.Request)) {
	s.outcomes = append(s.outcomes, o)
}

// The token bucket bounds the admitted prompt tokens by capacity + refill rate x elapsed time,
// and, offered far more, admits close to that bound.
func TestPolicyTokenBucketLimitsAdmittedRate(t *testing.T) {
	// 100-token prompts at 200 req/s for 2 s: 20,000 tokens/s offered against 4,000 tokens/s.
	reqs := gen(genSpec{n: 400, gapUs: 5000, inMean: 100, outMean: 10, seed: 4})
	b := parseBundle(t, "admission: {policy: token-bucket, token_bucket_capacity: 2000, token_bucket_refill_rate: 4000}")
	res, _ := clusterOf(t, withPolicy(contendedCluster(), b), &sliceSource{reqs: reqs})
	admitted := int64(len(reqs)) - res.Rejected
	elapsed := reqs[len(reqs)-1].Arrival
	bound := (2000 + 4000*elapsed/1_000_000) / 100
	t.Logf("admitted %d of %d, bound %d", admitted, len(reqs), bound)
	if admitted > bound || admitted < bound*9/10 {
		t.Errorf("admitted %d requests, want at most %d and close to it", admitted, bound)
	}
}

// classDelays returns the mean scheduling delay (µs) of completed requests per class index.
func classDelays(res *Result) map[int32]float64 {
	sum, n := map[int32]int64{}, map[int32]int64{}
	for _, r := range res.Records {
		if r.Outcome == OutcomeCompleted {
			sum[r.Class] += r.SchedulingDelay
			n[r.Class]++
		}
	}
	out := map[int32]float64{}
	for k := range sum {
		out[k] = float64(sum[k]) / float64(n[k])
	}
	return out
}

// priority-fcfs with SLO-class priorities serves critical requests before batch ones under
// contention (higher priority = more urgent in the policy package), while fcfs does not
// distinguish them; reverse-priority inverts the order.
func TestPolicyPriorityFCFSServesCriticalFirst(t *testing.T) {
	ic := testInstance(defaultModel())
	ic.MaxNumSeqs = 4
	base := &Config{Instances: []InstanceConfig{ic}, Options: Options{RequestRecords: true}}
	reqs := gen(genSpec{n: 300, gapUs: 15000, poisson: true, inMean: 200, inStd: 50, outMean: 60, outSd: 20, classes: true, seed: 8})
	const standard, critical, batch = 0, 1, 2
	delays := func(yaml string) map[int32]float64 {
		res, _ := clusterOf(t, withPolicy(base, parseBundle(t, yaml)), &sliceSource{reqs: reqs})
		d := classDelays(res)
		t.Logf("%s: mean scheduling delay critical %.0f µs, standard %.0f µs, batch %.0f µs", yaml, d[critical], d[standard], d[batch])
		return d
	}
	fcfs := delays("priority: {policy: slo-based}")
	prio := delays("priority: {policy: slo-based}\nscheduler: priority-fcfs")
	rev := delays("priority: {policy: slo-based}\nscheduler: reverse-priority")
	if !(prio[critical] < prio[standard] && prio[standard] < prio[batch]) || !(prio[batch] > 3*prio[critical]) {
		t.Errorf("priority-fcfs: critical %.0f, standard %.0f, batch %.0f", prio[critical], prio[standard], prio[batch])
	}
	if prio[critical] >= fcfs[critical] {
		t.Errorf("priority-fcfs should serve critical sooner than fcfs: %.0f vs %.0f", prio[critical], fcfs[critical])
	}
	if !(rev[batch] < rev[critical]) {
		t.Errorf("reverse-priority: critical %.0f, batch %.0f", rev[critical], rev[batch])
	}
}

// The priority preemption policy evicts the least urgent running request, by the priority
// stage's score: with SLO-class priorities the standard request, with inverted ones the
// critical request; fcfs evicts the one that joined the batch last.
func TestPolicyPreemptionVictims(t *testing.T) {
	reqs := []workload.Request{
		{ID: 1, Arrival: 0, InputLen: 8, OutputLen: 12, Class: 0},  // standard
		{ID: 2, Arrival: 10, InputLen: 8, OutputLen: 12, Class: 1}, // critical
	}
	ic := testInstance(plainModel())
	ic.TotalKVBlocks, ic.BlockSize = 6, 4
	for _, tc := range []struct {
		yaml       string
		victim, ok int
	}{
		{"priority: {policy: slo-based}\npreemption: {policy: fcfs}", 1, 0},
		{"priority: {policy: slo-based}\npreemption: {policy: priority}", 0, 1},
		{"priority: {policy: inverted-slo}\npreemption: {policy: priority}", 1, 0},
		{"preemption: {policy: priority}", 1, 0}, // equal priorities: the later arrival
	} {
		cfg := &Config{Instances: []InstanceConfig{ic}, Policy: parseBundle(t, tc.yaml), Options: Options{RequestRecords: true, CheckInvariants: true}}
		var preempted []uint64
		s := mustSim(t, cfg, &sliceSource{reqs: reqs})
		rec := &recorder{}
		s.ctl.obs = rec
		if err := s.run(); err != nil {
			t.Fatal(err)
		}
		for _, p := range rec.preemptions {
			preempted = append(preempted, p.id)
		}
		v, o := s.res.Records[tc.victim], s.res.Records[tc.ok]
		if v.Preemptions == 0 || o.Preemptions != 0 || v.Outcome != OutcomeCompleted || o.Outcome != OutcomeCompleted {
			t.Errorf("%q: victim %+v, other %+v", tc.yaml, v, o)
		}
		if len(preempted) != int(v.Preemptions) || preempted[0] != v.ID {
			t.Errorf("%q: observer saw preemptions of %v, victim %d", tc.yaml, preempted, v.ID)
		}
	}
}

// recorder is a decision observer that keeps the decisions it sees.
type recorder struct {
	queueEvents
	admissions  []recordedAdmission
	routings    []recordedRouting
	preemptions []struct {
		now  int64
		inst int32
		id   uint64
	}
}

type recordedAdmission struct {
	now int64
	id  uint64
	d   policy.AdmissionDecision
}

type recordedRouting struct {
	now      int64
	id       uint64
	priority float64
	target   int32
}

func (r *recorder) admission(now int64, req *policy.RequestView, d *policy.AdmissionDecision) {
	r.admissions = append(r.admissions, recordedAdmission{now, req.ID, *d})
}

func (r *recorder) routing(now int64, req *policy.RequestView, pd *policy.PriorityDecision, rd *policy.RoutingDecision, _ []policy.InstanceSnapshot) {
	r.routings = append(r.routings, recordedRouting{now, req.ID, pd.Score, rd.Target})
}

func (r *recorder) preempted(now int64, inst, _ int32, id uint64) {
	r.preemptions = append(r.preemptions, struct {
		now  int64
		inst int32
		id   uint64
	}{now, inst, id})
}

// A CEL expression and the equivalent template give byte-identical simulations: llm-d's
// default scoring profile as weighted scoring and as one expression over score.*, and
// SLO-class priorities as the slo-based template and as a conditional expression.
func TestPolicyCELMatchesTemplate(t *testing.T) {
	reqs := func() workload.Source { return prefixHeavy(t) }
	run := func(yaml string) []byte {
		cfg := withPolicy(prefixCluster(t), parseBundle(t, yaml))
		cfg.Options.RequestRecords = true
		src := reqs()
		res, err := Run(cfg, src)
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal([]any{res.Report(src.Tables(), metrics.Options{}), res.Records, res.Instances, res.End, res.Events})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	tmpl := run("routing: {policy: weighted, scorers: [{name: queue-scorer, weight: 2}, {name: kv-cache-utilization-scorer, weight: 2}, {name: prefix-cache-scorer, weight: 3}]}")
	cel := run(`routing: {cel: "2.0 * score.queue + 2.0 * score.kvCacheUtilization + 3.0 * score.prefixCache"}`)
	if !bytes.Equal(tmpl, cel) {
		t.Error("weighted scoring and its CEL expression give different simulations")
	}
	if bytes.Equal(tmpl, run("routing: {policy: round-robin}")) {
		t.Fatal("routing policy has no effect on this workload")
	}

	gen := gen(genSpec{n: 300, gapUs: 15000, poisson: true, inMean: 200, inStd: 50, outMean: 60, outSd: 20, classes: true, seed: 8})
	ic := testInstance(defaultModel())
	ic.MaxNumSeqs = 4
	base := &Config{Instances: []InstanceConfig{ic, ic}, Options: Options{RequestRecords: true}}
	a := outputJSON(t, withPolicy(base, parseBundle(t, "priority: {policy: slo-based}\nscheduler: priority-fcfs")), gen)
	b := outputJSON(t, withPolicy(base, parseBundle(t, `priority: {cel: "request.sloClass == 'critical' ? 4.0 : (request.sloClass == 'batch' ? -1.0 : 3.0)"}`+"\nscheduler: priority-fcfs")), gen)
	if !bytes.Equal(a, b) {
		t.Error("slo-based priority and its CEL expression give different simulations")
	}
}

// Decision latencies delay every request's trip to its instance by exactly admission +
// routing latency: on an uncontended cluster TTFT and E2E shift by that amount, and the
// decisions happen at arrival + admission latency (+ routing latency).
func TestPolicyDecisionLatenciesShiftTTFT(t *testing.T) {
	reqs := gen(genSpec{n: 50, gapUs: 500_000, inMean: 300, inStd: 100, outMean: 40, outSd: 10, seed: 9})
	base := &Config{Instances: []InstanceConfig{testInstance(defaultModel()), testInstance(defaultModel())}, Options: Options{RequestRecords: true}}
	zero, _ := clusterOf(t, withPolicy(base, &policy.Bundle{}), &sliceSource{reqs: reqs})
	for _, tc := range []struct {
		yaml             string
		cfgAdm, cfgRoute int64
		adm, route       int64
	}{
		{"admission: {latency_us: 300}\nrouting: {latency_us: 700}", 0, 0, 300, 700},
		{"routing: {policy: least-loaded}", 250, 1250, 250, 1250},                      // the cluster's latencies
		{"admission: {latency_us: 40}\nrouting: {latency_us: 90}", 5000, 5000, 40, 90}, // the bundle's win
	} {
		cfg := withPolicy(base, parseBundle(t, tc.yaml))
		cfg.AdmissionLatency, cfg.RoutingLatency = tc.cfgAdm, tc.cfgRoute
		s := mustSim(t, cfg, &sliceSource{reqs: reqs})
		rec := &recorder{}
		s.ctl.obs = rec
		if err := s.run(); err != nil {
			t.Fatal(err)
		}
		shift := tc.adm + tc.route
		for i, r := range s.res.Records {
			z := zero.Records[i]
			if r.TTFT != z.TTFT+shift || r.E2E != z.E2E+shift || r.Outcome != OutcomeCompleted {
				t.Fatalf("%q: request %d TTFT %d E2E %d, without latencies %d %d (want +%d)", tc.yaml, r.ID, r.TTFT, r.E2E, z.TTFT, z.E2E, shift)
			}
			if a, ro := rec.admissions[i], rec.routings[i]; a.id != r.ID || a.now != r.Arrival+tc.adm || ro.now != r.Arrival+shift {
				t.Fatalf("%q: request %d decided at %d and %d, arrival %d", tc.yaml, r.ID, a.now, ro.now, r.Arrival)
			}
		}
	}
}

// richBundle exercises every stage: delaying admission, SLO priorities, weighted scoring with
// the prefix index and a randomized picker, priority scheduling and preemption, and stale KV
// utilization.
const richBundle = `
admission: {policy: rate-limit, params: {rate: 500, window_us: 100000, delay_us: 3000, max_attempts: 4}}
priority: {policy: slo-based}
routing:
  policy: weighted
  scorers:
    - {name: prefix-cache-scorer, weight: 3}
    - {name: queue-scorer, weight: 2}
    - {name: kv-cache-utilization-scorer, weight: 2}
    - {name: load-aware-scorer, weight: 1}
  params: {picker: weighted-random}
scheduler: priority-fcfs
preemption: {policy: priority}
observability: {kv_utilization: {mode: periodic, interval_us: 20000}}
`

// BC-9 / BC-11 with non-default policies: every invariant holds after every event and repeated
// runs (on one or two OS threads) give byte-identical output.
func TestPolicyDeterminismAndInvariants(t *testing.T) {
	reqs := determinismWorkload()
	cfg := withPolicy(determinismConfig(), parseBundle(t, richBundle))
	cfg.Options.CheckInvariants = true
	first := reportJSON(t, cfg, reqs)
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	for i := 1; i < 4; i++ {
		runtime.GOMAXPROCS(1 + i%2)
		if got := reportJSON(t, cfg, reqs); !bytes.Equal(got, first) {
			t.Fatalf("run %d differs from run 0", i)
		}
	}
	res, err := Run(cfg, &sliceSource{reqs: reqs})
	if err != nil {
		t.Fatal(err)
	}
	var pre, timedOut int64
	for _, st := range res.Instances {
		pre += st.Preemptions
		timedOut += st.TimedOut
	}
	if pre == 0 || timedOut == 0 || res.Policy.Delayed == 0 || res.Rejected == 0 {
		t.Errorf("workload too easy: preemptions %d, timeouts %d, delayed %d, rejected %d", pre, timedOut, res.Policy.Delayed, res.Rejected)
	}
}

// policyCases are bundles for the randomized invariant test.
var policyCases = []string{
	"",
	richBundle,
	"routing: {policy: prefix-affinity}\nscheduler: sjf\npreemption: {policy: priority}",
	"admission: {policy: token-bucket, token_bucket_capacity: 3000, token_bucket_refill_rate: 20000}\nrouting: {policy: least-loaded}",
	"priority: {policy: deadline-aware}\nscheduler: priority-fcfs\nrouting: {policy: weighted, scorers: [{name: precise-prefix-cache, weight: 2}, {name: active-request-scorer, weight: 1}, {name: token-load-scorer, weight: 1}]}",
	"admission: {cel: \"global.inFlight < 40 ? 'admit' : 'delay'\", params: {delay_us: 700}}\nrouting: {cel: \"1.0 - instance.kvUtilization + score.activeRequest\"}\nobservability: {queue_depth: {mode: periodic, interval_us: 3000}}",
	"admission: {policy: gaie-legacy, latency_us: 200}\npriority: {policy: inverted-slo}\nscheduler: reverse-priority\npreemption: {policy: priority}\nrouting: {policy: always-busiest, params: {signal: kv-utilization}, latency_us: 150}",
	"routing: {policy: weighted, scorers: [{name: no-hit-lru-scorer, weight: 1}, {name: running-requests-size-scorer, weight: 1}, {name: load-balance, weight: 1}]}\nobservability: {batch_size: {mode: on-demand}, recent_ttft: {mode: immediate}}",
}

// Every bundle of the randomized test is valid (a typo would silently test the defaults).
func TestPolicyCasesValidate(t *testing.T) {
	for _, c := range policyCases {
		if err := parseBundle(t, c).Validate(); err != nil {
			t.Errorf("%q: %v", c, err)
		}
	}
}

// A request whose admission keeps being delayed times out at the gateway at its deadline, and
// one without a deadline is rejected when its admission answers DELAY more than
// maxAdmissionDelays times; both are conserved.
func TestPolicyAdmissionDelays(t *testing.T) {
	b := parseBundle(t, `admission: {cel: "'delay'", params: {delay_us: 1000}}`)
	reqs := []workload.Request{
		{ID: 1, Arrival: 100, InputLen: 50, OutputLen: 5, Timeout: 5500},
		{ID: 2, Arrival: 200, InputLen: 50, OutputLen: 5, Timeout: workload.NoTimeout},
	}
	cfg := withPolicy(contendedCluster(), b)
	cfg.Options = Options{RequestRecords: true, CheckInvariants: true}
	res, c := clusterOf(t, cfg, &sliceSource{reqs: reqs})
	a, r := res.Records[0], res.Records[1]
	if a.Outcome != OutcomeTimedOut || a.Done != 5600 || a.Instance != -1 || res.GatewayTimedOut != 1 {
		t.Errorf("delayed past its deadline: %+v (gateway timeouts %d)", a, res.GatewayTimedOut)
	}
	if r.Outcome != OutcomeRejected || r.Done != 200+maxAdmissionDelays*1000 || res.Rejected != 1 {
		t.Errorf("delayed forever: %+v (rejected %d)", r, res.Rejected)
	}
	if c.TimedOutRequests != 1 || c.RejectedRequests != 1 || res.Policy.Delayed != 6+maxAdmissionDelays+1 {
		t.Errorf("cluster: timed out %d, rejected %d, delays %d", c.TimedOutRequests, c.RejectedRequests, res.Policy.Delayed)
	}
}

// The periodic snapshot refresh runs on its grid only while there is something to observe:
// across a long idle gap it jumps to the last grid point before the next event, and it never
// extends the run.
func TestPolicySnapshotTicksSkipIdleTime(t *testing.T) {
	reqs := []workload.Request{
		{ID: 1, Arrival: 0, InputLen: 100, OutputLen: 10},
		{ID: 2, Arrival: 60_000_000, InputLen: 100, OutputLen: 10},
	}
	b := parseBundle(t, "routing: {policy: least-loaded}\nobservability: {queue_depth: {mode: periodic, interval_us: 1000}}")
	var ticks int
	var lastTick int64
	s := mustSim(t, withPolicy(contendedCluster(), b), &sliceSource{reqs: reqs})
	if s.ctl.tick != 1000 {
		t.Fatalf("grid %d, want the queue depth's 1 ms (templates read no latency statistics)", s.ctl.tick)
	}
	s.observe = func(ev event) {
		if ev.kind() == evSnapshotTick {
			if ev.time%1000 != 0 {
				t.Errorf("tick off the grid at %d", ev.time)
			}
			ticks++
			lastTick = ev.time
		}
	}
	if err := s.run(); err != nil {
		t.Fatal(err)
	}
	if ticks == 0 || ticks > 400 {
		t.Errorf("%d ticks for two short requests a minute apart", ticks)
	}
	last := max(s.insts[0].stats.LastEvent, s.insts[1].stats.LastEvent)
	if lastTick > s.res.End || s.res.End != last || last < 60_000_000 {
		t.Errorf("last tick %d, end %d, last instance event %d", lastTick, s.res.End, last)
	}
}

// Runs of one Config with a bundle share nothing mutable: concurrent runs give the bytes of a
// run alone (each run builds its own policies from the read-only bundle).
func TestPolicyConcurrentRunsAreIndependent(t *testing.T) {
	reqs := determinismWorkload()
	cfg := withPolicy(determinismConfig(), parseBundle(t, richBundle))
	want := reportJSON(t, cfg, reqs)
	const n = 3
	got := make([][]byte, n)
	done := make(chan struct{})
	for i := range n {
		go func() {
			defer func() { done <- struct{}{} }()
			src := &sliceSource{reqs: reqs}
			res, err := Run(cfg, src)
			if err != nil {
				t.Error(err)
				return
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			for _, v := range []any{res.Report(src.Tables(), metrics.Options{}), res.Records, res.Instances, res.End, res.Events} {
				if err := enc.Encode(v); err != nil {
					t.Error(err)
				}
			}
			got[i] = buf.Bytes()
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

// The router's in-flight token load of a streaming request is released at its first output
// token, of any other request when it finishes (llm-d's in-flight load producer).
func TestPolicyStreamingReleasesTokensAtFirstToken(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		reqs := []workload.Request{{ID: 1, Arrival: 0, InputLen: 300, OutputLen: 50}}
		s := mustSim(t, withPolicy(contendedCluster(), &policy.Bundle{}), &sliceSource{reqs: reqs})
		var sawFirst, sawRunning bool
		s.observe = func(ev event) {
			load := s.ctl.p.State().Loads[0].InFlightTokens
			switch {
			case ev.kind() == evClusterArrival:
				// The workload does not mark requests as streaming yet: set it as a source would.
				s.ctl.st[ev.req].view.Streaming = streaming
				s.ctl.streaming = streaming
			case ev.kind() == evStep && len(s.insts[0].running) == 1:
				r := &s.slab.reqs[s.insts[0].running[0].slot]
				sawRunning = true
				if want := int64(300); r.ttftSet && streaming {
					sawFirst = true
					want = 0
					if load != want {
						t.Errorf("streaming: %d tokens charged after the first token", load)
					}
				} else if load != want {
					t.Errorf("streaming %v: %d tokens charged before the end, want %d", streaming, load, want)
				}
			}
		}
		if err := s.run(); err != nil {
			t.Fatal(err)
		}
		if !sawRunning || sawFirst != streaming || s.ctl.p.State().Loads[0].InFlightTokens != 0 || s.ctl.p.State().Loads[0].ActiveRequests != 0 {
			t.Errorf("streaming %v: running %v first %v, load at the end %+v", streaming, sawRunning, sawFirst, s.ctl.p.State().Loads[0])
		}
	}
}

// Configuration errors around the bundle are reported before a run: a bundle with a router
// or with per-instance preemption, and an invalid bundle (with its stage and policy named).
func TestPolicyConfigErrors(t *testing.T) {
	reqs := &sliceSource{reqs: []workload.Request{{InputLen: 5, OutputLen: 1}}}
	cfg := withPolicy(contendedCluster(), &policy.Bundle{})
	cfg.Router = LeastLoaded
	if _, err := Run(cfg, reqs); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("bundle and router: %v", err)
	}
	cfg = withPolicy(contendedCluster(), &policy.Bundle{})
	cfg.Instances[2].Preemption = PreemptPriority
	if _, err := Run(cfg, reqs); err == nil || !strings.Contains(err.Error(), "instance 2") {
		t.Errorf("bundle and instance preemption: %v", err)
	}
	cfg = withPolicy(contendedCluster(), parseBundle(t, `routing: {cel: "instance.nope"}`))
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "routing policy") {
		t.Errorf("Validate: %v", err)
	}
	if _, err := Run(cfg, reqs); err == nil || !strings.Contains(err.Error(), "routing policy") {
		t.Errorf("Run: %v", err)
	}
}

// The templates the simulator treats as snapshot-free really ignore snapshots: forcing fresh
// snapshots on every stage changes nothing.
func TestPolicySnapshotFreeTemplatesIgnoreSnapshots(t *testing.T) {
	reqs := determinismWorkload()
	var adm, prio []string
	for n := range snapshotFreeAdmission {
		adm = append(adm, n)
	}
	for n := range snapshotFreePriority {
		prio = append(prio, n)
	}
	sort.Strings(adm)
	sort.Strings(prio)
	for i := range max(len(adm), len(prio)) {
		yaml := fmt.Sprintf("admission: {policy: %s}\npriority: {policy: %s}\nscheduler: priority-fcfs\nrouting: {policy: round-robin}",
			adm[i%len(adm)], prio[i%len(prio)])
		cfg := withPolicy(determinismConfig(), parseBundle(t, yaml))
		run := func(force bool) []byte {
			src := &sliceSource{reqs: reqs}
			s := mustSim(t, cfg, src)
			if s.ctl.admitSnaps || s.ctl.prioSnaps || s.ctl.routeSnaps {
				t.Fatalf("%s: snapshots read", yaml)
			}
			if force {
				s.ctl.admitSnaps, s.ctl.prioSnaps, s.ctl.routeSnaps = true, true, true
			}
			if err := s.run(); err != nil {
				t.Fatal(err)
			}
			data, err := json.Marshal([]any{s.res.Report(src.Tables(), metrics.Options{}), s.res.Records})
			if err != nil {
				t.Fatal(err)
			}
			return data
		}
		if !bytes.Equal(run(false), run(true)) {
			t.Errorf("%s: fresh snapshots change the run", yaml)
		}
	}
}

// queueEvents ignores the queue, batch and completion hooks.
type queueEvents struct{}

func (queueEvents) queued(_, _ int32)                  {}
func (queueEvents) leftQueue(_, _ int32)               {}
func (queueEvents) scheduled(_, _, _ int32)            {}
func (queueEvents) holBlocked(_, _ int32, _ int32)     {}
func (queueEvents) batch(_ *instance, _ int64, _ bool) {}
func (queueEvents) finished(_ int32, _ *RequestRecord) {}
