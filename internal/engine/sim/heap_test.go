package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func drain(h *eventHeap) []event {
	var out []event
	for h.len() > 0 {
		out = append(out, h.pop())
	}
	return out
}

// BC-6: lower timestamp first.
func TestHeapOrdersByTime(t *testing.T) {
	var h eventHeap
	for _, tm := range []int64{100, 50, 150} {
		h.push(tm, evStep, 0, -1)
	}
	got := drain(&h)
	if got[0].time != 50 || got[1].time != 100 || got[2].time != 150 {
		t.Fatalf("order %v", got)
	}
}

// BC-6: at equal time, lower type priority first (arrival before step).
func TestHeapOrdersByKindAtEqualTime(t *testing.T) {
	var h eventHeap
	h.push(100, evStep, 0, -1)
	h.push(100, evTimeout, 0, 1)
	h.push(100, evClusterArrival, -1, 2)
	h.push(100, evQueued, 0, 3)
	got := drain(&h)
	kinds := []uint8{got[0].kind(), got[1].kind(), got[2].kind(), got[3].kind()}
	if !slices.Equal(kinds, []uint8{evClusterArrival, evQueued, evStep, evTimeout}) {
		t.Fatalf("kinds %v", kinds)
	}
}

// BC-6: at equal time and kind, insertion (event ID) order.
func TestHeapOrdersByIDAtEqualTimeAndKind(t *testing.T) {
	var h eventHeap
	for i := range 50 {
		h.push(7, evStep, int32(i), -1)
	}
	for i, e := range drain(&h) {
		if e.inst != int32(i) {
			t.Fatalf("position %d holds event of instance %d", i, e.inst)
		}
	}
}

// BC-6: the processing order is a function of the events, not of the insertion order (given
// the same IDs), and equals a full sort by (time, kind, id).
func TestHeapDeterministicUnderShuffle(t *testing.T) {
	type item struct {
		time int64
		kind uint8
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	items := make([]item, 2000)
	kinds := []uint8{evClusterArrival, evRouting, evQueued, evStep, evTimeout}
	for i := range items {
		items[i] = item{time: rnd.Int64N(300), kind: kinds[rnd.IntN(len(kinds))]}
	}
	// Reference: push in order so that item i gets sequence i+1, then sort.
	var h eventHeap
	for i, it := range items {
		h.push(it.time, it.kind, int32(i), -1)
	}
	want := slices.Clone(h.items)
	slices.SortFunc(want, func(a, b event) int {
		if a.before(&b) {
			return -1
		}
		if b.before(&a) {
			return 1
		}
		return 0
	})
	got := drain(&h)
	if !slices.Equal(got, want) {
		t.Fatal("heap order differs from sorted order")
	}
	// Pushing the same (time, kind, id) triples in a shuffled order pops the same sequence.
	perm := rnd.Perm(len(want))
	var h2 eventHeap
	for _, p := range perm {
		e := want[p]
		h2.seq = e.key&(1<<56-1) - 1 // give each event its original ID
		h2.push(e.time, e.kind(), e.inst, e.req)
	}
	if got2 := drain(&h2); !slices.Equal(got2, want) {
		t.Fatal("order depends on insertion order")
	}
}
