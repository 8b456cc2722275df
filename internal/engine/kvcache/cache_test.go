package kvcache

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

func mustOK(t *testing.T, c *Cache) {
	t.Helper()
	if err := c.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestNewCacheIsAllFree(t *testing.T) {
	c := New(6, 16)
	mustOK(t, c)
	if c.TotalBlocks() != 6 || c.BlockSize() != 16 || c.FreeBlocks() != 6 || c.UsedBlocks() != 0 || c.Utilization() != 0 {
		t.Fatalf("fresh cache: total %d size %d free %d used %d util %v", c.TotalBlocks(), c.BlockSize(), c.FreeBlocks(), c.UsedBlocks(), c.Utilization())
	}
	if got := c.FreeOrder(nil); !slices.Equal(got, []int32{0, 1, 2, 3, 4, 5}) {
		t.Errorf("free order %v", got)
	}
}

func TestNewPanicsOnInvalidGeometry(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New(0, 16) did not panic")
		}
	}()
	New(0, 16)
}

func TestGrowAllocatesOnlyWhenLastBlockIsFull(t *testing.T) {
	c := New(10, 16)
	var tb Table
	steps := []struct{ n, needed, blocks int32 }{{10, 1, 1}, {6, 0, 1}, {1, 1, 2}, {15, 0, 2}, {33, 3, 5}, {0, 0, 5}}
	for _, s := range steps {
		if got := c.BlocksNeeded(&tb, s.n); got != s.needed {
			t.Fatalf("BlocksNeeded(%d) at %d tokens = %d, want %d", s.n, tb.Tokens, got, s.needed)
		}
		if !c.Grow(&tb, s.n, nil) {
			t.Fatalf("Grow(%d) failed", s.n)
		}
		if int32(len(tb.Blocks)) != s.blocks {
			t.Fatalf("after Grow(%d): %d blocks, want %d", s.n, len(tb.Blocks), s.blocks)
		}
		mustOK(t, c)
		if err := c.CheckTable(&tb); err != nil {
			t.Fatal(err)
		}
	}
	if tb.Tokens != 65 || c.UsedBlocks() != 5 || c.Utilization() != 0.5 {
		t.Errorf("tokens %d used %d util %v", tb.Tokens, c.UsedBlocks(), c.Utilization())
	}
	if st := c.Stats(); st.Allocated != 5 {
		t.Errorf("allocated %d", st.Allocated)
	}
}

func TestCheckThenActOnExhaustion(t *testing.T) {
	c := New(4, 16)
	var a, b Table
	if !c.Grow(&a, 48, nil) {
		t.Fatal("first Grow failed")
	}
	beforeFree := c.FreeOrder(nil)
	if c.CanGrow(&b, 32) || c.Grow(&b, 32, nil) {
		t.Fatal("Grow of 2 blocks succeeded with 1 free")
	}
	if len(b.Blocks) != 0 || b.Tokens != 0 || c.FreeBlocks() != 1 || !slices.Equal(c.FreeOrder(nil), beforeFree) {
		t.Fatalf("failed Grow changed state: table %+v free %d", b, c.FreeBlocks())
	}
	// A partially filled table needing one block more than exists also changes nothing.
	if c.Grow(&a, 17+16, nil) || a.Tokens != 48 || len(a.Blocks) != 3 {
		t.Fatalf("failed Grow on a live table changed it: %+v", a)
	}
	if st := c.Stats(); st.GrowFailures != 2 {
		t.Errorf("GrowFailures %d, want 2", st.GrowFailures)
	}
	mustOK(t, c)
	if !c.Grow(&b, 16, nil) || c.FreeBlocks() != 0 {
		t.Fatal("Grow of the last block failed")
	}
	mustOK(t, c)
}

func TestPrefixSharingWithCommonSystemPrompt(t *testing.T) {
	c := New(32, 16)
	sys := seg(1000, 0, 64) // 4 blocks
	promptA := []workload.Segment{sys, seg(1, 0, 40)}
	promptB := []workload.Segment{sys, seg(2, 0, 40)}
	ha := PromptBlockHashes(nil, promptA, 104, 16, 0)
	hb := PromptBlockHashes(nil, promptB, 104, 16, 0)

	var a, b Table
	if n := c.ClaimPrefix(&a, ha, 104); n != 0 {
		t.Fatalf("cold cache claimed %d", n)
	}
	if !c.Grow(&a, 104, ha) {
		t.Fatal("Grow A")
	}
	if a.Hashed() != 6 || c.CachedBlocks() != 6 {
		t.Fatalf("A registered %d hashes, cache holds %d, want 6", a.Hashed(), c.CachedBlocks())
	}
	if got := c.CachedPrefix(hb); got != 4 {
		t.Fatalf("CachedPrefix(B) = %d, want 4", got)
	}
	if n := c.ClaimPrefix(&b, hb, 104); n != 4 || b.Tokens != 64 {
		t.Fatalf("B claimed %d blocks / %d tokens, want 4 / 64", n, b.Tokens)
	}
	if !slices.Equal(a.Blocks[:4], b.Blocks) {
		t.Fatalf("B's prefix %v is not A's %v", b.Blocks, a.Blocks[:4])
	}
	if !c.Grow(&b, 40, hb) {
		t.Fatal("Grow B")
	}
	// 7 blocks for A, 3 new for B.
	if c.UsedBlocks() != 10 {
		t.Errorf("used %d, want 10", c.UsedBlocks())
	}
	mustOK(t, c)
	c.Release(&a)
	if c.UsedBlocks() != 7 {
		t.Errorf("after releasing A: used %d, want 7 (B keeps the shared 4)", c.UsedBlocks())
	}
	if len(a.Blocks) != 0 || a.Tokens != 0 || a.Hashed() != 0 || cap(a.Blocks) == 0 {
		t.Errorf("Release did not reset A while keeping capacity: %+v", a)
	}
	mustOK(t, c)
	c.Release(&b)
	if c.UsedBlocks() != 0 {
		t.Errorf("used %d after releasing everything", c.UsedBlocks())
	}
	mustOK(t, c)
	st := c.Stats()
	// A looked up 6 blocks (capped at (104-1)/16 = 6), B 6; B hit 4.
	if st.LookupBlocks != 12 || st.HitBlocks != 4 || st.LookupTokens != 208 || st.HitTokens != 64 {
		t.Errorf("stats %+v", st)
	}
}

func TestFreedBlockStaysReusableUntilEvicted(t *testing.T) {
	c := New(8, 16)
	h := PromptBlockHashes(nil, nil, 64, 16, 5) // 4 full blocks, exactly the prompt
	var a Table
	c.ClaimPrefix(&a, h, 64)
	c.Grow(&a, 64, h)
	aBlocks := slices.Clone(a.Blocks)
	c.Release(&a)
	mustOK(t, c)
	if c.FreeBlocks() != 8 || c.CachedBlocks() != 4 {
		t.Fatalf("free %d cached %d", c.FreeBlocks(), c.CachedBlocks())
	}
	// CachedPrefix is read-only: no LRU refresh, no counters.
	order, stats := c.FreeOrder(nil), c.Stats()
	if got := c.CachedPrefix(h); got != 4 {
		t.Fatalf("CachedPrefix = %d, want 4", got)
	}
	if !slices.Equal(c.FreeOrder(nil), order) || c.Stats() != stats {
		t.Fatal("CachedPrefix changed the cache")
	}
	// The same prompt again reuses the freed blocks, except the last one (never claimed).
	var b Table
	if n := c.ClaimPrefix(&b, h, 64); n != 3 || !slices.Equal(b.Blocks, aBlocks[:3]) {
		t.Fatalf("claimed %d blocks %v, want 3 of %v", n, b.Blocks, aBlocks)
	}
	if c.FreeBlocks() != 5 {
		t.Errorf("claiming free cached blocks left %d free, want 5", c.FreeBlocks())
	}
	c.Release(&b)
	// Fill the cache with unrelated content: everything gets evicted.
	var big Table
	if !c.Grow(&big, 8*16, nil) {
		t.Fatal("Grow big")
	}
	if c.CachedBlocks() != 0 || c.CachedPrefix(h) != 0 {
		t.Errorf("cached %d prefix %d after evicting everything", c.CachedBlocks(), c.CachedPrefix(h))
	}
	if st := c.Stats(); st.Evicted != 4 {
		t.Errorf("evicted %d cached blocks, want 4", st.Evicted)
	}
	mustOK(t, c)
}

func TestLRUEvictionOrderAndReverseRelease(t *testing.T) {
	c := New(8, 16)
	h := PromptBlockHashes(nil, nil, 65, 16, 9) // 4 full blocks + 1 token
	var a Table
	c.Grow(&a, 65, h) // blocks 0..4
	if !slices.Equal(a.Blocks, []int32{0, 1, 2, 3, 4}) {
		t.Fatalf("blocks %v", a.Blocks)
	}
	c.Release(&a)
	// Never-used blocks stay ahead; A's blocks follow in reverse table order.
	if got := c.FreeOrder(nil); !slices.Equal(got, []int32{5, 6, 7, 4, 3, 2, 1, 0}) {
		t.Fatalf("free order %v", got)
	}
	// Taking 5 blocks evicts 5, 6, 7, then A's tail blocks 4 and 3; the first 3 prompt blocks
	// survive.
	var b Table
	c.Grow(&b, 80, nil)
	if !slices.Equal(b.Blocks, []int32{5, 6, 7, 4, 3}) {
		t.Fatalf("evicted in order %v", b.Blocks)
	}
	if got := c.CachedPrefix(h); got != 3 {
		t.Errorf("surviving prefix %d, want 3", got)
	}
	mustOK(t, c)
	// Releasing B puts its blocks behind the surviving prefix, in reverse order.
	c.Release(&b)
	if got := c.FreeOrder(nil); !slices.Equal(got, []int32{2, 1, 0, 3, 4, 7, 6, 5}) {
		t.Fatalf("free order after releasing B %v", got)
	}
	// Claiming refreshes blocks: the claimed 0 and 1 leave the list and come back at the tail,
	// so block 2 (not claimed) is now the oldest.
	var d Table
	c.ClaimPrefix(&d, h[:2], 65)
	if c.FreeBlocks() != 6 {
		t.Fatalf("free %d after claiming 2 of 8", c.FreeBlocks())
	}
	c.Release(&d)
	if got := c.FreeOrder(nil); !slices.Equal(got, []int32{2, 3, 4, 7, 6, 5, 1, 0}) {
		t.Errorf("free order after claim/release %v", got)
	}
	mustOK(t, c)
}

func TestClaimPrefixNeverCoversLastPromptToken(t *testing.T) {
	c := New(64, 16)
	for _, inputLen := range []int32{1, 15, 16, 17, 32, 33, 64, 65} {
		h := PromptBlockHashes(nil, nil, inputLen, 16, uint64(inputLen))
		var a, b Table
		c.Grow(&a, inputLen, h)
		c.Release(&a)
		n := c.ClaimPrefix(&b, h, inputLen)
		if want := (inputLen - 1) / 16; n != want {
			t.Errorf("inputLen %d: claimed %d blocks, want %d", inputLen, n, want)
		}
		if b.Tokens >= inputLen {
			t.Errorf("inputLen %d: claimed %d tokens, nothing left to compute", inputLen, b.Tokens)
		}
		c.Release(&b)
		mustOK(t, c)
	}
	var e Table
	if c.MaxClaimBlocks(0) != 0 || c.ClaimPrefix(&e, nil, 0) != 0 {
		t.Error("empty prompt claimed blocks")
	}
}

func TestClaimPrefixPanicsOnNonEmptyTable(t *testing.T) {
	c := New(4, 16)
	var a Table
	c.Grow(&a, 1, nil)
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	c.ClaimPrefix(&a, nil, 100)
}

func TestDuplicateContentComputedTwice(t *testing.T) {
	// Two requests with the same prompt admitted in the same step both miss and both compute it;
	// the newest copy owns the hash, the older one is an orphan that is evicted silently.
	c := New(8, 16)
	h := PromptBlockHashes(nil, nil, 32, 16, 3)
	var a, b Table
	c.ClaimPrefix(&a, h, 32)
	c.ClaimPrefix(&b, h, 32)
	c.Grow(&a, 32, h)
	c.Grow(&b, 32, h)
	mustOK(t, c)
	if c.CachedBlocks() != 2 {
		t.Fatalf("cached %d", c.CachedBlocks())
	}
	c.Release(&a)
	c.Release(&b)
	var x Table
	if n := c.ClaimPrefix(&x, h, 33); n != 2 || !slices.Equal(x.Blocks, []int32{2, 3}) {
		t.Fatalf("claimed %d blocks %v, want the newer copy [2 3]", n, x.Blocks)
	}
	c.Release(&x)
	var fill Table
	c.Grow(&fill, 8*16, nil)
	if st := c.Stats(); st.Evicted != 2 {
		t.Errorf("evicted %d reachable cached blocks, want 2 (orphans do not count)", st.Evicted)
	}
	mustOK(t, c)
}

// TestRandomizedConservation drives the cache with a random mix of requests sharing prefixes,
// growing, decoding and releasing, and checks every invariant after every operation (BC-13).
func TestRandomizedConservation(t *testing.T) {
	const (
		blocks    = 96
		blockSize = 16
		slots     = 24
	)
	r := rand.New(rand.NewPCG(2026, 11))
	c := New(blocks, blockSize)
	type req struct {
		t        Table
		hashes   []uint64
		inputLen int32
		left     int32 // tokens still to compute
		live     bool
	}
	reqs := make([]req, slots)
	prefixes := []uint64{101, 102, 103}
	var hits int
	for step := range 20000 {
		q := &reqs[r.IntN(slots)]
		switch {
		case !q.live:
			// Admit a new request: maybe a shared system prompt, then unique text.
			q.inputLen = int32(1 + r.IntN(200))
			var segs []workload.Segment
			if r.IntN(3) > 0 {
				segs = append(segs, seg(prefixes[r.IntN(len(prefixes))], 0, min(q.inputLen, int32(16*(1+r.IntN(6))))))
			}
			q.hashes = PromptBlockHashes(q.hashes, segs, q.inputLen, blockSize, uint64(step)+1<<40)
			want := c.CachedPrefix(q.hashes)
			n := c.ClaimPrefix(&q.t, q.hashes, q.inputLen)
			if n != min(want, c.MaxClaimBlocks(q.inputLen)) {
				t.Fatalf("step %d: claimed %d, CachedPrefix said %d", step, n, want)
			}
			hits += int(n)
			q.left = q.inputLen - q.t.Tokens + int32(r.IntN(40))
			q.live = true
		case r.IntN(8) == 0:
			c.Release(&q.t)
			q.live = false
		default:
			n := min(q.left, int32(1+r.IntN(48)))
			before := c.FreeBlocks()
			need := c.BlocksNeeded(&q.t, n)
			if c.Grow(&q.t, n, q.hashes) {
				q.left -= n
				if c.FreeBlocks() != before-need {
					t.Fatalf("step %d: Grow took %d blocks, BlocksNeeded said %d", step, before-c.FreeBlocks(), need)
				}
			} else if need <= before {
				t.Fatalf("step %d: Grow failed with %d needed and %d free", step, need, before)
			}
			if q.left == 0 {
				c.Release(&q.t)
				q.live = false
			}
		}
		if err := c.CheckInvariants(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		// Conservation against an independent count: used blocks are exactly the distinct
		// blocks of live tables.
		distinct := make(map[int32]bool)
		for i := range reqs {
			if err := c.CheckTable(&reqs[i].t); err != nil {
				t.Fatalf("step %d: request %d: %v", step, i, err)
			}
			for _, b := range reqs[i].t.Blocks {
				distinct[b] = true
			}
		}
		if int32(len(distinct)) != c.UsedBlocks() {
			t.Fatalf("step %d: live tables hold %d distinct blocks, cache says %d used", step, len(distinct), c.UsedBlocks())
		}
	}
	for i := range reqs {
		c.Release(&reqs[i].t)
	}
	mustOK(t, c)
	if c.FreeBlocks() != blocks {
		t.Errorf("%d blocks free after releasing everything", c.FreeBlocks())
	}
	if hits == 0 || c.Stats().Evicted == 0 || c.Stats().GrowFailures == 0 {
		t.Errorf("the sequence did not exercise hits (%d), evictions (%d) and failures (%d)", hits, c.Stats().Evicted, c.Stats().GrowFailures)
	}
}

func TestCheckInvariantsDetectsCorruption(t *testing.T) {
	c := New(4, 16)
	var a Table
	h := PromptBlockHashes(nil, nil, 32, 16, 1)
	c.Grow(&a, 32, h)
	c.blocks[0].ref = 0 // a used block with refcount 0 that is not in the free list
	if c.CheckInvariants() == nil {
		t.Error("lost block not detected")
	}
	c.blocks[0].ref = 1
	mustOK(t, c)
	c.blocks[1].hash = 12345 // the map entry of block 1's hash now points at a block without it
	if c.CheckInvariants() == nil {
		t.Error("stale hash entry not detected")
	}
}
