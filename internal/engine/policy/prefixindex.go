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
// Layout: every remembered hash has a key record (the hash, the head of its holder list and
// the set of instances holding it) in a dense store, found through an open-addressing table of
// 8-byte slots (linear probing, backward-shift deletion, load at most 1/2) that hold the key's
// id and the high 32 bits of the mixed hash, so probing past other keys and missing never
// leave the small table. Every (hash, instance) pair is a node that threads it into the
// instance's LRU (prev/next) and the key's holder list (sib), so adding a block probes the
// table once. Key and node ids are stable; only table slots move on deletion. The stores are
// sized from the capacities up to prefixIndexPreallocSlots table slots and double (up to the
// capacities' bound) only beyond that, so a large configured capacity costs memory in
// proportion to what a run stores, and a run that fits never allocates after construction.
// Nothing is iterated in hash order, so the index is deterministic.
type PrefixIndex struct {
	words    int      // 64-bit words per instance set
	stride   int      // key words: hash, holder head, then the instance set
	keys     []uint64 // key records, stride words each; ids are record indices
	freeKey  int32    // head of the free key list (linked through the head word), -1 when empty
	slots    []uint64 // 0 when empty, else fingerprint<<32 | (key id + 1)
	mask     uint64   // len(slots) - 1
	shift    uint     // 32 - log2(len(slots)): fingerprint >> shift is the home slot
	live     int      // occupied slots
	growAt   int      // live count at which the table doubles
	maxSlots int      // table size that holds every capacity at load 1/2
	nodes    []pnode  // (hash, instance) pairs; ids are indices
	freeNode int32    // head of the free node list (linked by next), -1 when empty
	lrus     []instLRU
	touch    uint64 // sink of Add's prefetching loads
}

// The words of a key record.
const (
	keyHash  = 0 // the block hash
	keyHead  = 1 // id of the first node in the holder list (next free key while free)
	keySet   = 2 // first word of the instance set
	keyFixed = 2 // words before the instance set
)

// prefixIndexPreallocSlots bounds the table slots allocated up front (2^17 blocks across all
// instances); larger capacities start there and grow by doubling.
const prefixIndexPreallocSlots = 1 << 18

// fibMul spreads a hash over the high bits (Fibonacci hashing), so that structured hashes such
// as small consecutive integers still scatter. Multiplying by an odd constant is a bijection,
// so equal fingerprints (the product's high 32 bits) are necessary for equal hashes.
const fibMul = 0x9E3779B97F4A7C15

// pnode is one instance's memory of one hash: a link of that instance's LRU (head = most
// recently added) and of the hash's holder list.
type pnode struct {
	prev, next int32 // LRU neighbours, -1 at the ends; next links the free list
	sib        int32 // next holder of the same key, -1 at the end
	inst       int32
	key        int32
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
	x := &PrefixIndex{words: (n + 63) / 64, freeKey: -1, freeNode: -1, lrus: make([]instLRU, n)}
	x.stride = keyFixed + x.words
	total := 0
	for i, c := range capacity {
		if c <= 0 {
			c = DefaultLRUCapacityPerServer
		}
		x.lrus[i] = instLRU{head: -1, tail: -1, capacity: c}
		total = satAdd(total, c)
	}
	x.maxSlots = 2
	for x.maxSlots < 2*min(total, 1<<31) {
		x.maxSlots <<= 1
	}
	slots := max(min(x.maxSlots, prealloc), 2)
	x.setTable(slots)
	x.keys = make([]uint64, 0, min(total, slots/2)*x.stride)
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
func (x *PrefixIndex) setTable(n int) {
	x.slots = make([]uint64, n)
	x.mask = uint64(n - 1)
	x.shift = uint(32 - bits.TrailingZeros64(uint64(n)))
	x.live = 0
	x.growAt = n / 2
	if n >= x.maxSlots {
		x.growAt = math.MaxInt // every capacity fits at load 1/2
	}
}

// Instances returns the number of instances the index covers.
func (x *PrefixIndex) Instances() int { return len(x.lrus) }

// Len returns the number of blocks remembered for instance i.
func (x *PrefixIndex) Len(i int) int { return x.lrus[i].n }

func fingerprint(h uint64) uint64 { return (h * fibMul) >> 32 }

// lookup returns h's key and slot, or -1 and the empty slot ending its probe sequence.
func (x *PrefixIndex) lookup(h uint64) (key int32, slot uint64) {
	fp := fingerprint(h)
	for j := fp >> x.shift; ; j = (j + 1) & x.mask {
		v := x.slots[j]
		if v == 0 {
			return -1, j
		}
		if v>>32 == fp {
			if k := int32(uint32(v)) - 1; x.keys[int(k)*x.stride+keyHash] == h {
				return k, j
			}
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
	s := x.stride
	for _, h := range hashes {
		k, _ := x.lookup(h)
		if k < 0 {
			break
		}
		matched = true
		set := x.keys[int(k)*s+keySet : int(k)*s+s]
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
	k, _ := x.lookup(h)
	return k >= 0 && x.keys[int(k)*x.stride+keySet+i/64]&(1<<(uint(i)%64)) != 0
}

// Add records that the prompt with the given block hashes was sent to instance i: each hash
// becomes the most recently used entry of i's LRU, evicting the least recently used entries
// beyond capacity.
func (x *PrefixIndex) Add(i int, hashes []uint64) {
	l := &x.lrus[i]
	s := x.stride
	word, bit := keySet+i/64, uint64(1)<<(uint(i)%64)
	// Touch every hash's home slot first: these loads do not depend on each other, so their
	// cache misses overlap instead of each waiting behind the previous insertion.
	var touch uint64
	for _, h := range hashes {
		touch += x.slots[fingerprint(h)>>x.shift]
	}
	x.touch = touch
	for _, h := range hashes {
		k, j := x.lookup(h)
		if k >= 0 && x.keys[int(k)*s+word]&bit != 0 {
			x.moveToFront(l, x.holderNode(k, int32(i)))
			continue
		}
		var n int32
		if l.n >= l.capacity {
			var moved bool
			n, moved = x.evictTail(l)
			if moved && k < 0 {
				_, j = x.lookup(h)
			}
		} else {
			n = x.newNode()
			l.n++
		}
		if k < 0 {
			if x.live >= x.growAt {
				x.grow()
				_, j = x.lookup(h)
			}
			k = x.newKey(h)
			x.slots[j] = fingerprint(h)<<32 | uint64(k+1)
			x.live++
		}
		e := x.keys[int(k)*s : int(k)*s+s]
		nd := &x.nodes[n]
		nd.key, nd.inst, nd.prev, nd.next = k, int32(i), -1, l.head
		nd.sib = int32(e[keyHead])
		e[keyHead] = uint64(uint32(n))
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

// newKey takes a key record for h with no holders from the free list or the end of the store.
func (x *PrefixIndex) newKey(h uint64) int32 {
	s := x.stride
	k := x.freeKey
	if k >= 0 {
		x.freeKey = int32(x.keys[int(k)*s+keyHead])
	} else {
		k = int32(len(x.keys) / s)
		for range s {
			x.keys = append(x.keys, 0)
		}
	}
	e := x.keys[int(k)*s : int(k)*s+s]
	e[keyHash] = h
	e[keyHead] = uint64(math.MaxUint32) // no holder: sib -1
	for w := keySet; w < s; w++ {
		e[w] = 0
	}
	return k
}

// holderNode returns instance inst's node in key k's holder list, which must contain one.
func (x *PrefixIndex) holderNode(k, inst int32) int32 {
	n := int32(x.keys[int(k)*x.stride+keyHead])
	for x.nodes[n].inst != inst {
		n = x.nodes[n].sib
	}
	return n
}

// evictTail unlinks instance l's least recently used node and drops it from its key; it
// returns the node for reuse and whether table slots moved.
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

// forget removes node n from its key's holder list and instance set, deleting the key when no
// holder is left; it reports whether it deleted one (table slots may have moved).
func (x *PrefixIndex) forget(n int32) bool {
	nd := &x.nodes[n]
	k, s := nd.key, x.stride
	e := x.keys[int(k)*s : int(k)*s+s]
	if int32(e[keyHead]) == n {
		e[keyHead] = uint64(uint32(nd.sib))
	} else {
		p := int32(e[keyHead])
		for x.nodes[p].sib != n {
			p = x.nodes[p].sib
		}
		x.nodes[p].sib = nd.sib
	}
	e[keySet+int(nd.inst/64)] &^= 1 << (uint(nd.inst) % 64)
	if int32(e[keyHead]) >= 0 {
		return false
	}
	fp := fingerprint(e[keyHash])
	v := fp<<32 | uint64(k+1)
	j := fp >> x.shift
	for x.slots[j] != v {
		j = (j + 1) & x.mask
	}
	x.deleteSlot(j)
	e[keyHead] = uint64(uint32(x.freeKey))
	x.freeKey = k
	return true
}

// deleteSlot empties slot j, shifting later members of its probe run back so that every key
// stays reachable from its home slot without tombstones.
func (x *PrefixIndex) deleteSlot(j uint64) {
	t, mask := x.slots, x.mask
	hole := j
	for k := (j + 1) & mask; t[k] != 0; k = (k + 1) & mask {
		// The key at k may fill the hole unless its home lies cyclically in (hole, k].
		if (k-(t[k]>>32)>>x.shift)&mask >= (k-hole)&mask {
			t[hole] = t[k]
			hole = k
		}
	}
	t[hole] = 0
	x.live--
}

// grow doubles the table and reinserts every slot; fingerprints hold the home bits, so the
// key records are not read.
func (x *PrefixIndex) grow() {
	old, live := x.slots, x.live
	x.setTable(2 * len(old))
	for _, v := range old {
		if v == 0 {
			continue
		}
		j := (v >> 32) >> x.shift
		for x.slots[j] != 0 {
			j = (j + 1) & x.mask
		}
		x.slots[j] = v
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
