package policy

import (
	"math/rand/v2"
	"testing"
)

// randomSnaps draws instance states with many ties (small integer queues) so that tie-breaks
// are exercised too.
func randomSnaps(r *rand.Rand, n int) []InstanceSnapshot {
	s := make([]InstanceSnapshot, n)
	for i := range s {
		s[i] = InstanceSnapshot{Index: int32(i), QueueDepth: int32(r.IntN(4)), BatchSize: int32(r.IntN(8)),
			KVUtilization: float64(r.IntN(5)) / 4}
	}
	return s
}

// The same CEL expression and the equivalent template give identical decisions on the same
// inputs: identical scores, targets (including seeded tie-breaks) and router state.
func TestCELRoutingMatchesWeightedTemplate(t *testing.T) {
	const queue = "(global.maxQueueDepth == global.minQueueDepth ? 1.0 : " +
		"double(global.maxQueueDepth - instance.queueDepth) / double(global.maxQueueDepth - global.minQueueDepth))"
	pairs := []struct{ template, cel string }{
		{"routing: {policy: weighted, scorers: [{name: kv-cache-utilization-scorer, weight: 2}, {name: queue-scorer, weight: 1}]}",
			"routing: {cel: '2.0 * (1.0 - instance.kvUtilization) + 1.0 * " + queue + "'}"},
		{"routing: {policy: prefix-affinity}",
			"routing: {cel: '5.0 * instance.prefixMatch + 1.0 * " + queue + "'}"},
		{weighted3, "routing: {cel: '2.0 * score.queue + 2.0 * score.kvCacheUtilization + 3.0 * score.prefixCache'}"},
		{"routing: {policy: weighted, scorers: [{name: token-load-scorer, weight: 1.5}, {name: load-aware-scorer, weight: 1}, {name: active-request-scorer, weight: 0.5}, {name: running-requests-size-scorer, weight: 1}, {name: load-balance, weight: 2}]}",
			"routing: {cel: '1.5 * score.tokenLoad + 1.0 * score.loadAware + 0.5 * score.activeRequest + 1.0 * score.runningRequests + 2.0 * score.loadBalance'}"},
	}
	for _, pc := range pairs {
		tp, cp := build(t, pc.template, 4), build(t, pc.cel, 4)
		src := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < 300; i++ {
			snaps := randomSnaps(src, 4)
			h := uint64(src.IntN(3) + 1)
			a := tp.Route(req(uint64(i), 0, 0, 512, h, h*10, h*100), snaps, int64(i))
			b := cp.Route(req(uint64(i), 0, 0, 512, h, h*10, h*100), snaps, int64(i))
			if i%3 == 0 { // finish some requests so the router-tracked loads go up and down
				tp.Finished(&a.Ticket, int64(i))
				cp.Finished(&b.Ticket, int64(i))
			}
			if a.Target != b.Target {
				t.Fatalf("%s: decision %d: template %d, cel %d", pc.cel, i, a.Target, b.Target)
			}
			for j := range a.Scores {
				if a.Scores[j] != b.Scores[j] {
					t.Fatalf("%s: decision %d instance %d: template %v, cel %v", pc.cel, i, j, a.Scores[j], b.Scores[j])
				}
			}
		}
	}
}

func TestCELAndTreeAdmissionMatchGAIELegacy(t *testing.T) {
	template := build(t, "admission: {policy: gaie-legacy}", 3)
	expr := build(t, `admission: {cel: "!(request.sloClass in ['batch', 'sheddable', 'background']) || global.saturation < 1.0"}`, 3)
	tree := build(t, `admission:
  tree:
    if: {observable: global.saturation, op: "<", value: 1.0}
    then: {action: admit}
    else:
      if: {observable: request.sloClass, op: "==", value: batch}
      then: {action: reject}
      else:
        if: {observable: request.sloClass, op: "==", value: sheddable}
        then: {action: reject}
        else: {action: admit}`, 3)
	src := rand.New(rand.NewPCG(3, 4))
	rejected := 0
	for i := 0; i < 500; i++ {
		snaps := make([]InstanceSnapshot, 3)
		for j := range snaps {
			snaps[j] = InstanceSnapshot{QueueDepth: int32(src.IntN(9)), KVUtilization: float64(src.IntN(11)) / 10}
		}
		r := req(uint64(i), 0, int32(src.IntN(4)), 10)
		a := template.Admit(r, snaps, 0).Action
		if a == Reject {
			rejected++
		}
		if b := expr.Admit(r, snaps, 0).Action; a != b {
			t.Fatalf("decision %d: template %s, cel %s", i, a, b)
		}
		if c := tree.Admit(r, snaps, 0).Action; a != c {
			t.Fatalf("decision %d: template %s, tree %s", i, a, c)
		}
	}
	if rejected == 0 || rejected == 500 {
		t.Fatalf("inputs did not exercise both verdicts (%d rejections)", rejected)
	}
}

func TestCELAndTreePriorityMatchSLOBased(t *testing.T) {
	template := build(t, "priority: {policy: slo-based}", 1)
	expr := build(t, `priority: {cel: "request.sloClass == 'critical' ? 4 : request.sloClass == 'batch' ? -1 : request.sloClass == 'sheddable' ? -2 : 3"}`, 1)
	tree := build(t, `priority:
  tree:
    if: {observable: request.sloClass, op: "==", value: critical}
    then: {score: 4}
    else:
      if: {observable: request.sloClass, op: "==", value: batch}
      then: {score: -1}
      else:
        if: {observable: request.sloClass, op: "!=", value: sheddable}
        then: {score: 3}
        else: {score: -2}`, 1)
	for class := int32(0); class < 4; class++ {
		r := req(1, 0, class, 10)
		a := template.Prioritize(r, idle(1), 0).Score
		if b := expr.Prioritize(r, idle(1), 0).Score; a != b {
			t.Fatalf("class %s: template %v, cel %v", testClasses[class], a, b)
		}
		if c := tree.Prioritize(r, idle(1), 0).Score; a != c {
			t.Fatalf("class %s: template %v, tree %v", testClasses[class], a, c)
		}
	}
}

func TestTreeRoutingScoresEachInstance(t *testing.T) {
	p := build(t, `routing:
  params: {tie_break: lowest}
  tree:
    if: {observable: instance.kvUtilization, op: ">=", value: 0.9}
    then: {score: 0}
    else:
      if: {observable: instance.queueDepth, op: "<=", value: 1}
      then: {score: 2}
      else: {score: 1}`, 3)
	snaps := idle(3)
	snaps[0].KVUtilization = 0.95
	snaps[1].QueueDepth = 3
	snaps[2].QueueDepth = 1
	d := p.Route(req(1, 0, 0, 10), snaps, 0)
	approx(t, "tree scores", d.Scores, []float64{0, 1, 2})
	if d.Target != 2 {
		t.Fatalf("target %d", d.Target)
	}
}

func TestCELRuntimeErrorsFallBackAndAreCounted(t *testing.T) {
	p := build(t, "routing: {cel: 'double(10 / instance.queueDepth)', params: {tie_break: lowest}}", 2)
	snaps := idle(2)
	snaps[1].QueueDepth = 5
	d := p.Route(req(1, 0, 0, 10), snaps, 0)
	if d.Target != 1 || p.Stats().CELErrors != 1 {
		t.Fatalf("division by zero must score -Inf and be counted: target %d, errors %d", d.Target, p.Stats().CELErrors)
	}
	a := build(t, `admission: {cel: "request.inputTokens > 100 ? 'delay' : 'admit'", params: {delay_us: 500}}`, 1)
	r := req(1, 0, 0, 200)
	if d := a.Admit(r, idle(1), 0); d.Action != Delay || d.Delay != 500 || r.Attempt != 1 {
		t.Fatalf("delay verdict: %+v", d)
	}
}

func TestCELSeesTenantAndGlobalState(t *testing.T) {
	p := build(t, "admission: {cel: 'tenant.activeRequests < 2 && global.inFlight < 3'}", 2)
	snaps := idle(2)
	for i := 0; i < 2; i++ {
		r := req(uint64(i), 1, 0, 10)
		p.Arrive(r, 0)
		if p.Admit(r, snaps, 0).Action != Admit {
			t.Fatalf("request %d rejected", i)
		}
		p.Route(r, snaps, 0)
	}
	if p.Admit(req(3, 1, 0, 10), snaps, 0).Action != Reject {
		t.Fatal("tenant-A has 2 active requests")
	}
	if p.Admit(req(4, 2, 0, 10), snaps, 0).Action != Admit {
		t.Fatal("tenant-B has none")
	}
	if got := p.State().Tenant(1).RequestCount; got != 2 {
		t.Fatalf("request count %d", got)
	}
	if rate := p.State().Global.RequestRate(0); rate != 2 {
		t.Fatalf("2 arrivals in a 1 s window: rate %v", rate)
	}
}
