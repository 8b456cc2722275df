package sim

import (
	"fmt"

	"github.com/inference-sim/blis-operator/internal/engine/kvcache"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/rng"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// This file is the cluster control plane of a run with a policy bundle: every decision point
// (admission, priority, routing, preemption victims) is taken here or reported to the
// decision observer from here.

// maxAdmissionDelays bounds how often one request's admission may answer DELAY: the next DELAY
// rejects it, so a policy that delays forever cannot keep a run alive forever.
const maxAdmissionDelays = 1024

// ewmaWeight is the weight of a new sample in the rolling routing signals (as TCP's smoothed
// round-trip time).
const ewmaWeight = 0.125

// ewma folds sample x into the running average avg (first: x is the first sample). The explicit
// conversion keeps the product from being fused with the sum, so the result is the same on
// every platform.
func ewma(avg, x float64, first bool) float64 {
	if first {
		return x
	}
	return avg + float64((x-avg)*ewmaWeight)
}

// signals are an instance's rolling routing signals: recent TTFT and TPOT (over completed
// requests) and prefix-cache hit rate (over admissions) as exponentially weighted averages, the
// recent step time, and the prompt tokens waiting in its queue (for the estimated wait).
type signals struct {
	ttft, tpot, hit, step    float64
	hasTTFT, hasTPOT, hasHit bool
	queuedTokens             int64
}

// admitted updates the signals for a request leaving the wait queue for the batch with cached
// of its input tokens found in the prefix cache.
func (g *signals) admitted(input, cached int32) {
	g.queuedTokens -= int64(input)
	g.hit = ewma(g.hit, float64(cached)/float64(input), !g.hasHit)
	g.hasHit = true
}

// completed folds a completed request's TTFT and mean inter-token gap into the rolling
// averages (sampled at completion, so the step loop stays free of this bookkeeping).
func (g *signals) completed(ttft, itlSum int64, itlCount int32) {
	g.ttft = ewma(g.ttft, float64(ttft), !g.hasTTFT)
	g.hasTTFT = true
	if itlCount > 0 {
		g.tpot = ewma(g.tpot, float64(itlSum)/float64(itlCount), !g.hasTPOT)
		g.hasTPOT = true
	}
}

// ctlState is the control-plane state of one request slot.
type ctlState struct {
	view   policy.RequestView
	ticket policy.Ticket
	key    policy.SchedKey
	// hashes backs view.PrefixHashes (the router's block hashes), reused across occupants.
	hashes []uint64
}

// decisionObserver receives the control-plane decisions of a run with a policy bundle, in
// processing order, and the wait-queue events the anomaly counters need. It is nil unless set
// (decision traces, tests), and a nil observer costs one comparison per hook. Slots index the
// slab; the observer may read the request there during the call.
type decisionObserver interface {
	admission(now int64, req *policy.RequestView, d *policy.AdmissionDecision)
	// routing is the priority and routing decision of the slot being routed (control.cur),
	// with the snapshots the stages were given.
	routing(now int64, req *policy.RequestView, pd *policy.PriorityDecision, rd *policy.RoutingDecision, snaps []policy.InstanceSnapshot)
	// preempted: the request in slot was preempted and is back at the front of inst's queue.
	preempted(now int64, inst, slot int32, id uint64)
	// queued: slot entered inst's wait queue; leftQueue: it left the queue unscheduled.
	queued(inst, slot int32)
	leftQueue(inst, slot int32)
	// scheduled: slot left inst's wait queue for the running batch with cached prompt tokens
	// found in the prefix cache.
	scheduled(inst, slot, cached int32)
	// holBlocked: admission on inst stopped because the queue's head (slot) could not get its
	// KV blocks; waiting is the live queue length, head included.
	holBlocked(inst, slot int32, waiting int32)
	// batch: inst formed the batch of the step starting at now.
	batch(in *instance, now int64, preempted bool)
	// finished: the request in slot left with rec (not called for gateway departures).
	finished(slot int32, rec *RequestRecord)
}

// control is a run's policy pipeline with its snapshot provider and per-slot state.
type control struct {
	p    *policy.Pipeline
	prov *policy.SnapshotProvider
	st   []ctlState // by request slot

	tenants, classes []string
	// blockSize and maxBlocks size the router's prefix hashes (blockSize 0 = none needed).
	blockSize int32
	maxBlocks int
	// Stages that read instance snapshots; the others get none (zero values they ignore).
	admitSnaps, prioSnaps, routeSnaps bool
	// none stands for the snapshots of stages that do not read them.
	none []policy.InstanceSnapshot
	// streaming is set once a streaming request arrived (its prompt tokens are released from
	// the router's books at its first output token).
	streaming bool
	// tick is the grid (µs) of the exact periodic snapshot refreshes, 0 = none.
	tick int64
	obs  decisionObserver
	// tr is obs when it is the run's trace recorder (Options.Trace).
	tr *tracer
	// The decisions handed to the observer.
	adm   policy.AdmissionDecision
	prio  policy.PriorityDecision
	route policy.RoutingDecision

	// precise caches the current request's hashes at one instance block size.
	preciseSlot int32
	preciseBS   int32
	precise     []uint64
	cur         int32 // slot being routed
	// signal is the delayed view of the instances' caches the precise producer reads
	// (cachesignal.go; nil without a cache-signal delay); routing is set while the routing
	// policy decides, so other lookups (decision traces) read the real caches.
	signal  *cacheSignal
	routing bool
	insts   []instance
	slab    *slab
}

// Templates that never read instance snapshots: a run whose stages are all among them skips
// the snapshot refreshes (they would not change any decision).
var (
	snapshotFreeAdmission = map[string]bool{"always-admit": true, "reject-all": true, "token-bucket": true, "rate-limit": true, "tenant-quota": true}
	snapshotFreePriority  = map[string]bool{"constant": true, "slo-based": true, "inverted-slo": true, "tenant-priority": true, "deadline-aware": true}
	snapshotFreeRouting   = map[string]bool{"round-robin": true}
)

// newControl builds the run's pipeline from cfg.Policy.
func (s *simulation) newControl(streams *rng.Partitioned) error {
	cfg := s.cfg
	c := &control{insts: s.insts, slab: &s.slab, preciseSlot: -1}
	if t := s.src.Tables(); t != nil {
		c.tenants, c.classes = t.Tenants, t.SLOClasses
	}
	infos := make([]policy.InstanceInfo, len(cfg.Instances))
	for i := range cfg.Instances {
		infos[i] = policy.InstanceInfo{TotalKVBlocks: int64(cfg.Instances[i].TotalKVBlocks), BlockSize: cfg.Instances[i].BlockSize}
	}
	p, err := policy.Build(cfg.Policy, policy.BuildEnv{
		Instances: infos, TenantNames: c.tenants, ClassNames: c.classes,
		RNG: streams.Stream(rng.Router), Precise: c,
	})
	if err != nil {
		return err
	}
	c.p = p
	c.none = make([]policy.InstanceSnapshot, len(s.insts))
	for i := range c.none {
		c.none[i].Index = int32(i)
	}
	if c.prov, err = policy.NewSnapshotProvider(len(s.insts), p.Observability(), liveInstances(s.insts)); err != nil {
		return err
	}
	c.blockSize, c.maxBlocks = p.PrefixBlockSize(), p.MaxPrefixBlocks()
	c.signal = newCacheSignal(p.Observability().CacheSignalDelayUs, s.insts)
	adm, prio, route := p.Names()
	c.admitSnaps, c.prioSnaps, c.routeSnaps = !snapshotFreeAdmission[adm], !snapshotFreePriority[prio], !snapshotFreeRouting[route]
	if c.admitSnaps || c.prioSnaps || c.routeSnaps {
		// Templates read only the load fields; CEL and trees may read any observable.
		expr := false
		for _, n := range [...]string{adm, prio, route} {
			expr = expr || n == policy.PolicyCEL || n == policy.PolicyTree
		}
		c.tick = periodicGrid(p.Observability(), expr)
	}
	if l := p.AdmissionLatency(); l > 0 {
		s.admLat = l
	}
	if l := p.RoutingLatency(); l > 0 {
		s.routeLat = l
	}
	sched := p.Scheduler()
	if sched.Name() == "fcfs" {
		sched = nil // the deque is the fcfs order
	}
	victim := p.Preemption()
	if victim.Name() == "fcfs" {
		victim = nil // the tail of the batch entered it last
	}
	for i := range s.insts {
		in := &s.insts[i]
		in.track = true
		in.waitQ.sched = sched
		in.victim = victim
	}
	s.ctl = c
	if cfg.Options.Trace != nil {
		c.tr = newTracer(s, streams)
		c.obs = c.tr
	}
	return nil
}

// periodicGrid returns the greatest common divisor of the refresh intervals of the periodic
// fields a policy may read (the load fields, and with stats also the cache hit rate and recent
// latencies), 0 when none is periodic: refreshing every instance on that grid makes each of
// those fields an exact scrape at its own multiples. (Fields no policy reads need no scrape.)
func periodicGrid(o policy.ObservabilityConfig, stats bool) int64 {
	fields := []policy.FieldConfig{o.QueueDepth, o.BatchSize, o.KVUtilization}
	if stats {
		fields = append(fields, o.CacheHitRate, o.RecentTTFT, o.RecentTPOT)
	}
	var g int64
	for _, f := range fields {
		if f.Mode != policy.Periodic {
			continue
		}
		a, b := g, f.IntervalUs
		for b != 0 {
			a, b = b, a%b
		}
		g = a
	}
	return g
}

// liveInstances is the snapshot source: the instances' current state.
type liveInstances []instance

// Observe writes instance i's live routing signals into dst.
func (l liveInstances) Observe(i int, now int64, dst *policy.InstanceSnapshot) {
	in := &l[i]
	q, b := in.waitQ.live, int32(len(in.running))
	g := &in.sig
	*dst = policy.InstanceSnapshot{
		Index:            int32(i),
		Timestamp:        now,
		QueueDepth:       q,
		BatchSize:        b,
		KVUtilization:    in.kv.Utilization(),
		FreeKVBlocks:     int64(in.kv.FreeBlocks()),
		InFlightRequests: in.pending + q + b,
		CacheHitRate:     g.hit,
		RecentTTFT:       g.ttft,
		RecentTPOT:       g.tpot,
	}
	if g.queuedTokens > 0 {
		// The queued prompts need this many full-budget steps before a new request's turn.
		budget := int64(in.cfg.MaxNumBatchedTokens)
		dst.EstimatedWait = float64((g.queuedTokens+budget-1)/budget) * g.step
	}
}

// CachedPrefix answers the precise prefix producer from instance i's real KV cache: the
// leading full blocks of the request's prompt present there (with a cache-signal delay, those
// of them the router has heard of).
func (c *control) CachedPrefix(i int, _ *policy.RequestView) (matched, total, blockSize int32) {
	in := &c.insts[i]
	bs := in.cfg.BlockSize
	r := &c.slab.reqs[c.cur]
	if c.preciseSlot != c.cur || c.preciseBS != bs {
		c.precise = kvcache.PromptBlockHashes(c.precise, r.segs, r.input, bs, uniqueKey(r.id))
		c.preciseSlot, c.preciseBS = c.cur, bs
	}
	total = int32(len(c.precise))
	if !in.cfg.DisablePrefixCaching {
		matched = in.kv.CachedPrefix(c.precise)
		if c.signal != nil && c.routing {
			if !c.signal.on {
				c.signal.start() // the first routing decision: nothing is stored yet
			}
			matched = c.signal.matched(i, c.precise, matched)
		}
	}
	return matched, total, bs
}

// snapshots returns the router's snapshots at now, refreshed when the stage reads them.
func (c *control) snapshots(reads bool, now int64) []policy.InstanceSnapshot {
	if reads {
		return c.prov.Snapshots(now)
	}
	return c.none
}

// schedKey returns the scheduler key of slot (nil without a policy bundle).
func (s *simulation) schedKey(slot int32) *policy.SchedKey {
	if s.ctl == nil {
		return nil
	}
	return &s.ctl.st[slot].key
}

// victimIndex returns the running index of the request the preemption policy evicts first.
func (c *control) victimIndex(in *instance) int {
	v := in.victim
	best := 0
	for i := 1; i < len(in.running); i++ {
		if v.Victim(&c.st[in.running[i].slot].key, &c.st[in.running[best].slot].key) {
			best = i
		}
	}
	return best
}

// firstTokens releases, from the router's books, the prompt tokens of the streaming requests of
// in whose first output token the step ending at done produced (llm-d's in-flight load
// producer). Requests that also completed in that step were released in full already. The
// step loop itself stays free of this bookkeeping, which runs only once a streaming request
// was seen.
func (c *control) firstTokens(in *instance, done int64) {
	for i := range in.running {
		slot := in.running[i].slot
		r := &c.slab.reqs[slot]
		if st := &c.st[slot]; r.ttftSet && r.firstTokenAt == done && st.view.Streaming {
			c.p.FirstToken(&st.ticket)
		}
	}
}

// ctlArrival prepares the request's view and tells the router it arrived.
func (s *simulation) ctlArrival(slot int32) {
	c := s.ctl
	for len(c.st) < len(s.slab.reqs) {
		c.st = append(c.st, ctlState{})
	}
	r := &s.slab.reqs[slot]
	st := &c.st[slot]
	st.view = policy.RequestView{
		ID: r.id, Arrival: r.arrival, InputTokens: r.input, MaxTokens: r.output,
		Tenant: r.tenant, Class: r.class, Session: r.session,
		TenantName: nameAt(c.tenants, r.tenant), ClassName: nameAt(c.classes, r.class),
	}
	st.ticket = policy.Ticket{Instance: -1}
	if c.signal != nil && int(slot) < len(c.signal.reported) {
		c.signal.reported[slot] = slotReport{inst: -1}
	}
	c.streaming = c.streaming || st.view.Streaming
	if c.blockSize > 0 {
		n := r.input
		if c.maxBlocks >= 0 && int64(c.maxBlocks)*int64(c.blockSize) < int64(n) {
			n = int32(c.maxBlocks) * c.blockSize
		}
		st.hashes = kvcache.PromptBlockHashes(st.hashes, r.segs, n, c.blockSize, uniqueKey(r.id))
		st.view.PrefixHashes = st.hashes
	}
	c.p.Arrive(&st.view, s.now)
}

func nameAt(names []string, i int32) string {
	if i >= 0 && int(i) < len(names) {
		return names[i]
	}
	return ""
}

// onAdmission takes the admission decision of slot.
func (s *simulation) onAdmission(slot int32) {
	c := s.ctl
	if c == nil {
		s.heap.push(s.now+s.routeLat, evRouting, -1, slot)
		return
	}
	st := &c.st[slot]
	r := &s.slab.reqs[slot]
	if r.deadline > 0 && s.now >= r.deadline {
		// The request's deadline passed while its admission was delayed.
		s.leaveGateway(slot, OutcomeTimedOut)
		return
	}
	d := c.p.Admit(&st.view, c.snapshots(c.admitSnaps, s.now), s.now)
	if c.obs != nil {
		c.adm = d // a copy: taking d's address would move it to the heap on every call
		c.obs.admission(s.now, &st.view, &c.adm)
	}
	switch d.Action {
	case policy.Admit:
		s.heap.push(s.now+s.routeLat, evRouting, -1, slot)
	case policy.Delay:
		if st.view.Attempt > maxAdmissionDelays {
			s.leaveGateway(slot, OutcomeRejected)
			return
		}
		at := s.now + max(d.Delay, 1)
		if r.deadline > 0 {
			at = min(at, r.deadline)
		}
		s.heap.push(at, evAdmission, -1, slot)
	default:
		s.leaveGateway(slot, OutcomeRejected)
	}
}

// onRouting takes the priority and routing decisions of slot and dispatches it.
func (s *simulation) onRouting(slot int32) {
	if as := s.as; as != nil && as.cold {
		// No replica is ready yet (cold start): the request waits for the first.
		as.parked = append(as.parked, slot)
		return
	}
	r := &s.slab.reqs[slot]
	c := s.ctl
	if c == nil {
		if s.as == nil && s.pd == nil {
			for i := range s.insts {
				s.insts[i].snapshot(&s.snaps[i])
			}
		}
		s.routeRq = RouteRequest{
			ID: r.id, Arrival: r.arrival, InputLen: r.input, OutputLen: r.output,
			Client: r.client, Tenant: r.tenant, Class: r.class, Session: r.session,
		}
		var target int
		if list := s.routable(slot); list != nil {
			t, ok := s.routeAmong(list)
			if !ok {
				s.err = fmt.Errorf("sim: router chose instance %d of %d routable for request %d", t, len(list), r.id)
				return
			}
			target = t
		} else {
			target = s.router.Route(&s.routeRq, s.snaps)
		}
		if target < 0 || target >= len(s.insts) {
			s.err = fmt.Errorf("sim: router chose instance %d of %d for request %d", target, len(s.insts), r.id)
			return
		}
		s.dispatch(slot, target)
		return
	}
	st := &c.st[slot]
	snaps := c.snapshots(c.prioSnaps || c.routeSnaps, s.now)
	list := s.routable(slot)
	if list != nil {
		snaps = s.maskSnapshots(snaps, list)
	}
	pd := c.p.Prioritize(&st.view, snaps, s.now)
	c.cur = slot
	if c.signal != nil {
		if c.signal.on {
			c.signal.apply(s.now)
		}
		c.routing = true
	}
	rd := c.p.Route(&st.view, snaps, s.now)
	c.routing = false
	if list != nil {
		s.fixTarget(&rd, st.view.PrefixHashes, list)
	}
	c.preciseSlot = -1
	if c.obs != nil {
		c.prio, c.route = pd, rd
		c.obs.routing(s.now, &st.view, &c.prio, &c.route, snaps)
	}
	st.ticket = rd.Ticket
	st.key = policy.SchedKey{Priority: st.view.Priority, Arrival: r.arrival, InputTokens: r.input, MaxTokens: r.output, ID: r.id}
	s.dispatch(slot, int(rd.Target))
}

// dispatch sends slot to instance target.
func (s *simulation) dispatch(slot int32, target int) {
	r := &s.slab.reqs[slot]
	r.inst = int32(target)
	r.routedAt = s.now
	in := &s.insts[target]
	in.pending++
	in.stats.Injected++
	s.heap.push(s.now, evInstanceArrival, int32(target), slot)
}

// onSnapshotTick refreshes every snapshot on the periodic grid and schedules the next tick: at
// the next grid point, or at the last grid point before the next event when the cluster is
// idle until then (nothing changes in between, so the skipped scrapes would read the same).
func (s *simulation) onSnapshotTick() {
	c := s.ctl
	c.prov.RefreshAll(s.now)
	var next *event
	if s.heap.len() > 0 {
		next = s.heap.peek()
	}
	if s.dead.len() > 0 && (next == nil || s.dead.peek().before(next)) {
		next = s.dead.peek()
	}
	if next == nil {
		return
	}
	at := s.now + c.tick
	if g := next.time - next.time%c.tick; g > at {
		at = g
	}
	s.heap.push(at, evSnapshotTick, -1, -1)
}

// leaveGateway ends a request that never reached an instance (rejected by admission, or timed
// out while its admission was delayed).
func (s *simulation) leaveGateway(slot int32, out Outcome) {
	r := &s.slab.reqs[slot]
	rec := s.record(slot, out, s.now)
	s.collect(s.gateway(), &rec)
	if s.cfg.Options.RequestRecords {
		s.res.Records[s.recIdx[slot]] = rec
	}
	wo := workload.Rejected
	if out == OutcomeRejected {
		s.res.Rejected++
	} else {
		s.res.GatewayTimedOut++
		wo = workload.TimedOut
	}
	id := r.id
	s.slab.release(slot)
	if s.react != nil {
		s.react.Finished(id, wo, 0, s.now, s.inject)
	}
}
