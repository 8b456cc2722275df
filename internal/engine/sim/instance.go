package sim

import (
	"github.com/inference-sim/blis-operator/internal/engine/kvcache"
	"github.com/inference-sim/blis-operator/internal/engine/latency"
)

// instance is one vLLM replica: a wait queue, a running batch and a paged KV cache.
type instance struct {
	idx             int32
	cfg             *InstanceConfig
	lat             latency.Model
	kv              *kvcache.Cache
	alphaOut        int64 // output-token processing time, added to TTFT and each ITL
	postDecode      int64 // added once to E2E of requests with output
	priorityVictims bool
	stats           *InstanceStats

	waitQ       waitQueue
	running     []int32 // slots, in vLLM's running order
	pending     int32   // routed here, not yet in the wait queue
	stepPending bool    // a step event is scheduled
	stepCount   int64

	shape      latency.StepShape
	chunkOwner []int32 // slot owning shape.Prefill[i]
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

// removeRunning deletes slot from the running batch, keeping the order of the others.
func (in *instance) removeRunning(slot int32) {
	for i, s := range in.running {
		if s == slot {
			in.running = append(in.running[:i], in.running[i+1:]...)
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
		a, b := &reqs[in.running[i]], &reqs[in.running[best]]
		if a.priority > b.priority || (a.priority == b.priority && a.arrival > b.arrival) {
			best = i
		}
	}
	return best
}

// unshape removes slot's contribution to the step being formed (a victim preempted after it
// was scheduled, possible only with priority victims).
func (in *instance) unshape(slot int32, r *reqState) {
	sh := &in.shape
	if r.progress >= r.input {
		sh.DecodeRequests--
		sh.DecodeContext -= int64(r.progress)
		return
	}
	for i, o := range in.chunkOwner {
		if o == slot {
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

// grow reserves KV space for n more tokens of r. A decode token that fits in the table's last
// block is only counted (kvLazy); the cache is told at the next block boundary, which gives the
// same block allocations in the same order as telling it every token, without a call per token.
func (in *instance) grow(r *reqState, n int32) bool {
	if r.progress >= r.input {
		used := r.kv.Tokens + r.kvLazy
		if used+n <= int32(len(r.kv.Blocks))*in.cfg.BlockSize {
			r.kvLazy += n
			return true
		}
		if in.kv.Grow(&r.kv, r.kvLazy+n, nil) {
			r.kvLazy = 0
			return true
		}
		return false
	}
	return in.kv.Grow(&r.kv, n, r.hashes)
}

// releaseKV frees all of r's blocks.
func (in *instance) releaseKV(r *reqState) {
	in.kv.Release(&r.kv)
	r.kvLazy = 0
}

// preempt moves running slot v back to the front of the wait queue with its progress reset
// (vLLM recompute preemption).
func (s *simulation) preempt(in *instance, v int32) {
	r := &s.slab.reqs[v]
	in.releaseKV(r)
	r.state = stQueued
	r.progress, r.computed, r.numNew = 0, 0, 0
	r.ttftSet = false
	r.itlSum, r.itlCount = 0, 0
	r.preemptions++
	in.stats.Preemptions++
	in.waitQ.pushFront(qEntry(v, r.gen))
}

// reserve gets KV space for n tokens of the running request at index i, preempting victims
// until it succeeds or the request itself is preempted (then it returns false). adj is the
// number of victims removed before index i, which shifts the caller's loop index.
func (s *simulation) reserve(in *instance, i int, n int32, budget *int64, preempted *bool) (ok bool, adj int) {
	slot := in.running[i]
	r := &s.slab.reqs[slot]
	for {
		if in.grow(r, n) {
			return true, adj
		}
		*preempted = true
		vi := len(in.running) - 1
		if in.priorityVictims {
			vi = in.priorityVictim(s.slab.reqs)
		}
		v := in.running[vi]
		in.running = append(in.running[:vi], in.running[vi+1:]...)
		if vr := &s.slab.reqs[v]; vr.stamp == in.stepCount && vr.numNew > 0 {
			// Already scheduled in this step: give its tokens back.
			*budget += int64(vr.numNew)
			in.unshape(v, vr)
			vr.stamp = 0
		}
		s.preempt(in, v)
		if v == slot {
			return false, adj
		}
		if vi < i-adj {
			adj++
		}
	}
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
	step := in.stepCount
	c := in.cfg
	budget := int64(c.MaxNumBatchedTokens)
	thr, mml := c.LongPrefillTokenThreshold, c.MaxModelLen
	sh := &in.shape
	sh.Prefill, sh.PrefillTokens, sh.DecodeRequests, sh.DecodeContext = sh.Prefill[:0], 0, 0, 0
	in.chunkOwner = in.chunkOwner[:0]
	preempted := false

	// Phase 1: running requests, in order.
	for i := 0; i < len(in.running); i++ {
		if budget <= 0 {
			break
		}
		slot := in.running[i]
		r := &s.slab.reqs[slot]
		if r.progress < r.input {
			n := r.input - r.progress
			if thr > 0 && thr < n {
				n = thr
			}
			n = int32(min(int64(n), budget))
			if mml > 0 {
				n = min(n, max(mml-1-r.progress, 0))
			}
			if n == 0 {
				continue
			}
			ok, adj := s.reserve(in, i, n, &budget, &preempted)
			i -= adj
			if !ok {
				break
			}
			budget -= int64(n)
			r.numNew, r.stamp, r.computed = n, step, r.progress+n
			in.addChunk(slot, n, r.progress, r.input)
		} else if r.output > 0 {
			if mml > 0 && r.progress+1 > mml-1 {
				continue // at the length cap: completes below without a token
			}
			ok, adj := s.reserve(in, i, 1, &budget, &preempted)
			i -= adj
			if !ok {
				break
			}
			budget--
			r.numNew, r.stamp = 1, step
			sh.DecodeRequests++
			sh.DecodeContext += int64(r.progress)
		}
	}

	// Phase 2: admissions from the wait queue, only if nothing was preempted.
	if !preempted {
		bs := c.BlockSize
		for int32(len(in.running)) < c.MaxNumSeqs && budget > 0 {
			slot, ok := in.frontLive(s.slab.reqs)
			if !ok {
				break
			}
			r := &s.slab.reqs[slot]
			var cached int32
			if !c.DisablePrefixCaching {
				cached = in.kv.ClaimPrefix(&r.kv, r.hashes, r.input) * bs
			}
			n := r.input - cached
			if thr > 0 && thr < n {
				n = thr
			}
			n = int32(min(int64(n), budget))
			if mml > 0 {
				n = min(n, max(mml-1-cached, 0))
			}
			if !in.kv.Grow(&r.kv, n, r.hashes) {
				in.releaseKV(r) // give back the claimed prefix; head-of-line blocking
				break
			}
			in.waitQ.popFront(true)
			in.running = append(in.running, slot)
			r.state = stRunning
			r.progress, r.computed, r.numNew, r.stamp = cached, cached+n, n, step
			r.scheduledAt = now
			r.schedDelay = now - r.arrival
			budget -= int64(n)
			in.addChunk(slot, n, cached, r.input)
		}
	}

	if used := int64(in.kv.UsedBlocks()); used > in.stats.PeakKVBlocks {
		in.stats.PeakKVBlocks = used
	}
	if s.invariants {
		s.checkStep(in)
	}
	stepTime := max(in.lat.StepTime(sh), 1)
	gap := stepTime + in.alphaOut
	if sh.DecodeRequests > 0 {
		in.stats.ITLGaps = append(in.stats.ITLGaps, gap)
		in.stats.ITLCounts = append(in.stats.ITLCounts, sh.DecodeRequests)
	}

	// Execution and completions, in running order (release order shapes the LRU free list).
	done := now + stepTime
	keep := 0
	completed := false
	for i := 0; i < len(in.running); i++ {
		slot := in.running[i]
		r := &s.slab.reqs[slot]
		if r.progress < r.input {
			r.progress = r.computed
		} else if r.stamp == step {
			r.progress++
			r.itlSum += gap
			r.itlCount++
		}
		if r.progress == r.input && !r.ttftSet {
			r.ttftSet = true
			r.ttft = done + in.alphaOut - r.arrival
			r.firstTokenAt = done
		}
		if r.progress >= r.input+max(r.output, 1)-1 {
			if r.output > 0 && r.progress < r.input+r.output && !in.grow(r, 1) {
				// The final token's slot; BLIS counts a failure here as an accounting anomaly.
				in.stats.KVAllocationFailures++
			}
		} else if mml > 0 && r.progress >= mml-1 {
			r.lengthCapped = true
		} else {
			in.running[keep] = slot
			keep++
			continue
		}
		in.releaseKV(r)
		completed = true
		s.finishRequest(in, slot, OutcomeCompleted, done, "")
	}
	in.running = in.running[:keep]
	if completed {
		in.lastEvent(done)
	}
	if len(in.running) > 0 || in.waitQ.live > 0 {
		s.heap.push(done, evStep, in.idx, -1)
	} else {
		in.stepPending = false
	}
}
