package metrics

import (
	"cmp"
	"encoding/json"
	"io"
	"slices"
	"strconv"

	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// Output is one block of metrics: upstream BLIS's MetricsOutput with the same JSON names in the
// same order, followed by this engine's extensions. Latencies are in milliseconds.
//
// Fields as in BLIS: instance_id through timed_out_requests, requests (file only), goodput_rps,
// slo_attainment and per_class. BLIS's saturation and adapters blocks are not produced: the
// first is BLIS's post-hoc saturation classifier, which this engine does not implement, and the
// second needs LoRA adapters, which this engine's workloads do not carry.
//
// Deviations, kept deliberately: goodput_rps and slo_attainment are present (even when 0)
// whenever SLO targets were given and absent otherwise, where BLIS omits a zero value; per_class
// is always present when any request was recorded, where BLIS writes it only with targets, and
// carries more statistics (see ClassOutput).
//
// Extensions (not in BLIS), after the BLIS fields: rejected_requests (admission rejections,
// omitted when 0) and the medians e2e_p50_ms, ttft_p50_ms, itl_p50_ms.
type Output struct {
	// InstanceID names the instance, or "cluster" for the aggregate block.
	InstanceID string `json:"instance_id"`
	// CompletedRequests counts requests that generated all their tokens.
	CompletedRequests int64 `json:"completed_requests"`
	// StillQueued and StillRunning count requests waiting or running when the run ended.
	StillQueued  int64 `json:"still_queued"`
	StillRunning int64 `json:"still_running"`
	// InjectedRequests = completed + still queued + still running + dropped + timed out.
	InjectedRequests int64 `json:"injected_requests"`
	// TotalInputTokens and TotalOutputTokens sum the tokens of completed requests.
	TotalInputTokens  int64 `json:"total_input_tokens"`
	TotalOutputTokens int64 `json:"total_output_tokens"`
	// VllmDurationSec is the simulation clock at the last event, in seconds.
	VllmDurationSec float64 `json:"vllm_estimated_duration_s"`
	// ResponsesPerSec = completed / duration; TokensPerSec = output tokens / duration.
	ResponsesPerSec float64 `json:"responses_per_sec"`
	TokensPerSec    float64 `json:"tokens_per_sec"`
	// E2E latency of completed requests.
	E2EMeanMs float64 `json:"e2e_mean_ms"`
	E2EP90Ms  float64 `json:"e2e_p90_ms"`
	E2EP95Ms  float64 `json:"e2e_p95_ms"`
	E2EP99Ms  float64 `json:"e2e_p99_ms"`
	// Time to first token of completed requests.
	TTFTMeanMs float64 `json:"ttft_mean_ms"`
	TTFTP90Ms  float64 `json:"ttft_p90_ms"`
	TTFTP95Ms  float64 `json:"ttft_p95_ms"`
	TTFTP99Ms  float64 `json:"ttft_p99_ms"`
	// Inter-token latency over all individual gaps.
	ITLMeanMs float64 `json:"itl_mean_ms"`
	ITLP90Ms  float64 `json:"itl_p90_ms"`
	ITLP95Ms  float64 `json:"itl_p95_ms"`
	ITLP99Ms  float64 `json:"itl_p99_ms"`
	// SchedulingDelayP99Ms is the p99 of arrival-to-first-scheduling of completed requests.
	SchedulingDelayP99Ms float64 `json:"scheduling_delay_p99_ms"`
	// KVAllocationFailures counts KV accounting anomalies (omitted when 0, as in BLIS).
	KVAllocationFailures int64 `json:"kv_allocation_failures,omitempty"`
	// PreemptionCount counts recompute preemptions.
	PreemptionCount int64 `json:"preemption_count"`
	// CacheHitRate is prefix-cache hit blocks / looked-up blocks; nil when nothing was looked up
	// and in the stdout form (BLIS writes it to the file only).
	CacheHitRate *float64 `json:"cache_hit_rate,omitempty"`
	// DroppedUnservable counts requests too long for the model or the KV cache.
	DroppedUnservable int64 `json:"dropped_unservable"`
	// LengthCappedRequests counts completed requests force-completed at the length limit.
	LengthCappedRequests int64 `json:"length_capped_requests"`
	// TimedOutRequests counts requests cancelled by their timeout.
	TimedOutRequests int64 `json:"timed_out_requests"`
	// Requests are the per-request rows, sorted by arrival (file form of the cluster block only).
	Requests []RequestRow `json:"requests,omitempty"`
	// GoodputRPS is requests meeting every SLO target of their class per second (with targets).
	GoodputRPS *float64 `json:"goodput_rps,omitempty"`
	// SLOAttainment is the fraction of requests of target-gated classes that met their targets.
	SLOAttainment *float64 `json:"slo_attainment,omitempty"`
	// PerClass holds per-SLO-class statistics keyed by class name.
	PerClass map[string]*ClassOutput `json:"per_class,omitempty"`

	// RejectedRequests (extension) counts admission rejections.
	RejectedRequests int64 `json:"rejected_requests,omitempty"`
	// E2EP50Ms, TTFTP50Ms and ITLP50Ms (extension) are medians.
	E2EP50Ms  float64 `json:"e2e_p50_ms"`
	TTFTP50Ms float64 `json:"ttft_p50_ms"`
	ITLP50Ms  float64 `json:"itl_p50_ms"`
}

// RequestRow is one per-request row of the output file, BLIS's RequestMetrics. Requests that did
// not complete appear with the latencies they reached (0 for the others).
//
// BLIS's model and adapter columns are not produced (always empty here). Extensions (omitted
// when empty): client_id, preemption_count, and status for requests that did not complete.
type RequestRow struct {
	// ArrivedAt is the arrival time in seconds.
	ArrivedAt float64 `json:"arrived_at"`
	// ID is "request_<id>".
	ID string `json:"requestID"`
	// NumPrefillTokens is the prompt length; NumDecodeTokens the tokens generated.
	NumPrefillTokens int32 `json:"num_prefill_tokens"`
	NumDecodeTokens  int32 `json:"num_decode_tokens"`
	// TTFTMs, ITLMs (the request's TPOT), E2EMs and SchedulingDelayMs are in ms.
	TTFTMs            float64 `json:"ttft_ms"`
	ITLMs             float64 `json:"itl_ms"`
	E2EMs             float64 `json:"e2e_ms"`
	SchedulingDelayMs float64 `json:"scheduling_delay_ms"`
	// SLOClass, TenantID and HandledBy (instance name) come from the name tables.
	SLOClass  string `json:"slo_class,omitempty"`
	TenantID  string `json:"tenant_id,omitempty"`
	HandledBy string `json:"handled_by,omitempty"`
	// LengthCapped marks force-completion at the length limit.
	LengthCapped bool `json:"length_capped,omitempty"`
	// GatewayQueueDelayMs is time spent in a gateway queue.
	GatewayQueueDelayMs float64 `json:"gateway_queue_delay_ms,omitempty"`
	// SessionID and RoundIndex locate the request in a multi-turn or agentic session.
	SessionID  string `json:"session_id,omitempty"`
	RoundIndex int32  `json:"round_index"`

	// ClientID (extension) is the workload client's name.
	ClientID string `json:"client_id,omitempty"`
	// PreemptionCount (extension) counts the request's preemptions.
	PreemptionCount int32 `json:"preemption_count,omitempty"`
	// Status (extension) says how a request that did not complete ended; empty when completed.
	Status string `json:"status,omitempty"`
}

// ClassOutput holds one SLO class's statistics. count, slo_attainment, goodput_rps,
// slo_attainment_by_dim, ttft_p99_ms, itl_mean_ms and e2e_p99_ms have BLIS's names and meanings
// (the attainment fields only when the class has targets); the rest are extensions.
//
// Unlike the instance-level itl_* fields, the class ITL statistics are over per-request TPOT
// (requests that generated at least two tokens), as BLIS's per-class itl_mean_ms is.
type ClassOutput struct {
	// Count is the number of requests of the class, whatever their outcome (rejections
	// included, so that shedding load never raises attainment).
	Count int64 `json:"count"`
	// Completed counts the class's completed requests; latency statistics are over them.
	Completed int64 `json:"completed"`
	// SLOAttainment is requests meeting every target / Count (only with targets).
	SLOAttainment *float64 `json:"slo_attainment,omitempty"`
	// GoodputRPS is requests meeting every target per second (only with targets).
	GoodputRPS *float64 `json:"goodput_rps,omitempty"`
	// SLOAttainmentByDim is, per gated dimension, the fraction of completed requests meeting it.
	SLOAttainmentByDim *DimAttainment `json:"slo_attainment_by_dim,omitempty"`

	// TTFT of the class's completed requests: mean and percentiles.
	TTFTMeanMs float64 `json:"ttft_mean_ms"`
	TTFTP50Ms  float64 `json:"ttft_p50_ms"`
	TTFTP90Ms  float64 `json:"ttft_p90_ms"`
	TTFTP95Ms  float64 `json:"ttft_p95_ms"`
	TTFTP99Ms  float64 `json:"ttft_p99_ms"`
	// E2E latency of the class's completed requests.
	E2EMeanMs float64 `json:"e2e_mean_ms"`
	E2EP50Ms  float64 `json:"e2e_p50_ms"`
	E2EP90Ms  float64 `json:"e2e_p90_ms"`
	E2EP95Ms  float64 `json:"e2e_p95_ms"`
	E2EP99Ms  float64 `json:"e2e_p99_ms"`
	// Per-request TPOT of the class's completed requests with at least two output tokens.
	ITLMeanMs float64 `json:"itl_mean_ms"`
	ITLP50Ms  float64 `json:"itl_p50_ms"`
	ITLP90Ms  float64 `json:"itl_p90_ms"`
	ITLP95Ms  float64 `json:"itl_p95_ms"`
	ITLP99Ms  float64 `json:"itl_p99_ms"`
}

// DimAttainment is the per-dimension attainment of a class; a dimension without a target is
// omitted.
type DimAttainment struct {
	// TTFT, ITL and E2E are fractions of completed requests meeting that dimension's target.
	TTFT *float64 `json:"ttft,omitempty"`
	ITL  *float64 `json:"itl,omitempty"`
	E2E  *float64 `json:"e2e,omitempty"`
}

// SLOTarget holds a class's latency targets in µs; 0 leaves a dimension ungated. ITL is compared
// with the request's TPOT (requests with fewer than two tokens meet it).
type SLOTarget struct {
	// TTFT, ITL and E2E are upper bounds in µs.
	TTFT, ITL, E2E int64
}

func (t SLOTarget) gated() bool { return t.TTFT > 0 || t.ITL > 0 || t.E2E > 0 }

// Options tune Finalize.
type Options struct {
	// Targets are per-class SLO targets indexed by class; classes beyond its length, or with an
	// all-zero target, are not gated. With no gated class, goodput and attainment are omitted.
	Targets []SLOTarget
	// Gateway, if not nil, holds requests that never reached an instance (admission
	// rejections). It contributes to the cluster block only.
	Gateway *Collector
	// ClusterID names the cluster block; "cluster" when empty.
	ClusterID string
}

// Report is the result of Finalize: one Output per instance, in the order given, and the
// cluster Output. Only the cluster Output carries request rows.
type Report struct {
	// Instances holds one block per instance collector, in Finalize's order.
	Instances []Output
	// Cluster aggregates every instance (and the gateway collector).
	Cluster Output
}

// Finalize builds the per-instance and cluster outputs. clockUs is the simulation clock at the
// last event. Cluster statistics are computed over the union of all instances' samples (never
// averaged percentiles). Finalize does not modify the samples a collector reports, but sorts its
// ITL pairs in place; collectors remain usable.
func Finalize(instances []*Collector, clockUs int64, names *workload.Tables, opts Options) Report {
	dur := float64(clockUs) / 1e6
	var rep Report
	rep.Instances = make([]Output, len(instances))
	for i, c := range instances {
		rep.Instances[i] = build(c.Name, []*Collector{c}, &c.itl, dur, names, opts.Targets)
	}
	all := slices.Clone(instances)
	if opts.Gateway != nil {
		all = append(all, opts.Gateway)
	}
	var itl WeightedSamples
	for _, c := range all {
		itl.Merge(&c.itl)
	}
	id := opts.ClusterID
	if id == "" {
		id = "cluster"
	}
	rep.Cluster = build(id, all, &itl, dur, names, opts.Targets)
	rep.Cluster.Requests = rows(all, instances, names)
	return rep
}

// build computes one Output over the given collectors.
func build(id string, cols []*Collector, itl *WeightedSamples, dur float64, names *workload.Tables, targets []SLOTarget) Output {
	var counts Counts
	var events Events
	var n int
	var classes int
	for _, c := range cols {
		counts.add(c.counts)
		events.add(c.Events)
		n += len(c.samples)
		classes = max(classes, len(c.classReq))
	}
	o := Output{
		InstanceID:           id,
		CompletedRequests:    counts.Completed,
		StillQueued:          counts.StillQueued,
		StillRunning:         counts.StillRunning,
		InjectedRequests:     counts.Injected(),
		TotalInputTokens:     counts.InputTokens,
		TotalOutputTokens:    counts.OutputTokens,
		VllmDurationSec:      dur,
		KVAllocationFailures: events.KVAllocationFailures,
		PreemptionCount:      events.Preemptions,
		DroppedUnservable:    counts.Dropped,
		LengthCappedRequests: counts.LengthCapped,
		TimedOutRequests:     counts.TimedOut,
		RejectedRequests:     counts.Rejected,
	}
	if events.CacheLookups > 0 {
		r := float64(events.CacheHits) / float64(events.CacheLookups)
		o.CacheHitRate = &r
	}

	samples := make([]sample, 0, n)
	for _, c := range cols {
		samples = append(samples, c.samples...)
	}
	// BLIS computes latency statistics only when something completed.
	if counts.Completed > 0 {
		var d dist
		d.fill(samples, func(s *sample) (float64, bool) { return s.ttft, true })
		o.TTFTMeanMs, o.TTFTP50Ms, o.TTFTP90Ms, o.TTFTP95Ms, o.TTFTP99Ms = d.ms()
		d.fill(samples, func(s *sample) (float64, bool) { return s.e2e, true })
		o.E2EMeanMs, o.E2EP50Ms, o.E2EP90Ms, o.E2EP95Ms, o.E2EP99Ms = d.ms()
		d.fill(samples, func(s *sample) (float64, bool) { return s.sched, true })
		o.SchedulingDelayP99Ms = PercentileMs(d.v, 99)
		o.ITLMeanMs = itl.Mean() / 1000
		o.ITLP50Ms = itl.PercentileMs(50)
		o.ITLP90Ms = itl.PercentileMs(90)
		o.ITLP95Ms = itl.PercentileMs(95)
		o.ITLP99Ms = itl.PercentileMs(99)
		if dur > 0 {
			o.ResponsesPerSec = float64(counts.Completed) / dur
			o.TokensPerSec = float64(counts.OutputTokens) / dur
		}
	}

	// Per-class statistics: group the samples by class with a stable counting sort.
	if classes == 0 {
		return o
	}
	reqs := make([]int64, classes)
	for _, c := range cols {
		for k, v := range c.classReq {
			reqs[k] += v
		}
	}
	start := make([]int, classes+1)
	for i := range samples {
		if k := samples[i].class; k >= 0 && int(k) < classes {
			start[k+1]++
		}
	}
	for k := range classes {
		start[k+1] += start[k]
	}
	grouped := make([]sample, start[classes])
	next := slices.Clone(start[:classes])
	for i := range samples {
		if k := samples[i].class; k >= 0 && int(k) < classes {
			grouped[next[k]] = samples[i]
			next[k]++
		}
	}
	o.PerClass = make(map[string]*ClassOutput)
	var good, gatedReqs int64
	anyGated := false
	var d dist
	for k := range classes {
		if reqs[k] == 0 {
			continue
		}
		cs := grouped[start[k]:start[k+1]]
		co := &ClassOutput{Count: reqs[k], Completed: int64(len(cs))}
		d.fill(cs, func(s *sample) (float64, bool) { return s.ttft, true })
		co.TTFTMeanMs, co.TTFTP50Ms, co.TTFTP90Ms, co.TTFTP95Ms, co.TTFTP99Ms = d.ms()
		d.fill(cs, func(s *sample) (float64, bool) { return s.e2e, true })
		co.E2EMeanMs, co.E2EP50Ms, co.E2EP90Ms, co.E2EP95Ms, co.E2EP99Ms = d.ms()
		d.fill(cs, func(s *sample) (float64, bool) { return s.tpot, s.hasTPOT })
		co.ITLMeanMs, co.ITLP50Ms, co.ITLP90Ms, co.ITLP95Ms, co.ITLP99Ms = d.ms()
		if k < len(targets) && targets[k].gated() {
			anyGated = true
			g := attain(co, cs, targets[k], dur)
			good += g
			gatedReqs += co.Count
		}
		name := className(names, k)
		if _, dup := o.PerClass[name]; dup {
			name += "#" + strconv.Itoa(k)
		}
		o.PerClass[name] = co
	}
	if anyGated {
		o.GoodputRPS = ptr(ratio(float64(good), dur))
		o.SLOAttainment = ptr(ratio(float64(good), float64(gatedReqs)))
	}
	return o
}

// attain fills the class's attainment fields and returns how many requests met every target.
func attain(co *ClassOutput, cs []sample, t SLOTarget, dur float64) int64 {
	var good, ttftOK, itlOK, e2eOK int64
	for i := range cs {
		s := &cs[i]
		okT := t.TTFT <= 0 || s.ttft <= float64(t.TTFT)
		okI := t.ITL <= 0 || !s.hasTPOT || s.tpot <= float64(t.ITL)
		okE := t.E2E <= 0 || s.e2e <= float64(t.E2E)
		if okT {
			ttftOK++
		}
		if okI {
			itlOK++
		}
		if okE {
			e2eOK++
		}
		if okT && okI && okE {
			good++
		}
	}
	n := float64(len(cs))
	dim := &DimAttainment{}
	if t.TTFT > 0 {
		dim.TTFT = ptr(ratio(float64(ttftOK), n))
	}
	if t.ITL > 0 {
		dim.ITL = ptr(ratio(float64(itlOK), n))
	}
	if t.E2E > 0 {
		dim.E2E = ptr(ratio(float64(e2eOK), n))
	}
	co.SLOAttainmentByDim = dim
	co.SLOAttainment = ptr(ratio(float64(good), float64(co.Count)))
	co.GoodputRPS = ptr(ratio(float64(good), dur))
	return good
}

// dist is a reusable buffer of sorted values in µs.
type dist struct{ v []float64 }

// fill loads the selected values of samples and sorts them.
func (d *dist) fill(samples []sample, get func(*sample) (float64, bool)) {
	d.v = d.v[:0]
	for i := range samples {
		if v, ok := get(&samples[i]); ok {
			d.v = append(d.v, v)
		}
	}
	slices.Sort(d.v)
}

// ms returns mean, p50, p90, p95 and p99 in milliseconds.
func (d *dist) ms() (mean, p50, p90, p95, p99 float64) {
	return Mean(d.v) / 1000, PercentileMs(d.v, 50), PercentileMs(d.v, 90), PercentileMs(d.v, 95), PercentileMs(d.v, 99)
}

// rows returns the request rows of every collector that kept them, sorted by arrival then ID.
func rows(cols, instances []*Collector, names *workload.Tables) []RequestRow {
	var n int
	for _, c := range cols {
		n += len(c.rows)
	}
	if n == 0 {
		return nil
	}
	recs := make([]*RequestRecord, 0, n)
	for _, c := range cols {
		for i := range c.rows {
			recs = append(recs, &c.rows[i])
		}
	}
	slices.SortFunc(recs, func(a, b *RequestRecord) int {
		return cmp.Or(cmp.Compare(a.Arrival, b.Arrival), cmp.Compare(a.ID, b.ID))
	})
	var tenants, clients []string
	if names != nil {
		tenants, clients = names.Tenants, names.Clients
	}
	out := make([]RequestRow, len(recs))
	for i, r := range recs {
		row := RequestRow{
			ArrivedAt:           float64(r.Arrival) / 1e6,
			ID:                  "request_" + strconv.FormatUint(r.ID, 10),
			NumPrefillTokens:    r.InputTokens,
			NumDecodeTokens:     r.OutputTokens,
			TTFTMs:              float64(r.TTFT) / 1000,
			ITLMs:               r.TPOT() / 1000,
			E2EMs:               float64(r.E2E) / 1000,
			SchedulingDelayMs:   float64(r.SchedulingDelay) / 1000,
			TenantID:            tableName(tenants, r.Tenant),
			LengthCapped:        r.LengthCapped,
			GatewayQueueDelayMs: float64(r.GatewayQueueDelay) / 1000,
			RoundIndex:          r.Round,
			ClientID:            tableName(clients, r.Client),
			PreemptionCount:     r.Preemptions,
		}
		if r.Class >= 0 {
			row.SLOClass = className(names, int(r.Class))
		}
		if r.Instance >= 0 && int(r.Instance) < len(instances) {
			row.HandledBy = instances[r.Instance].Name
		}
		if r.Session != 0 {
			row.SessionID = strconv.FormatUint(r.Session, 10)
		}
		if r.Status != StatusCompleted {
			row.Status = r.Status.String()
		}
		out[i] = row
	}
	return out
}

// Stdout returns o as BLIS prints it on standard output: without the file-only fields
// (requests and cache_hit_rate).
func (o Output) Stdout() Output {
	o.Requests = nil
	o.CacheHitRate = nil
	return o
}

// WriteBLIS writes the report in BLIS's standard-output layout: each instance's block, then the
// cluster block, each preceded by the "=== Simulation Metrics ===" header line and indented by
// two spaces, in the stdout form (see Output.Stdout).
func (r *Report) WriteBLIS(w io.Writer) error {
	for i := range r.Instances {
		if err := writeBlock(w, r.Instances[i].Stdout()); err != nil {
			return err
		}
	}
	return writeBlock(w, r.Cluster.Stdout())
}

func writeBlock(w io.Writer, o Output) error {
	data, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return err
	}
	if _, err := io.WriteString(w, "=== Simulation Metrics ===\n"); err != nil {
		return err
	}
	data = append(data, '\n')
	_, err = w.Write(data)
	return err
}

func ratio(num, den float64) float64 {
	if den <= 0 {
		return 0
	}
	return num / den
}

func ptr(v float64) *float64 { return &v }
