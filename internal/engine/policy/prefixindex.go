package policy

import "math/bits"

// PrefixIndex is the router's shadow model of the instances' prefix caches: the semantics of
// llm-d's approximate prefix cache producer. For every instance it keeps an LRU of the block
// hashes of the prompts the router sent there (capacity in blocks), and a reverse index from a
// hash to the set of instances holding it. It never sees the instances' real caches, so it
// drifts from them exactly as llm-d's estimate does.
//
// Maps are used for lookup only and never iterated, so the index is deterministic.
type PrefixIndex struct {
	words   int              // 64-bit words per instance set
	sets    []uint64         // instance sets, words per slot
	freeSet []int32          // recycled set slots
	owners  map[uint64]int32 // hash -> set slot
	lrus    []blockLRU
}

// blockLRU is one instance's LRU of block hashes: an intrusive doubly linked list in a slice
// (head = most recently added) with a hash -> node map.
type blockLRU struct {
	capacity   int
	pos        map[uint64]int32
	nodes      []lruNode
	free       []int32
	head, tail int32
}

type lruNode struct {
	hash       uint64
	prev, next int32
}

// NewPrefixIndex returns an empty index over len(capacity) instances; capacity[i] bounds the
// number of blocks remembered for instance i (values <= 0 take llm-d's default of 31250).
func NewPrefixIndex(capacity []int) *PrefixIndex {
	n := len(capacity)
	x := &PrefixIndex{
		words:  (n + 63) / 64,
		owners: make(map[uint64]int32),
		lrus:   make([]blockLRU, n),
	}
	for i, c := range capacity {
		if c <= 0 {
			c = DefaultLRUCapacityPerServer
		}
		x.lrus[i] = blockLRU{capacity: c, pos: make(map[uint64]int32), head: -1, tail: -1}
	}
	return x
}

// Instances returns the number of instances the index covers.
func (x *PrefixIndex) Instances() int { return len(x.lrus) }

// Len returns the number of blocks remembered for instance i.
func (x *PrefixIndex) Len(i int) int { return len(x.lrus[i].pos) }

// Match writes into out[i] the number of leading blocks of hashes credited to instance i, with
// llm-d's greedy rule: walk the hashes in order, stop at the first hash no instance holds, and
// credit every instance that holds each visited hash. It returns true when some instance
// matched at least one block. out must have one entry per instance.
func (x *PrefixIndex) Match(hashes []uint64, out []int32) bool {
	for i := range out {
		out[i] = 0
	}
	any := false
	for _, h := range hashes {
		slot, ok := x.owners[h]
		if !ok {
			break
		}
		any = true
		base := int(slot) * x.words
		for w := 0; w < x.words; w++ {
			b := x.sets[base+w]
			for b != 0 {
				out[w*64+bits.TrailingZeros64(b)]++
				b &= b - 1
			}
		}
	}
	return any
}

// Holds reports whether instance i remembers hash h.
func (x *PrefixIndex) Holds(i int, h uint64) bool {
	_, ok := x.lrus[i].pos[h]
	return ok
}

// Add records that the prompt with the given block hashes was sent to instance i: each hash
// becomes the most recently used entry of i's LRU, evicting the least recently used entries
// beyond capacity.
func (x *PrefixIndex) Add(i int, hashes []uint64) {
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

// Reset forgets everything remembered for instance i (the instance left the pool).
func (x *PrefixIndex) Reset(i int) {
	for x.lrus[i].tail >= 0 {
		x.evictTail(i)
	}
}

func (x *PrefixIndex) setOwner(h uint64, i int) {
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

func (x *PrefixIndex) evictTail(i int) {
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

func (l *blockLRU) pushFront(h uint64) {
	var n int32
	if k := len(l.free); k > 0 {
		n = l.free[k-1]
		l.free = l.free[:k-1]
		l.nodes[n] = lruNode{hash: h, prev: -1, next: l.head}
	} else {
		n = int32(len(l.nodes))
		l.nodes = append(l.nodes, lruNode{hash: h, prev: -1, next: l.head})
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

func (l *blockLRU) unlink(n int32) {
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

func (l *blockLRU) moveToFront(n int32) {
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
