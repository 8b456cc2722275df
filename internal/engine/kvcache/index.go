package kvcache

import "fmt"

// The content index: an open-addressing hash table from a block's content hash to the block id.
//
// Keys are the 64-bit block hashes of PromptBlockHashes, which already went through a bijective
// finalizer, so the table takes its home slot straight from the key's low bits instead of
// hashing a second time.
//
// A slot is 8 bytes: the block id and the key's low 32 bits (its tag), eight slots to a cache
// line. The full key need not be stored, because the index only ever maps a hash to a block that
// carries that hash (the Cache invariant that CheckInvariants verifies): a slot's key is its
// block's hash. A probe compares tags, and only on a tag match reads the block to compare the
// full 64 bits, so lookups are exact; for distinct keys the tags differ except with probability
// about 2^-32 per comparison (at worst 2^-16 among keys sharing a home slot in a 65536-slot
// table), so that extra read almost only happens on a genuine hit, whose block the caller reads
// anyway. Eviction deletes by block id and tag, which identify the slot without any block
// read; since the capacity is at most 2^32, the tag also gives the home slot, so the free list
// only keeps the tag of an evicted block's hash (see freeEntry).
//
// Collisions are resolved by linear probing, and deletion shifts the rest of the cluster back
// (Knuth's Algorithm R) instead of leaving tombstones. With no tombstones the table never needs
// a rehash: probe lengths depend only on the current load, however long the insert/delete churn
// goes on, and nothing is allocated after newIndex. The cache bounds the load: every entry points
// at a distinct block carrying its hash, so there are at most TotalBlocks entries, and the
// capacity is the first power of two of at least twice that, a load of at most 1/2 (expected
// probes about 1.5 for a hit and 2.5 for a miss at that load, fewer below it). Entries whose
// deletion is pending (see Cache.settle) name blocks that no other entry names, so they stay
// within the bound. Linear probing was
// preferred to Robin Hood hashing at this load because its probe sequence is a plain scan of
// adjacent slots and its deletion needs no distance bookkeeping; Robin Hood would only shorten
// the rare long misses.

// slot is one entry of the index: the low 32 bits of the key and the block it maps to, nilBlock
// when the slot is empty.
type slot struct {
	tag   uint32
	block int32
}

// index maps content hashes to block ids. Every method that compares full keys takes the cache's
// block array, where each indexed block carries its key.
type index struct {
	slots []slot // power-of-two length
	mask  uint64 // len(slots) - 1
	n     int32  // entries in use
}

// minIndexSlots is the smallest table.
const minIndexSlots = 8

// newIndex returns an empty index able to hold maxEntries entries at a load of at most 1/2.
func newIndex(maxEntries int32) index {
	size := minIndexSlots
	for size < 2*int(maxEntries) {
		size <<= 1
	}
	x := index{slots: make([]slot, size), mask: uint64(size - 1)}
	for i := range x.slots {
		x.slots[i].block = nilBlock
	}
	return x
}

// find returns the slot holding h, or -1 when h is absent (always for NoHash).
func (x *index) find(h uint64, blocks []block) int {
	if h == NoHash {
		return -1
	}
	slots, mask, tag := x.slots, x.mask, uint32(h)
	for i := h & mask; ; i = (i + 1) & mask {
		s := slots[i]
		if s.block == nilBlock {
			return -1
		}
		if s.tag == tag && blocks[s.block].hash == h {
			return int(i)
		}
	}
}

// get returns the block that h maps to.
func (x *index) get(h uint64, blocks []block) (int32, bool) {
	if i := x.find(h, blocks); i >= 0 {
		return x.slots[i].block, true
	}
	return nilBlock, false
}

// put maps h (not NoHash) to b, replacing any previous mapping of h. The caller has already set
// blocks[b].hash = h.
func (x *index) put(h uint64, b int32, blocks []block) {
	slots, mask, tag := x.slots, x.mask, uint32(h)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &slots[i]
		if s.block == nilBlock {
			s.tag, s.block = tag, b
			x.n++
			return
		}
		if s.tag == tag && blocks[s.block].hash == h {
			s.block = b
			return
		}
	}
}

// deleteIf removes h's entry when it maps to b, and reports whether it did. Only the low 32 bits
// of h are used (home slot and tag), and b need not carry h any more (take resets it): an entry
// names a block carrying its key when it is made, a block carries one key at a time, so the
// entry, if any, is the one slot of h's probe sequence with h's tag that names b.
func (x *index) deleteIf(h uint64, b int32) bool {
	slots, mask, tag := x.slots, x.mask, uint32(h)
	for i := h & mask; ; i = (i + 1) & mask {
		s := slots[i]
		if s.block == b && s.tag == tag {
			x.deleteAt(i)
			return true
		}
		if s.block == nilBlock {
			return false
		}
	}
}

// deleteAt empties slot hole and moves later entries of its cluster back so that every entry
// stays reachable from its home slot without crossing an empty slot.
func (x *index) deleteAt(hole uint64) {
	slots, mask := x.slots, x.mask
	for j := (hole + 1) & mask; ; j = (j + 1) & mask {
		s := slots[j]
		if s.block == nilBlock {
			break
		}
		// The entry at j may fill the hole unless its home lies cyclically in (hole, j]: it
		// moves when it is at least as far from home as the hole is from j.
		if (j-uint64(s.tag))&mask >= (j-hole)&mask {
			slots[hole] = s
			hole = j
		}
	}
	slots[hole] = slot{tag: 0, block: nilBlock}
	x.n--
}

// check verifies the table's structure against blocks: the entry count, and for every entry a
// valid block carrying a hash with the entry's tag, found by a lookup of that hash at the entry's
// own slot (so every entry is reachable and names a distinct block). It is
// O(len(slots) · cluster length) and meant for CheckInvariants and tests.
func (x *index) check(blocks []block) error {
	if len(x.slots) == 0 || len(x.slots)&(len(x.slots)-1) != 0 || x.mask != uint64(len(x.slots)-1) {
		return fmt.Errorf("kvcache: index has %d slots and mask %#x", len(x.slots), x.mask)
	}
	var n int32
	for i, s := range x.slots {
		if s.block == nilBlock {
			continue
		}
		n++
		if s.block < 0 || int(s.block) >= len(blocks) {
			return fmt.Errorf("kvcache: index slot %d names invalid block %d", i, s.block)
		}
		h := blocks[s.block].hash
		if h == NoHash || uint32(h) != s.tag {
			return fmt.Errorf("kvcache: index slot %d (tag %#x) names block %d, which carries hash %#x", i, s.tag, s.block, h)
		}
		if got := x.find(h, blocks); got != i {
			return fmt.Errorf("kvcache: index slot %d holds hash %#x but a lookup finds slot %d", i, h, got)
		}
	}
	if n != x.n {
		return fmt.Errorf("kvcache: index holds %d entries but counts %d", n, x.n)
	}
	return nil
}
