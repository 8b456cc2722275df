package sim

import "github.com/inference-sim/blis-operator/internal/engine/policy"

// This file is the delayed cache signal of the precise prefix producer (the bundle's
// observability.cache_signal_delay_us): llm-d's precise producer learns what an instance
// cached from the instance's KV events, which reach the router late. Every prompt block an
// instance stores becomes a store event due delay later; due events are applied in order to
// a router-side copy of the instances' cached blocks, and the precise producer credits an
// instance with a leading prompt block only when the block is both in that copy and still in
// the instance's cache (evictions are seen at once: the cache does not report which blocks
// it evicts).

// storeEvent is one prompt block stored on an instance, visible to the router from at.
type storeEvent struct {
	at   int64
	inst int32
	hash uint64
}

// slotReport is how many leading prompt blocks of a request's table on inst were reported.
type slotReport struct {
	inst, n int32
}

// cacheSignal is the router's delayed view of the instances' prefix caches.
type cacheSignal struct {
	delay int64
	// on is set at the first precise lookup: before it no request has reached an instance, so
	// nothing was stored, and runs without the precise producer never pay for the view.
	on bool
	// caps are the copy's per-instance capacities (the instances' KV blocks).
	caps []int
	// seen holds, per instance, the blocks whose store events were applied (an LRU bounded by
	// the instance's KV blocks).
	seen *policy.PrefixIndex
	// queue[head:] are the pending store events in time order.
	queue []storeEvent
	head  int
	// reported is per request slot.
	reported []slotReport
}

// newCacheSignal returns the delayed view over insts (nil without a delay).
func newCacheSignal(delay int64, insts []instance) *cacheSignal {
	if delay <= 0 {
		return nil
	}
	cs := &cacheSignal{delay: delay, caps: make([]int, len(insts))}
	for i := range insts {
		cs.caps[i] = int(insts[i].cfg.TotalKVBlocks)
	}
	return cs
}

// start turns the view on at the first precise lookup.
func (cs *cacheSignal) start() {
	cs.on = true
	cs.seen = policy.NewPrefixIndex(cs.caps)
}

// apply moves the store events due at now into the router's copy, in order.
func (cs *cacheSignal) apply(now int64) {
	var one [1]uint64
	for cs.head < len(cs.queue) && cs.queue[cs.head].at <= now {
		e := &cs.queue[cs.head]
		one[0] = e.hash
		cs.seen.Add(int(e.inst), one[:])
		cs.head++
	}
	if cs.head == len(cs.queue) {
		cs.queue, cs.head = cs.queue[:0], 0
	} else if cs.head >= 1024 && cs.head*2 >= len(cs.queue) {
		n := copy(cs.queue, cs.queue[cs.head:])
		cs.queue, cs.head = cs.queue[:n], 0
	}
}

// matched returns how many of the leading live blocks (of hashes, on instance i) the router
// has heard of.
func (cs *cacheSignal) matched(i int, hashes []uint64, live int32) int32 {
	var m int32
	for m < live && cs.seen.Holds(i, hashes[m]) {
		m++
	}
	return m
}

// reportStores turns the prompt blocks in's running requests stored since the last report into
// store events due after the delay. It runs after each step of in (the only place blocks are
// stored), so events are queued in time order.
func (s *simulation) reportStores(in *instance) {
	cs := s.ctl.signal
	at := s.now + cs.delay
	for j := range in.running {
		slot := in.running[j].slot
		for len(cs.reported) <= int(slot) {
			cs.reported = append(cs.reported, slotReport{inst: -1})
		}
		rep := &cs.reported[slot]
		n := in.cold[j].kv.Hashed()
		if rep.inst != in.idx {
			*rep = slotReport{inst: in.idx}
		}
		if n > rep.n {
			hs := s.slab.reqs[slot].hashes
			for k := rep.n; k < n && int(k) < len(hs); k++ {
				cs.queue = append(cs.queue, storeEvent{at: at, inst: in.idx, hash: hs[k]})
			}
		}
		rep.n = n
	}
}
