// Package sim is the simulation core: a deterministic discrete-event model of a cluster of
// vLLM v1 replicas sharing one clock, with online admission, priority and routing at arrival.
//
// # Event loop
//
// A run is a single-threaded loop over a value-typed event heap ordered by (time, kind,
// insertion sequence); kinds follow the request pipeline (cluster arrival, admission, routing,
// instance arrival, wait-queue entry, step, timeout). Requests stream in from a workload.Source
// one at a time and live in a slab of reusable slots, so memory is proportional to the
// requests in flight, not to the workload. Randomness comes only from the partitioned streams
// of the master seed (the router gets the "router" stream); nothing reads the wall clock,
// iterates a map or starts a goroutine, so a run is a pure function of its input.
//
// # Control plane
//
// With Config.Policy set, a run builds a fresh policy.Pipeline from the bundle and every request
// goes through it: at cluster arrival the router records it (and hashes its prompt when a
// policy reads the prefix index); after the admission latency the admission policy admits,
// rejects (the request leaves on the gateway collector and a reactive source hears Rejected) or
// delays it (it asks again later; past its deadline it times out at the gateway); after the
// routing latency the priority policy scores it and the routing policy picks its instance. The
// router decides on snapshots from a policy.SnapshotProvider over the live instances, so each
// field is as stale as the bundle's observability settings say; periodic fields are refreshed
// by events on their grid (after the steps of the instant), which skip idle time and never
// extend a run. With a cache-signal delay the precise prefix producer hears of the blocks an
// instance stores that much later (cachesignal.go), as llm-d's KV events reach the router. Instances keep rolling estimates of recent TTFT, TPOT, prefix-cache hit rate
// and step time for the snapshots. The router's books are released when a request leaves its
// instance. Inside instances, the wait queue follows the bundle's scheduler (fcfs keeps the
// O(1) deque, any other ordering a heap over the requests' scheduler keys, whose priority is
// the priority stage's score, higher = more urgent) and preemption victims follow its
// preemption ordering. Without a bundle a fast path skips the pipeline: always-admit and
// round-robin (or Config.Router), fcfs queues, and the instance's own preemption setting; it
// gives the same results as an empty bundle.
//
// # Instances
//
// Each instance forms batches as vLLM v1's scheduler does, as upstream BLIS models it: running
// requests first, in order, each getting its remaining prefill chunk (capped by the
// long-prefill threshold, the token budget and max-model-len) or one decode token, with
// recompute preemption (fcfs: the tail; priority: the largest (priority, arrival)) when KV
// blocks run out; then, if nothing was preempted, admissions from the head of the wait queue
// with prefix-cache reuse, until the batch or the budget is full or an allocation fails. TTFT,
// inter-token gaps, E2E, scheduling delay, enqueue guards (max-model-len, KV capacity) and
// per-request timeouts follow BLIS's definitions.
//
// A step walks the running batch twice (formation, then execution and completions), touching
// each request's small batch entry; decode tokens that fit in a request's last KV block are
// only counted, and the cache is told at block boundaries (same blocks, same order). A
// reference mode in the tests tells the cache every token and must give identical results.
//
// # Cluster dynamics
//
// Three switches, all off by default, change the cluster under load (docs/cluster-dynamics.md):
// Config.Autoscale (autoscale.go, lifecycle.go) sizes the instances to the maximum replicas and
// moves them through off, provisioning, warming, ready and draining on evaluation and lifecycle
// events, routing to ready instances only; InstanceConfig.CPUTier (tier.go) adds a CPU KV tier
// with write-through offload and reloads charged to the admitting step; Config.PD (pd.go)
// splits the instances into prefill and decode pools joined by a shared KV transfer link. With
// all of them off the step loop runs as before and results are unchanged.
//
// # Differences from upstream BLIS
//
//   - A prefill chunk's context for the latency model is the tokens already cached (prefix
//     hit plus earlier chunks); BLIS passes 0 for a request's first chunk after a prefix hit.
//   - When a claimed prefix cannot be completed by a new allocation, the claimed blocks go
//     back to the free list's tail (the cache has no "peek then claim" operation).
//   - Without max-model-len (API use only; the CLI always derives it), a request that can
//     never fit in the cache is dropped instead of being recomputed forever.
//   - Requests in the API-server queueing delay count as still queued at the end of a run.
package sim

import (
	"errors"
	"fmt"
	"strings"

	"github.com/inference-sim/blis-operator/internal/engine/kvcache"
	"github.com/inference-sim/blis-operator/internal/engine/latency"
	"github.com/inference-sim/blis-operator/internal/engine/metrics"
	"github.com/inference-sim/blis-operator/internal/engine/rng"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// sloPriority maps SLO class names to cluster priorities (higher = more important), the GAIE
// defaults BLIS uses; instances use the negation (vLLM: lower = more urgent).
var sloPriority = map[string]int32{
	"critical":   4,
	"standard":   3,
	"batch":      -1,
	"sheddable":  -2,
	"background": -3,
}

// simulation is the state of one run.
type simulation struct {
	cfg   *Config
	insts []instance
	slab  slab
	heap  eventHeap
	dead  deadlineQueue
	src   workload.Source
	react workload.Reactive
	ctl   *control    // the policy pipeline; nil without a bundle
	as    *autoscaler // nil without autoscaling
	pd    *disagg     // nil without prefill/decode disaggregation
	// restrict is the scratch space of restricted routing (autoscaling, disaggregation).
	restrict restriction
	router   Router
	snaps    []Snapshot
	routeRq  RouteRequest
	pull     workload.Request
	inject   func(*workload.Request)

	now        int64
	srcSlot    int32 // slot of the source request whose arrival is scheduled, -1 if none
	timeout    int64
	admLat     int64
	routeLat   int64
	classPrio  []int32
	modelsOK   int32 // entries of the workload's Models table checked against the served models
	unrouted   int64
	err        error
	res        *Result
	recIdx     []int64 // per slot: index into res.Records
	invariants bool
	// eagerKV makes decode tokens allocate KV one by one (the reference stepper of the tests).
	eagerKV bool
	// observe, when set (tests), is called after every processed event.
	observe func(ev event)
	// ser records the time series (Options.Series); nil when off.
	ser *seriesRecorder
	// progressAt is the event count of the last Options.Progress call.
	progressAt int64
}

// Run simulates the workload src on the cluster cfg and returns the result. The configuration is
// validated first (a bad policy bundle fails before the simulation starts). Run never retains
// src or cfg after it returns, and the same (cfg, workload) always gives the same result.
func Run(cfg *Config, src workload.Source) (*Result, error) {
	if cfg == nil || src == nil {
		return nil, errors.New("sim: nil config or source")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s, err := newSimulation(cfg, src)
	if err != nil {
		return nil, err
	}
	if err := s.run(); err != nil {
		return nil, err
	}
	return s.res, nil
}

func newSimulation(cfg *Config, src workload.Source) (*simulation, error) {
	streams := rng.New(cfg.Seed)
	s := &simulation{
		cfg:        cfg,
		src:        src,
		srcSlot:    -1,
		timeout:    cfg.Timeout,
		admLat:     cfg.AdmissionLatency,
		routeLat:   cfg.RoutingLatency,
		res:        &Result{Instances: make([]InstanceStats, len(cfg.Instances))},
		invariants: cfg.Options.CheckInvariants,
	}
	if s.timeout == 0 {
		s.timeout = DefaultTimeout
	}
	s.react, _ = src.(workload.Reactive)
	s.inject = s.injectRequest
	if err := s.checkModels(); err != nil {
		return nil, err
	}
	if t := src.Tables(); t != nil {
		s.classPrio = make([]int32, len(t.SLOClasses))
		for i, name := range t.SLOClasses {
			s.classPrio[i] = -sloPriority[name] // unknown classes get 0
		}
	}
	s.insts = make([]instance, len(cfg.Instances))
	for i := range cfg.Instances {
		c := &cfg.Instances[i]
		in := &s.insts[i]
		in.idx = int32(i)
		in.cfg = c
		in.lat = c.Latency
		in.kv = kvcache.New(c.TotalKVBlocks, c.BlockSize)
		in.alphaOut = c.Latency.OutputTokenProcessingTime()
		in.postDecode = c.Latency.PostDecodeFixedOverhead()
		in.priorityVictims = c.Preemption == PreemptPriority
		in.stats = &s.res.Instances[i]
		in.col = metrics.NewCollector(rng.InstanceName(i), cfg.Options.RequestRecords)
		s.res.Collectors = append(s.res.Collectors, in.col)
		in.shape.Prefill = make([]latency.PrefillChunk, 0, 16)
		in.itlDiff = make([]int32, 1, 1024) // one slot past the last step (difference array)
		in.cumGaps = make([]int64, 1, 1024) // cumGaps[0] = 0: no steps yet
		in.newTier()
	}
	if cfg.Autoscale != nil {
		if err := s.newAutoscaler(streams); err != nil {
			return nil, err
		}
	}
	if cfg.PD != nil {
		if err := s.newDisagg(); err != nil {
			return nil, err
		}
	}
	if cfg.Options.Series {
		s.ser = newSeriesRecorder(cfg.Horizon, s.insts, s.readyCount())
	}
	if cfg.Policy != nil {
		if err := s.newControl(streams); err != nil {
			return nil, err
		}
		return s, nil
	}
	factory := cfg.Router
	if factory == nil {
		factory = RoundRobin
	}
	s.router = factory(len(cfg.Instances), streams.Stream(rng.Router))
	s.snaps = make([]Snapshot, len(cfg.Instances))
	return s, nil
}

// run is the event loop.
func (s *simulation) run() error {
	s.pullSource()
	if s.ctl != nil && s.ctl.tick > 0 {
		s.heap.push(0, evSnapshotTick, -1, -1)
	}
	horizon := s.cfg.Horizon
	for s.err == nil {
		// The next event is the earlier of the event heap's and the deadline queue's heads.
		var next *event
		fromDead := false
		if s.heap.len() > 0 {
			next = s.heap.peek()
		}
		if s.dead.len() > 0 && (next == nil || s.dead.peek().before(next)) {
			next, fromDead = s.dead.peek(), true
		}
		if next == nil || (horizon > 0 && next.time > horizon) {
			break
		}
		if !fromDead && next.kind() == evSnapshotTick && s.heap.len() == 1 && s.dead.len() == 0 {
			break // nothing left to observe
		}
		var ev event
		if fromDead {
			ev = s.dead.pop()
		} else {
			ev = s.heap.pop()
		}
		if ev.time < s.now {
			return fmt.Errorf("sim: clock would move backwards from %d to %d", s.now, ev.time)
		}
		s.now = ev.time
		s.res.Events++
		switch ev.kind() {
		case evClusterArrival:
			if s.ser != nil {
				s.ser.arrival(s.now)
			}
			s.onClusterArrival(ev.req)
		case evAdmission:
			s.onAdmission(ev.req)
		case evRouting:
			s.onRouting(ev.req)
		case evInstanceArrival:
			s.onInstanceArrival(ev.req)
		case evQueued:
			s.onQueued(ev.req)
		case evStep:
			s.onStep(&s.insts[ev.inst])
		case evSnapshotTick:
			s.res.Events-- // an observation, not a simulated event: runs compare equal with or without
			s.onSnapshotTick()
		case evTimeout:
			s.onTimeout(ev.req)
		case evLifecycle:
			s.onLifecycle(ev.inst, ev.req)
			if s.ser != nil {
				s.ser.setReady(s.now, s.readyCount())
			}
		case evAutoscale:
			s.onAutoscale()
			if s.ser != nil {
				s.ser.setReady(s.now, s.readyCount())
			}
		}
		if s.cfg.Options.Progress != nil && s.res.Events&(progressEvery-1) == 0 && s.res.Events != s.progressAt {
			s.progressAt = s.res.Events
			s.progress()
		}
		if s.invariants && s.err == nil {
			s.err = s.checkInvariants()
		}
		if s.observe != nil {
			s.observe(ev)
		}
	}
	if s.err != nil {
		return s.err
	}
	s.finish()
	if s.cfg.Options.Progress != nil {
		s.progress()
	}
	return nil
}

// onStep runs a step of in and what observes it: the router's delayed cache signal and the
// time series.
func (s *simulation) onStep(in *instance) {
	in.lastEvent(s.now)
	s.step(in, s.now)
	if s.ctl != nil && s.ctl.signal != nil && s.ctl.signal.on {
		s.reportStores(in)
	}
	if s.ser != nil {
		s.ser.step(in, s.now)
	}
}

// pullSource schedules the source's next request, if any.
func (s *simulation) pullSource() {
	s.srcSlot = -1
	if !s.src.Next(&s.pull) {
		return
	}
	s.srcSlot = s.addRequest(&s.pull)
}

// injectRequest adds a reactive follow-up request.
func (s *simulation) injectRequest(r *workload.Request) {
	s.addRequest(r)
}

// addRequest copies w into a new slot and schedules its cluster arrival.
func (s *simulation) addRequest(w *workload.Request) int32 {
	if s.err != nil {
		return -1
	}
	if err := checkRequest(w, s.now); err != nil {
		s.err = err
		return -1
	}
	if w.Model > 0 && w.Model >= s.modelsOK {
		// A trace's model table grows as rows are read.
		if err := s.checkModels(); err != nil {
			s.err = err
			return -1
		}
	}
	slot := s.slab.alloc()
	r := &s.slab.reqs[slot]
	r.id = w.ID
	r.arrival = w.Arrival
	r.input = w.InputLen
	r.output = w.OutputLen
	r.client, r.tenant, r.class = w.Client, w.Tenant, w.Class
	r.session, r.round = w.Session, w.Round
	r.attrs = w.Attrs
	r.segs = append(r.segs[:0], w.Segments...)
	r.inst = -1
	r.state = stArriving
	if int(w.Class) < len(s.classPrio) && w.Class >= 0 {
		r.priority = s.classPrio[w.Class]
	}
	timeout := w.Timeout // < 0: never times out
	if timeout == 0 {
		timeout = s.timeout
	}
	if timeout > 0 {
		r.deadline = w.Arrival + timeout
	}
	s.res.Generated++
	if s.cfg.Options.RequestRecords {
		for len(s.recIdx) < len(s.slab.reqs) {
			s.recIdx = append(s.recIdx, -1)
		}
		s.recIdx[slot] = int64(len(s.res.Records))
		s.res.Records = append(s.res.Records, RequestRecord{ID: w.ID, Arrival: w.Arrival, Instance: -1})
	}
	s.heap.push(w.Arrival, evClusterArrival, -1, slot)
	return slot
}

func checkRequest(w *workload.Request, now int64) error {
	switch {
	case w.Arrival < now:
		return fmt.Errorf("sim: request %d arrives at %d, before the current time %d (sources must be in arrival order)", w.ID, w.Arrival, now)
	case w.InputLen <= 0:
		return fmt.Errorf("sim: request %d has input length %d, must be > 0", w.ID, w.InputLen)
	case w.OutputLen < 0:
		return fmt.Errorf("sim: request %d has output length %d, must be >= 0", w.ID, w.OutputLen)
	}
	var covered int64
	for _, sg := range w.Segments {
		if sg.Length <= 0 {
			return fmt.Errorf("sim: request %d has a segment of length %d", w.ID, sg.Length)
		}
		covered += int64(sg.Length)
	}
	if len(w.Segments) > 0 && covered != int64(w.InputLen) {
		return fmt.Errorf("sim: request %d segments cover %d tokens, input length is %d", w.ID, covered, w.InputLen)
	}
	return nil
}

func (s *simulation) onClusterArrival(slot int32) {
	if slot == s.srcSlot {
		// Streaming: the next source request is read only now, so at most one unprocessed
		// source request exists at any time.
		s.pullSource()
	}
	if s.ctl != nil {
		s.ctlArrival(slot)
		if s.slab.reqs[slot].attrs.Streaming {
			// The router's in-flight load releases a streaming request's prompt tokens at its
			// first token (llm-d); ctlArrival leaves the flag to the request's client.
			s.ctl.st[slot].view.Streaming = true
			s.ctl.streaming = true
		}
	}
	s.heap.push(s.now+s.admLat, evAdmission, -1, slot)
}

func (s *simulation) onInstanceArrival(slot int32) {
	r := &s.slab.reqs[slot]
	r.state = stPending
	in := &s.insts[r.inst]
	in.lastEvent(s.now)
	s.heap.push(s.now+in.lat.QueueingTime(int64(r.input)), evQueued, r.inst, slot)
}

// onQueued applies BLIS's enqueue guards and puts the request in the wait queue.
func (s *simulation) onQueued(slot int32) {
	r := &s.slab.reqs[slot]
	in := &s.insts[r.inst]
	in.lastEvent(s.now)
	in.pending--
	if s.as != nil && !s.accepting(in) {
		s.reroute(in, slot)
		s.maybeShutdown(in)
		return
	}
	c := in.cfg
	switch {
	case c.MaxModelLen > 0 && r.input >= c.MaxModelLen:
		s.drop(in, slot, DropInputTooLong)
		return
	case c.MaxModelLen > 0 && r.output > 0 && int64(r.input)+int64(r.output) > int64(c.MaxModelLen):
		s.drop(in, slot, DropTotalTooLong)
		return
	case in.kv.BlocksForTokens(r.input) > in.kv.TotalBlocks():
		s.drop(in, slot, DropExceedsKVCache)
		return
	case c.MaxModelLen == 0 && int64(in.kv.BlocksForTokens(r.input+max(r.output, 1)-1)) > int64(in.kv.TotalBlocks()):
		// Without a length limit nothing else stops a request that can never fit in the cache:
		// it would be preempted and recomputed forever. (With max-model-len set, validation
		// guarantees a full-length sequence fits.)
		s.drop(in, slot, DropExceedsKVCache)
		return
	}
	in.stats.TotalInputTokens += int64(r.input)
	if r.deadline > 0 && r.deadline <= s.now {
		s.finishRequest(in, slot, OutcomeTimedOut, s.now, "")
		return
	}
	if need := int(r.input / c.BlockSize); cap(r.hashes) < need {
		// Size the slot's buffers once for this request, instead of growing them block by block.
		r.hashes = make([]uint64, 0, need)
	}
	if !c.DisablePrefixCaching {
		r.hashes = kvcache.PromptBlockHashes(r.hashes, r.segs, r.input, c.BlockSize, uniqueKey(r.id))
	}
	r.state = stQueued
	r.enqueuedAt = s.now
	in.waitQ.push(qEntry(slot, r.gen), s.schedKey(slot), false)
	if in.track {
		in.sig.queuedTokens += int64(r.input)
		if s.ctl.obs != nil {
			s.ctl.obs.queued(in.idx, slot)
		}
	}
	if r.deadline > 0 && (s.cfg.Horizon == 0 || r.deadline <= s.cfg.Horizon) {
		s.dead.push(s.heap.newEvent(r.deadline, evTimeout, int32(r.gen), slot))
	}
	if !in.stepPending {
		in.stepPending = true
		s.heap.push(s.now, evStep, in.idx, -1)
	}
}

// uniqueKey derives the content key of a request's unshared prompt tokens from its ID, so the
// prefix hashes depend only on the workload, never on slot reuse or timing.
func uniqueKey(id uint64) uint64 {
	x := id*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 29
	return x | 1
}

func (s *simulation) drop(in *instance, slot int32, reason string) {
	s.finishRequest(in, slot, OutcomeDropped, s.now, reason)
}

// onTimeout cancels a queued or running request whose deadline has passed.
func (s *simulation) onTimeout(slot int32) {
	r := &s.slab.reqs[slot]
	in := &s.insts[r.inst]
	in.lastEvent(s.now)
	switch r.state {
	case stQueued:
		in.waitQ.live-- // the entry goes stale and is skipped when it reaches the front
		if in.track {
			in.sig.queuedTokens -= int64(r.input)
			if s.ctl.obs != nil {
				s.ctl.obs.leftQueue(in.idx, slot)
			}
		}
	case stRunning:
		in.removeRunning(slot, s.slab.reqs)
	default:
		return
	}
	s.finishRequest(in, slot, OutcomeTimedOut, s.now, "")
}

// finishRequest records a request's outcome, tells a reactive source, and frees the slot.
func (s *simulation) finishRequest(in *instance, slot int32, out Outcome, done int64, reason string) {
	r := &s.slab.reqs[slot]
	st := in.stats
	rec := s.record(slot, out, done)
	rec.DropReason = reason
	switch out {
	case OutcomeCompleted:
		if s.ser != nil {
			s.ser.completion(done)
		}
		st.Completed++
		st.TotalOutputTokens += int64(rec.OutputTokens)
		if r.lengthCapped {
			st.LengthCapped++
		}
	case OutcomeTimedOut:
		st.TimedOut++
	case OutcomeDropped:
		st.Dropped++
		switch reason {
		case DropInputTooLong:
			st.DroppedInputTooLong++
		case DropTotalTooLong:
			st.DroppedTotalTooLong++
		case DropScaledDown:
			st.DroppedScaledDown++
		default:
			st.DroppedKV++
		}
	}
	s.collect(in.col, &rec)
	if s.cfg.Options.RequestRecords {
		s.res.Records[s.recIdx[slot]] = rec
	}
	id, outTokens := r.id, rec.OutputTokens
	if s.ctl != nil {
		if out == OutcomeCompleted {
			in.sig.completed(r.ttft, r.itlSum, r.itlCount)
		}
		s.ctl.p.Finished(&s.ctl.st[slot].ticket, s.now)
		if s.ctl.obs != nil {
			s.ctl.obs.finished(slot, &rec)
		}
	}
	s.dead.cancel(slot)
	s.slab.release(slot)
	if s.as != nil && in.life == lifeDraining {
		s.maybeShutdown(in)
	}
	if s.react != nil {
		wo := workload.Completed
		switch out {
		case OutcomeTimedOut:
			wo = workload.TimedOut
		case OutcomeDropped:
			wo = workload.Dropped
		}
		s.react.Finished(id, wo, outTokens, done, s.inject)
	}
}

var statusOf = [...]metrics.Status{
	OutcomeCompleted: metrics.StatusCompleted,
	OutcomeTimedOut:  metrics.StatusTimedOut,
	OutcomeDropped:   metrics.StatusDropped,
	OutcomeQueued:    metrics.StatusQueued,
	OutcomeRunning:   metrics.StatusRunning,
	OutcomeUnrouted:  metrics.StatusQueued,
	OutcomeRejected:  metrics.StatusRejected,
}

// collect hands a request's record to a metrics collector.
func (s *simulation) collect(col *metrics.Collector, rec *RequestRecord) {
	col.Record(&metrics.RequestRecord{
		ID: rec.ID, Status: statusOf[rec.Outcome], Arrival: rec.Arrival,
		InputTokens: rec.InputLen, OutputTokens: rec.OutputTokens,
		TTFT: rec.TTFT, E2E: rec.E2E, ITLSum: rec.ITLSum, SchedulingDelay: rec.SchedulingDelay,
		Class: rec.Class, Tenant: rec.Tenant, Client: rec.Client, Instance: rec.Instance,
		Session: rec.Session, Round: rec.Round, Preemptions: rec.Preemptions,
		LengthCapped: rec.LengthCapped,
		Model:        rec.Model, Adapter: rec.Adapter, SLOTarget: rec.SLOTarget,
	})
}

// record builds the RequestRecord of slot as of time done.
func (s *simulation) record(slot int32, out Outcome, done int64) RequestRecord {
	r := &s.slab.reqs[slot]
	rec := RequestRecord{
		ID: r.id, Arrival: r.arrival, Instance: r.inst,
		InputLen: r.input, OutputLen: r.output,
		Client: r.client, Tenant: r.tenant, Class: r.class, Session: r.session, Round: r.round,
		Outcome: out, LengthCapped: r.lengthCapped,
		ITLSum: r.itlSum, ITLCount: r.itlCount,
		SchedulingDelay: r.schedDelay, Done: done, Preemptions: r.preemptions,
		Model: r.attrs.Model, Adapter: r.attrs.Adapter, SLOTarget: r.attrs.SLOTarget,
	}
	// The client's network time is added to the latencies as BLIS reports them (client side):
	// the round trip and the prompt's upload to TTFT, and also the output's download to E2E.
	netTTFT, netE2E := r.attrs.NetworkDelays(r.input, 0)
	if r.ttftSet {
		rec.TTFT = r.ttft + netTTFT
	}
	if out == OutcomeCompleted {
		// BLIS counts decode steps plus the token the prefill produced.
		n := r.progress - r.input
		if n < r.output {
			n++
		}
		rec.OutputTokens = max(n, 0)
		rec.E2E = r.ttft + r.itlSum + r.pdGap
		if r.output > 0 {
			rec.E2E += s.insts[r.inst].postDecode
		}
		if netE2E > 0 {
			_, netE2E = r.attrs.NetworkDelays(r.input, rec.OutputTokens)
			rec.E2E += netE2E
		}
	}
	return rec
}

// finish fills the end-of-run counters and records of unfinished requests.
func (s *simulation) finish() {
	end := s.now
	for i := range s.insts {
		end = max(end, s.insts[i].stats.LastEvent)
	}
	if s.cfg.Horizon > 0 {
		end = min(end, s.cfg.Horizon)
	}
	s.res.End = end
	for i := range s.insts {
		in := &s.insts[i]
		for j := range in.running {
			in.flush(&in.running[j], &in.cold[j], &s.slab.reqs[in.running[j].slot])
		}
	}
	for slot := range s.slab.reqs {
		r := &s.slab.reqs[slot]
		var out Outcome
		switch r.state {
		case stFree:
			continue
		case stArriving:
			if r.inst < 0 {
				out = OutcomeUnrouted
				s.unrouted++
				break
			}
			// Routed but still in the routing -> instance hop: it belongs to its instance.
			out = OutcomeQueued
			s.insts[r.inst].stats.StillQueued++
		case stPending, stQueued:
			out = OutcomeQueued
			s.insts[r.inst].stats.StillQueued++
		case stRunning:
			out = OutcomeRunning
			s.insts[r.inst].stats.StillRunning++
		}
		rec := s.record(int32(slot), out, end)
		if r.inst >= 0 {
			s.collect(s.insts[r.inst].col, &rec)
		} else {
			s.collect(s.gateway(), &rec)
		}
		if s.cfg.Options.RequestRecords {
			s.res.Records[s.recIdx[slot]] = rec
		}
	}
	s.res.Unrouted = s.unrouted
	if s.ctl != nil {
		s.res.Policy = s.ctl.p.Stats()
		if s.ctl.tr != nil {
			s.res.Trace = s.ctl.tr.rec.Trace(end)
		}
	}
	if s.as != nil {
		s.finishAutoscale(end)
	}
	if s.pd != nil {
		s.finishDisagg()
	}
	if s.ser != nil {
		s.res.Series = s.ser.result(end)
	}
	if s.res.Trace != nil {
		for i := range s.insts {
			s.res.Trace.Anomalies.KVThrashingEvents += s.insts[i].stats.KVThrashingEvents
		}
	}
	for i := range s.insts {
		in := &s.insts[i]
		ks := in.kv.Stats()
		ks.LookupBlocks += in.kvPrior.LookupBlocks
		ks.HitBlocks += in.kvPrior.HitBlocks
		ks.LookupTokens += in.kvPrior.LookupTokens
		ks.HitTokens += in.kvPrior.HitTokens
		// Blocks reloaded from the CPU tier are prefix-cache hits too.
		ks.HitBlocks += in.stats.KVReloadedBlocks
		ks.HitTokens += in.stats.KVReloadedTokens
		in.stats.PrefixLookupTokens = ks.LookupTokens
		in.stats.PrefixHitTokens = ks.HitTokens
		in.flushITL()
		in.col.Events = metrics.Events{
			Preemptions:          in.stats.Preemptions,
			KVAllocationFailures: in.stats.KVAllocationFailures,
			CacheLookups:         ks.LookupBlocks,
			CacheHits:            ks.HitBlocks,
		}
	}
}

// gateway returns the collector of requests that never reached an instance.
func (s *simulation) gateway() *metrics.Collector {
	if s.res.Gateway == nil {
		s.res.Gateway = metrics.NewCollector("gateway", s.cfg.Options.RequestRecords)
	}
	return s.res.Gateway
}

// checkModels refuses a workload whose requests name a model that no instance serves: the
// engine simulates one model per instance and has no model-aware routing, so such requests
// would be served by the wrong model. A spec's models are all checked before the run; a
// trace's as its rows name them. Names compare case-insensitively (HuggingFace ids); an
// instance without a model name serves any.
func (s *simulation) checkModels() error {
	t := s.src.Tables()
	if t == nil {
		return nil
	}
	for ; int(s.modelsOK) < len(t.Models); s.modelsOK++ {
		name := t.Models[s.modelsOK]
		if name == "" {
			continue
		}
		served := false
		for i := range s.cfg.Instances {
			m := s.cfg.Instances[i].Model
			served = served || m == "" || strings.EqualFold(m, name)
		}
		if !served && len(s.cfg.Instances) > 0 {
			return fmt.Errorf("sim: workload model %q is not served by the cluster (it serves %q)", name, s.cfg.Instances[0].Model)
		}
	}
	return nil
}
