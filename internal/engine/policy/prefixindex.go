package policy

import (
	"math"
	"math/bits"
)

// PrefixIndex is the router's shadow model of the instances' prefix caches: the semantics of
// llm-d's approximate prefix cache producer. For every instance it keeps an LRU of the block
// hashes of the prompts the router sent there (capacity in blocks), and a reverse index from a
// hash to the set of instances holding it. It never sees the instances' real caches, so it
// drifts from them exactly as llm-d's estimate does.
//
// Layout: one open-addressing hash table (linear probing, backward-shift deletion, load at
// most 1/2) holds an entry per remembered hash: the hash, the set of instances holding it and
// the head of its holder list. Every (hash, instance) pair is a node in one node store that
// threads it into the instance's LRU (prev/next) and the hash's holder list (sib), so adding a
// block probes the table once. Nothing points into the table, so deletion may move entries.
// Both stores are sized from the capacities up to prefixIndexPreallocSlots table slots and
// double (up to the capacities' bound) only beyond that, so a large configured capacity costs
// memory in proportion to what a run stores, and a run that fits never allocates after
// construction. Nothing is iterated in hash order, so the index is deterministic.
type PrefixIndex struct {
	words    int      // 64-bit words per instance set
	stride   int      // table words per slot: hash, holder head, then the instance set
	table    []uint64 // slots*stride words
	mask     uint64   // slots - 1
	shift    uint     // 64 - log2(slots)
	live     int      // occupied slots
	growAt   int      // live count at which the table doubles
	maxSlots int      // table size that holds every capacity at load 1/2
	nodes    []pnode  // (hash, instance) pairs; ids are indices
	freeNode int32    // head of the free node list (linked by next), -1 when empty
	lrus     []instLRU
	touch    uint64 // sink of Add's prefetching loads
}

// The words of a table slot, from its first word.
const (
	slotHash  = 0 // the block hash
	slotHead  = 1 // 1 + id of the first node in the holder list; 0 marks an empty slot
	slotSet   = 2 // first word of the instance set
	slotFixed = 2 // words before the instance set
)

// prefixIndexPreallocSlots bounds the table slots allocated up front (2^17 blocks across all
// instances); larger capacities start there and grow by doubling.
const prefixIndexPreallocSlots = 1 << 18

// fibMul spreads a hash over the table's high bits (Fibonacci hashing), so that structured
// hashes such as small consecutive integers still scatter.
const fibMul = 0x9E3779B97F4A7C15

// pnode is one instance's memory of one hash: a link of that instance's LRU (head = most
// recently added) and of the hash's holder list.
type pnode struct {
	hash       uint64
	prev, next int32 // LRU neighbours, -1 at the ends; next links the free list
	sib        int32 // next holder of the same hash, -1 at the end
	inst       int32
}

// instLRU is the LRU state of one instance.
type instLRU struct {
	head, tail int32 // node ids, -1 when empty
	n          int   // nodes held
	capacity   int
}

// NewPrefixIndex returns an empty index over len(capacity) instances; capacity[i] bounds the
// number of blocks remembered for instance i (values <= 0 take llm-d's default of 31250).
func NewPrefixIndex(capacity []int) *PrefixIndex {
	return newPrefixIndex(capacity, prefixIndexPreallocSlots)
}

// newPrefixIndex is NewPrefixIndex with the up-front table size bounded by prealloc slots.
func newPrefixIndex(capacity []int, prealloc int) *PrefixIndex {
	n := len(capacity)
	x := &PrefixIndex{words: (n + 63) / 64, freeNode: -1, lrus: make([]instLRU, n)}
	x.stride = slotFixed + x.words
	total := 0
	for i, c := range capacity {
		if c <= 0 {
			c = DefaultLRUCapacityPerServer
		}
		x.lrus[i] = instLRU{head: -1, tail: -1, capacity: c}
		total = satAdd(total, c)
	}
	x.maxSlots = 1
	for x.maxSlots < 2*min(total, math.MaxInt/4) {
		x.maxSlots <<= 1
	}
	slots := max(min(x.maxSlots, prealloc), 2)
	x.setTable(slots)
	x.nodes = make([]pnode, 0, min(total, slots/2))
	return x
}

func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// setTable installs an empty table of the given power-of-two number of slots.
func (x *PrefixIndex) setTable(slots int) {
	x.table = make([]uint64, slots*x.stride)
	x.mask = uint64(slots - 1)
	x.shift = uint(64 - bits.TrailingZeros64(uint64(slots)))
	x.live = 0
	x.growAt = slots / 2
	if slots >= x.maxSlots {
		x.growAt = math.MaxInt // every capacity fits at load 1/2
	}
}

// Instances returns the number of instances the index covers.
func (x *PrefixIndex) Instances() int { return len(x.lrus) }

// Len returns the number of blocks remembered for instance i.
func (x *PrefixIndex) Len(i int) int { return x.lrus[i].n }

// home is the slot where probing for h starts.
func (x *PrefixIndex) home(h uint64) uint64 { return (h * fibMul) >> x.shift }

// lookup returns the slot holding h, or the empty slot ending its probe sequence.
func (x *PrefixIndex) lookup(h uint64) (slot uint64, found bool) {
	t, s := x.table, uint64(x.stride)
	for j := x.home(h); ; j = (j + 1) & x.mask {
		w := t[j*s : j*s+slotFixed]
		if w[slotHead] == 0 {
			return j, false
		}
		if w[slotHash] == h {
			return j, true
		}
	}
}

// Match writes into out[i] the number of leading blocks of hashes credited to instance i, with
// llm-d's greedy rule: walk the hashes in order, stop at the first hash no instance holds, and
// credit every instance that holds each visited hash. It returns true when some instance
// matched at least one block. out must have one entry per instance.
func (x *PrefixIndex) Match(hashes []uint64, out []int32) bool {
	for i := range out {
		out[i] = 0
	}
	matched := false
	s := uint64(x.stride)
	for _, h := range hashes {
		j, ok := x.lookup(h)
		if !ok {
			break
		}
		matched = true
		set := x.table[j*s+slotSet : j*s+s]
		for w, b := range set {
			for b != 0 {
				out[w*64+bits.TrailingZeros64(b)]++
				b &= b - 1
			}
		}
	}
	return matched
}

// Holds reports whether instance i remembers hash h.
func (x *PrefixIndex) Holds(i int, h uint64) bool {
	j, ok := x.lookup(h)
	return ok && x.table[j*uint64(x.stride)+slotSet+uint64(i/64)]&(1<<(uint(i)%64)) != 0
}

// Add records that the prompt with the given block hashes was sent to instance i: each hash
// becomes the most recently used entry of i's LRU, evicting the least recently used entries
// beyond capacity.
func (x *PrefixIndex) Add(i int, hashes []uint64) {
	l := &x.lrus[i]
	s := uint64(x.stride)
	word, bit := uint64(slotSet+i/64), uint64(1)<<(uint(i)%64)
	// Touch every hash's home slot first: these loads do not depend on each other, so their
	// cache misses overlap instead of each waiting behind the previous insertion.
	var touch uint64
	for _, h := range hashes {
		touch += x.table[x.home(h)*s]
	}
	x.touch = touch
	for _, h := range hashes {
		j, found := x.lookup(h)
		if found && x.table[j*s+word]&bit != 0 {
			x.moveToFront(l, x.holderNode(j, int32(i)))
			continue
		}
		var n int32
		if l.n >= l.capacity {
			var moved bool
			n, moved = x.evictTail(l)
			if moved {
				j, found = x.lookup(h)
			}
		} else {
			n = x.newNode()
			l.n++
		}
		if !found {
			if x.live >= x.growAt {
				x.grow()
				j, _ = x.lookup(h)
			}
			x.table[j*s+slotHash] = h
			for w := j*s + slotSet; w < j*s+s; w++ {
				x.table[w] = 0
			}
			x.live++
		}
		e := x.table[j*s : j*s+s]
		nd := &x.nodes[n]
		nd.hash, nd.inst, nd.prev, nd.next = h, int32(i), -1, l.head
		nd.sib = int32(e[slotHead]) - 1
		e[slotHead] = uint64(n) + 1
		e[word] |= bit
		if l.head >= 0 {
			x.nodes[l.head].prev = n
		} else {
			l.tail = n
		}
		l.head = n
	}
}

// Reset forgets everything remembered for instance i (the instance left the pool).
func (x *PrefixIndex) Reset(i int) {
	l := &x.lrus[i]
	for n := l.head; n >= 0; {
		next := x.nodes[n].next
		x.forget(n)
		x.nodes[n].next = x.freeNode
		x.freeNode = n
		n = next
	}
	l.head, l.tail, l.n = -1, -1, 0
}

// newNode takes a node from the free list or the end of the store.
func (x *PrefixIndex) newNode() int32 {
	if n := x.freeNode; n >= 0 {
		x.freeNode = x.nodes[n].next
		return n
	}
	if len(x.nodes) >= math.MaxInt32 {
		panic("policy: prefix index holds more than 2^31-1 blocks")
	}
	x.nodes = append(x.nodes, pnode{})
	return int32(len(x.nodes) - 1)
}

// holderNode returns instance inst's node in the holder list of slot j, which must contain one.
func (x *PrefixIndex) holderNode(j uint64, inst int32) int32 {
	n := int32(x.table[j*uint64(x.stride)+slotHead]) - 1
	for x.nodes[n].inst != inst {
		n = x.nodes[n].sib
	}
	return n
}

// evictTail unlinks instance l's least recently used node and drops it from its hash's entry;
// it returns the node for reuse and whether table entries moved.
func (x *PrefixIndex) evictTail(l *instLRU) (int32, bool) {
	n := l.tail
	p := x.nodes[n].prev
	l.tail = p
	if p >= 0 {
		x.nodes[p].next = -1
	} else {
		l.head = -1
	}
	return n, x.forget(n)
}

// forget removes node n from its hash's holder list and instance set, deleting the entry when
// no holder is left; it reports whether it deleted one (table entries may have moved).
func (x *PrefixIndex) forget(n int32) bool {
	nd := &x.nodes[n]
	j, _ := x.lookup(nd.hash)
	s := uint64(x.stride)
	e := x.table[j*s : j*s+s]
	if int32(e[slotHead])-1 == n {
		e[slotHead] = uint64(nd.sib + 1)
	} else {
		p := int32(e[slotHead]) - 1
		for x.nodes[p].sib != n {
			p = x.nodes[p].sib
		}
		x.nodes[p].sib = nd.sib
	}
	e[slotSet+uint64(nd.inst/64)] &^= 1 << (uint(nd.inst) % 64)
	if e[slotHead] != 0 {
		return false
	}
	x.deleteSlot(j)
	return true
}

// deleteSlot empties slot j, shifting later members of its probe run back so that every
// entry stays reachable from its home slot without tombstones.
func (x *PrefixIndex) deleteSlot(j uint64) {
	t, s, mask := x.table, uint64(x.stride), x.mask
	hole := j
	for k := (j + 1) & mask; t[k*s+slotHead] != 0; k = (k + 1) & mask {
		// The entry at k may fill the hole unless its home lies cyclically in (hole, k].
		if (k-x.home(t[k*s+slotHash]))&mask >= (k-hole)&mask {
			copy(t[hole*s:hole*s+s], t[k*s:k*s+s])
			hole = k
		}
	}
	t[hole*s+slotHead] = 0
	x.live--
}

// grow doubles the table and reinserts every entry; nodes refer to hashes, not slots, so
// nothing else changes.
func (x *PrefixIndex) grow() {
	old, s := x.table, x.stride
	live := x.live
	x.setTable(2 * len(old) / s)
	for k := 0; k < len(old); k += s {
		if old[k+slotHead] == 0 {
			continue
		}
		j, _ := x.lookup(old[k+slotHash])
		copy(x.table[j*uint64(s):], old[k:k+s])
	}
	x.live = live
}

func (x *PrefixIndex) moveToFront(l *instLRU, n int32) {
	if l.head == n {
		return
	}
	nd := &x.nodes[n]
	p, q := nd.prev, nd.next
	x.nodes[p].next = q // n is not the head, so p >= 0
	if q >= 0 {
		x.nodes[q].prev = p
	} else {
		l.tail = p
	}
	nd.prev, nd.next = -1, l.head
	x.nodes[l.head].prev = n
	l.head = n
}
