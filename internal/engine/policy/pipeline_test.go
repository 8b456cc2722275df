package policy

import (
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/rng"
)

var (
	testTenants = []string{"", "tenant-A", "tenant-B"}
	testClasses = []string{"standard", "critical", "batch", "sheddable"}
)

func build(t *testing.T, text string, n int) *Pipeline {
	t.Helper()
	b, err := Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	inst := make([]InstanceInfo, n)
	for i := range inst {
		inst[i] = InstanceInfo{TotalKVBlocks: 1000, BlockSize: 16}
	}
	p, err := Build(b, BuildEnv{Instances: inst, TenantNames: testTenants, ClassNames: testClasses, RNG: rng.Derive(7, rng.Router)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func req(id uint64, tenant, class int32, in int32, hashes ...uint64) *RequestView {
	return &RequestView{ID: id, Arrival: int64(id), InputTokens: in, MaxTokens: 64, Tenant: tenant, Class: class,
		TenantName: testTenants[tenant], ClassName: testClasses[class], PrefixHashes: hashes}
}

func idle(n int) []InstanceSnapshot {
	s := make([]InstanceSnapshot, n)
	for i := range s {
		s[i].Index = int32(i)
	}
	return s
}

// Scenario: Route to replica with cached prefix (seed 000 §10).
func TestBDDRouteToReplicaWithCachedPrefix(t *testing.T) {
	for _, policy := range []string{
		"routing: {policy: prefix-affinity}",
		"routing: {policy: weighted, scorers: [{name: prefix-affinity, weight: 5}, {name: queue-depth, weight: 1}]}",
	} {
		p := build(t, policy, 2)
		snaps := idle(2)
		prefix := []uint64{0xABC123, 0xABC124, 0xABC125}
		// Given replica 0 has prefix 0xABC123 in its (router-estimated) KV cache.
		warm := req(1, 1, 0, 256, prefix...)
		d := p.Route(warm, snaps, 0)
		if d.Target != 0 {
			// Force the warm-up onto replica 0 when the tie-break chose 1.
			p = build(t, policy, 2)
			p.State().Prefix.Add(0, prefix)
		}
		if !p.State().Prefix.Holds(0, 0xABC123) || p.State().Prefix.Holds(1, 0xABC123) {
			t.Fatalf("%s: setup failed", policy)
		}
		// When a request with prefix 0xABC123 arrives, then replica 0 is selected.
		for id := uint64(2); id < 6; id++ {
			if got := p.Route(req(id, 1, 0, 256, prefix...), snaps, int64(id)).Target; got != 0 {
				t.Fatalf("%s: request %d routed to %d, want 0", policy, id, got)
			}
		}
	}
}

// Scenario: Realtime requests scheduled before batch (seed 000 §10).
func TestBDDRealtimeBeforeBatch(t *testing.T) {
	p := build(t, "priority: {policy: slo-based}\nscheduler: priority-fcfs", 1)
	batch := req(100, 0, 2, 10)
	realtime := req(101, 0, 1, 10)
	pb := p.Prioritize(batch, idle(1), 100).Score
	pr := p.Prioritize(realtime, idle(1), 101).Score
	a := SchedKey{Priority: pb, Arrival: 100, ID: 100}
	b := SchedKey{Priority: pr, Arrival: 101, ID: 101}
	if !p.Scheduler().Before(&b, &a) || p.Scheduler().Before(&a, &b) {
		t.Fatalf("realtime (score %v) must be scheduled before batch (score %v)", pr, pb)
	}
	fcfs := build(t, "priority: {policy: slo-based}\nscheduler: fcfs", 1)
	if !fcfs.Scheduler().Before(&a, &b) {
		t.Fatal("fcfs must keep arrival order")
	}
}

func TestRoundRobinAndLeastLoaded(t *testing.T) {
	p := build(t, "routing: {policy: round-robin}", 3)
	for i := 0; i < 6; i++ {
		if got := p.Route(req(uint64(i), 0, 0, 10), idle(3), 0).Target; got != int32(i%3) {
			t.Fatalf("round-robin step %d: %d", i, got)
		}
	}
	snaps := idle(3)
	snaps[0].QueueDepth, snaps[1].QueueDepth, snaps[2].QueueDepth = 4, 1, 1
	if got := build(t, "routing: {policy: least-loaded}", 3).Route(req(1, 0, 0, 10), snaps, 0).Target; got != 1 {
		t.Fatalf("least-loaded tie must go to the lowest index, got %d", got)
	}
	if got := build(t, "routing: {policy: always-busiest}", 3).Route(req(1, 0, 0, 10), snaps, 0).Target; got != 0 {
		t.Fatalf("always-busiest: got %d", got)
	}
	snaps[1].InFlightRequests = 9
	if got := build(t, "routing: {policy: least-loaded, params: {signal: queue-depth}}", 3).Route(req(1, 0, 0, 10), snaps, 0).Target; got != 1 {
		t.Fatalf("queue-depth signal ignores in-flight: got %d", got)
	}
}

func TestWeightedScoringCombinesWeightsAndReportsCandidates(t *testing.T) {
	p := build(t, `routing:
  policy: weighted-scoring
  scorers: [{name: kv-cache-utilization-scorer, weight: 2}, {name: queue-scorer, weight: 1}]`, 3)
	snaps := idle(3)
	snaps[0].KVUtilization, snaps[0].QueueDepth = 0.5, 0
	snaps[1].KVUtilization, snaps[1].QueueDepth = 0.1, 10
	snaps[2].KVUtilization, snaps[2].QueueDepth = 0.3, 5
	d := p.Route(req(1, 0, 0, 10), snaps, 0)
	// 0: 2·0.5 + 1 = 2; 1: 2·0.9 + 0 = 1.8; 2: 2·0.7 + 0.5 = 1.9.
	approx(t, "scores", d.Scores, []float64{2, 1.8, 1.9})
	if d.Target != 0 || len(d.Candidates) != 3 || d.Candidates[0].Instance != 0 || d.Candidates[1].Instance != 2 {
		t.Fatalf("decision %+v", d)
	}
	approx(t, "breakdown", d.Candidates[1].Breakdown, []float64{0.7, 0.5})
	if names := p.ScorerNames(); names[0] != ScorerKVCache || names[1] != ScorerQueue {
		t.Fatalf("names %v", names)
	}
}

func TestMaxScoreTieBreakIsSeededAndLowestOnRequest(t *testing.T) {
	text := "routing: {policy: weighted, scorers: [{name: queue-depth, weight: 1}]}"
	a, b := build(t, text, 4), build(t, text, 4)
	seen := map[int32]bool{}
	for i := 0; i < 40; i++ {
		x := a.Route(req(uint64(i), 0, 0, 10), idle(4), 0).Target
		y := b.Route(req(uint64(i), 0, 0, 10), idle(4), 0).Target
		if x != y {
			t.Fatal("same seed must give the same tie-breaks")
		}
		seen[x] = true
	}
	if len(seen) < 2 {
		t.Fatal("random tie-break never varied")
	}
	low := build(t, "routing: {policy: weighted, scorers: [{name: queue-depth, weight: 1}], params: {tie_break: lowest}}", 4)
	for i := 0; i < 10; i++ {
		if low.Route(req(uint64(i), 0, 0, 10), idle(4), 0).Target != 0 {
			t.Fatal("lowest tie-break must pick instance 0")
		}
	}
}

func TestWeightedRandomPickerFollowsScores(t *testing.T) {
	p := build(t, `routing:
  policy: weighted
  scorers: [{name: kv-utilization, weight: 1}]
  params: {picker: weighted-random-picker}`, 2)
	snaps := idle(2)
	snaps[0].KVUtilization = 1 // score 0: never picked while the other scores > 0
	for i := 0; i < 50; i++ {
		if p.Route(req(uint64(i), 0, 0, 10), snaps, 0).Target != 1 {
			t.Fatal("a zero score was sampled")
		}
	}
}

func TestRouteChargesAndFinishedReleasesRouterLoad(t *testing.T) {
	p := build(t, "routing: {policy: weighted, scorers: [{name: token-load-scorer, weight: 1}, {name: active-request-scorer, weight: 1}]}", 2)
	st := p.State()
	if p.PrefixBlockSize() != 64 {
		t.Fatalf("hashing block size %d, want llm-d's floor 64", p.PrefixBlockSize())
	}
	r := req(1, 1, 0, 300, 1, 2, 3, 4)
	d := p.Route(r, idle(2), 10)
	i := d.Ticket.Instance
	if st.Loads[i].ActiveRequests != 1 || st.Loads[i].InFlightTokens != 300 || st.Global.InFlight != 1 || st.Tenant(1).ActiveRequests != 1 {
		t.Fatalf("charge missing: %+v %+v", st.Loads[i], st.Global)
	}
	// A second identical prompt on the same instance is charged only its uncached tail.
	p2 := p.Route(req(2, 1, 0, 300, 1, 2, 3, 4), idle(2), 11)
	if p2.Ticket.Instance == i && p2.Ticket.Tokens != 300-4*64 {
		t.Fatalf("uncached tokens %d, want %d", p2.Ticket.Tokens, 300-4*64)
	}
	p.FirstToken(&d.Ticket)
	p.FirstToken(&d.Ticket)
	if st.Loads[i].ActiveRequests == 0 {
		t.Fatal("first token must not release the request")
	}
	p.Finished(&d.Ticket, 20)
	p.Finished(&d.Ticket, 21)
	p.Finished(&p2.Ticket, 22)
	if st.Global.InFlight != 0 || st.Tenant(1).ActiveRequests != 0 || st.Loads[0] != (InstanceLoad{}) || st.Loads[1] != (InstanceLoad{}) {
		t.Fatalf("release incomplete: %+v %+v", st.Loads, st.Global)
	}
}

func TestPrefixProducerParametersMapToIndex(t *testing.T) {
	p := build(t, `routing:
  policy: prefix-affinity
  prefix_cache: {autoTune: false, blockSizeTokens: 128, maxPrefixTokensToMatch: 0, maxPrefixBlocksToMatch: 2, lruCapacityPerServer: 5}`, 2)
	if p.PrefixBlockSize() != 128 || p.MaxPrefixBlocks() != 2 {
		t.Fatalf("block size %d, max blocks %d", p.PrefixBlockSize(), p.MaxPrefixBlocks())
	}
	d := p.Route(req(1, 0, 0, 1000, 1, 2, 3, 4), idle(2), 0)
	x := p.State().Prefix
	if x.Len(int(d.Target)) != 2 || x.Holds(int(d.Target), 3) {
		t.Fatal("hashes beyond maxPrefixBlocksToMatch must be ignored")
	}
	auto := build(t, "routing: {policy: prefix-affinity, prefix_cache: {maxPrefixTokensToMatch: 640}}", 2)
	if auto.PrefixBlockSize() != 64 || auto.MaxPrefixBlocks() != 10 {
		t.Fatalf("autoTune: block %d max %d", auto.PrefixBlockSize(), auto.MaxPrefixBlocks())
	}
	if none := build(t, "routing: {policy: round-robin}", 2); none.PrefixBlockSize() != 0 || none.State().Prefix != nil {
		t.Fatal("round-robin needs no prefix index")
	}
}

func TestAdmissionTemplates(t *testing.T) {
	snaps := idle(2)
	t.Run("always-admit and reject-all", func(t *testing.T) {
		if build(t, "", 1).Admit(req(1, 0, 0, 10), snaps[:1], 0).Action != Admit {
			t.Fatal("default must admit")
		}
		if build(t, "admission: {policy: reject-all}", 1).Admit(req(1, 0, 0, 10), snaps[:1], 0).Action != Reject {
			t.Fatal("reject-all admitted")
		}
	})
	t.Run("token-bucket", func(t *testing.T) {
		p := build(t, "admission: {policy: token-bucket, token_bucket_capacity: 100, token_bucket_refill_rate: 10}", 1)
		want := []AdmissionAction{Admit, Admit, Reject}
		for i, w := range want {
			if got := p.Admit(req(uint64(i), 0, 0, 40), snaps[:1], 0).Action; got != w {
				t.Fatalf("request %d: %s, want %s", i, got, w)
			}
		}
		// 3 s later 30 tokens were refilled: 20 + 30 = 50 >= 40.
		if p.Admit(req(9, 0, 0, 40), snaps[:1], 3_000_000).Action != Admit {
			t.Fatal("refill not applied")
		}
	})
	t.Run("token-bucket per tenant", func(t *testing.T) {
		p := build(t, "admission: {policy: token-bucket, params: {capacity: 1, refill_rate: 1, per_tenant: true, cost: request}}", 1)
		if p.Admit(req(1, 1, 0, 500), snaps[:1], 0).Action != Admit || p.Admit(req(2, 2, 0, 500), snaps[:1], 0).Action != Admit {
			t.Fatal("each tenant has its own bucket")
		}
		if p.Admit(req(3, 1, 0, 500), snaps[:1], 0).Action != Reject {
			t.Fatal("tenant bucket not shared within a tenant")
		}
	})
	t.Run("rate-limit", func(t *testing.T) {
		p := build(t, "admission: {policy: rate-limit, params: {rate: 2, delay_us: 1000, max_attempts: 1}}", 1)
		p.Admit(req(1, 0, 0, 1), snaps[:1], 0)
		p.Admit(req(2, 0, 0, 1), snaps[:1], 1)
		r := req(3, 0, 0, 1)
		if d := p.Admit(r, snaps[:1], 2); d.Action != Delay || d.Delay != 1000 || r.Attempt != 1 {
			t.Fatalf("third request in the window: %+v attempt %d", d, r.Attempt)
		}
		if p.Admit(r, snaps[:1], 1002).Action != Reject {
			t.Fatal("after max_attempts the request is rejected")
		}
		if p.Admit(req(4, 0, 0, 1), snaps[:1], 1_100_000).Action != Admit {
			t.Fatal("window did not slide")
		}
	})
	t.Run("tenant-quota", func(t *testing.T) {
		p := build(t, "admission: {policy: tenant-quota, params: {capacity: 10}}\ntenant_budgets: {tenant-A: 0.2}", 2)
		for i := 0; i < 2; i++ {
			r := req(uint64(i), 1, 0, 1)
			if p.Admit(r, snaps, 0).Action != Admit {
				t.Fatal("under quota")
			}
			p.Route(r, snaps, 0)
		}
		if p.Admit(req(5, 1, 0, 1), snaps, 0).Action != Reject {
			t.Fatal("tenant-A over floor(0.2·10) = 2 in flight")
		}
		if p.Admit(req(6, 2, 0, 1), snaps, 0).Action != Admit {
			t.Fatal("tenant-B has the default quota")
		}
	})
	t.Run("tier-shed", func(t *testing.T) {
		p := build(t, "admission: {policy: tier-shed, tier_shed_threshold: 3, tier_shed_min_priority: 3}", 2)
		loaded := idle(2)
		loaded[1].QueueDepth, loaded[1].BatchSize = 2, 2
		if p.Admit(req(1, 0, 2, 1), snaps, 0).Action != Admit {
			t.Fatal("no overload: batch admitted")
		}
		if p.Admit(req(2, 0, 2, 1), loaded, 0).Action != Reject {
			t.Fatal("overload: batch (priority -1) shed")
		}
		if p.Admit(req(3, 0, 0, 1), loaded, 0).Action != Admit {
			t.Fatal("overload: standard (3) admitted")
		}
	})
	t.Run("gaie-legacy", func(t *testing.T) {
		p := build(t, "admission: {policy: gaie-legacy}", 2)
		sat := idle(2)
		sat[0].QueueDepth, sat[1].KVUtilization = 5, 0.8 // saturation = mean(1, 1) = 1
		if p.Admit(req(1, 0, 3, 1), sat, 0).Action != Reject {
			t.Fatal("sheddable dropped at saturation 1")
		}
		if p.Admit(req(2, 0, 1, 1), sat, 0).Action != Admit {
			t.Fatal("critical always passes")
		}
		sat[0].QueueDepth = 4
		if p.Admit(req(3, 0, 3, 1), sat, 0).Action != Admit {
			t.Fatal("below saturation everything passes")
		}
	})
}

func TestPriorityTemplates(t *testing.T) {
	snaps := idle(1)
	cases := []struct {
		bundle string
		r      *RequestView
		want   float64
	}{
		{"", req(1, 0, 1, 1), 0},
		{"priority: {policy: constant, params: {score: 7}}", req(1, 0, 1, 1), 7},
		{"priority: {policy: slo-based}", req(1, 0, 1, 1), 4},
		{"priority: {policy: slo-based}", req(1, 0, 3, 1), -2},
		{"priority: {policy: inverted-slo}", req(1, 0, 1, 1), -4},
		{"priority: {policy: slo-based, params: {class_scores: {critical: 100}}}", req(1, 0, 1, 1), 100},
		{"admission: {slo_priorities: {batch: 9}}\npriority: {policy: slo-based}", req(1, 0, 2, 1), 9},
		{"priority: {policy: tenant-priority, params: {tenant_scores: {tenant-B: 5}, default_score: 1}}", req(1, 2, 0, 1), 5},
		{"priority: {policy: tenant-priority, params: {tenant_scores: {tenant-B: 5}, default_score: 1}}", req(1, 1, 0, 1), 1},
		{"priority: {policy: deadline-aware, params: {targets_us: {critical: 1000000}}}", &RequestView{Arrival: 2_000_000, Class: 1, ClassName: "critical"}, -3},
	}
	for _, c := range cases {
		if got := build(t, c.bundle, 1).Prioritize(c.r, snaps, 0).Score; got != c.want {
			t.Errorf("%q: score %v, want %v", c.bundle, got, c.want)
		}
	}
}

func TestSchedulersAndPreemption(t *testing.T) {
	a := &SchedKey{Priority: 1, Arrival: 10, InputTokens: 500, MaxTokens: 10, ID: 1, RunSeq: 2}
	b := &SchedKey{Priority: 5, Arrival: 20, InputTokens: 100, MaxTokens: 900, ID: 2, RunSeq: 1}
	check := func(name string, params Params, aFirst bool) {
		t.Helper()
		s, err := NewScheduler(name, params)
		if err != nil {
			t.Fatal(err)
		}
		if s.Before(a, b) != aFirst || s.Before(b, a) == aFirst {
			t.Errorf("%s %v: a first = %v, want %v", name, params, s.Before(a, b), aFirst)
		}
	}
	check("fcfs", nil, true)
	check("priority-fcfs", nil, false)
	check("reverse-priority", nil, true)
	check("sjf", nil, false)
	check("sjf", Params{"by": "output"}, true)
	c := *a
	c.ID = 3
	if s, _ := NewScheduler("priority-fcfs", nil); !s.Before(a, &c) {
		t.Error("equal priority and arrival fall back to ID")
	}
	pf, _ := NewPreemption("fcfs")
	if !pf.Victim(a, b) {
		t.Error("fcfs preempts the latest to enter the running batch")
	}
	pp, _ := NewPreemption("priority")
	if !pp.Victim(a, b) {
		t.Error("priority preempts the least urgent")
	}
	d := *a
	d.ID, d.Arrival = 9, 10
	if !pp.Victim(&d, a) {
		t.Error("equal candidates: highest ID first (LIFO)")
	}
	if _, err := NewScheduler("lifo", nil); err == nil {
		t.Error("unknown scheduler accepted")
	}
	if _, err := NewScheduler("sjf", Params{"by": 3}); err == nil {
		t.Error("wrong parameter type accepted")
	}
}

func TestBadInputFailsBeforeTheRunWithPolicyFieldAndPosition(t *testing.T) {
	cases := []struct{ bundle, want string }{
		{"admission: {policy: token-bucket, params: {capacity: lots}}", `admission policy "token-bucket": parameter "capacity": want a number`},
		{"admission: {policy: token-bucket, params: {burst: 3}}", `unknown parameter "burst" (known: capacity, cost, per_tenant, refill_rate)`},
		{"routing: {policy: fastest}", `unknown routing policy "fastest"`},
		{"routing: {policy: weighted, scorers: [{name: magic, weight: 1}]}", `unknown scorer "magic"`},
		{"routing: {policy: weighted, scorers: [{name: load-aware, weight: 1, params: {treshold: 3}}]}", `unknown parameter "treshold" (known: threshold)`},
		{"routing: {cel: 'instance.queueDepth + '}", "routing policy \"cel\": field cel: does not compile:\nERROR: <input>:1:23: Syntax error"},
		{"routing: {cel: '2.0 * instance.queuedepth'}", "<input>:1:7: undeclared reference to 'instance'"},
		{"admission: {cel: 'instance.queueDepth > 3'}", "admission policy \"cel\": field cel: does not compile:\nERROR: <input>:1:1: undeclared reference to 'instance'"},
		{"priority: {cel: 'request.sloClass'}", "must evaluate to double or int"},
		{"routing: {cel: 'double([1,2,3].map(x, [1,2,3,4,5,6,7,8,9].map(y, x*y)).size())', params: {cost_limit: 10}}", "exceeds the cost limit 10"},
		{"admission: {tree: {if: {observable: instance.kvUtilization, op: '>', value: 0.5}, then: {action: reject}, else: {action: admit}}}", `observable "instance.kvUtilization" is not visible to admission policies`},
		{"admission: {tree: {if: {observable: request.inputTokens, op: '>', value: 5}, then: {action: drop}, else: {action: admit}}}", `tree.then: action must be admit, reject or delay`},
		{"routing: {policy: round-robin, cel: '1.0'}", `a cel expression needs policy "cel"`},
		{"scheduler: lifo", `unknown scheduler "lifo"`},
		{"admission: {policy: always-admit, rate: 3}", "field rate not found"},
		{"observability: {kv_utilization: {mode: periodic}}", "periodic needs interval_us > 0"},
	}
	for _, c := range cases {
		b, err := Parse([]byte(c.bundle))
		if err == nil {
			err = b.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s\n got: %v\nwant: %s", c.bundle, err, c.want)
		}
	}
}

func TestCandidatesAreTheTopThreeByScoreThenIndex(t *testing.T) {
	p := build(t, "routing: {policy: weighted, scorers: [{name: kv-utilization, weight: 1}], params: {tie_break: lowest}}", 6)
	snaps := idle(6)
	for i, kv := range []float64{0.5, 0.1, 0.9, 0.1, 0.5, 0.0} {
		snaps[i].KVUtilization = kv
	}
	d := p.Route(req(1, 0, 0, 10), snaps, 0)
	want := []int32{5, 1, 3}
	if len(d.Candidates) != 3 {
		t.Fatalf("candidates %+v", d.Candidates)
	}
	for i, c := range d.Candidates {
		if c.Instance != want[i] || c.Score != 1-snaps[c.Instance].KVUtilization || c.Breakdown[0] != c.Score {
			t.Fatalf("candidate %d: %+v, want instance %d", i, c, want[i])
		}
	}
	if d.Target != 5 {
		t.Fatalf("target %d", d.Target)
	}
}
