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
	evStep            uint8 = 6
	evTimeout         uint8 = 8
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
	h.seq++
	e := event{time: time, key: uint64(kind)<<56 | h.seq, inst: inst, req: req}
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
