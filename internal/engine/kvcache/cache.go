// Package kvcache models the paged KV cache of one vLLM instance with vLLM v1 semantics:
// fixed-size blocks with reference counts, automatic prefix caching over chained block hashes,
// and LRU eviction of free blocks.
//
// # Model
//
// The cache has TotalBlocks blocks of BlockSize tokens. A block is used while its reference
// count is positive; blocks with reference count 0 sit in a free list ordered least recently
// used first. A free block may still carry the content hash it had when it last held a full
// prompt block, and while it stays in the free list a later request with the same prefix can
// claim it again (a prefix-cache hit) instead of recomputing it. Allocation takes blocks from
// the head of the free list; a taken block loses its old hash (the index entry is deleted only
// if it still points at that block, since a newer block may have registered the same content
// since).
//
// When a request releases its blocks they are appended to the free tail in reverse order of its
// block table, as vLLM and BLIS do: a request's last blocks are the least likely to be shared,
// so they are evicted first and the shared prefix survives longest.
//
// Allocation is check-then-act: Grow either gets every block it needs or changes nothing.
// Prompt blocks are hashed (see PromptBlockHashes); blocks filled by decode tokens are not, as
// in BLIS.
//
// # Usage
//
// Per-request state lives in a Table owned by the caller. A typical request does:
//
//	hashes = kvcache.PromptBlockHashes(hashes, segs, inputLen, c.BlockSize(), unique)
//	c.ClaimPrefix(&t, hashes, inputLen)        // cached prefix, t.Tokens tokens skipped
//	if c.Grow(&t, chunk, hashes) { ... }        // prefill chunks, then 1 token per decode step
//	c.Release(&t)                                // on completion or preemption
//
// # Performance
//
// A simulation drives many caches of tens of thousands of blocks each, so the cost is memory
// traffic, and the layout is chosen to touch few cache lines and to let independent misses
// overlap:
//   - each block's metadata (content hash, reference count, free-list position) is one 16-byte
//     struct in a single array indexed by block id: four blocks to a cache line, none straddling
//     two, and one line read per block touched;
//   - the free list is a FIFO ring of 8-byte entries (block id and the low half of its hash)
//     rather than a linked list. Allocation reads entries sequentially from its head, so the
//     blocks it takes are independent stores instead of a pointer chase, and what the index
//     deletion of the evicted content needs comes with the entry; release appends sequentially
//     at its tail. A free block claimed by a prefix hit leaves a
//     tombstone at its ring position (which the block records); tombstones are skipped at the
//     head, and when the ring fills up it is compacted in place, amortized O(1) per claim;
//   - the content index is an open-addressing table keyed by the block hash itself, 8 bytes a
//     slot, with room for every block at a load of at most 1/2 (see index.go);
//   - index deletions of evicted content are deferred and done in rounds, and index
//     insertions work in rounds too, each round first loading all the slots it needs so that
//     their misses overlap (see batch and settle). No result depends on this.
//
// Nothing is allocated after New except the callers' tables growing to their working capacity.
// The index is only used for lookups and is never iterated, which keeps every result
// independent of its layout.
//
// A Cache is not safe for concurrent use; a simulation is single-threaded by design.
package kvcache

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// nilBlock is the "no block" id, which marks an empty index slot.
const nilBlock int32 = -1

// tombstone marks the free-ring entry of a free block since claimed by a prefix hit. It is
// ^MaxInt32, and MaxInt32 is never a block id.
const tombstone int32 = math.MinInt32

// Table is one request's view of the cache. The caller owns it and keeps it across the request's
// life (including preemption: Release then ClaimPrefix/Grow again). The zero Table is empty.
type Table struct {
	// Blocks holds the request's block ids in token order. Release keeps its capacity, so a
	// Table reused across requests stops allocating.
	Blocks []int32
	// Tokens is the number of tokens whose KV is stored: the claimed cached prefix plus every
	// token computed since.
	Tokens int32
	// hashed is how many leading blocks carry a registered prompt hash (claimed or registered
	// by Grow); blocks at and after it have not been hashed yet.
	hashed int32
}

// Hashed returns how many leading blocks of t hold registered prompt-block hashes.
func (t *Table) Hashed() int32 { return t.hashed }

// Stats are cumulative counters of a Cache, for metrics.
type Stats struct {
	// LookupBlocks counts full prompt blocks presented to ClaimPrefix (len(hashes), capped by
	// the blocks a request may claim), and HitBlocks those found cached and claimed.
	LookupBlocks, HitBlocks int64
	// LookupTokens counts prompt tokens presented to ClaimPrefix (inputLen) and HitTokens the
	// tokens covered by claimed blocks. HitTokens/LookupTokens is vLLM's prefix-cache hit rate.
	LookupTokens, HitTokens int64
	// Allocated counts blocks taken from the free list by Grow.
	Allocated int64
	// Evicted counts allocations that destroyed a reusable cached block (one the content index
	// still pointed at).
	Evicted int64
	// GrowFailures counts Grow calls refused for lack of free blocks.
	GrowFailures int64
}

// block is the metadata of one block, kept together so that one cache line serves every access
// to it.
type block struct {
	hash uint64 // content hash, NoHash when none
	ref  int32  // reference count
	pos  int32  // position in the free ring, meaningful only while ref == 0
}

// freeEntry is one 8-byte entry of the free ring. A free block carrying a content hash (which
// cannot change while it is free) is stored as its id and the hash's low 32 bits, which are
// all that the deletion of its index entry needs (the home slot and the tag, see
// index.deleteIf), so allocation finds the entry without reading the block. A free block without
// a hash is stored as ^id, a negative number, and a claimed one as tombstone.
type freeEntry struct {
	tag   uint32
	block int32
}

// id returns the block id of e, which is not a tombstone.
func (e freeEntry) id() int32 {
	if e.block < 0 {
		return ^e.block
	}
	return e.block
}

// Cache is the paged KV cache of one instance.
type Cache struct {
	total, blockSize int32

	blocks []block // indexed by block id

	// The free list, least recently used first: ring[head&ringMask : tail&ringMask] (cyclically)
	// holds the free blocks and tombstones left by claimed ones.
	ring       []freeEntry
	ringMask   uint32
	head, tail uint32 // ring positions; they only grow, and wrap modulo 2^32
	free       int32  // number of free blocks (live ring entries)
	// settled is the ring position up to which taken blocks have had their index entries
	// deleted; ring[settled&ringMask : head&ringMask] are taken blocks whose entries (if still
	// naming them) are pending deletion, see settle.
	settled uint32

	index index // content hash -> block; lookup only, never iterated

	touched int32 // sink of the loads that bring index slots into cache

	stats Stats
}

// New returns an empty cache of totalBlocks blocks of blockSize tokens each. It panics when
// either is not positive, since no simulation can run with such a cache.
func New(totalBlocks, blockSize int32) *Cache {
	if totalBlocks <= 0 || blockSize <= 0 {
		panic(fmt.Sprintf("kvcache: invalid geometry %d blocks x %d tokens", totalBlocks, blockSize))
	}
	c := &Cache{
		total:     totalBlocks,
		blockSize: blockSize,
		blocks:    make([]block, totalBlocks),
		index:     newIndex(totalBlocks),
	}
	// The ring holds at least twice the blocks (see compact), capped at 2^31 entries so that
	// positions fit block.pos and ring lengths fit uint32; it always exceeds totalBlocks.
	size := 2
	for size < 2*int(totalBlocks) && size < 1<<31 {
		size <<= 1
	}
	c.ring, c.ringMask = make([]freeEntry, size), uint32(size-1)
	// Initially every block is free, in id order.
	for i := range totalBlocks {
		c.ring[i].block = ^i // no hash yet
		c.blocks[i].pos = i
	}
	c.head, c.tail, c.free = 0, uint32(totalBlocks), totalBlocks
	return c
}

// TotalBlocks returns the number of blocks.
func (c *Cache) TotalBlocks() int32 { return c.total }

// BlockSize returns the number of tokens per block.
func (c *Cache) BlockSize() int32 { return c.blockSize }

// FreeBlocks returns the number of blocks with reference count 0. Cached-but-free blocks count
// as free: they can be evicted for any allocation.
func (c *Cache) FreeBlocks() int32 { return c.free }

// UsedBlocks returns the number of blocks with a positive reference count.
func (c *Cache) UsedBlocks() int32 { return c.total - c.free }

// Utilization returns UsedBlocks/TotalBlocks, in [0, 1].
func (c *Cache) Utilization() float64 { return float64(c.total-c.free) / float64(c.total) }

// CachedBlocks returns the number of distinct content hashes currently held (by used or free
// blocks), i.e. how many prompt blocks a new request could hit.
func (c *Cache) CachedBlocks() int32 {
	c.settle()
	return c.index.n
}

// Stats returns the cumulative counters.
func (c *Cache) Stats() Stats {
	c.settle()
	return c.stats
}

// BlocksForTokens returns how many blocks n tokens occupy (ceil(n/BlockSize)); useful for
// unservable-request guards.
func (c *Cache) BlocksForTokens(n int32) int32 { return (n + c.blockSize - 1) / c.blockSize }

// CachedPrefix returns how many leading hashes are present in the cache, without changing
// anything (no reference counts, no LRU order, no counters). Routers use it to score instances.
func (c *Cache) CachedPrefix(hashes []uint64) int32 {
	for i, h := range hashes {
		if c.index.find(h, c.blocks) < 0 {
			return int32(i)
		}
	}
	return int32(len(hashes))
}

// MaxClaimBlocks returns how many prompt blocks a request of inputLen tokens may take from the
// cache: (inputLen-1)/BlockSize. vLLM always computes at least the last prompt token (its logits
// produce the first output token), so a fully cached prompt still recomputes its last block.
func (c *Cache) MaxClaimBlocks(inputLen int32) int32 {
	if inputLen <= 0 {
		return 0
	}
	return (inputLen - 1) / c.blockSize
}

// ClaimPrefix attaches the longest cached prefix of hashes to the empty table t: each claimed
// block's reference count is incremented (a free block leaves the free list, which also refreshes
// it), t.Tokens becomes claimed·BlockSize, and the number of claimed blocks is returned.
//
// ClaimPrefix enforces the vLLM rule itself: it never claims more than MaxClaimBlocks(inputLen)
// blocks, so at least one prompt token is always left to compute. hashes are the prompt's
// full-block hashes (PromptBlockHashes); passing more or fewer is allowed.
//
// Lookup counters advance (see Stats). ClaimPrefix panics if t is not empty, since claiming in
// the middle of a request would corrupt its block table.
func (c *Cache) ClaimPrefix(t *Table, hashes []uint64, inputLen int32) int32 {
	if len(t.Blocks) != 0 || t.Tokens != 0 {
		panic("kvcache: ClaimPrefix on a non-empty table")
	}
	limit := min(int32(len(hashes)), c.MaxClaimBlocks(inputLen))
	var n int32
	for n < limit {
		b, ok := c.index.get(hashes[n], c.blocks)
		if !ok {
			break
		}
		blk := &c.blocks[b]
		if blk.ref == 0 {
			c.ring[blk.pos].block = tombstone // leave the free list; skipped when reached
			c.free--
		}
		blk.ref++
		t.Blocks = append(t.Blocks, b)
		n++
	}
	t.Tokens = n * c.blockSize
	t.hashed = n
	c.stats.LookupBlocks += int64(limit)
	c.stats.HitBlocks += int64(n)
	if inputLen > 0 {
		c.stats.LookupTokens += int64(inputLen)
	}
	c.stats.HitTokens += int64(t.Tokens)
	return n
}

// BlocksNeeded returns how many new blocks Grow(t, n, ...) would take: a new block is needed only
// when the table's last block is full.
func (c *Cache) BlocksNeeded(t *Table, n int32) int32 {
	if n <= 0 {
		return 0
	}
	need := (t.Tokens+n+c.blockSize-1)/c.blockSize - int32(len(t.Blocks))
	return max(need, 0)
}

// CanGrow reports whether Grow(t, n, ...) would succeed.
func (c *Cache) CanGrow(t *Table, n int32) bool { return c.BlocksNeeded(t, n) <= c.free }

// Grow makes room for n more tokens in t, taking new blocks from the head of the free list (and
// evicting whatever content they cached). It returns false and changes nothing but the failure
// counter when the free list is too short (check-then-act).
//
// hashes are the prompt's full-block hashes (PromptBlockHashes over the whole prompt). Every
// prompt block that is full after the growth gets its hash registered, so that later requests
// can share it; blocks past len(hashes) (the partial last prompt block and decode blocks) are
// never hashed. Pass nil to register nothing (prefix caching disabled).
func (c *Cache) Grow(t *Table, n int32, hashes []uint64) bool {
	need := c.BlocksNeeded(t, n)
	if need > c.free {
		c.stats.GrowFailures++
		return false
	}
	if need > 0 {
		c.take(t, need)
	}
	if n > 0 {
		t.Tokens += n
	}
	// Decode growth passes no hashes; testing that first spares it the division.
	if int32(len(hashes)) <= t.hashed {
		return true
	}
	if full := min(t.Tokens/c.blockSize, int32(len(hashes))); full > t.hashed {
		c.settle()
		c.register(t.Blocks[t.hashed:full], hashes[t.hashed:full])
		t.hashed = full
	}
	return true
}

// register gives blocks[i] the hash hashes[i] and indexes it, skipping NoHash, in rounds of up
// to batch blocks whose index slots are first touched together so that their misses overlap.
func (c *Cache) register(blocks []int32, hashes []uint64) {
	slots, slotMask := c.index.slots, c.index.mask
	var touch int32
	for len(hashes) > 0 {
		k := min(len(hashes), batch)
		hs, bs := hashes[:k], blocks[:k]
		hashes, blocks = hashes[k:], blocks[k:]
		for _, h := range hs {
			touch += slots[h&slotMask].block
		}
		for i, h := range hs {
			if h == NoHash {
				continue
			}
			b := bs[i]
			c.blocks[b].hash = h
			// The newest block wins a duplicate: it was just computed, so its owner releases it
			// later than the older copy's owners and it survives longer in the LRU order.
			c.index.put(h, b, c.blocks)
		}
	}
	c.touched += touch
}

// Release drops t's references: each block's count is decremented, and blocks reaching 0 are
// appended to the free tail in reverse table order (last block first, so it is evicted first).
// Blocks keep their hashes and stay claimable until evicted. t is reset to empty, keeping the
// capacity of t.Blocks.
func (c *Cache) Release(t *Table) {
	if c.tail-c.settled+uint32(len(t.Blocks)) > uint32(len(c.ring)) {
		// Appending could overwrite entries pending settlement, or overrun the ring.
		c.settle()
		if c.tail-c.head+uint32(len(t.Blocks)) > uint32(len(c.ring)) {
			c.compact()
		}
	}
	// The blocks' loads are independent (their ids come from t.Blocks), so their misses
	// overlap without a separate touch pass.
	blocks, ring, mask := c.blocks, c.ring, c.ringMask
	tail, free := c.tail, c.free
	for i := len(t.Blocks) - 1; i >= 0; i-- {
		b := t.Blocks[i]
		blk := &blocks[b]
		blk.ref--
		if blk.ref != 0 {
			continue
		}
		// Append b at the free tail, the most recently used end.
		p := tail & mask
		e := freeEntry{block: ^b}
		if h := blk.hash; h != NoHash {
			e = freeEntry{tag: uint32(h), block: b}
		}
		ring[p] = e
		blk.pos = int32(p)
		tail++
		free++
	}
	c.tail, c.free = tail, free
	t.Blocks = t.Blocks[:0]
	t.Tokens = 0
	t.hashed = 0
}

// batch is how many blocks register and settle handle per round. Each round first runs a tight
// loop that only loads the index slots the round will need (independent loads that the
// processor overlaps), then does the work on lines that are now in cache. A loop doing both
// stalls on each miss, behind the dependent probe branches, long enough for the reorder buffer
// to fill after a few blocks, so misses would overlap far less. The loaded values are
// summed into Cache.touched so that the loads are kept.
const batch = 32

// take moves the first need (> 0, at most c.free) blocks of the free list to t with reference
// count 1. Block ids come from consecutive ring entries and the blocks are written without being
// read. The index entries of the content they cached are deleted later, by settle, once batch
// taken blocks have accumulated (or before anything depends on the deletion).
func (c *Cache) take(t *Table, need int32) {
	blocks, ring, mask := c.blocks, c.ring, c.ringMask
	n0 := len(t.Blocks)
	if cap(t.Blocks)-n0 < int(need) {
		t.Blocks = slices.Grow(t.Blocks, int(need))
	}
	// Reslicing in place stores only the length: no pointer write, so no write barrier while
	// the collector runs (callers size their tables, so this is the common case).
	t.Blocks = t.Blocks[:n0+int(need)]
	out := t.Blocks[n0:]
	head := c.head
	for j := range out {
		e := ring[head&mask]
		head++
		for e.block == tombstone {
			e = ring[head&mask]
			head++
		}
		b := e.id()
		blk := &blocks[b]
		blk.hash, blk.ref = NoHash, 1
		out[j] = b
	}
	c.free -= need
	if c.free == 0 {
		head = c.tail // drop trailing tombstones
	}
	c.head = head
	c.stats.Allocated += int64(need)
	if head-c.settled >= batch {
		c.settle()
	}
}

// settle deletes the index entries of the blocks taken since the last call: the ring entries
// [settled, head), whose hashes are the content those blocks held. Deletion is lazy: an entry
// goes only if it still names the block, since a newer block may have registered the same
// content since, and each deleted entry counts as an eviction.
//
// Deferring the deletions does not change any result. Until settle runs, an entry naming a
// taken block is stale but invisible: the block no longer carries the entry's hash (take reset
// it to NoHash), and index lookups compare the block's hash. Every operation that inserts into
// the index, or reports Stats or CachedBlocks, settles first, so deletions and insertions happen
// in the original order and every counter is exact when read. A stale entry names a block that
// no valid entry names, so the load bound of the index still holds.
func (c *Cache) settle() {
	ring, mask := c.ring, c.ringMask
	slots, slotMask := c.index.slots, c.index.mask
	var touch int32
	var evicted int64
	for p := c.settled; p != c.head; {
		end := p + min(c.head-p, batch)
		for q := p; q != end; q++ {
			touch += slots[uint64(ring[q&mask].tag)&slotMask].block
		}
		for ; p != end; p++ {
			// Only entries of blocks that carried a hash are >= 0.
			if e := ring[p&mask]; e.block >= 0 && c.index.deleteIf(uint64(e.tag), e.block) {
				evicted++
			}
		}
	}
	c.settled = c.head
	c.touched += touch
	c.stats.Evicted += evicted
}

// compact squeezes the tombstones out of the free ring, keeping the order of the free blocks.
// Release calls it, after settle, when appending would overrun the ring. The ring then holds at
// most TotalBlocks live entries (free blocks and those being released), so it is full of
// tombstones, each left by a prefix claim of a free block; with a ring of at least twice
// TotalBlocks, more than TotalBlocks claims separate two compactions, and the O(ring) cost is
// amortized O(1) per claim.
func (c *Cache) compact() {
	ring, mask := c.ring, c.ringMask
	w := c.head
	for r := c.head; r != c.tail; r++ {
		if e := ring[r&mask]; e.block != tombstone {
			ring[w&mask] = e
			c.blocks[e.id()].pos = int32(w & mask)
			w++
		}
	}
	c.tail = w
}

// FreeOrder appends the free list's block ids to dst[:0], head (next to be evicted) first, and
// returns it. It is meant for tests and debugging.
func (c *Cache) FreeOrder(dst []int32) []int32 {
	dst = dst[:0]
	for p := c.head; p != c.tail && len(dst) < int(c.total); p++ {
		if e := c.ring[p&c.ringMask]; e.block != tombstone {
			dst = append(dst, e.id())
		}
	}
	return dst
}

// CheckInvariants verifies the cache's internal consistency and returns a descriptive error for
// the first violation found:
//   - conservation (contract BC-13): used + free == total, every reference count >= 0;
//   - the free list holds exactly the blocks with reference count 0, each once, at the ring
//     position it records;
//   - the content index is well formed (every entry reachable by lookup, count consistent) and
//     every entry points at a block carrying that hash.
//
// It settles deferred index deletions first (see settle), which changes no result, and is
// O(TotalBlocks) and deterministic.
func (c *Cache) CheckInvariants() error {
	c.settle()
	var used, zero int32
	for b := range c.total {
		switch r := c.blocks[b].ref; {
		case r < 0:
			return fmt.Errorf("kvcache: block %d has negative reference count %d", b, r)
		case r == 0:
			zero++
		default:
			used++
		}
	}
	if used+c.free != c.total {
		return fmt.Errorf("kvcache: conservation violated: used %d + free %d != total %d", used, c.free, c.total)
	}
	if zero != c.free {
		return fmt.Errorf("kvcache: %d blocks have reference count 0 but the free count is %d", zero, c.free)
	}
	if span := c.tail - c.head; span > uint32(len(c.ring)) {
		return fmt.Errorf("kvcache: free ring spans %d entries of %d", span, len(c.ring))
	}
	var walked int32
	for p := c.head; p != c.tail; p++ {
		e := c.ring[p&c.ringMask]
		if e.block == tombstone {
			continue
		}
		b := e.id()
		if b >= c.total {
			return fmt.Errorf("kvcache: free list holds invalid block %d", b)
		}
		if r := c.blocks[b].ref; r != 0 {
			return fmt.Errorf("kvcache: block %d in the free list has reference count %d", b, r)
		}
		// A block listed twice records at most one of its positions, so this also rules out
		// duplicates.
		if pos := c.blocks[b].pos; uint32(pos) != p&c.ringMask {
			return fmt.Errorf("kvcache: block %d listed at free ring position %d records position %d", b, p&c.ringMask, pos)
		}
		h := c.blocks[b].hash
		if hashed := e.block >= 0; hashed != (h != NoHash) || (hashed && e.tag != uint32(h)) {
			return fmt.Errorf("kvcache: free ring lists block %d as %+v, it carries hash %#x", b, e, h)
		}
		walked++
	}
	if walked != c.free {
		return fmt.Errorf("kvcache: free list has %d blocks, free count is %d", walked, c.free)
	}
	if err := c.index.check(c.blocks); err != nil {
		return err
	}
	// Each block b with index[hash[b]] == b accounts for exactly one valid entry, and distinct
	// blocks account for distinct entries; so all entries are valid iff the count equals the size.
	var valid int32
	for b := range c.total {
		if h := c.blocks[b].hash; h != NoHash {
			if cur, ok := c.index.get(h, c.blocks); ok && cur == b {
				valid++
			}
		}
	}
	if valid != c.index.n {
		return fmt.Errorf("kvcache: %d of %d hash entries point at blocks not carrying that hash", c.index.n-valid, c.index.n)
	}
	return nil
}

// CheckTable verifies that t is consistent with the cache: its block count matches its token
// count, its blocks are distinct and in use. Its distinctness check is quadratic in the table
// length, so it is meant for tests.
func (c *Cache) CheckTable(t *Table) error {
	if want := c.BlocksForTokens(t.Tokens); int32(len(t.Blocks)) != want {
		return fmt.Errorf("kvcache: table holds %d tokens in %d blocks, want %d blocks", t.Tokens, len(t.Blocks), want)
	}
	if t.hashed < 0 || t.hashed > int32(len(t.Blocks)) {
		return fmt.Errorf("kvcache: table has %d hashed blocks of %d", t.hashed, len(t.Blocks))
	}
	for i, b := range t.Blocks {
		if b < 0 || b >= c.total {
			return fmt.Errorf("kvcache: table block %d is invalid id %d", i, b)
		}
		if r := c.blocks[b].ref; r <= 0 {
			return fmt.Errorf("kvcache: table block %d (id %d) has reference count %d", i, b, r)
		}
		for _, o := range t.Blocks[:i] {
			if o == b {
				return errors.New("kvcache: table lists a block twice")
			}
		}
	}
	return nil
}
