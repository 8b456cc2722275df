package kvcache

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// refCache is a direct, unoptimized statement of the cache semantics (the package doc): per-block
// slices, the free list as a slice in LRU order, and a Go map as the content index. Cache must
// behave exactly like it.
type refCache struct {
	bs    int32
	ref   []int32
	hash  []uint64
	free  []int32 // head (least recently used) first
	index map[uint64]int32
	stats Stats
}

type refTable struct {
	blocks         []int32
	tokens, hashed int32
}

func newRefCache(total, bs int32) *refCache {
	c := &refCache{bs: bs, ref: make([]int32, total), hash: make([]uint64, total), index: map[uint64]int32{}}
	for b := range total {
		c.free = append(c.free, b)
	}
	return c
}

func (c *refCache) unlink(b int32) {
	i := slices.Index(c.free, b)
	c.free = slices.Delete(c.free, i, i+1)
}

func (c *refCache) claim(t *refTable, hashes []uint64, inputLen int32) int32 {
	limit := int32(0)
	if inputLen > 0 {
		limit = min(int32(len(hashes)), (inputLen-1)/c.bs)
	}
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
		t.blocks = append(t.blocks, b)
		n++
	}
	t.tokens, t.hashed = n*c.bs, n
	c.stats.LookupBlocks += int64(limit)
	c.stats.HitBlocks += int64(n)
	if inputLen > 0 {
		c.stats.LookupTokens += int64(inputLen)
	}
	c.stats.HitTokens += int64(t.tokens)
	return n
}

func (c *refCache) grow(t *refTable, n int32, hashes []uint64) bool {
	need := int32(0)
	if n > 0 {
		need = max((t.tokens+n+c.bs-1)/c.bs-int32(len(t.blocks)), 0)
	}
	if need > int32(len(c.free)) {
		c.stats.GrowFailures++
		return false
	}
	for range need {
		b := c.free[0]
		c.free = c.free[1:]
		if h := c.hash[b]; h != NoHash {
			if cur, ok := c.index[h]; ok && cur == b {
				delete(c.index, h)
				c.stats.Evicted++
			}
			c.hash[b] = NoHash
		}
		c.ref[b] = 1
		t.blocks = append(t.blocks, b)
	}
	c.stats.Allocated += int64(need)
	if n > 0 {
		t.tokens += n
	}
	full := min(t.tokens/c.bs, int32(len(hashes)))
	for i := t.hashed; i < full; i++ {
		if h := hashes[i]; h != NoHash {
			c.hash[t.blocks[i]] = h
			c.index[h] = t.blocks[i]
		}
	}
	t.hashed = max(t.hashed, full)
	return true
}

func (c *refCache) release(t *refTable) {
	for i := len(t.blocks) - 1; i >= 0; i-- {
		b := t.blocks[i]
		c.ref[b]--
		if c.ref[b] == 0 {
			c.free = append(c.free, b)
		}
	}
	*t = refTable{blocks: t.blocks[:0]}
}

func (c *refCache) cachedPrefix(hashes []uint64) int32 {
	for i, h := range hashes {
		if _, ok := c.index[h]; !ok {
			return int32(i)
		}
	}
	return int32(len(hashes))
}

// TestCacheMatchesReferenceModel runs random request traffic (shared prefixes claimed from used
// and free blocks, chunked prefill, decode, preemption-style releases, exhaustion) against Cache
// and refCache and compares every result: claim lengths, Grow outcomes, block tables, the LRU
// order, cached-prefix lookups, and periodically the counters and the number of cached blocks.
// Counters are read only now and then, because reading them settles deferred index deletions,
// and the point is to compare the unsettled states too.
func TestCacheMatchesReferenceModel(t *testing.T) {
	for _, tc := range []struct {
		blocks, slots int32
		claimHeavy    bool
	}{
		{40, 8, false},
		{40, 8, true},    // many claims of free blocks: tombstones in the free ring
		{200, 24, false}, // more blocks than the default batch round
		{7, 4, true},
	} {
		t.Run(fmt.Sprintf("%d blocks %d slots claim-heavy %v", tc.blocks, tc.slots, tc.claimHeavy), func(t *testing.T) {
			const bs = 4
			r := rand.New(rand.NewPCG(uint64(tc.blocks), uint64(tc.slots)))
			c, m := New(tc.blocks, bs), newRefCache(tc.blocks, bs)
			type req struct {
				t        Table
				rt       refTable
				hashes   []uint64
				inputLen int32
				left     int32
				live     bool
			}
			reqs := make([]req, tc.slots)
			prefixes := []uint64{11, 12, 13, 14}
			var free, want []int32
			var hits, evicted int
			release := func(q *req) {
				c.Release(&q.t)
				m.release(&q.rt)
				q.live = false
			}
			for step := range 20000 {
				q := &reqs[r.IntN(len(reqs))]
				switch {
				case !q.live:
					q.inputLen = int32(1 + r.IntN(60))
					var segs []workload.Segment
					if r.IntN(4) > 0 || tc.claimHeavy {
						segs = append(segs, seg(prefixes[r.IntN(len(prefixes))], 0, min(q.inputLen, int32(bs*(1+r.IntN(8))))))
					}
					q.hashes = PromptBlockHashes(q.hashes, segs, q.inputLen, bs, uint64(step)+1<<40)
					if got, w := c.CachedPrefix(q.hashes), m.cachedPrefix(q.hashes); got != w {
						t.Fatalf("step %d: CachedPrefix %d, reference %d", step, got, w)
					}
					got, w := c.ClaimPrefix(&q.t, q.hashes, q.inputLen), m.claim(&q.rt, q.hashes, q.inputLen)
					if got != w {
						t.Fatalf("step %d: claimed %d, reference %d", step, got, w)
					}
					hits += int(got)
					q.left = q.inputLen - q.t.Tokens + int32(r.IntN(20))
					q.live = true
					if tc.claimHeavy && r.IntN(2) == 0 {
						release(q) // claim and give back: a tombstone, then a new ring entry
					}
				case r.IntN(10) == 0:
					release(q)
				default:
					n := min(q.left, int32(1+r.IntN(3*bs)))
					var hashes []uint64
					if r.IntN(6) > 0 {
						hashes = q.hashes
					}
					got, w := c.Grow(&q.t, n, hashes), m.grow(&q.rt, n, hashes)
					if got != w {
						t.Fatalf("step %d: Grow %v, reference %v", step, got, w)
					}
					if got {
						q.left -= n
					}
					if q.left <= 0 {
						release(q)
					}
				}
				if !slices.Equal(q.t.Blocks, q.rt.blocks) || q.t.Tokens != q.rt.tokens || q.t.Hashed() != q.rt.hashed {
					t.Fatalf("step %d: table %v/%d/%d, reference %v/%d/%d", step, q.t.Blocks, q.t.Tokens, q.t.Hashed(), q.rt.blocks, q.rt.tokens, q.rt.hashed)
				}
				free = c.FreeOrder(free)
				want = append(want[:0], m.free...)
				if !slices.Equal(free, want) {
					t.Fatalf("step %d: free order %v, reference %v", step, free, want)
				}
				if step%37 == 0 {
					if got, w := c.Stats(), m.stats; got != w {
						t.Fatalf("step %d: stats %+v, reference %+v", step, got, w)
					}
					if got, w := c.CachedBlocks(), int32(len(m.index)); got != w {
						t.Fatalf("step %d: %d cached blocks, reference %d", step, got, w)
					}
					if err := c.CheckInvariants(); err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
				}
			}
			evicted = int(m.stats.Evicted)
			if got, w := c.Stats(), m.stats; got != w {
				t.Fatalf("final stats %+v, reference %+v", got, w)
			}
			if hits == 0 || evicted == 0 || (tc.blocks <= 40 && m.stats.GrowFailures == 0) {
				t.Errorf("sequence too tame: %d hits, %d evictions, %d failures", hits, evicted, m.stats.GrowFailures)
			}
		})
	}
}

// TestRingCompactionKeepsLRUOrder claims and releases cached blocks, which leaves tombstones in
// the free ring, with only occasional allocations (whose index deletions stay pending), so the
// ring fills up and must be compacted; the LRU order, the counters and the invariants must stay
// those of the reference model throughout.
func TestRingCompactionKeepsLRUOrder(t *testing.T) {
	const total, bs = 6, 4
	c, m := New(total, bs), newRefCache(total, bs)
	r := rand.New(rand.NewPCG(8, 9))
	h := PromptBlockHashes(nil, []workload.Segment{seg(9, 0, total*bs)}, total*bs, bs, 1)
	var a, u Table
	var ra, ru refTable
	c.Grow(&a, total*bs, h)
	m.grow(&ra, total*bs, h)
	c.Release(&a)
	m.release(&ra)
	compactions := 0
	for i := range 500 {
		if r.IntN(8) == 0 {
			// Allocate a block of fresh content, evicting the least recently used prefix block.
			uh := PromptBlockHashes(nil, nil, bs, bs, uint64(i)+100)
			c.Grow(&u, bs, uh)
			m.grow(&ru, bs, uh)
			c.Release(&u)
			m.release(&ru)
		}
		n := int32(1 + r.IntN(total))
		c.ClaimPrefix(&a, h, n*bs+1)
		m.claim(&ra, h, n*bs+1)
		span, f := c.tail-c.head, c.free
		c.Release(&a)
		m.release(&ra)
		if c.tail-c.head < span+uint32(c.free-f) {
			compactions++
		}
		if got := c.FreeOrder(nil); !slices.Equal(got, m.free) {
			t.Fatalf("round %d: free order %v, reference %v", i, got, m.free)
		}
		if i%7 == 0 {
			mustOK(t, c)
			if got := c.Stats(); got != m.stats {
				t.Fatalf("round %d: stats %+v, reference %+v", i, got, m.stats)
			}
		}
	}
	if compactions == 0 {
		t.Error("the ring was never compacted")
	}
}
