package workload

import (
	"container/heap"
	"testing"
)

// served is one request as a test simulator saw it.
type served struct {
	Request
	finish int64
}

type simEvent struct {
	t      int64
	finish bool
	seq    int
	req    Request
}

type simQueue []*simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if q[i].t != q[j].t {
		return q[i].t < q[j].t
	}
	if q[i].finish != q[j].finish {
		return q[i].finish
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(*simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// simulate drives src like the simulator does: it pulls open-loop arrivals in time order,
// serves every request for service(r) µs with infinite capacity, and reports completions with
// outcome(r) to reactive sources. It returns the requests in arrival order.
func simulate(t testing.TB, src Source, service func(*Request) int64, outcome func(*Request) Outcome) []served {
	t.Helper()
	if outcome == nil {
		outcome = func(*Request) Outcome { return Completed }
	}
	react, _ := src.(Reactive)
	var q simQueue
	seq := 0
	push := func(ev *simEvent) {
		seq++
		ev.seq = seq
		heap.Push(&q, ev)
	}
	var open Request
	haveOpen := src.Next(&open)
	var out []served
	index := map[uint64]int{}
	now := int64(0)
	seen := map[uint64]bool{}
	for haveOpen || len(q) > 0 {
		var ev *simEvent
		if haveOpen && (len(q) == 0 || open.Arrival < q[0].t || (open.Arrival == q[0].t && !q[0].finish)) {
			c := open
			c.Segments = append([]Segment(nil), open.Segments...)
			ev = &simEvent{t: c.Arrival, req: c}
			haveOpen = src.Next(&open)
		} else {
			ev = heap.Pop(&q).(*simEvent)
		}
		if ev.t < now {
			t.Fatalf("time went backwards: %d after %d", ev.t, now)
		}
		now = ev.t
		if !ev.finish {
			if seen[ev.req.ID] {
				t.Fatalf("duplicate request ID %d", ev.req.ID)
			}
			seen[ev.req.ID] = true
			index[ev.req.ID] = len(out)
			fin := now + service(&ev.req)
			out = append(out, served{Request: ev.req, finish: fin})
			push(&simEvent{t: fin, finish: true, req: ev.req})
			continue
		}
		if react == nil {
			continue
		}
		r := ev.req
		react.Finished(r.ID, outcome(&r), r.OutputLen, now, func(in *Request) {
			if in.Arrival < now {
				t.Fatalf("injected request %d arrives at %d before now %d", in.ID, in.Arrival, now)
			}
			c := *in
			c.Segments = append([]Segment(nil), in.Segments...)
			push(&simEvent{t: c.Arrival, req: c})
		})
	}
	return out
}

func fixedService(d int64) func(*Request) int64 { return func(*Request) int64 { return d } }
