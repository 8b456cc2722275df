package policy

import (
	"math"
	"testing"
)

func TestPrefixIndexGreedyMatchCreditsEveryHolder(t *testing.T) {
	x := NewPrefixIndex([]int{100, 100, 100})
	x.Add(0, []uint64{10, 12})
	x.Add(1, []uint64{11})
	out := make([]int32, 3)
	// Walk 10 (holder 0), 11 (holder 1), 12 (holder 0), 13 (nobody: stop).
	if !x.Match([]uint64{10, 11, 12, 13, 10}, out) {
		t.Fatal("expected a match")
	}
	if out[0] != 2 || out[1] != 1 || out[2] != 0 {
		t.Fatalf("got %v, want [2 1 0]", out)
	}
	if x.Match([]uint64{99, 10}, out) || out[0] != 0 {
		t.Fatalf("a miss on the first block must stop the walk, got %v", out)
	}
}

func TestPrefixIndexLRUEvictsLeastRecentlyAdded(t *testing.T) {
	x := NewPrefixIndex([]int{3})
	x.Add(0, []uint64{1, 2, 3})
	x.Add(0, []uint64{1}) // 1 becomes most recent; 2 is now the oldest
	x.Add(0, []uint64{4}) // evicts 2
	if x.Holds(0, 2) || !x.Holds(0, 1) || !x.Holds(0, 3) || !x.Holds(0, 4) {
		t.Fatal("wrong eviction")
	}
	if x.Len(0) != 3 {
		t.Fatalf("len %d, want 3", x.Len(0))
	}
	out := make([]int32, 1)
	x.Match([]uint64{2}, out)
	if out[0] != 0 {
		t.Fatal("evicted hash still matched")
	}
	x.Reset(0)
	if x.Len(0) != 0 || x.Match([]uint64{1}, out) {
		t.Fatal("reset kept entries")
	}
}

func TestPrefixIndexManyInstances(t *testing.T) {
	caps := make([]int, 130)
	x := NewPrefixIndex(caps)
	x.Add(0, []uint64{7})
	x.Add(64, []uint64{7})
	x.Add(129, []uint64{7, 8})
	out := make([]int32, 130)
	x.Match([]uint64{7, 8}, out)
	if out[0] != 1 || out[64] != 1 || out[129] != 2 || out[1] != 0 {
		t.Fatalf("multi-word sets: got %v %v %v", out[0], out[64], out[129])
	}
}

func TestPrefixIndexAddDoesNotAllocateAtSteadyState(t *testing.T) {
	x := NewPrefixIndex([]int{64})
	hashes := make([]uint64, 16)
	next := uint64(1)
	fill := func() {
		for i := range hashes {
			hashes[i] = next
			next++
		}
	}
	for i := 0; i < 20; i++ {
		fill()
		x.Add(0, hashes)
	}
	out := make([]int32, 1)
	allocs := testing.AllocsPerRun(50, func() {
		x.Match(hashes, out)
	})
	if allocs != 0 {
		t.Fatalf("Match allocates %v times", allocs)
	}
}

func TestPrefixIndexAddDoesNotAllocateAfterConstruction(t *testing.T) {
	x := NewPrefixIndex([]int{64, 64})
	hashes := make([]uint64, 16)
	next := uint64(1)
	allocs := testing.AllocsPerRun(100, func() {
		for i := range hashes {
			hashes[i] = next * 0x9E3779B97F4A7C15
			next++
		}
		x.Add(int(next%2), hashes)
		x.Add(int(next%2), hashes[:8]) // refresh
		x.Add(int(next+1)%2, hashes[:4])
	})
	if allocs != 0 {
		t.Fatalf("Add allocates %v times (filling, refreshing and evicting)", allocs)
	}
	if x.Len(0) != 64 || x.Len(1) != 64 {
		t.Fatalf("lens %d %d, want 64 64", x.Len(0), x.Len(1))
	}
}

func TestPrefixIndexHugeCapacityAllocatesByUse(t *testing.T) {
	x := NewPrefixIndex([]int{1 << 40, 1 << 40})
	if n := len(x.slots); n > prefixIndexPreallocSlots {
		t.Fatalf("table starts with %d slots, want at most %d", n, prefixIndexPreallocSlots)
	}
	x.Add(1, []uint64{0, 1, 2, 3, ^uint64(0)})
	out := make([]int32, 2)
	if !x.Match([]uint64{0, 1, 2, 3, ^uint64(0), 5}, out) || out[0] != 0 || out[1] != 5 {
		t.Fatalf("got %v, want [0 5]", out)
	}
}

// refPrefixIndex is the straightforward map-based implementation the index is checked against:
// a reverse map from hash to a set slot and, per instance, a hash -> node map over a linked
// list.
type refPrefixIndex struct {
	words   int
	sets    []uint64
	freeSet []int32
	owners  map[uint64]int32
	lrus    []refBlockLRU
}

type refBlockLRU struct {
	capacity   int
	pos        map[uint64]int32
	nodes      []refLRUNode
	free       []int32
	head, tail int32
}

type refLRUNode struct {
	hash       uint64
	prev, next int32
}

func newRefPrefixIndex(capacity []int) *refPrefixIndex {
	n := len(capacity)
	x := &refPrefixIndex{words: (n + 63) / 64, owners: make(map[uint64]int32), lrus: make([]refBlockLRU, n)}
	for i, c := range capacity {
		if c <= 0 {
			c = DefaultLRUCapacityPerServer
		}
		x.lrus[i] = refBlockLRU{capacity: c, pos: make(map[uint64]int32), head: -1, tail: -1}
	}
	return x
}

func (x *refPrefixIndex) Len(i int) int { return len(x.lrus[i].pos) }

func (x *refPrefixIndex) Match(hashes []uint64, out []int32) bool {
	for i := range out {
		out[i] = 0
	}
	matched := false
	for _, h := range hashes {
		slot, ok := x.owners[h]
		if !ok {
			break
		}
		matched = true
		base := int(slot) * x.words
		for w := 0; w < x.words; w++ {
			for i := 0; i < 64; i++ {
				if x.sets[base+w]&(1<<uint(i)) != 0 {
					out[w*64+i]++
				}
			}
		}
	}
	return matched
}

func (x *refPrefixIndex) Holds(i int, h uint64) bool {
	_, ok := x.lrus[i].pos[h]
	return ok
}

func (x *refPrefixIndex) Add(i int, hashes []uint64) {
	l := &x.lrus[i]
	for _, h := range hashes {
		if n, ok := l.pos[h]; ok {
			l.moveToFront(n)
			continue
		}
		if len(l.pos) >= l.capacity {
			x.evictTail(i)
		}
		l.pushFront(h)
		x.setOwner(h, i)
	}
}

func (x *refPrefixIndex) Reset(i int) {
	for x.lrus[i].tail >= 0 {
		x.evictTail(i)
	}
}

// order returns instance i's hashes from most to least recently used.
func (x *refPrefixIndex) order(i int) []uint64 {
	l := &x.lrus[i]
	var hs []uint64
	for n := l.head; n >= 0; n = l.nodes[n].next {
		hs = append(hs, l.nodes[n].hash)
	}
	return hs
}

func (x *refPrefixIndex) setOwner(h uint64, i int) {
	slot, ok := x.owners[h]
	if !ok {
		if n := len(x.freeSet); n > 0 {
			slot = x.freeSet[n-1]
			x.freeSet = x.freeSet[:n-1]
		} else {
			slot = int32(len(x.sets) / x.words)
			for w := 0; w < x.words; w++ {
				x.sets = append(x.sets, 0)
			}
		}
		x.owners[h] = slot
	}
	x.sets[int(slot)*x.words+i/64] |= 1 << (uint(i) % 64)
}

func (x *refPrefixIndex) evictTail(i int) {
	l := &x.lrus[i]
	n := l.tail
	h := l.nodes[n].hash
	l.unlink(n)
	delete(l.pos, h)
	l.free = append(l.free, n)
	slot := x.owners[h]
	base := int(slot) * x.words
	x.sets[base+i/64] &^= 1 << (uint(i) % 64)
	for w := 0; w < x.words; w++ {
		if x.sets[base+w] != 0 {
			return
		}
	}
	delete(x.owners, h)
	x.freeSet = append(x.freeSet, slot)
}

func (l *refBlockLRU) pushFront(h uint64) {
	var n int32
	if k := len(l.free); k > 0 {
		n = l.free[k-1]
		l.free = l.free[:k-1]
		l.nodes[n] = refLRUNode{hash: h, prev: -1, next: l.head}
	} else {
		n = int32(len(l.nodes))
		l.nodes = append(l.nodes, refLRUNode{hash: h, prev: -1, next: l.head})
	}
	if l.head >= 0 {
		l.nodes[l.head].prev = n
	}
	l.head = n
	if l.tail < 0 {
		l.tail = n
	}
	l.pos[h] = n
}

func (l *refBlockLRU) unlink(n int32) {
	p, q := l.nodes[n].prev, l.nodes[n].next
	if p >= 0 {
		l.nodes[p].next = q
	} else {
		l.head = q
	}
	if q >= 0 {
		l.nodes[q].prev = p
	} else {
		l.tail = p
	}
}

func (l *refBlockLRU) moveToFront(n int32) {
	if l.head == n {
		return
	}
	l.unlink(n)
	l.nodes[n].prev = -1
	l.nodes[n].next = l.head
	if l.head >= 0 {
		l.nodes[l.head].prev = n
	}
	l.head = n
	if l.tail < 0 {
		l.tail = n
	}
}

// order returns instance i's hashes from most to least recently used.
func (x *PrefixIndex) order(i int) []uint64 {
	var hs []uint64
	for n := x.lrus[i].head; n >= 0; n = x.nodes[n].next {
		hs = append(hs, x.keys[int(x.nodes[n].key)*x.stride+keyHash])
	}
	return hs
}

// checkPrefixIndexInvariants verifies the table, key and node stores: every occupied slot
// names a key reachable from its home slot, each key's set matches its holder list, and the
// counts agree.
func checkPrefixIndexInvariants(t *testing.T, x *PrefixIndex) {
	t.Helper()
	s := x.stride
	live, held := 0, 0
	for j, v := range x.slots {
		if v == 0 {
			continue
		}
		live++
		k := int32(uint32(v)) - 1
		h := x.keys[int(k)*s+keyHash]
		if v>>32 != fingerprint(h) {
			t.Fatalf("slot %d: fingerprint %#x, key %d hashes to %#x", j, v>>32, k, fingerprint(h))
		}
		if got, slot := x.lookup(h); got != k || int(slot) != j {
			t.Fatalf("hash %#x at slot %d is found as key %d at slot %d", h, j, got, slot)
		}
		set := make([]uint64, x.words)
		if x.keys[int(k)*s+keyHead] == uint64(math.MaxUint32) {
			t.Fatalf("key %d of %#x has no holder", k, h)
		}
		for n := int32(x.keys[int(k)*s+keyHead]); n >= 0; n = x.nodes[n].sib {
			nd := x.nodes[n]
			if nd.key != k {
				t.Fatalf("holder node %d of key %d names key %d", n, k, nd.key)
			}
			if set[nd.inst/64]&(1<<(uint(nd.inst)%64)) != 0 {
				t.Fatalf("instance %d holds %#x twice", nd.inst, h)
			}
			set[nd.inst/64] |= 1 << (uint(nd.inst) % 64)
			held++
		}
		for w := range set {
			if set[w] != x.keys[int(k)*s+keySet+w] {
				t.Fatalf("set of %#x is %x, holder list says %x", h, x.keys[int(k)*s+keySet:int(k)*s+s], set)
			}
		}
	}
	if live != x.live {
		t.Fatalf("%d occupied slots, live says %d", live, x.live)
	}
	if 2*live > len(x.slots) {
		t.Fatalf("load %d/%d above 1/2", live, len(x.slots))
	}
	free := 0
	for k := x.freeKey; k >= 0; k = int32(x.keys[int(k)*s+keyHead]) {
		free++
	}
	if live+free != len(x.keys)/s {
		t.Fatalf("%d live and %d free keys, %d records", live, free, len(x.keys)/s)
	}
	total := 0
	for i := range x.lrus {
		total += x.lrus[i].n
	}
	if total != held {
		t.Fatalf("%d holder nodes, LRUs hold %d", held, total)
	}
}

// TestPrefixIndexMatchesReference drives the index and the map-based reference with the same
// random operations (prompts sharing prefixes, re-added hashes, evictions at small
// capacities, resets, up to 130 instances, tables small enough to grow) and compares every
// observable result, including each instance's LRU order.
func TestPrefixIndexMatchesReference(t *testing.T) {
	type config struct {
		instances, minCap, maxCap, pool, prealloc int
	}
	configs := []config{
		{1, 1, 1, 4, 2},
		{1, 3, 3, 8, prefixIndexPreallocSlots},
		{2, 1, 5, 16, 2},
		{4, 8, 64, 200, prefixIndexPreallocSlots},
		{4, 8, 64, 200, 4},
		{8, 16, 16, 64, 8},
		{8, 200, 400, 300, 16},
		{65, 2, 9, 100, 4},
		{130, 1, 20, 500, prefixIndexPreallocSlots},
		{130, 5, 40, 2000, 64},
	}
	for ci, c := range configs {
		for seed := uint64(1); seed <= 3; seed++ {
			rng := testRand(seed*1000 + uint64(ci))
			caps := make([]int, c.instances)
			for i := range caps {
				caps[i] = c.minCap + rng.intn(c.maxCap-c.minCap+1)
			}
			x := newPrefixIndex(caps, c.prealloc)
			ref := newRefPrefixIndex(caps)
			// The pool mixes structured values (0, small integers, the top of the range)
			// with scrambled ones; prompts are a shared prefix plus a random tail.
			pool := make([]uint64, c.pool)
			for k := range pool {
				switch k % 3 {
				case 0:
					pool[k] = uint64(k)
				case 1:
					pool[k] = ^uint64(k)
				default:
					pool[k] = rng.next()
				}
			}
			out, refOut := make([]int32, c.instances), make([]int32, c.instances)
			var hashes []uint64
			for op := 0; op < 3000; op++ {
				hashes = hashes[:0]
				prefix := rng.intn(len(pool))
				for k := rng.intn(12); k > 0; k-- {
					hashes = append(hashes, pool[(prefix+k*7)%len(pool)])
				}
				for k := rng.intn(6); k > 0; k-- {
					hashes = append(hashes, pool[rng.intn(len(pool))])
				}
				i := rng.intn(c.instances)
				switch r := rng.intn(100); {
				case r < 55:
					x.Add(i, hashes)
					ref.Add(i, hashes)
				case r < 97:
					got, want := x.Match(hashes, out), ref.Match(hashes, refOut)
					if got != want {
						t.Fatalf("config %d seed %d op %d: Match = %v, reference %v", ci, seed, op, got, want)
					}
					for k := range out {
						if out[k] != refOut[k] {
							t.Fatalf("config %d seed %d op %d: Match out %v, reference %v", ci, seed, op, out, refOut)
						}
					}
				default:
					x.Reset(i)
					ref.Reset(i)
				}
				if op%50 == 0 || c.instances <= 8 {
					for i := range caps {
						if x.Len(i) != ref.Len(i) {
							t.Fatalf("config %d seed %d op %d: Len(%d) = %d, reference %d", ci, seed, op, i, x.Len(i), ref.Len(i))
						}
						got, want := x.order(i), ref.order(i)
						if len(got) != len(want) {
							t.Fatalf("config %d seed %d op %d: instance %d holds %d, reference %d", ci, seed, op, i, len(got), len(want))
						}
						for k := range got {
							if got[k] != want[k] {
								t.Fatalf("config %d seed %d op %d: instance %d LRU %v, reference %v", ci, seed, op, i, got, want)
							}
						}
						for _, h := range append(hashes, pool[:min(len(pool), 100)]...) {
							if x.Holds(i, h) != ref.Holds(i, h) {
								t.Fatalf("config %d seed %d op %d: Holds(%d, %#x) = %v", ci, seed, op, i, h, x.Holds(i, h))
							}
						}
					}
					checkPrefixIndexInvariants(t, x)
				}
			}
		}
	}
}

// testRand is a small deterministic generator (splitmix64) for the randomized tests.
type testRand uint64

func (r *testRand) next() uint64 {
	*r += 0x9E3779B97F4A7C15
	z := uint64(*r)
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

func (r *testRand) intn(n int) int { return int(r.next() % uint64(n)) }

// prefixIndexAPI is what the benchmarks drive, so the index and the reference run the same
// request stream.
type prefixIndexAPI interface {
	Match(hashes []uint64, out []int32) bool
	Add(i int, hashes []uint64)
}

// prefixIndexStream returns requests shaped like the engine's workload B as the router hashes
// them (about 8 blocks of 64 tokens per prompt, mostly unique, a tenth sharing a 4-block
// prefix from a pool of 50).
func prefixIndexStream(requests int) [][]uint64 {
	rng := testRand(7)
	shared := make([]uint64, 50*4)
	for k := range shared {
		shared[k] = rng.next()
	}
	reqs := make([][]uint64, requests)
	for r := range reqs {
		h := make([]uint64, 4+rng.intn(9))
		for k := range h {
			h[k] = rng.next()
		}
		if rng.intn(10) == 0 {
			copy(h, shared[rng.intn(50)*4:][:4])
		}
		reqs[r] = h
	}
	return reqs
}

// benchPrefixIndex routes requests round-robin over instances with the given capacity
// through a fresh index per iteration: a match, then an add, as the pipeline does.
func benchPrefixIndex(b *testing.B, instances, capacity, requests int, build func([]int) prefixIndexAPI) {
	reqs := prefixIndexStream(requests)
	caps := make([]int, instances)
	for i := range caps {
		caps[i] = capacity
	}
	out := make([]int32, instances)
	b.ReportAllocs()
	for b.Loop() {
		x := build(caps)
		for r, h := range reqs {
			x.Match(h, out)
			x.Add(r%instances, h)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*requests), "ns/request")
}

func newIndexAPI(caps []int) prefixIndexAPI { return NewPrefixIndex(caps) }
func newRefAPI(caps []int) prefixIndexAPI   { return newRefPrefixIndex(caps) }

// BenchmarkPrefixIndexFill is workload B's shape: 10,000 requests over 4 instances of 26,312
// blocks, which never fill.
func BenchmarkPrefixIndexFill(b *testing.B) {
	benchPrefixIndex(b, 4, 26312, 10_000, newIndexAPI)
}

// BenchmarkPrefixIndexFillMaps is BenchmarkPrefixIndexFill on the map-based reference.
func BenchmarkPrefixIndexFillMaps(b *testing.B) {
	benchPrefixIndex(b, 4, 26312, 10_000, newRefAPI)
}

// BenchmarkPrefixIndexEvict keeps 16 instances of 2,048 blocks full: most added blocks evict.
func BenchmarkPrefixIndexEvict(b *testing.B) {
	benchPrefixIndex(b, 16, 2048, 50_000, newIndexAPI)
}

// BenchmarkPrefixIndexEvictMaps is BenchmarkPrefixIndexEvict on the map-based reference.
func BenchmarkPrefixIndexEvictMaps(b *testing.B) {
	benchPrefixIndex(b, 16, 2048, 50_000, newRefAPI)
}
