package sim

import (
	"math"

	"github.com/inference-sim/blis-operator/internal/engine/kvcache"
	"github.com/inference-sim/blis-operator/internal/engine/latency"
	"github.com/inference-sim/blis-operator/internal/engine/metrics"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

// runEntry is a running request's hot state: what every step reads and writes. Entries are
// kept contiguously in running order, 32 bytes each, so a step streams through a small dense
// array instead of chasing slab slots; this is the authoritative copy while the request runs,
// written back to the slab (flush) when it leaves the batch. The request's inter-token
// latencies are not accumulated per step: they follow from the instance's gap history (itlOf).
type runEntry struct {
	slot     int32
	progress int32 // BLIS's ProgressIndex
	input    int32
	output   int32
	numNew   int32 // tokens scheduled in step `stamp`
	// room is the number of free token slots in the last block of the request's table, and lazy
	// the decode tokens counted in progress but not yet pushed into the table. A decode token
	// that fits in the last block is only counted; the cache is told at the next block boundary,
	// which gives the same blocks in the same order as telling it every token.
	room int32
	lazy int32
	// stamp is the low 32 bits of the step that scheduled numNew tokens (only equality with the
	// current step matters, and no request runs for 2^32 steps).
	stamp int32
	// end is the progress at which the request completes or reaches the length cap, whichever
	// is first (see instance.endOf); phase 1 lists an entry for execute when its decode token
	// gets there. A smaller value would only list it early, which execute tolerates.
	end int32
}

// runCold is the rest of a running request's state, in a slice parallel to the running batch.
type runCold struct {
	// kv is the request's block table, touched only at block boundaries.
	kv kvcache.Table
	// decodeFrom is the first step (instance step number) in which the request could decode:
	// the one after its prefill finished; 0 while it prefills.
	decodeFrom int64
}

// instance is one vLLM replica: a wait queue, a running batch and a paged KV cache.
type instance struct {
	idx             int32
	cfg             *InstanceConfig
	lat             latency.Model
	kv              *kvcache.Cache
	alphaOut        int64 // output-token processing time, added to TTFT and each ITL
	postDecode      int64 // added once to E2E of requests with output
	priorityVictims bool
	// victim picks preemption victims by a policy bundle's ordering over scheduler keys (nil:
	// the tail of the batch, or priorityVictims without a bundle).
	victim policy.Preemption
	// runSeq numbers admissions into the running batch (the keys' RunSeq), with victim set.
	runSeq uint64
	// sig holds the rolling routing signals, kept only in runs with a policy bundle.
	sig   signals
	track bool
	stats *InstanceStats
	col   *metrics.Collector

	waitQ       waitQueue
	running     []runEntry // in vLLM's running order
	cold        []runCold  // parallel to running
	pending     int32      // routed here, not yet in the wait queue
	stepPending bool       // a step event is scheduled
	stepCount   int64

	shape      latency.StepShape
	chunkOwner []int32 // slot owning shape.Prefill[i]

	// What phase 1 of the current step leaves to execute. A scheduled decode token advances
	// its entry's progress in phase 1 already, so a steady decode step touches each entry once;
	// execute then visits only work (ascending running indices of entries with something to do:
	// prefill chunks, completions, length caps), the entries from brk on (those phase 1 did not
	// reach, plus the ones phase 2 admitted from nSched on), or every entry when fullScan (a
	// preemption shifted the indices, or the reference stepper).
	work     []int32
	brk      int
	nSched   int
	fullScan bool
	// leaving lists the running indices execute removes, to compact the batch once.
	leaving []int32

	// BLIS aggregates the inter-token latencies of completed requests only (a preempted
	// request's gaps are discarded with its progress, and unfinished requests contribute
	// none). To reproduce that without a sample per token, gaps[k-1] keeps the gap of step k
	// and itlDiff is a difference array over steps: a completing request adds +1 over the
	// steps it decoded in (minus any step it was left out of), in O(1). The (gap, count)
	// pairs go to the collector once, at the end of the run.
	gaps    []int64
	itlDiff []int32
	// cumGaps[k] is the sum of the gaps of steps 1..k, so a request's ITL sum over a range of
	// steps is a difference.
	cumGaps []int64

	// spare is the table used to try an admission; tablePool holds block slices of tables
	// released by departed requests, so tables stop allocating once warm.
	spare     kvcache.Table
	tablePool [][]int32

	// Lifecycle of autoscaled runs (lifecycle.go): the state, its generation (bumped at every
	// transition, so a stale scheduled transition is ignored), the start of the current replica
	// time, whether a shutdown check is scheduled, and the prefix counters of caches discarded
	// at restarts.
	life           lifeState
	lifeGen        uint32
	onSince        int64
	shutdownQueued bool
	kvPrior        kvcache.Stats

	// tier is the CPU KV tier (nil without one); reloadUs the reload time charged to the step
	// being formed.
	tier     *kvcache.Tier
	reloadUs int64

	// Concurrent partial prefills (InstanceConfig.MaxNumPartialPrefills > 1, planPartials): the
	// per-request prefill chunk cap of the step being formed (0 = none), the requests in
	// prefill in the batch and how many of them are long, and the long waiting requests that
	// admission stepped over (returned to the front of the queue after it).
	slotBudget   int64
	partials     int32
	longPartials int32
	setAside     []uint64
}

func (in *instance) lastEvent(t int64) {
	if t > in.stats.LastEvent {
		in.stats.LastEvent = t
	}
}

// snapshot fills sn with the instance's current routing signals.
func (in *instance) snapshot(sn *Snapshot) {
	q, b := in.waitQ.live, int32(len(in.running))
	*sn = Snapshot{
		QueueDepth:    q,
		BatchSize:     b,
		Pending:       in.pending,
		InFlight:      in.pending + q + b,
		FreeKVBlocks:  in.kv.FreeBlocks(),
		TotalKVBlocks: in.kv.TotalBlocks(),
		KVUtilization: in.kv.Utilization(),
	}
}

// itlOf returns the sum and count of a request's inter-token gaps: the gaps of steps from..to
// (to = the last step it took part in) except those it was left out of (skipped).
func (in *instance) itlOf(from, to int64, skipped []int64) (sum int64, count int32) {
	if from <= 0 || from > to {
		return 0, 0
	}
	sum, count = in.cumGaps[to]-in.cumGaps[from-1], int32(to-from+1)
	for _, k := range skipped {
		sum -= in.gaps[k-1]
		count--
	}
	return sum, count
}

// flush writes a running entry's state back to its slab slot, as of the last executed step.
func (in *instance) flush(e *runEntry, c *runCold, r *reqState) {
	r.progress = e.progress
	r.itlSum, r.itlCount = in.itlOf(c.decodeFrom, in.stepCount, r.skipped)
}

// removeAt deletes running index i from the batch, keeping the order of the others.
func (in *instance) removeAt(i int) {
	in.running = append(in.running[:i], in.running[i+1:]...)
	in.cold = append(in.cold[:i], in.cold[i+1:]...)
}

// removeRunning deletes the entry of slot from the running batch after writing it back to the
// slab, and frees its KV blocks.
func (in *instance) removeRunning(slot int32, reqs []reqState) {
	for i := range in.running {
		if in.running[i].slot == slot {
			in.flush(&in.running[i], &in.cold[i], &reqs[slot])
			in.releaseTable(&in.cold[i].kv)
			in.removeAt(i)
			return
		}
	}
}

// frontLive returns the first valid wait-queue entry, discarding stale ones on the way.
func (in *instance) frontLive(reqs []reqState) (int32, bool) {
	q := &in.waitQ
	for q.size > 0 {
		e := q.front()
		slot, gen := int32(uint32(e)), uint32(e>>32)
		if r := &reqs[slot]; r.gen == gen && r.state == stQueued {
			return slot, true
		}
		q.popFront(false)
	}
	return -1, false
}

// priorityVictim returns the running index of vLLM's priority-mode victim: the largest
// (priority, arrival), the first such in running order on ties.
func (in *instance) priorityVictim(reqs []reqState) int {
	best := 0
	for i := 1; i < len(in.running); i++ {
		a, b := &reqs[in.running[i].slot], &reqs[in.running[best].slot]
		if a.priority > b.priority || (a.priority == b.priority && a.arrival > b.arrival) {
			best = i
		}
	}
	return best
}

// unshape removes an entry's contribution to the step being formed (a victim preempted after
// it was scheduled, possible only with priority victims).
func (in *instance) unshape(e *runEntry) {
	sh := &in.shape
	if e.progress > e.input {
		// A decode token: phase 1 already advanced progress past the prompt (see
		// instance.work), while a prefill chunk leaves it below until execute.
		sh.DecodeRequests--
		sh.DecodeContext -= int64(e.progress - 1)
		return
	}
	for i, o := range in.chunkOwner {
		if o == e.slot {
			sh.PrefillTokens -= sh.Prefill[i].NewTokens
			sh.Prefill = append(sh.Prefill[:i], sh.Prefill[i+1:]...)
			in.chunkOwner = append(in.chunkOwner[:i], in.chunkOwner[i+1:]...)
			return
		}
	}
}

func (in *instance) addChunk(slot int32, n, context, prompt int32) {
	sh := &in.shape
	sh.Prefill = append(sh.Prefill, latency.PrefillChunk{
		NewTokens: int64(n), Context: int64(context), PromptLen: int64(prompt),
	})
	sh.PrefillTokens += int64(n)
	in.chunkOwner = append(in.chunkOwner, slot)
}

// endOf returns the progress at which an entry of e's input and output lengths completes (BLIS
// completes it once progress reaches input + max(output, 1) - 1) or reaches the length cap.
func (in *instance) endOf(e *runEntry) int32 {
	end := e.input + max(e.output, 1) - 1
	if mml := in.cfg.MaxModelLen; mml > 0 {
		end = min(end, mml-1)
	}
	return end
}

// setRoom recomputes e.room from the table after a real allocation.
func (in *instance) setRoom(e *runEntry, t *kvcache.Table) {
	e.room = int32(len(t.Blocks))*in.cfg.BlockSize - t.Tokens
}

// growDecode reserves one decode token for e (see runEntry.room); c is its cold part.
func (in *instance) growDecode(e *runEntry, c *runCold) bool {
	if e.room > 0 {
		e.room--
		e.lazy++
		return true
	}
	if !in.kv.Grow(&c.kv, e.lazy+1, nil) {
		return false
	}
	e.lazy = 0
	in.setRoom(e, &c.kv)
	return true
}

// growPrefill reserves n prompt tokens for e, registering prompt-block hashes as blocks fill.
func (in *instance) growPrefill(e *runEntry, c *runCold, r *reqState, n int32) bool {
	if !in.kv.Grow(&c.kv, n, r.hashes) {
		return false
	}
	in.setRoom(e, &c.kv)
	return true
}

// takeTable prepares in.spare for an admission of a request needing up to need blocks.
func (in *instance) takeTable(need int) *kvcache.Table {
	t := &in.spare
	if t.Blocks == nil {
		if n := len(in.tablePool); n > 0 {
			t.Blocks = in.tablePool[n-1]
			in.tablePool = in.tablePool[:n-1]
		}
	}
	if cap(t.Blocks) < need {
		t.Blocks = make([]int32, 0, need)
	}
	return t
}

// releaseTable frees a departing request's blocks and keeps its block slice for reuse.
func (in *instance) releaseTable(t *kvcache.Table) {
	in.kv.Release(t)
	if cap(t.Blocks) > 0 {
		in.tablePool = append(in.tablePool, t.Blocks[:0])
	}
	*t = kvcache.Table{}
}

// countITL adds a completed request's decode steps, from..to minus skipped, to the ITL
// difference array.
func (in *instance) countITL(from, to int64, skipped []int64) {
	in.itlDiff[from-1]++
	in.itlDiff[to]--
	for _, k := range skipped {
		if k >= from && k <= to {
			in.itlDiff[k-1]--
			in.itlDiff[k]++
		}
	}
}

// flushITL hands the (gap, count) pair of every step with completed-request tokens to the
// collector, in step order.
func (in *instance) flushITL() {
	var run int64
	for k, g := range in.gaps {
		run += int64(in.itlDiff[k])
		if run > 0 {
			in.col.AddITL(g, run)
		}
	}
}

// preempt moves the running request of entry e (already removed from the batch, c its cold
// part) back to the front of the wait queue with its progress reset (vLLM recompute
// preemption).
func (s *simulation) preempt(in *instance, e *runEntry, c *runCold) {
	r := &s.slab.reqs[e.slot]
	in.releaseTable(&c.kv)
	r.state = stQueued
	r.progress = 0
	r.ttftSet = false
	if r.pd == pdDecode {
		// The transferred KV is lost: the request is recomputed here like a local one.
		r.pd, r.pdGap = pdLocal, 0
	}
	r.itlSum, r.itlCount = 0, 0
	r.skipped = r.skipped[:0]
	r.preemptions++
	in.stats.Preemptions++
	in.waitQ.push(qEntry(e.slot, r.gen), s.schedKey(e.slot), true)
	if in.track {
		in.sig.queuedTokens += int64(r.input)
	}
	if s.ctl != nil && s.ctl.obs != nil {
		s.ctl.obs.preempted(s.now, in.idx, e.slot, r.id)
	}
}

// reserve gets KV space for n tokens of the running entry at index i, preempting victims until
// it succeeds or the entry itself is preempted (then it returns false). adj is the number of
// victims removed before index i, which shifts the caller's loop index.
func (s *simulation) reserve(in *instance, i int, n int32, budget *int64, preempted *bool) (ok bool, adj int) {
	slot := in.running[i].slot
	r := &s.slab.reqs[slot]
	for {
		e, c := &in.running[i-adj], &in.cold[i-adj]
		if e.progress >= e.input {
			ok = s.growDecode(in, e, c)
		} else {
			ok = in.growPrefill(e, c, r, n)
		}
		if ok {
			return true, adj
		}
		*preempted = true
		vi := len(in.running) - 1
		if in.priorityVictims {
			vi = in.priorityVictim(s.slab.reqs)
		} else if in.victim != nil {
			vi = s.ctl.victimIndex(in)
		}
		victim, victimCold := in.running[vi], in.cold[vi]
		in.removeAt(vi)
		if victim.stamp == int32(in.stepCount) && victim.numNew > 0 {
			// Already scheduled in this step: give its tokens back.
			*budget += int64(victim.numNew)
			in.unshape(&victim)
		}
		s.preempt(in, &victim, &victimCold)
		if victim.slot == slot {
			return false, adj
		}
		if vi < i-adj {
			adj++
		}
	}
}

// growDecode dispatches to the stepper's decode reservation (the reference stepper used in
// tests allocates every token eagerly).
func (s *simulation) growDecode(in *instance, e *runEntry, c *runCold) bool {
	if s.eagerKV {
		if !in.kv.Grow(&c.kv, 1, nil) {
			return false
		}
		in.setRoom(e, &c.kv)
		return true
	}
	return in.growDecode(e, c)
}

// step runs one engine step of in at time now: batch formation, execution, completions, and
// the scheduling of the next step.
func (s *simulation) step(in *instance, now int64) {
	if len(in.running) == 0 && in.waitQ.live == 0 {
		in.stepPending = false
		return
	}
	in.stepCount++
	in.stats.Steps++
	budget := int64(in.cfg.MaxNumBatchedTokens)
	sh := &in.shape
	sh.Prefill, sh.PrefillTokens, sh.DecodeRequests, sh.DecodeContext = sh.Prefill[:0], 0, 0, 0
	in.chunkOwner = in.chunkOwner[:0]

	if in.cfg.MaxNumPartialPrefills > 1 {
		s.planPartials(in)
	}
	preempted := s.scheduleRunning(in, &budget)
	if !preempted {
		s.admitWaiting(in, now, budget)
		if len(in.setAside) > 0 {
			s.restoreSetAside(in)
		}
	}
	if in.track && s.ctl.obs != nil {
		s.ctl.obs.batch(in, now, preempted)
	}
	if used := int64(in.kv.UsedBlocks()); used > in.stats.PeakKVBlocks {
		in.stats.PeakKVBlocks = used
	}
	if s.invariants {
		s.checkStep(in)
	}
	stepTime := max(in.lat.StepTime(sh), 1) + in.reloadUs
	in.reloadUs = 0
	if in.track {
		in.sig.step = ewma(in.sig.step, float64(stepTime), in.stats.Steps == 1)
	}
	gap := stepTime + in.alphaOut
	in.gaps = append(in.gaps, gap)
	in.cumGaps = append(in.cumGaps, in.cumGaps[len(in.cumGaps)-1]+gap)
	in.itlDiff = append(in.itlDiff, 0)

	done := now + stepTime
	if s.execute(in, done) {
		in.lastEvent(done)
	}
	if in.track && s.ctl.streaming {
		s.ctl.firstTokens(in, done)
	}
	if len(in.running) > 0 || in.waitQ.live > 0 {
		s.heap.push(done, evStep, in.idx, -1)
	} else {
		in.stepPending = false
	}
}

// partialThreshold is the prompt length above which a prefill is long under concurrent
// partial prefills, and the chunk cap then: --long-prefill-token-threshold, or vLLM's default
// of 4% of max-model-len when it is 0 (no threshold when that is 0 too).
func partialThreshold(c *InstanceConfig) int32 {
	if t := c.LongPrefillTokenThreshold; t > 0 {
		return t
	}
	if t := int32(int64(c.MaxModelLen) * 4 / 100); t > 0 {
		return t
	}
	return math.MaxInt32
}

// planPartials prepares a step under concurrent partial prefills (vLLM's partial prefill
// metadata): it counts the requests in prefill in the batch and the long ones among them, then
// looks into the wait queue for the prefills that could join (up to max-num-partial-prefills,
// long ones only while max-long-partial-prefills allows), and sets the per-request chunk cap to
// the token budget divided by the number of prefills that may run.
func (s *simulation) planPartials(in *instance) {
	c := in.cfg
	limit, longLimit := c.MaxNumPartialPrefills, max(c.MaxLongPartialPrefills, 1)
	thr := partialThreshold(c)
	var prefills, long int32
	for i := range in.running {
		if e := &in.running[i]; e.progress < e.input {
			prefills++
			if e.input-e.progress > thr {
				long++
			}
		}
	}
	in.partials, in.longPartials = prefills, long
	// The count is the same in any order of the queue (it stops only at the limit), so the
	// heap form is read in storage order.
	q := &in.waitQ
	waitingLong := int32(0)
	for k := 0; k < q.size && prefills < limit; k++ {
		var e uint64
		if q.sched != nil {
			e = q.items[k].e
		} else {
			e = q.buf[(q.head+k)%len(q.buf)]
		}
		r := &s.slab.reqs[int32(uint32(e))]
		if r.gen != uint32(e>>32) || r.state != stQueued || r.pd == pdDecode {
			continue
		}
		if r.input > thr {
			if long+waitingLong >= longLimit {
				continue
			}
			waitingLong++
		}
		prefills++
	}
	in.slotBudget = int64(c.MaxNumBatchedTokens) / int64(max(min(prefills, limit), 1))
}

// restoreSetAside returns the long requests admission stepped over to the front of the wait
// queue, in their order.
func (s *simulation) restoreSetAside(in *instance) {
	for k := len(in.setAside) - 1; k >= 0; k-- {
		e := in.setAside[k]
		in.waitQ.push(e, s.schedKey(int32(uint32(e))), true)
	}
	in.setAside = in.setAside[:0]
}

// scheduleRunning is phase 1 of batch formation: the running requests, in order, each get
// their next prefill chunk or one decode token while the budget lasts, preempting when KV
// blocks run out. It reports whether anything was preempted.
func (s *simulation) scheduleRunning(in *instance, budget *int64) (preempted bool) {
	step := int32(in.stepCount)
	mml := in.cfg.MaxModelLen
	// A decode token of an entry at or past capAt would exceed max-model-len; with no cap,
	// progress never reaches it.
	capAt := int32(math.MaxInt32)
	if mml > 0 {
		capAt = mml - 1
	}
	if s.eagerKV {
		capAt = math.MinInt32 // the reference stepper takes no shortcut
	}
	sh := &in.shape
	work := in.work[:0]
	// The common case, a decode token that fits in the entry's last block, runs on locals;
	// they are written back before anything else can read or change the budget or the shape.
	// Each such token takes one unit of budget, so a stretch of them ends at index lim at the
	// latest.
	run, bud := in.running, *budget
	var decReqs, decCtx int64
	i := 0
	for {
		lim := int(min(int64(len(run)), int64(i)+max(bud, 0)))
		from := i
		for i < lim {
			e := &run[i]
			p := e.progress
			if p < e.input || p >= capAt || e.room <= 0 {
				break
			}
			e.room--
			e.lazy++
			e.numNew, e.stamp = 1, step
			decCtx += int64(p)
			e.progress = p + 1
			if p+1 >= e.end {
				work = append(work, int32(i))
			}
			i++
		}
		bud -= int64(i - from)
		decReqs += int64(i - from)
		if i >= len(run) || bud <= 0 {
			break
		}
		if e := &run[i]; e.progress >= e.input && e.progress < capAt && in.kv.FreeBlocks() > 0 {
			// A decode token at a block boundary (room is 0) with a free block: growDecode's
			// allocation, which cannot fail and so cannot preempt.
			c := &in.cold[i]
			in.kv.Grow(&c.kv, e.lazy+1, nil)
			e.lazy = 0
			in.setRoom(e, &c.kv)
			bud--
			decReqs++
			p := e.progress
			decCtx += int64(p)
			e.numNew, e.stamp = 1, step
			e.progress = p + 1
			if p+1 >= e.end {
				work = append(work, int32(i))
			}
			i++
			continue
		}
		*budget = bud
		sh.DecodeRequests += decReqs
		sh.DecodeContext += decCtx
		decReqs, decCtx = 0, 0
		var stop bool
		i, stop = s.scheduleEntry(in, i, budget, &work, &preempted)
		run, bud = in.running, *budget
		if stop {
			break
		}
		i++
	}
	*budget = bud
	sh.DecodeRequests += decReqs
	sh.DecodeContext += decCtx
	in.work = work
	in.brk, in.nSched = i, len(in.running)
	in.fullScan = preempted || s.eagerKV
	return preempted
}

// scheduleEntry is phase 1 for running entry i outside the common case: a prefill chunk, a
// request at the length cap, or a decode token that needs a new block (which may preempt). It
// returns the entry's index after any preemption before it, and whether phase 1 stops there
// (the entry itself was preempted).
func (s *simulation) scheduleEntry(in *instance, i int, budget *int64, work *[]int32, preempted *bool) (int, bool) {
	step := int32(in.stepCount)
	c := in.cfg
	thr, mml := c.LongPrefillTokenThreshold, c.MaxModelLen
	e := &in.running[i]
	if e.progress < e.input {
		n := e.input - e.progress
		if in.slotBudget > 0 {
			thr = partialThreshold(c)
			n = int32(min(int64(n), in.slotBudget))
		}
		if thr > 0 && thr < n {
			n = thr
		}
		n = int32(min(int64(n), *budget))
		if mml > 0 {
			n = min(n, max(mml-1-e.progress, 0))
		}
		if n == 0 {
			*work = append(*work, int32(i)) // at the length cap: completes in execute
			return i, false
		}
		ok, adj := s.reserve(in, i, n, budget, preempted)
		i -= adj
		if !ok {
			return i, true
		}
		e = &in.running[i]
		*budget -= int64(n)
		e.numNew, e.stamp = n, step
		in.addChunk(e.slot, n, e.progress, e.input)
		*work = append(*work, int32(i))
		return i, false
	}
	// Decoding (requests with fewer than two output tokens finish with their prefill).
	if mml > 0 && e.progress+1 > mml-1 {
		*work = append(*work, int32(i))
		return i, false // at the length cap: completes in execute without a token
	}
	ok, adj := s.reserve(in, i, 1, budget, preempted)
	i -= adj
	if !ok {
		return i, true
	}
	e = &in.running[i]
	*budget--
	e.numNew, e.stamp = 1, step
	sh := &in.shape
	sh.DecodeRequests++
	sh.DecodeContext += int64(e.progress)
	e.progress++
	if e.progress >= e.input+max(e.output, 1)-1 || (mml > 0 && e.progress >= mml-1) {
		*work = append(*work, int32(i))
	}
	return i, false
}

// admitWaiting is phase 2 of batch formation: requests from the head of the wait queue join
// the batch, reusing cached prompt blocks, while the batch and the budget have room; the first
// that cannot get its KV blocks stops admission (head-of-line, as in vLLM).
func (s *simulation) admitWaiting(in *instance, now, budget int64) {
	step := int32(in.stepCount)
	c := in.cfg
	thr, mml, bs := c.LongPrefillTokenThreshold, c.MaxModelLen, c.BlockSize
	partial := in.slotBudget > 0
	if partial {
		thr = partialThreshold(c)
	}
	for int32(len(in.running)) < c.MaxNumSeqs && budget > 0 {
		slot, ok := in.frontLive(s.slab.reqs)
		if !ok {
			return
		}
		r := &s.slab.reqs[slot]
		if partial && r.pd != pdDecode {
			if in.partials >= c.MaxNumPartialPrefills {
				return
			}
			if r.input > thr && in.longPartials >= max(c.MaxLongPartialPrefills, 1) {
				// A long prompt over the long limit: shorter ones behind it go first.
				in.waitQ.popFront(true)
				in.setAside = append(in.setAside, qEntry(slot, r.gen))
				continue
			}
		}
		t := in.takeTable(int((int64(r.input)+int64(r.output))/int64(bs)) + 1)
		if r.pd == pdDecode {
			if !s.admitTransferred(in, slot, r, t, now) {
				in.kv.Release(t)
				if in.track && s.ctl.obs != nil {
					s.ctl.obs.holBlocked(in.idx, slot, in.waitQ.live)
				}
				return
			}
			budget--
			e := &in.running[len(in.running)-1]
			e.end = in.endOf(e)
			continue
		}
		var cached, gpuBlocks, cpuBlocks int32
		if !c.DisablePrefixCaching {
			gpuBlocks = in.kv.ClaimPrefix(t, r.hashes, r.input)
			cached = gpuBlocks * bs
			if in.tier != nil {
				if cpuBlocks = in.tierMatch(r, gpuBlocks); cpuBlocks > 0 {
					if !in.kv.Grow(t, cpuBlocks*bs, r.hashes) {
						in.kv.Release(t)
						if in.track && s.ctl.obs != nil {
							s.ctl.obs.holBlocked(in.idx, slot, in.waitQ.live)
						}
						return
					}
					cached += cpuBlocks * bs
				}
			}
		}
		n := r.input - cached
		if thr > 0 && thr < n {
			n = thr
		}
		if partial {
			n = int32(min(int64(n), in.slotBudget))
		}
		if c.DisableChunkedPrefill && int64(n) > budget {
			in.kv.Release(t)
			return
		}
		n = int32(min(int64(n), budget))
		if mml > 0 {
			n = min(n, max(mml-1-cached, 0))
		}
		if !in.kv.Grow(t, n, r.hashes) {
			in.kv.Release(t) // give back the claimed prefix; head-of-line blocking
			if in.track && s.ctl.obs != nil {
				s.ctl.obs.holBlocked(in.idx, slot, in.waitQ.live)
			}
			return
		}
		in.waitQ.popFront(true)
		if cpuBlocks > 0 {
			s.reloaded(in, r, gpuBlocks, cpuBlocks)
		}
		if in.track {
			in.sig.admitted(r.input, cached)
			if in.victim != nil {
				in.runSeq++
				s.ctl.st[slot].key.RunSeq = in.runSeq
			}
			if s.ctl.obs != nil {
				s.ctl.obs.scheduled(in.idx, slot, cached)
			}
		}
		out := r.output
		if r.pd == pdPrefill {
			out = 1 // the prefill pool produces the first token only
		}
		in.running = append(in.running, runEntry{
			slot: slot, progress: cached, input: r.input, output: out,
			numNew: n, stamp: step,
		})
		in.cold = append(in.cold, runCold{kv: *t})
		*t = kvcache.Table{}
		e := &in.running[len(in.running)-1]
		e.end = in.endOf(e)
		in.setRoom(e, &in.cold[len(in.cold)-1].kv)
		r.state = stRunning
		r.scheduledAt = now
		r.schedDelay = now - r.arrival
		budget -= int64(n)
		in.addChunk(slot, n, cached, r.input)
		if partial {
			in.partials++
			if r.input > thr {
				in.longPartials++
			}
		}
	}
}

// execute applies the step's work to the running batch and completes finished requests, in
// running order (the release order shapes the LRU free list and the CPU tier's offload
// decisions). done is the end of the step. It reports whether any request completed. Phase 1
// left the steady decode entries advanced already, so only the entries it listed and those it
// did not reach are visited (see instance.work); the reference stepper visits all.
func (s *simulation) execute(in *instance, done int64) (completed bool) {
	leaving := in.leaving[:0]
	if in.fullScan {
		for i := 0; i < len(in.running); i++ {
			if s.settle(in, i, i >= in.nSched, done) {
				leaving = append(leaving, int32(i))
			}
		}
	} else {
		for _, i := range in.work {
			if s.settle(in, int(i), false, done) {
				leaving = append(leaving, i)
			}
		}
		for i := in.brk; i < len(in.running); i++ {
			if s.settle(in, i, i >= in.nSched, done) {
				leaving = append(leaving, int32(i))
			}
		}
	}
	in.leaving = leaving
	if len(leaving) == 0 {
		return false
	}
	// Close the gaps in one pass from the first departure, keeping the order.
	run, cold := in.running, in.cold
	w := int(leaving[0])
	for k, i := range leaving {
		next := len(run)
		if k+1 < len(leaving) {
			next = int(leaving[k+1])
		}
		copy(cold[w:], cold[i+1:next])
		w += copy(run[w:], run[i+1:next])
	}
	in.running, in.cold = run[:w], cold[:w]
	return true
}

// settle applies step work to running entry i and, when the request finishes, writes it back,
// releases its blocks and completes it (or hands it to a decode instance); it reports whether
// the entry left the batch. inc says whether a scheduled decode token still has to advance
// progress (entries admitted in phase 2; phase 1 advances its own).
func (s *simulation) settle(in *instance, i int, inc bool, done int64) bool {
	step := in.stepCount
	e := &in.running[i]
	if e.stamp == int32(step) {
		if e.progress < e.input {
			e.progress += e.numNew
			if e.progress == e.input {
				in.cold[i].decodeFrom = step + 1
				r := &s.slab.reqs[e.slot]
				if in.tier != nil {
					s.offload(in, r)
				}
				if !r.ttftSet {
					r.ttftSet = true
					r.ttft = done + in.alphaOut - r.arrival
					r.firstTokenAt = done
				}
			}
		} else if inc {
			e.progress++
		}
	} else if e.progress >= e.input && e.output > 1 {
		// A decoding request left out of this step (the budget ran out or a preemption
		// stopped phase 1 before it, or it sits at the length cap).
		r := &s.slab.reqs[e.slot]
		r.skipped = append(r.skipped, step)
		in.stats.DeferredDecodes++
	}
	if mml := in.cfg.MaxModelLen; e.progress >= e.input+max(e.output, 1)-1 {
		if e.output > 0 && e.progress < e.input+e.output && !s.growDecode(in, e, &in.cold[i]) {
			// The final token's slot; BLIS counts a failure here as an accounting anomaly.
			in.stats.KVAllocationFailures++
		}
	} else if mml > 0 && e.progress >= mml-1 {
		s.slab.reqs[e.slot].lengthCapped = true
	} else {
		return false
	}
	slot := e.slot
	r := &s.slab.reqs[slot]
	c := &in.cold[i]
	in.flush(e, c, r)
	in.releaseTable(&c.kv)
	if r.itlCount > 0 {
		in.countITL(c.decodeFrom, step, r.skipped)
	}
	if r.pd == pdPrefill {
		s.handoff(in, slot, done)
		return true
	}
	s.finishRequest(in, slot, OutcomeCompleted, done, "")
	return true
}
