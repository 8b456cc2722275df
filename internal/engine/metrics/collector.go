// Package metrics turns what the simulator observes into upstream BLIS's metrics output
// (sim.MetricsOutput): the same JSON field names, units, order and percentile rule, so results
// can be compared with BLIS and read by tools written for it.
//
// # Definitions (all from BLIS)
//
//   - TTFT = end of the step that finishes the prompt + α_out − arrival, where α_out is the
//     latency model's per-output-token overhead (not added to the clock).
//   - Each later decode step contributes one inter-token gap, step time + α_out.
//   - E2E = TTFT + Σ gaps + PostDecodeFixedOverhead (the overhead only when output > 0).
//   - Per-request ITL (the itl_ms of a request row) = Σ gaps / (output tokens − 1), i.e. TPOT.
//   - Scheduling delay = admission into the running batch − arrival (includes queueing time).
//   - itl_* aggregates are over all individual gaps of the instance, not over per-request TPOT.
//   - Sample populations, as in BLIS: ttft_* over every request that produced a first token
//     (including those still running or later timed out), e2e_* over completed requests,
//     scheduling_delay_* over every request admitted into a running batch, itl_* over every
//     gap; all of them are reported only when at least one request completed.
//   - Percentiles interpolate linearly at rank p/100·(n−1) of the sorted values (Percentile).
//   - responses_per_sec = completed / vllm_estimated_duration_s, the duration being the
//     simulation clock at the last event, drain tail included.
//
// The simulator computes TTFT, E2E and the gaps (it knows α_out and the overhead) and reports
// them in microseconds; this package aggregates and formats them.
//
// # Memory
//
// A Collector keeps one small record of samples per request that was scheduled (TTFT, E2E,
// scheduling delay, TPOT and the request's own SLO target as float64, the class, tenant and
// adapter indexes and flags: 64 bytes, so 100,000 requests take about 6.4 MB)
// and the inter-token gaps as (value, count) pairs merged by value (WeightedSamples), whose size
// is bounded by the number of distinct gap values, not by the number of tokens. Full per-request
// rows are kept only when asked for (NewCollector's keepRows).
//
// # Determinism
//
// Nothing here iterates a map or reads the clock; output order is fixed by instance order and
// (arrival, ID) for request rows; JSON maps (per_class) are written by encoding/json in sorted
// key order. Float formatting is encoding/json's, which is deterministic.
package metrics

import (
	"strconv"

	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// Status says how a request ended (or where it was when the run stopped).
type Status int8

// Request statuses, as recorded by Collector.Record.
const (
	// StatusCompleted: all output tokens generated.
	StatusCompleted Status = iota
	// StatusTimedOut: cancelled by its client timeout.
	StatusTimedOut
	// StatusDropped: unservable (longer than the model's context or the KV cache).
	StatusDropped
	// StatusRejected: refused by cluster admission; recorded on a gateway collector.
	StatusRejected
	// StatusQueued: still waiting when the run ended.
	StatusQueued
	// StatusRunning: still in the running batch when the run ended.
	StatusRunning
)

// String returns the status as written in request rows.
func (s Status) String() string {
	switch s {
	case StatusCompleted:
		return "completed"
	case StatusTimedOut:
		return "timed_out"
	case StatusDropped:
		return "dropped_unservable"
	case StatusRejected:
		return "rejected"
	case StatusQueued:
		return "still_queued"
	case StatusRunning:
		return "still_running"
	}
	return "unknown"
}

// RequestRecord is what the simulator reports about one request, in engine units. Latencies
// that the request never reached are 0.
type RequestRecord struct {
	// ID is the workload's request ID.
	ID uint64
	// Status says how the request ended.
	Status Status
	// Arrival is the arrival time at the cluster in µs.
	Arrival int64
	// InputTokens is the prompt length; OutputTokens the number of tokens generated.
	InputTokens, OutputTokens int32
	// TTFT, E2E, ITLSum (sum of the request's inter-token gaps), SchedulingDelay and
	// GatewayQueueDelay (time held in a gateway/flow-control queue) are in µs.
	TTFT, E2E, ITLSum, SchedulingDelay, GatewayQueueDelay int64
	// ITLCount is the number of gaps in ITLSum; 0 means OutputTokens − 1.
	ITLCount int32
	// Scheduled is set when the request was ever admitted into a running batch, i.e. when
	// SchedulingDelay is meaningful (it may legitimately be 0). Completed requests count as
	// scheduled whatever its value.
	Scheduled bool
	// Class, Tenant and Client index the workload's name tables.
	Class, Tenant, Client int32
	// Instance is the index of the instance that handled the request, -1 for none.
	Instance int32
	// Session and Round identify a multi-turn or agentic session step (Session 0 = none).
	Session uint64
	Round   int32
	// Preemptions counts how often the request was preempted.
	Preemptions int32
	// LengthCapped is set when the request was force-completed at the model's length limit.
	LengthCapped bool
	// Model and Adapter index the workload's Models and Adapters tables (0 = none).
	Model, Adapter int32
	// SLOTarget is the request's own TTFT target in µs (0 = none); see Options.Targets for
	// how it composes with its class's targets.
	SLOTarget int64
}

// TPOT returns the request's mean inter-token gap in µs: ITLSum / ITLCount, or, when ITLCount
// is 0, ITLSum / (OutputTokens − 1) as BLIS computes it. It is 0 when there is no gap.
func (r *RequestRecord) TPOT() float64 {
	if n := r.gaps(); n > 0 {
		return float64(r.ITLSum) / float64(n)
	}
	return 0
}

func (r *RequestRecord) gaps() int32 {
	if r.ITLCount > 0 {
		return r.ITLCount
	}
	return max(r.OutputTokens-1, 0)
}

// Counts are the request counters a Collector maintains from Record calls.
type Counts struct {
	// Completed, TimedOut, Dropped (unservable), Rejected, StillQueued and StillRunning count
	// requests by status.
	Completed, TimedOut, Dropped, Rejected, StillQueued, StillRunning int64
	// InputTokens sums the prompts of requests accepted by the instance (every status but
	// dropped and rejected, as BLIS counts prompts at enqueue); OutputTokens sums the tokens
	// generated by completed requests.
	InputTokens, OutputTokens int64
	// LengthCapped counts completed requests force-completed at the length limit.
	LengthCapped int64
}

// Injected returns the number of requests that reached the instance, BLIS's injected_requests:
// completed + still queued + still running + dropped + timed out (rejections are not injected).
func (c Counts) Injected() int64 {
	return c.Completed + c.StillQueued + c.StillRunning + c.Dropped + c.TimedOut
}

func (c *Counts) add(o Counts) {
	c.Completed += o.Completed
	c.TimedOut += o.TimedOut
	c.Dropped += o.Dropped
	c.Rejected += o.Rejected
	c.StillQueued += o.StillQueued
	c.StillRunning += o.StillRunning
	c.InputTokens += o.InputTokens
	c.OutputTokens += o.OutputTokens
	c.LengthCapped += o.LengthCapped
}

// Events are counters the simulator increments directly as things happen.
type Events struct {
	// Preemptions counts recompute preemptions.
	Preemptions int64
	// KVAllocationFailures counts KV allocations that failed where they must not (BLIS reports
	// them as an accounting anomaly); ordinary admission back-pressure is not a failure.
	KVAllocationFailures int64
	// CacheLookups and CacheHits count prompt blocks looked up in and found in the prefix
	// cache (blocks, as BLIS counts them: kvcache.Stats' LookupBlocks and HitBlocks);
	// cache_hit_rate = CacheHits / CacheLookups.
	CacheLookups, CacheHits int64
}

func (e *Events) add(o Events) {
	e.Preemptions += o.Preemptions
	e.KVAllocationFailures += o.KVAllocationFailures
	e.CacheLookups += o.CacheLookups
	e.CacheHits += o.CacheHits
}

// sample is what a request leaves behind for the statistics when rows are not kept.
type sample struct {
	ttft, e2e, sched, tpot float64 // µs
	slo                    float64 // the request's own TTFT target, µs (0 = none)
	class, tenant, adapter int32
	flags                  uint8
}

// Sample flags: which fields of a sample are part of their statistic's population.
const (
	fCompleted uint8 = 1 << iota // e2e and per-class statistics
	fTTFT                        // produced a first token
	fSched                       // admitted into a running batch
	fTPOT                        // completed with at least one gap
)

func (s *sample) has(f uint8) bool { return s.flags&f != 0 }

// Collector accumulates the metrics of one instance (or, with only StatusRejected records, of
// the cluster gateway). It is not safe for concurrent use.
type Collector struct {
	// Name is the instance_id written to the output ("instance_0", ...).
	Name string
	// Events are updated by the simulator directly.
	Events Events

	counts   Counts
	samples  []sample
	itl      WeightedSamples
	classReq []int64 // requests recorded per class index, any status
	classRej []int64 // rejections per class index
	// tenantReq and tenantRej are the same per tenant index.
	tenantReq, tenantRej []int64
	// classSLO counts, per class index, the requests with their own SLO target.
	classSLO []int64
	// adapterOut sums the output tokens of completed requests per adapter index (index 0,
	// no adapter, unused), with an entry for every adapter seen; nil while none was.
	adapterOut []int64
	keepRows   bool
	rows       []RequestRecord
}

// NewCollector returns an empty collector. With keepRows it also keeps a copy of every
// RequestRecord for the per-request rows of the output file (O(requests) memory).
func NewCollector(name string, keepRows bool) *Collector {
	return &Collector{Name: name, keepRows: keepRows}
}

// Completed records a completed request; it is Record with r.Status set to StatusCompleted.
func (c *Collector) Completed(r *RequestRecord) {
	r.Status = StatusCompleted
	c.Record(r)
}

// Record records a request that left the simulation (or was still in it at the end) with
// status r.Status. Every request must be recorded exactly once, on the collector of the instance
// that last held it (or the gateway collector for rejections).
func (c *Collector) Record(r *RequestRecord) {
	switch r.Status {
	case StatusCompleted:
		c.counts.Completed++
		c.counts.OutputTokens += int64(r.OutputTokens)
		if r.LengthCapped {
			c.counts.LengthCapped++
		}
	case StatusTimedOut:
		c.counts.TimedOut++
	case StatusDropped:
		c.counts.Dropped++
	case StatusRejected:
		c.counts.Rejected++
	case StatusQueued:
		c.counts.StillQueued++
	case StatusRunning:
		c.counts.StillRunning++
	}
	if r.Status != StatusDropped && r.Status != StatusRejected {
		c.counts.InputTokens += int64(r.InputTokens)
	}
	var f uint8
	if r.Status == StatusCompleted {
		f |= fCompleted | fSched
		if r.gaps() > 0 {
			f |= fTPOT
		}
	}
	if r.TTFT > 0 {
		f |= fTTFT
	}
	if r.Scheduled {
		f |= fSched
	}
	if f != 0 {
		c.samples = append(c.samples, sample{
			ttft:    float64(r.TTFT),
			e2e:     float64(r.E2E),
			sched:   float64(r.SchedulingDelay),
			tpot:    r.TPOT(),
			slo:     float64(r.SLOTarget),
			class:   r.Class,
			tenant:  r.Tenant,
			adapter: r.Adapter,
			flags:   f,
		})
	}
	rejected := r.Status == StatusRejected
	countAt(&c.classReq, &c.classRej, r.Class, rejected)
	countAt(&c.tenantReq, &c.tenantRej, r.Tenant, rejected)
	if r.SLOTarget > 0 && r.Class >= 0 {
		for int(r.Class) >= len(c.classSLO) {
			c.classSLO = append(c.classSLO, 0)
		}
		c.classSLO[r.Class]++
	}
	if r.Adapter > 0 {
		for int(r.Adapter) >= len(c.adapterOut) {
			c.adapterOut = append(c.adapterOut, 0)
		}
		if r.Status == StatusCompleted {
			c.adapterOut[r.Adapter] += int64(r.OutputTokens)
		}
	}
	if c.keepRows {
		c.rows = append(c.rows, *r)
	}
}

// countAt counts a request of index i (< 0: none) in req, and in rej when rejected, growing
// both to cover i.
func countAt(req, rej *[]int64, i int32, rejected bool) {
	if i < 0 {
		return
	}
	for int(i) >= len(*req) {
		*req = append(*req, 0)
		*rej = append(*rej, 0)
	}
	(*req)[i]++
	if rejected {
		(*rej)[i]++
	}
}

// AddITL records count inter-token gaps of gapUs µs each: one decode step that produced a token
// for count requests.
func (c *Collector) AddITL(gapUs, count int64) {
	c.itl.Add(float64(gapUs), count)
}

// Counts returns the request counters.
func (c *Collector) Counts() Counts { return c.counts }

// ITL returns the collector's inter-token gap samples (µs). The caller must not modify them.
func (c *Collector) ITL() *WeightedSamples { return &c.itl }

// className returns the output name of class index i: the workload's name, "default" for an
// empty name (as BLIS folds an empty SLO class), or "class_<i>" when the table lacks it.
func className(names *workload.Tables, i int) string {
	if names != nil && i < len(names.SLOClasses) {
		if n := names.SLOClasses[i]; n != "" {
			return n
		}
		return "default"
	}
	return "class_" + strconv.Itoa(i)
}

func tableName(table []string, i int32) string {
	if i >= 0 && int(i) < len(table) {
		return table[i]
	}
	return ""
}
