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
// the head of the free list; a taken block loses its old hash (the hash map entry is deleted
// only if it still points at that block, since a newer block may have registered the same
// content since).
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
// All state is in flat arrays indexed by block id (the free list is intrusive: prev/next int32
// arrays), and the hash map is sized for TotalBlocks entries up front, so no operation
// allocates once tables have reached their working capacity. The hash map is only used for
// lookups and is never iterated, which keeps every result independent of map order.
//
// A Cache is not safe for concurrent use; a simulation is single-threaded by design.
package kvcache

import (
	"errors"
	"fmt"
)

// nilBlock terminates the free list.
const nilBlock int32 = -1

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
	// Evicted counts allocations that destroyed a reusable cached block (one the hash map
	// still pointed at).
	Evicted int64
	// GrowFailures counts Grow calls refused for lack of free blocks.
	GrowFailures int64
}

// Cache is the paged KV cache of one instance.
type Cache struct {
	total, blockSize int32

	ref  []int32  // reference count per block
	hash []uint64 // content hash per block, NoHash when none
	prev []int32  // free-list links, meaningful only while ref == 0
	next []int32

	head, tail int32 // free list, head = least recently used
	free       int32 // length of the free list

	index map[uint64]int32 // content hash -> block; lookup only, never iterated

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
		ref:       make([]int32, totalBlocks),
		hash:      make([]uint64, totalBlocks),
		prev:      make([]int32, totalBlocks),
		next:      make([]int32, totalBlocks),
		index:     make(map[uint64]int32, totalBlocks),
	}
	// Initially every block is free, in id order.
	for i := range totalBlocks {
		c.prev[i] = i - 1
		c.next[i] = i + 1
	}
	c.next[totalBlocks-1] = nilBlock
	c.head, c.tail, c.free = 0, totalBlocks-1, totalBlocks
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
func (c *Cache) CachedBlocks() int32 { return int32(len(c.index)) }

// Stats returns the cumulative counters.
func (c *Cache) Stats() Stats { return c.stats }

// BlocksForTokens returns how many blocks n tokens occupy (ceil(n/BlockSize)); useful for
// unservable-request guards.
func (c *Cache) BlocksForTokens(n int32) int32 { return (n + c.blockSize - 1) / c.blockSize }

// CachedPrefix returns how many leading hashes are present in the cache, without changing
// anything (no reference counts, no LRU order, no counters). Routers use it to score instances.
func (c *Cache) CachedPrefix(hashes []uint64) int32 {
	for i, h := range hashes {
		if _, ok := c.index[h]; !ok {
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
		b, ok := c.index[hashes[n]]
		if !ok {
			break
		}
		if c.ref[b] == 0 {
			c.unlink(b)
		}
		c.ref[b]++
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
	for range need {
		b := c.head
		c.unlink(b)
		if h := c.hash[b]; h != NoHash {
			if cur, ok := c.index[h]; ok && cur == b {
				delete(c.index, h)
				c.stats.Evicted++
			}
			c.hash[b] = NoHash
		}
		c.ref[b] = 1
		t.Blocks = append(t.Blocks, b)
	}
	c.stats.Allocated += int64(need)
	if n > 0 {
		t.Tokens += n
	}
	full := min(t.Tokens/c.blockSize, int32(len(hashes)))
	for i := t.hashed; i < full; i++ {
		h := hashes[i]
		if h == NoHash {
			continue
		}
		b := t.Blocks[i]
		c.hash[b] = h
		// The newest block wins a duplicate: it was just computed, so its owner releases it
		// later than the older copy's owners and it survives longer in the LRU order.
		c.index[h] = b
	}
	if full > t.hashed {
		t.hashed = full
	}
	return true
}

// Release drops t's references: each block's count is decremented, and blocks reaching 0 are
// appended to the free tail in reverse table order (last block first, so it is evicted first).
// Blocks keep their hashes and stay claimable until evicted. t is reset to empty, keeping the
// capacity of t.Blocks.
func (c *Cache) Release(t *Table) {
	for i := len(t.Blocks) - 1; i >= 0; i-- {
		b := t.Blocks[i]
		c.ref[b]--
		if c.ref[b] == 0 {
			c.pushTail(b)
		}
	}
	t.Blocks = t.Blocks[:0]
	t.Tokens = 0
	t.hashed = 0
}

// unlink removes free block b from the free list.
func (c *Cache) unlink(b int32) {
	p, n := c.prev[b], c.next[b]
	if p == nilBlock {
		c.head = n
	} else {
		c.next[p] = n
	}
	if n == nilBlock {
		c.tail = p
	} else {
		c.prev[n] = p
	}
	c.prev[b], c.next[b] = nilBlock, nilBlock
	c.free--
}

// pushTail appends b (reference count 0) to the free list's tail, the most recently used end.
func (c *Cache) pushTail(b int32) {
	c.prev[b] = c.tail
	c.next[b] = nilBlock
	if c.tail == nilBlock {
		c.head = b
	} else {
		c.next[c.tail] = b
	}
	c.tail = b
	c.free++
}

// FreeOrder appends the free list's block ids to dst[:0], head (next to be evicted) first, and
// returns it. It is meant for tests and debugging.
func (c *Cache) FreeOrder(dst []int32) []int32 {
	dst = dst[:0]
	for b := c.head; b != nilBlock && len(dst) <= int(c.total); b = c.next[b] {
		dst = append(dst, b)
	}
	return dst
}

// CheckInvariants verifies the cache's internal consistency and returns a descriptive error for
// the first violation found:
//   - conservation (contract BC-13): used + free == total, every reference count >= 0;
//   - the free list holds exactly the blocks with reference count 0, with consistent links;
//   - every hash map entry points at a block carrying that hash.
//
// It is O(TotalBlocks) and deterministic (it never iterates the map).
func (c *Cache) CheckInvariants() error {
	var used, zero int32
	for b := range c.total {
		switch r := c.ref[b]; {
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
	var walked int32
	prev := nilBlock
	for b := c.head; b != nilBlock; b = c.next[b] {
		if b < 0 || b >= c.total {
			return fmt.Errorf("kvcache: free list links to invalid block %d", b)
		}
		if walked == c.free {
			return fmt.Errorf("kvcache: free list longer than the free count %d (cycle?)", c.free)
		}
		if c.ref[b] != 0 {
			return fmt.Errorf("kvcache: block %d in the free list has reference count %d", b, c.ref[b])
		}
		if c.prev[b] != prev {
			return fmt.Errorf("kvcache: block %d has prev %d, want %d", b, c.prev[b], prev)
		}
		prev = b
		walked++
	}
	if walked != c.free {
		return fmt.Errorf("kvcache: free list has %d blocks, free count is %d", walked, c.free)
	}
	if c.tail != prev {
		return fmt.Errorf("kvcache: free tail is %d, last listed block is %d", c.tail, prev)
	}
	// Each block b with index[hash[b]] == b accounts for exactly one valid map entry, and distinct
	// blocks account for distinct entries; so all entries are valid iff the count equals the size.
	var valid int
	for b := range c.total {
		if h := c.hash[b]; h != NoHash {
			if cur, ok := c.index[h]; ok && cur == b {
				valid++
			}
		}
	}
	if valid != len(c.index) {
		return fmt.Errorf("kvcache: %d of %d hash entries point at blocks not carrying that hash", len(c.index)-valid, len(c.index))
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
		if c.ref[b] <= 0 {
			return fmt.Errorf("kvcache: table block %d (id %d) has reference count %d", i, b, c.ref[b])
		}
		for _, o := range t.Blocks[:i] {
			if o == b {
				return errors.New("kvcache: table lists a block twice")
			}
		}
	}
	return nil
}
