package kvcache

import "fmt"

// Tier is a KV tier below GPU memory (CPU memory): a least-recently-used set of prompt-block
// hashes with a capacity in blocks. It only records which content it holds; the caller decides
// when blocks are stored and reloaded, and charges the transfer times.
//
// The hashes are found through the package's open-addressing index (index.go), whose entries
// name tier nodes instead of cache blocks: a node carries its hash as a block does, so the
// index's tag-then-full-key comparison and its deletion by node and tag hold unchanged (an int32
// capacity keeps the table within the 2^32 slots that a tag can name as home). A Go map
// cost a third of a simulation that offloads every prompt (a lookup and, once the tier is full,
// an eviction and an insertion per block). Nothing iterates the index, so results stay
// deterministic.
type Tier struct {
	capacity int32
	index    index // hash -> node; see find and insert
	nodes    []tierNode
	// head is the least recently used node and tail the most recent (-1: empty). Nodes are
	// only ever reused by eviction, so every node is listed.
	head, tail int32
	stats      TierStats
	// next is the tier below (nil: the last): a block this tier evicts is demoted to it.
	next *Tier
	// below marks, per block of a ReloadChain, whether a lower tier supplied it (reused).
	below []bool
}

type tierNode struct {
	hash       uint64
	prev, next int32
	// moved is when the content last moved between the tiers: its store, or its last reload.
	moved int64
}

// TierStats are a tier's cumulative counters.
type TierStats struct {
	// Stored counts blocks written to the tier (a block already held is refreshed, not
	// counted); Evicted those dropped to make room.
	Stored, Evicted int64
	// Reloaded counts blocks read back into GPU memory on a prefix hit; Thrashed those reloaded
	// within the thrashing window of their store or previous reload.
	Reloaded, Thrashed int64
	// Demoted counts blocks written here by the tier above when it evicted them, and Promoted
	// blocks written to the first tier when a lower one supplied them to a reload (neither
	// counts a block already held). A tier holds Stored + Demoted + Promoted - Evicted blocks;
	// the chain loses only the last tier's evictions.
	Demoted, Promoted int64
}

// tierPresize is the most entries the index is sized for at its first growth: a tier usually
// fills up, and sizing it once spares the rehashing of doubling, while a huge capacity only
// costs memory as it fills.
const tierPresize = 1 << 16

// NewTier returns an empty tier of capacity blocks (> 0).
func NewTier(capacity int32) *Tier {
	if capacity <= 0 {
		panic(fmt.Sprintf("kvcache: invalid tier capacity %d", capacity))
	}
	// The smallest index: a tier that never stores (a decode instance's) allocates almost
	// nothing, and the first insertions grow it straight to its presized table.
	return &Tier{capacity: capacity, index: newIndex(0), head: -1, tail: -1}
}

// find returns the node holding h, or -1 when the tier does not hold it (always for NoHash).
func (t *Tier) find(h uint64) int32 {
	if h == NoHash {
		return -1
	}
	slots, mask, tag := t.index.slots, t.index.mask, uint32(h)
	for i := h & mask; ; i = (i + 1) & mask {
		s := slots[i]
		if s.block == nilBlock {
			return -1
		}
		if s.tag == tag && t.nodes[s.block].hash == h {
			return s.block
		}
	}
}

// insert indexes node i under h, which the tier does not hold; t.nodes[i].hash is h. The index
// has room: grow keeps its load at most 1/2.
func (t *Tier) insert(h uint64, i int32) {
	slots, mask := t.index.slots, t.index.mask
	j := h & mask
	for slots[j].block != nilBlock {
		j = (j + 1) & mask
	}
	slots[j] = slot{tag: uint32(h), block: i}
	t.index.n++
}

// grow rebuilds the index for at least want entries at a load of at most 1/2, and gives the
// nodes room for as many; it happens only while the tier fills, a few times at most. Sizing the
// nodes here spares the copies of append's growth, which cost a fifth of Store in a run that
// fills its tiers.
func (t *Tier) grow(want int) {
	entries := min(int(t.capacity), max(tierPresize, 2*want))
	t.index = newIndex(int32(entries))
	if cap(t.nodes) < entries {
		nodes := make([]tierNode, len(t.nodes), entries)
		copy(nodes, t.nodes)
		t.nodes = nodes
	}
	for i := range t.nodes {
		t.insert(t.nodes[i].hash, int32(i))
	}
}

// Len returns the number of blocks held.
func (t *Tier) Len() int32 { return t.index.n }

// Capacity returns the tier's capacity in blocks.
func (t *Tier) Capacity() int32 { return t.capacity }

// Stats returns the cumulative counters.
func (t *Tier) Stats() TierStats { return t.stats }

func (t *Tier) unlink(i int32) {
	n := &t.nodes[i]
	if n.prev >= 0 {
		t.nodes[n.prev].next = n.next
	} else {
		t.head = n.next
	}
	if n.next >= 0 {
		t.nodes[n.next].prev = n.prev
	} else {
		t.tail = n.prev
	}
}

func (t *Tier) pushTail(i int32) {
	n := &t.nodes[i]
	n.prev, n.next = t.tail, -1
	if t.tail >= 0 {
		t.nodes[t.tail].next = i
	} else {
		t.head = i
	}
	t.tail = i
}

// Store writes the blocks of hashes into the tier at time now, most recent last; NoHash
// entries are skipped. Blocks already held become the most recent; when the tier is full the
// least recently used block is evicted, and demoted to the tier below when there is one.
func (t *Tier) Store(hashes []uint64, now int64) {
	for _, h := range hashes {
		if h != NoHash {
			t.put(h, now, &t.stats.Stored)
		}
	}
}

// put writes h at now, counting a new block in *count; an eviction cascades down the chain.
func (t *Tier) put(h uint64, now int64, count *int64) {
	for tt := t; tt != nil; {
		ev, ok := tt.put1(h, now, count)
		if !ok || tt.next == nil {
			return
		}
		// The evicted block keeps its content: the tier below receives it at the same time.
		h, tt = ev, tt.next
		count = &tt.stats.Demoted
	}
}

// put1 writes h into t alone and returns the hash it evicted, if any.
func (t *Tier) put1(h uint64, now int64, count *int64) (uint64, bool) {
	if i := t.find(h); i >= 0 {
		// Already held: nothing moves, the block only becomes the most recent (it already
		// is when it is the tail).
		if i != t.tail {
			t.unlink(i)
			t.pushTail(i)
		}
		return 0, false
	}
	var i int32
	var ev uint64
	evicted := false
	if int32(len(t.nodes)) < t.capacity {
		if want := len(t.nodes) + 1; 2*want > len(t.index.slots) {
			t.grow(want)
		}
		t.nodes = append(t.nodes, tierNode{})
		i = int32(len(t.nodes) - 1)
	} else {
		i = t.head
		t.unlink(i)
		ev, evicted = t.nodes[i].hash, true
		t.index.deleteIf(ev, i)
		t.stats.Evicted++
	}
	t.nodes[i] = tierNode{hash: h, moved: now}
	t.insert(h, i)
	t.pushTail(i)
	*count++
	return ev, evicted
}

// Chain links lower below t: the blocks t evicts are demoted to lower (and so on down), and
// MatchChain and ReloadChain look through both. It returns t.
func (t *Tier) Chain(lower *Tier) *Tier {
	t.next = lower
	return t
}

// Next returns the tier below t (nil: the last).
func (t *Tier) Next() *Tier { return t.next }

// MatchChain returns how many leading hashes the chain from t holds, each in any of its tiers.
func (t *Tier) MatchChain(hashes []uint64) int32 {
	if t.next == nil {
		return t.Match(hashes)
	}
	var n int32
	for _, h := range hashes {
		if t.holder(h) == nil {
			break
		}
		n++
	}
	return n
}

// holder returns the highest tier of the chain from t holding h (nil: none).
func (t *Tier) holder(h uint64) *Tier {
	for tt := t; tt != nil; tt = tt.next {
		if tt.find(h) >= 0 {
			return tt
		}
	}
	return nil
}

// ReloadChain is Reload across the chain from t: each block is read from the highest tier
// holding it (all are held, see MatchChain), and then those read from a lower tier are
// promoted back into t as its most recent blocks, in order (a copy stays below; what t evicts
// for them is demoted). perTier[d] receives the number of blocks read from the tier at depth d
// (perTier has an entry per tier). It returns the number thrashed.
func (t *Tier) ReloadChain(hashes []uint64, now, window int64, perTier []int32) int64 {
	if t.next == nil {
		perTier[0] += int32(len(hashes))
		return t.Reload(hashes, now, window)
	}
	var thrashed int64
	promote := false
	t.below = t.below[:0]
	for _, h := range hashes {
		d := 0
		tt := t
		for tt.find(h) < 0 {
			tt, d = tt.next, d+1
			if tt == nil {
				panic("kvcache: Reload of a block the tier does not hold")
			}
		}
		thrashed += tt.reload1(h, now, window)
		perTier[d]++
		t.below = append(t.below, d > 0)
		promote = promote || d > 0
	}
	// The reads above found every block where it was; only now do the blocks read from below
	// move up, after those read from t (what t evicts for them is demoted).
	if promote {
		for i, h := range hashes {
			if t.below[i] {
				t.put(h, now, &t.stats.Promoted)
			}
		}
	}
	return thrashed
}

// reload1 is Reload of the single held block h.
func (t *Tier) reload1(h uint64, now, window int64) int64 {
	i := t.find(h)
	var thrashed int64
	if now-t.nodes[i].moved < window {
		thrashed = 1
	}
	t.nodes[i].moved = now
	if i != t.tail {
		t.unlink(i)
		t.pushTail(i)
	}
	t.stats.Reloaded++
	t.stats.Thrashed += thrashed
	return thrashed
}

// Match returns how many leading hashes the tier holds, without changing anything.
func (t *Tier) Match(hashes []uint64) int32 {
	var n int32
	for _, h := range hashes {
		if t.find(h) < 0 {
			break
		}
		n++
	}
	return n
}

// Reload records that the blocks of hashes (all held, see Match) were read back into GPU
// memory at now: they become the most recent, and those that moved (were stored or reloaded)
// less than window ago count as thrashed: the GPU lost them again right after getting them.
// It returns the number thrashed.
func (t *Tier) Reload(hashes []uint64, now, window int64) int64 {
	var thrashed int64
	for _, h := range hashes {
		i := t.find(h)
		if i < 0 {
			panic("kvcache: Reload of a block the tier does not hold")
		}
		if now-t.nodes[i].moved < window {
			thrashed++
		}
		t.nodes[i].moved = now
		if i != t.tail {
			t.unlink(i)
			t.pushTail(i)
		}
	}
	t.stats.Reloaded += int64(len(hashes))
	t.stats.Thrashed += thrashed
	return thrashed
}

// CheckInvariants verifies the tier's structure (tests): the LRU list holds every node once,
// each node is indexed under its hash, the index holds nothing else, and the tier is within
// its capacity.
func (t *Tier) CheckInvariants() error {
	if int32(len(t.nodes)) > t.capacity {
		return fmt.Errorf("tier has %d nodes, capacity %d", len(t.nodes), t.capacity)
	}
	x := &t.index
	if len(x.slots) == 0 || len(x.slots)&(len(x.slots)-1) != 0 || x.mask != uint64(len(x.slots)-1) {
		return fmt.Errorf("tier index has %d slots and mask %#x", len(x.slots), x.mask)
	}
	if 2*len(t.nodes) > len(x.slots) {
		return fmt.Errorf("tier index of %d slots holds %d nodes, a load above 1/2", len(x.slots), len(t.nodes))
	}
	var n int32
	prev := int32(-1)
	for i := t.head; i >= 0; i = t.nodes[i].next {
		nd := &t.nodes[i]
		if nd.prev != prev {
			return fmt.Errorf("tier node %d links back to %d, want %d", i, nd.prev, prev)
		}
		if j := t.find(nd.hash); j != i {
			return fmt.Errorf("tier node %d (hash %x) is found as node %d", i, nd.hash, j)
		}
		prev = i
		n++
		if n > t.capacity {
			return fmt.Errorf("tier list longer than its capacity %d", t.capacity)
		}
	}
	if prev != t.tail || int(n) != len(t.nodes) {
		return fmt.Errorf("tier list has %d nodes ending at %d, %d nodes ending at %d", n, prev, len(t.nodes), t.tail)
	}
	// Each listed node was found at its own slot, so n distinct entries are accounted for; the
	// index must hold no others.
	var used int32
	for _, s := range x.slots {
		if s.block != nilBlock {
			used++
		}
	}
	if used != n || x.n != n {
		return fmt.Errorf("tier index has %d entries and counts %d, for %d nodes", used, x.n, n)
	}
	if st := t.stats; int64(n) != st.Stored+st.Demoted+st.Promoted-st.Evicted {
		return fmt.Errorf("tier holds %d blocks, but stored %d + demoted %d + promoted %d - evicted %d", n, st.Stored, st.Demoted, st.Promoted, st.Evicted)
	}
	if t.next != nil {
		if err := t.next.CheckInvariants(); err != nil {
			return fmt.Errorf("tier below: %w", err)
		}
	}
	return nil
}
