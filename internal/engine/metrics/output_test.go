package metrics

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

var update = flag.Bool("update", false, "rewrite golden files")

var testNames = &workload.Tables{
	Clients:    []string{"default", "chat"},
	Tenants:    []string{"", "acme"},
	SLOClasses: []string{"standard", "critical"},
}

// scenario builds two instances and a gateway with hand-checked numbers (see the comments of
// TestFinalizeHandComputed).
func scenario(keepRows bool) (inst []*Collector, gw *Collector) {
	i0 := NewCollector("instance_0", keepRows)
	i1 := NewCollector("instance_1", keepRows)
	gw = NewCollector("gateway", keepRows)
	i0.Completed(&RequestRecord{ID: 1, Arrival: 0, InputTokens: 100, OutputTokens: 4, TTFT: 10000, ITLSum: 15000, E2E: 25000, SchedulingDelay: 2000, Class: 0, Tenant: 1, Client: 1, Instance: 0, Session: 77, Round: 1})
	i0.Completed(&RequestRecord{ID: 2, Arrival: 1000, InputTokens: 50, OutputTokens: 2, TTFT: 20000, ITLSum: 7000, E2E: 27000, SchedulingDelay: 4000, Class: 1, Instance: 0, Preemptions: 1})
	i0.Completed(&RequestRecord{ID: 3, Arrival: 2000, InputTokens: 60, OutputTokens: 1, TTFT: 30000, E2E: 30000, SchedulingDelay: 6000, Class: 0, Instance: 0, LengthCapped: true})
	i0.Record(&RequestRecord{ID: 4, Status: StatusDropped, Arrival: 500, InputTokens: 10000, OutputTokens: 0, Class: 0, Instance: 0})
	i0.AddITL(5000, 3)
	i0.AddITL(7000, 1)
	i0.Events = Events{Preemptions: 2, CacheLookups: 10, CacheHits: 4}

	i1.Completed(&RequestRecord{ID: 5, Arrival: 1000, InputTokens: 80, OutputTokens: 3, TTFT: 40000, ITLSum: 12000, E2E: 52000, SchedulingDelay: 8000, Class: 1, Instance: 1, GatewayQueueDelay: 1500})
	i1.Record(&RequestRecord{ID: 6, Status: StatusQueued, Arrival: 3000, InputTokens: 70, Class: 0, Instance: 1})
	i1.Record(&RequestRecord{ID: 7, Status: StatusTimedOut, Arrival: 2500, InputTokens: 90, Class: 1, Instance: 1})
	i1.Record(&RequestRecord{ID: 9, Status: StatusRunning, Arrival: 3500, InputTokens: 20, TTFT: 60000, SchedulingDelay: 9000, Scheduled: true, Class: 0, Instance: 1})
	i1.AddITL(6000, 2)

	gw.Record(&RequestRecord{ID: 8, Status: StatusRejected, Arrival: 100, InputTokens: 30, Class: 1, Instance: -1})
	return []*Collector{i0, i1}, gw
}

func checkF(t *testing.T, what string, got, want float64) {
	t.Helper()
	if !near(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func TestFinalizeHandComputed(t *testing.T) {
	inst, gw := scenario(false)
	rep := Finalize(inst, 2_000_000, testNames, Options{Gateway: gw})
	o := rep.Instances[0]
	if o.InstanceID != "instance_0" || o.CompletedRequests != 3 || o.InjectedRequests != 4 || o.TotalInputTokens != 210 ||
		o.TotalOutputTokens != 7 || o.DroppedUnservable != 1 || o.LengthCappedRequests != 1 || o.PreemptionCount != 2 {
		t.Errorf("instance 0 counters: %+v", o)
	}
	checkF(t, "duration", o.VllmDurationSec, 2)
	checkF(t, "responses_per_sec", o.ResponsesPerSec, 1.5)
	checkF(t, "tokens_per_sec", o.TokensPerSec, 3.5)
	// TTFT [10 20 30] ms: p90 at rank 1.8.
	checkF(t, "ttft_mean", o.TTFTMeanMs, 20)
	checkF(t, "ttft_p50", o.TTFTP50Ms, 20)
	checkF(t, "ttft_p90", o.TTFTP90Ms, 28)
	checkF(t, "ttft_p95", o.TTFTP95Ms, 29)
	checkF(t, "ttft_p99", o.TTFTP99Ms, 29.8)
	// E2E [25 27 30].
	checkF(t, "e2e_mean", o.E2EMeanMs, 82.0/3)
	checkF(t, "e2e_p90", o.E2EP90Ms, 29.4)
	checkF(t, "e2e_p99", o.E2EP99Ms, 29.94)
	// All gaps 5 5 5 7 (not per-request TPOT 5 and 7).
	checkF(t, "itl_mean", o.ITLMeanMs, 5.5)
	checkF(t, "itl_p50", o.ITLP50Ms, 5)
	checkF(t, "itl_p90", o.ITLP90Ms, 6.4)
	checkF(t, "itl_p99", o.ITLP99Ms, 6.94)
	checkF(t, "sched_p99", o.SchedulingDelayP99Ms, 5.96)
	if o.CacheHitRate == nil || *o.CacheHitRate != 0.4 {
		t.Errorf("cache_hit_rate %v", o.CacheHitRate)
	}
	if rep.Instances[1].CacheHitRate != nil {
		t.Error("cache_hit_rate without lookups")
	}

	// Instance 1: TTFT over the completed request 5 and the still running 9 (which produced its
	// first token); E2E over request 5 only.
	o1 := rep.Instances[1]
	if o1.InjectedRequests != 4 || o1.StillRunning != 1 || o1.TotalInputTokens != 260 {
		t.Errorf("instance 1 counters: %+v", o1)
	}
	checkF(t, "instance 1 ttft_mean", o1.TTFTMeanMs, 50)
	checkF(t, "instance 1 ttft_p90", o1.TTFTP90Ms, 58)
	checkF(t, "instance 1 e2e_mean", o1.E2EMeanMs, 52)
	checkF(t, "instance 1 sched_p99", o1.SchedulingDelayP99Ms, 8.99)

	c := rep.Cluster
	if c.InstanceID != "cluster" || c.CompletedRequests != 4 || c.InjectedRequests != 8 || c.StillQueued != 1 || c.StillRunning != 1 ||
		c.TimedOutRequests != 1 || c.RejectedRequests != 1 || c.TotalInputTokens != 470 || c.TotalOutputTokens != 10 {
		t.Errorf("cluster counters: %+v", c)
	}
	checkF(t, "cluster rps", c.ResponsesPerSec, 2)
	// Union TTFT [10 20 30 40 60]: p90 at rank 3.6 = 52, not the mean of instance p90s (43).
	checkF(t, "cluster ttft_mean", c.TTFTMeanMs, 32)
	checkF(t, "cluster ttft_p50", c.TTFTP50Ms, 30)
	checkF(t, "cluster ttft_p90", c.TTFTP90Ms, 52)
	checkF(t, "cluster ttft_p95", c.TTFTP95Ms, 56)
	checkF(t, "cluster ttft_p99", c.TTFTP99Ms, 59.2)
	checkF(t, "cluster e2e_mean", c.E2EMeanMs, 33.5)
	checkF(t, "cluster e2e_p90", c.E2EP90Ms, 45.4)
	checkF(t, "cluster e2e_p99", c.E2EP99Ms, 51.34)
	// Union gaps 5 5 5 6 6 7.
	checkF(t, "cluster itl_mean", c.ITLMeanMs, 34.0/6)
	checkF(t, "cluster itl_p50", c.ITLP50Ms, 5.5)
	checkF(t, "cluster itl_p90", c.ITLP90Ms, 6.5)
	checkF(t, "cluster itl_p95", c.ITLP95Ms, 6.75)
	checkF(t, "cluster itl_p99", c.ITLP99Ms, 6.95)
	checkF(t, "cluster sched_p99", c.SchedulingDelayP99Ms, 8.96)
	if c.GoodputRPS != nil || c.SLOAttainment != nil {
		t.Error("goodput without targets")
	}

	std, crit := c.PerClass["standard"], c.PerClass["critical"]
	if std == nil || crit == nil || len(c.PerClass) != 2 {
		t.Fatalf("per_class %v", c.PerClass)
	}
	// standard: requests 1, 3 (completed), 4 (dropped), 6 (queued), 9 (running); per-class
	// latencies are over completed requests only, as in BLIS.
	if std.Count != 5 || std.Completed != 2 {
		t.Errorf("standard count %d completed %d", std.Count, std.Completed)
	}
	checkF(t, "standard ttft_mean", std.TTFTMeanMs, 20)
	checkF(t, "standard ttft_p99", std.TTFTP99Ms, 29.8)
	checkF(t, "standard itl_mean (TPOT of request 1 only)", std.ITLMeanMs, 5)
	// critical: 2, 5 completed, 7 timed out, 8 rejected. TPOT 7 and 6.
	if crit.Count != 4 || crit.Completed != 2 {
		t.Errorf("critical count %d completed %d", crit.Count, crit.Completed)
	}
	checkF(t, "critical ttft_mean", crit.TTFTMeanMs, 30)
	checkF(t, "critical itl_mean", crit.ITLMeanMs, 6.5)
	checkF(t, "critical itl_p90", crit.ITLP90Ms, 6.9)
	if crit.SLOAttainment != nil {
		t.Error("class attainment without targets")
	}
	if c.Requests != nil {
		t.Error("rows without keepRows")
	}
}

func TestGoodputAndAttainment(t *testing.T) {
	inst, gw := scenario(false)
	targets := []SLOTarget{{}, {TTFT: 30000, ITL: 7000}}
	c := Finalize(inst, 2_000_000, testNames, Options{Gateway: gw, Targets: targets}).Cluster
	// critical: request 2 meets both (20 ms, TPOT 7 ms); 5 misses TTFT (40 ms); 7 and 8 did
	// not complete. 1 good of 4.
	crit := c.PerClass["critical"]
	if crit.SLOAttainment == nil || *crit.SLOAttainment != 0.25 || *crit.GoodputRPS != 0.5 {
		t.Fatalf("critical attainment %v goodput %v", crit.SLOAttainment, crit.GoodputRPS)
	}
	d := crit.SLOAttainmentByDim
	if d == nil || *d.TTFT != 0.5 || *d.ITL != 1 || d.E2E != nil {
		t.Errorf("by dim %+v", d)
	}
	if c.PerClass["standard"].SLOAttainment != nil {
		t.Error("ungated class has attainment")
	}
	if c.SLOAttainment == nil || *c.SLOAttainment != 0.25 || *c.GoodputRPS != 0.5 {
		t.Errorf("overall attainment %v goodput %v", c.SLOAttainment, c.GoodputRPS)
	}
}

func TestNothingCompleted(t *testing.T) {
	c := NewCollector("instance_0", false)
	c.Record(&RequestRecord{ID: 1, Status: StatusRunning})
	c.AddITL(5000, 4) // gaps of a request that never finished
	rep := Finalize([]*Collector{c}, 1000, nil, Options{})
	o := rep.Instances[0]
	if o.StillRunning != 1 || o.InjectedRequests != 1 || o.ResponsesPerSec != 0 || o.ITLMeanMs != 0 || o.TTFTP99Ms != 0 {
		t.Errorf("%+v", o)
	}
	// Without name tables classes get positional names.
	if o.PerClass["class_0"] == nil || o.PerClass["class_0"].Count != 1 {
		t.Errorf("per_class %v", o.PerClass)
	}
	if _, err := json.Marshal(o); err != nil {
		t.Fatal(err)
	}
}

func TestRowsSortedByArrivalThenID(t *testing.T) {
	inst, gw := scenario(true)
	c := Finalize(inst, 2_000_000, testNames, Options{Gateway: gw}).Cluster
	var ids []string
	for _, r := range c.Requests {
		ids = append(ids, r.ID)
	}
	want := "request_1 request_8 request_4 request_2 request_5 request_3 request_7 request_6 request_9"
	if got := strings.Join(ids, " "); got != want {
		t.Fatalf("row order %s, want %s", got, want)
	}
	r1, r5, r6 := c.Requests[0], c.Requests[4], c.Requests[7]
	if r1.TenantID != "acme" || r1.ClientID != "chat" || r1.SLOClass != "standard" || r1.HandledBy != "instance_0" ||
		r1.SessionID != "77" || r1.RoundIndex != 1 || r1.Status != "" || !near(r1.ITLMs, 5) || !near(r1.ArrivedAt, 0) {
		t.Errorf("row 1 %+v", r1)
	}
	if r5.HandledBy != "instance_1" || !near(r5.GatewayQueueDelayMs, 1.5) || !near(r5.ITLMs, 6) || !near(r5.ArrivedAt, 0.001) {
		t.Errorf("row 5 %+v", r5)
	}
	if r6.Status != "still_queued" || r6.TTFTMs != 0 {
		t.Errorf("row 6 %+v", r6)
	}
	if c.Requests[1].HandledBy != "" || c.Requests[1].Status != "rejected" {
		t.Errorf("row 8 %+v", c.Requests[1])
	}
}

// TestJSONGolden pins the exact bytes, field names and order of a small report: the stdout
// layout of WriteBLIS and the file form of the cluster block.
func TestJSONGolden(t *testing.T) {
	inst, gw := scenario(true)
	rep := Finalize(inst, 2_000_000, testNames, Options{Gateway: gw, Targets: []SLOTarget{{}, {TTFT: 30000, ITL: 7000}}})
	var buf bytes.Buffer
	if err := rep.WriteBLIS(&buf); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("--- file ---\n")
	file, err := json.MarshalIndent(rep.Cluster, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	buf.Write(file)
	buf.WriteByte('\n')

	path := filepath.Join("testdata", "report.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("report differs from %s (run with -update after checking):\n%s", path, buf.String())
	}
	// The stdout form never carries file-only fields.
	stdout := strings.Split(buf.String(), "--- file ---")[0]
	if strings.Contains(stdout, `"requests":`) || strings.Contains(stdout, `"cache_hit_rate":`) {
		t.Error("stdout blocks carry file-only fields")
	}
	// Same inputs, same bytes.
	inst2, gw2 := scenario(true)
	rep2 := Finalize(inst2, 2_000_000, testNames, Options{Gateway: gw2, Targets: []SLOTarget{{}, {TTFT: 30000, ITL: 7000}}})
	var buf2 bytes.Buffer
	if err := rep2.WriteBLIS(&buf2); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(buf.Bytes(), buf2.Bytes()) {
		t.Error("Finalize is not deterministic")
	}
}

func TestFieldOrderMatchesBLIS(t *testing.T) {
	// The leading fields must appear in BLIS's order.
	blis := []string{"instance_id", "completed_requests", "still_queued", "still_running", "injected_requests",
		"total_input_tokens", "total_output_tokens", "vllm_estimated_duration_s", "responses_per_sec", "tokens_per_sec",
		"e2e_mean_ms", "e2e_p90_ms", "e2e_p95_ms", "e2e_p99_ms", "ttft_mean_ms", "ttft_p90_ms", "ttft_p95_ms",
		"ttft_p99_ms", "itl_mean_ms", "itl_p90_ms", "itl_p95_ms", "itl_p99_ms", "scheduling_delay_p99_ms",
		"kv_allocation_failures", "preemption_count", "cache_hit_rate", "dropped_unservable", "length_capped_requests",
		"timed_out_requests", "requests", "goodput_rps", "slo_attainment", "per_class"}
	o := Output{KVAllocationFailures: 1, CacheHitRate: ptr(0.5), Requests: []RequestRow{{}}, GoodputRPS: ptr(1),
		SLOAttainment: ptr(1), PerClass: map[string]*ClassOutput{"x": {}}}
	data, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	last := -1
	for _, k := range blis {
		i := strings.Index(s, `"`+k+`":`)
		if i < 0 || i < last {
			t.Fatalf("field %s missing or out of order in %s", k, s)
		}
		last = i
	}
}

// Per-tenant rows and Jain's index over the tenants' served fractions: tenant a gets 2 of 2
// requests served, tenant b 1 of 4 (two rejected, one timed out), so J = (1 + 1/4)² / (2 · (1 +
// 1/16)) = 0.7353; one tenant alone has neither.
func TestPerTenantAndJain(t *testing.T) {
	names := &workload.Tables{Tenants: []string{"a", "b"}, SLOClasses: []string{"standard"}}
	inst := NewCollector("instance_0", false)
	gw := NewCollector("gateway", false)
	done := func(id uint64, tenant int32, ttft int64) {
		inst.Completed(&RequestRecord{ID: id, Tenant: tenant, TTFT: ttft, E2E: ttft + 1000, OutputTokens: 2, ITLSum: 1000, InputTokens: 10})
	}
	done(1, 0, 1000)
	done(2, 0, 3000)
	done(3, 1, 9000)
	inst.Record(&RequestRecord{ID: 4, Tenant: 1, Status: StatusTimedOut, InputTokens: 10})
	gw.Record(&RequestRecord{ID: 5, Tenant: 1, Status: StatusRejected, InputTokens: 10})
	gw.Record(&RequestRecord{ID: 6, Tenant: 1, Status: StatusRejected, InputTokens: 10})
	rep := Finalize([]*Collector{inst}, 2_000_000, names, Options{Gateway: gw, Targets: []SLOTarget{{TTFT: 2000}}})
	c := rep.Cluster
	a, b := c.PerTenant["a"], c.PerTenant["b"]
	if a == nil || b == nil || len(c.PerTenant) != 2 {
		t.Fatalf("per_tenant %v", c.PerTenant)
	}
	if a.Count != 2 || a.Completed != 2 || a.Rejected != 0 || b.Count != 4 || b.Completed != 1 || b.Rejected != 2 {
		t.Errorf("tenant rows a %+v b %+v", a, b)
	}
	checkF(t, "a ttft_mean", a.TTFTMeanMs, 2)
	checkF(t, "a attainment", *a.SLOAttainment, 0.5)
	checkF(t, "b attainment", *b.SLOAttainment, 0)
	if c.JainFairnessIndex == nil {
		t.Fatal("no jain index")
	}
	checkF(t, "jain", *c.JainFairnessIndex, 1.5625/2.125)
	if std := c.PerClass["standard"]; std.Rejected != 2 || std.Count != 6 {
		t.Errorf("per-class rejected %d of %d", std.Rejected, std.Count)
	}
	solo := NewCollector("instance_0", false)
	solo.Completed(&RequestRecord{ID: 1, TTFT: 1000, E2E: 2000, OutputTokens: 1, InputTokens: 10})
	if o := Finalize([]*Collector{solo}, 1_000_000, names, Options{}).Cluster; o.JainFairnessIndex != nil || o.PerTenant != nil {
		t.Errorf("one tenant: per_tenant %v", o.PerTenant)
	}
}
