package kvcache

import "fmt"

// Tier is a KV tier below GPU memory (CPU memory): a least-recently-used set of prompt-block
// hashes with a capacity in blocks. It only records which content it holds; the caller decides
// when blocks are stored and reloaded, and charges the transfer times. Lookups use a map, but
// nothing iterates it, so every result is deterministic.
type Tier struct {
	capacity int32
	index    map[uint64]int32 // hash -> node
	nodes    []tierNode
	// head is the least recently used node and tail the most recent (-1: empty); free lists
	// unused nodes.
	head, tail int32
	free       []int32
	stats      TierStats
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
}

// NewTier returns an empty tier of capacity blocks (> 0).
func NewTier(capacity int32) *Tier {
	if capacity <= 0 {
		panic(fmt.Sprintf("kvcache: invalid tier capacity %d", capacity))
	}
	// Presizing the index (up to 64Ki blocks) spares the rehashing of its growth.
	return &Tier{capacity: capacity, index: make(map[uint64]int32, min(capacity, 1<<16)), head: -1, tail: -1}
}

// Len returns the number of blocks held.
func (t *Tier) Len() int32 { return int32(len(t.index)) }

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
// least recently used block is evicted.
func (t *Tier) Store(hashes []uint64, now int64) {
	for _, h := range hashes {
		if h == NoHash {
			continue
		}
		if i, ok := t.index[h]; ok {
			// Already held: nothing moves, the block only becomes the most recent.
			t.unlink(i)
			t.pushTail(i)
			continue
		}
		var i int32
		switch {
		case len(t.free) > 0:
			i = t.free[len(t.free)-1]
			t.free = t.free[:len(t.free)-1]
		case int32(len(t.nodes)) < t.capacity:
			t.nodes = append(t.nodes, tierNode{})
			i = int32(len(t.nodes) - 1)
		default:
			i = t.head
			t.unlink(i)
			delete(t.index, t.nodes[i].hash)
			t.stats.Evicted++
		}
		t.nodes[i] = tierNode{hash: h, moved: now}
		t.index[h] = i
		t.pushTail(i)
		t.stats.Stored++
	}
}

// Match returns how many leading hashes the tier holds, without changing anything.
func (t *Tier) Match(hashes []uint64) int32 {
	var n int32
	for _, h := range hashes {
		if _, ok := t.index[h]; !ok {
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
		i, ok := t.index[h]
		if !ok {
			panic("kvcache: Reload of a block the tier does not hold")
		}
		if now-t.nodes[i].moved < window {
			thrashed++
		}
		t.nodes[i].moved = now
		t.unlink(i)
		t.pushTail(i)
	}
	t.stats.Reloaded += int64(len(hashes))
	t.stats.Thrashed += thrashed
	return thrashed
}

// CheckInvariants verifies the tier's structure (tests): the LRU list holds exactly the
// indexed blocks, each once, and the tier is within its capacity.
func (t *Tier) CheckInvariants() error {
	if t.Len() > t.capacity {
		return fmt.Errorf("tier holds %d blocks, capacity %d", t.Len(), t.capacity)
	}
	var n int32
	prev := int32(-1)
	for i := t.head; i >= 0; i = t.nodes[i].next {
		nd := &t.nodes[i]
		if nd.prev != prev {
			return fmt.Errorf("tier node %d links back to %d, want %d", i, nd.prev, prev)
		}
		if j, ok := t.index[nd.hash]; !ok || j != i {
			return fmt.Errorf("tier node %d (hash %x) is not indexed", i, nd.hash)
		}
		prev = i
		n++
		if n > t.capacity {
			return fmt.Errorf("tier list longer than its capacity %d", t.capacity)
		}
	}
	if prev != t.tail || n != t.Len() {
		return fmt.Errorf("tier list has %d nodes ending at %d, index %d ending at %d", n, prev, t.Len(), t.tail)
	}
	if int(n)+len(t.free) != len(t.nodes) {
		return fmt.Errorf("tier has %d listed + %d free nodes of %d", n, len(t.free), len(t.nodes))
	}
	return nil
}
