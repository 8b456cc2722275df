package sim

// Event kinds double as their tie-break priority: at equal time, a lower kind is processed
// first. The order follows the request pipeline (cluster arrival, admission, routing, instance
// arrival, wait-queue entry, engine step, timeout) so that, at one instant, a request moves as
// far down the pipeline as it can before steps run, and a deadline that coincides with a step
// loses to the step (completion wins over cancellation). Gaps leave room for kinds the policy,
// autoscaling and disaggregation layers add later without renumbering.
const (
	evClusterArrival  uint8 = 0
	evAdmission       uint8 = 1
	evRouting         uint8 = 2
	evInstanceArrival uint8 = 3
	evQueued          uint8 = 4
	// evLifecycle is an instance's delayed lifecycle transition (autoscaled runs): a replica
	// that becomes ready at an instant takes that instant's steps.
	evLifecycle uint8 = 5
	evStep      uint8 = 6
	// evSnapshotTick refreshes the router's periodic snapshot fields on their grid, after the
	// steps of its instant (seed 001 §E.3: snapshot refresh last).
	evSnapshotTick uint8 = 7
	evTimeout      uint8 = 8
	// evAutoscale is an autoscaler evaluation, after everything else of its instant.
	evAutoscale uint8 = 9
)

// event is a value type: the heap is a slice of these, so scheduling an event never allocates
// once the slice has grown to the run's peak size.
type event struct {
	time int64
	// key packs the kind (top 8 bits) above a run-wide insertion sequence number, so one
	// integer comparison implements the (kind, id) part of the ordering.
	key uint64
	// inst is the target instance, or for timeouts the generation of the request slot (slots
	// are reused, and a stale timeout must not cancel the slot's next occupant).
	inst int32
	// req is the request slot, or -1.
	req int32
}

func (e *event) kind() uint8 { return uint8(e.key >> 56) }

func (e *event) before(o *event) bool {
	if e.time != o.time {
		return e.time < o.time
	}
	return e.key < o.key
}

// eventHeap is a binary min-heap ordered by (time, kind, sequence).
type eventHeap struct {
	items []event
	seq   uint64
}

func (h *eventHeap) len() int { return len(h.items) }

// push schedules an event; the sequence number makes the order total and insertion-stable.
func (h *eventHeap) push(time int64, kind uint8, inst, req int32) {
	e := h.newEvent(time, kind, inst, req)
	h.items = append(h.items, e)
	items := h.items
	i := len(items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !e.before(&items[p]) {
			break
		}
		items[i] = items[p]
		i = p
	}
	items[i] = e
}

// peek returns the earliest event; the heap must not be empty.
func (h *eventHeap) peek() *event { return &h.items[0] }

// pop removes and returns the earliest event; the heap must not be empty.
func (h *eventHeap) pop() event {
	items := h.items
	top := items[0]
	n := len(items) - 1
	last := items[n]
	h.items = items[:n]
	if n == 0 {
		return top
	}
	items = items[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && items[r].before(&items[l]) {
			c = r
		}
		if !items[c].before(&last) {
			break
		}
		items[i] = items[c]
		i = c
	}
	items[i] = last
	return top
}

// newEvent builds an event with the next sequence number, for either queue.
func (h *eventHeap) newEvent(time int64, kind uint8, inst, req int32) event {
	h.seq++
	return event{time: time, key: uint64(kind)<<56 | h.seq, inst: inst, req: req}
}

// deadlineQueue holds request deadlines in a binary min-heap with the same order as
// eventHeap, indexed by request slot so that a request that finishes cancels its deadline in
// O(log n). The event queue therefore holds only events of requests still in flight, instead
// of every deadline of the last timeout period.
type deadlineQueue struct {
	items []event
	pos   []int32 // by slot: index in items, or -1
}

func (q *deadlineQueue) len() int { return len(q.items) }

func (q *deadlineQueue) peek() *event { return &q.items[0] }

func (q *deadlineQueue) set(i int, e event) {
	q.items[i] = e
	q.pos[e.req] = int32(i)
}

// push adds the deadline event e (e.req is the slot).
func (q *deadlineQueue) push(e event) {
	for int(e.req) >= len(q.pos) {
		q.pos = append(q.pos, -1)
	}
	q.items = append(q.items, e)
	q.up(len(q.items)-1, e)
}

func (q *deadlineQueue) up(i int, e event) {
	for i > 0 {
		p := (i - 1) / 2
		if !e.before(&q.items[p]) {
			break
		}
		q.set(i, q.items[p])
		i = p
	}
	q.set(i, e)
}

func (q *deadlineQueue) down(i int, e event) {
	n := len(q.items)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && q.items[r].before(&q.items[l]) {
			c = r
		}
		if !q.items[c].before(&e) {
			break
		}
		q.set(i, q.items[c])
		i = c
	}
	q.set(i, e)
}

// removeAt deletes the item at index i and returns it.
func (q *deadlineQueue) removeAt(i int) event {
	e := q.items[i]
	q.pos[e.req] = -1
	n := len(q.items) - 1
	last := q.items[n]
	q.items = q.items[:n]
	if i < n {
		if i > 0 && last.before(&q.items[(i-1)/2]) {
			q.up(i, last)
		} else {
			q.down(i, last)
		}
	}
	return e
}

// pop removes and returns the earliest deadline.
func (q *deadlineQueue) pop() event { return q.removeAt(0) }

// cancel removes slot's deadline, if it has one.
func (q *deadlineQueue) cancel(slot int32) {
	if int(slot) < len(q.pos) && q.pos[slot] >= 0 {
		q.removeAt(int(q.pos[slot]))
	}
}
