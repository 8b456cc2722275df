package sim

import (
	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// Request lifecycle states inside the simulator.
const (
	stFree     uint8 = iota // slot unused
	stArriving              // generated, between cluster arrival and instance arrival
	stPending               // at an instance, in the API-server queueing delay
	stQueued                // in the wait queue
	stRunning               // in the running batch
)

// reqState is one live request. Requests live in a slab and are named by their int32 slot, so
// the wait queue, the running batch and events hold small integers, and a finished request's
// slot (with the capacity of its slices) is reused by a later one.
type reqState struct {
	id       uint64
	arrival  int64 // cluster arrival
	deadline int64 // absolute; 0 = none
	input    int32
	output   int32
	client   int32
	tenant   int32
	class    int32
	round    int32
	session  uint64
	inst     int32
	gen      uint32 // bumped whenever the slot is freed, to detect stale events and queue entries
	state    uint8

	ttftSet      bool
	lengthCapped bool
	// priority is vLLM's convention: lower is more urgent.
	priority int32

	// progress is BLIS's ProgressIndex: tokens computed (prompt tokens during prefill, then
	// prompt + decode steps). While the request runs, the authoritative copy is its runEntry
	// (which also holds its KV block table); this one is written back when it leaves the batch.
	progress int32

	segs   []workload.Segment
	hashes []uint64
	// skipped lists the steps in which the request, already decoding, got no token.
	skipped []int64

	// Timing, µs. ttft is relative to arrival (and includes the output-token processing time);
	// the others are absolute.
	ttft         int64
	itlSum       int64
	itlCount     int32
	preemptions  int32
	routedAt     int64
	enqueuedAt   int64
	scheduledAt  int64 // last admission into the running batch
	schedDelay   int64
	firstTokenAt int64
	// pd is the request's disaggregation phase and pdGap its handoff time (first token to the
	// first decode step on the decode pool), part of its E2E.
	pd    uint8
	pdGap int64

	// attrs are the client's attributes (model, adapter, streaming, network, SLO target),
	// read at arrival and when the request is recorded, never by the step loop.
	attrs workload.Attrs
}

// slab owns every live request.
type slab struct {
	reqs []reqState
	free []int32
	live int
}

// alloc returns a free slot, reusing the capacities of its previous occupant's slices.
func (s *slab) alloc() int32 {
	s.live++
	if n := len(s.free); n > 0 {
		i := s.free[n-1]
		s.free = s.free[:n-1]
		return i
	}
	s.reqs = append(s.reqs, reqState{})
	return int32(len(s.reqs) - 1)
}

// release frees slot i. Pending events and queue entries naming it become stale through gen.
func (s *slab) release(i int32) {
	r := &s.reqs[i]
	gen := r.gen + 1
	segs, hashes, skipped := r.segs[:0], r.hashes[:0], r.skipped[:0]
	*r = reqState{gen: gen, segs: segs, hashes: hashes, skipped: skipped}
	s.free = append(s.free, i)
	s.live--
}

// waitQueue is a ring-buffer deque of (slot, generation) entries: the fcfs order, where new
// requests join the back and preempted ones return to the front, as in vLLM. With a non-fcfs
// scheduler (sched set) it is instead a binary heap ordered by sched.Before over scheduler keys
// copied at insertion, so a preempted request is re-inserted at its place in the order (vLLM's
// priority mode). In both forms timed-out requests are removed lazily: their entries go stale
// (generation or state mismatch) and are skipped when they reach the front, so cancelling a
// queued request is O(1).
type waitQueue struct {
	buf        []uint64
	head, size int
	live       int32 // entries that are still valid

	sched policy.Scheduler
	items []qItem // the heap, when sched is set
}

// qItem is a heap entry: the queue entry and the scheduler key it is ordered by.
type qItem struct {
	key policy.SchedKey
	e   uint64
}

func qEntry(slot int32, gen uint32) uint64 { return uint64(gen)<<32 | uint64(uint32(slot)) }

func (q *waitQueue) grow() {
	n := max(16, 2*len(q.buf))
	nb := make([]uint64, n)
	for i := 0; i < q.size; i++ {
		nb[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	q.buf, q.head = nb, 0
}

func (q *waitQueue) pushBack(e uint64) {
	if q.size == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.size)%len(q.buf)] = e
	q.size++
	q.live++
}

func (q *waitQueue) pushFront(e uint64) {
	if q.size == len(q.buf) {
		q.grow()
	}
	q.head = (q.head - 1 + len(q.buf)) % len(q.buf)
	q.buf[q.head] = e
	q.size++
	q.live++
}

// front returns the first entry; the queue must not be empty.
func (q *waitQueue) front() uint64 {
	if q.sched != nil {
		return q.items[0].e
	}
	return q.buf[q.head]
}

// popFront removes the first entry; live says whether it was a valid one.
func (q *waitQueue) popFront(live bool) {
	if live {
		q.live--
	}
	if q.sched != nil {
		q.popHeap()
		return
	}
	q.head = (q.head + 1) % len(q.buf)
	q.size--
}

// push inserts e with its scheduler key: by the scheduler's order in heap form, else at the
// back (a new request) or the front (a preempted one).
func (q *waitQueue) push(e uint64, k *policy.SchedKey, front bool) {
	if q.sched == nil {
		if front {
			q.pushFront(e)
		} else {
			q.pushBack(e)
		}
		return
	}
	q.live++
	q.size++
	q.items = append(q.items, qItem{key: *k, e: e})
	items := q.items
	i := len(items) - 1
	it := items[i]
	for i > 0 {
		p := (i - 1) / 2
		if !q.sched.Before(&it.key, &items[p].key) {
			break
		}
		items[i] = items[p]
		i = p
	}
	items[i] = it
}

// popHeap removes the heap's first item.
func (q *waitQueue) popHeap() {
	q.size--
	n := len(q.items) - 1
	last := q.items[n]
	q.items[n] = qItem{}
	q.items = q.items[:n]
	if n == 0 {
		return
	}
	items := q.items
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && q.sched.Before(&items[r].key, &items[l].key) {
			c = r
		}
		if !q.sched.Before(&items[c].key, &last.key) {
			break
		}
		items[i] = items[c]
		i = c
	}
	items[i] = last
}
