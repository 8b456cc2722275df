package kvcache

import (
	"math/rand/v2"
	"testing"
)

// TestIndexMatchesMapReference drives the index with random insert, lookup and delete sequences,
// used the way Cache uses it (an entry's key is the hash its block carries), and compares every
// answer with a plain Go map. Keys are drawn from small pools that force the hard cases: equal
// home slots (long clusters, wrap-around at the end of the table, backward shifts), equal tags
// with different high bits (full-key comparisons through the block), duplicates that replace an
// entry, and deletes of entries that no longer name the block.
func TestIndexMatchesMapReference(t *testing.T) {
	for _, tc := range []struct {
		name   string
		blocks int32
		keys   func(r *rand.Rand, x *index) uint64
	}{
		{"random keys", 64, func(r *rand.Rand, _ *index) uint64 { return 1 + r.Uint64N(200) }},
		{"shared home slots", 64, func(r *rand.Rand, x *index) uint64 {
			// A handful of homes, two of them the last slots so clusters wrap around.
			homes := []uint64{0, 1, 5, x.mask - 1, x.mask}
			return homes[r.IntN(len(homes))] + (x.mask+1)*(1+r.Uint64N(40))
		}},
		{"shared tags", 32, func(r *rand.Rand, _ *index) uint64 {
			// Same low 32 bits, different high bits: tags collide, only the block tells them apart.
			return uint64(1+r.IntN(3)) | r.Uint64N(8)<<32
		}},
		{"one block", 1, func(r *rand.Rand, _ *index) uint64 { return 1 + r.Uint64N(4) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(tc.blocks)))
			x := newIndex(tc.blocks)
			blocks := make([]block, tc.blocks)
			ref := make(map[uint64]int32)
			var puts, replaced, deleted, kept, hits int
			for step := range 30000 {
				switch op := r.IntN(10); {
				case op < 4:
					// Register a key on a block, as Grow does on a freshly taken block: the block
					// first loses its old content (lazy delete, as at eviction).
					b := r.Int32N(tc.blocks)
					if h := blocks[b].hash; h != NoHash {
						cur, ok := ref[h]
						want := ok && cur == b
						if want {
							delete(ref, h)
						}
						if got := x.deleteIf(h, b); got != want {
							t.Fatalf("step %d: deleteIf(%#x, %d) = %v, want %v", step, h, b, got, want)
						}
						blocks[b].hash = NoHash
					}
					h := tc.keys(r, &x)
					if _, ok := ref[h]; ok {
						replaced++
					}
					blocks[b].hash = h
					x.put(h, b, blocks)
					ref[h] = b
					puts++
				case op < 6:
					// Evict a block: its entry goes only if it still names it.
					b := r.Int32N(tc.blocks)
					h := blocks[b].hash
					if h == NoHash {
						continue
					}
					cur, ok := ref[h]
					want := ok && cur == b
					if want {
						delete(ref, h)
						deleted++
					} else {
						kept++
					}
					if got := x.deleteIf(h, b); got != want {
						t.Fatalf("step %d: deleteIf(%#x, %d) = %v, want %v", step, h, b, got, want)
					}
					blocks[b].hash = NoHash
				default:
					h := tc.keys(r, &x)
					if r.IntN(8) == 0 {
						h = NoHash
					}
					want, ok := ref[h]
					got, gotOK := x.get(h, blocks)
					if gotOK != ok || (ok && got != want) {
						t.Fatalf("step %d: get(%#x) = %d, %v; want %d, %v", step, h, got, gotOK, want, ok)
					}
					if ok {
						hits++
					}
				}
				if x.n != int32(len(ref)) {
					t.Fatalf("step %d: index holds %d entries, reference %d", step, x.n, len(ref))
				}
				if step%97 == 0 {
					if err := x.check(blocks); err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					for h, b := range ref {
						if got, ok := x.get(h, blocks); !ok || got != b {
							t.Fatalf("step %d: get(%#x) = %d, %v; want %d", step, h, got, ok, b)
						}
					}
				}
			}
			if err := x.check(blocks); err != nil {
				t.Fatal(err)
			}
			// A single block cannot be named by a replaced entry or outlive its entry.
			if puts == 0 || deleted == 0 || hits == 0 || (tc.blocks > 1 && (replaced == 0 || kept == 0)) {
				t.Errorf("sequence too tame: %d puts, %d replaced, %d deleted, %d kept, %d hits", puts, replaced, deleted, kept, hits)
			}
		})
	}
}

// TestIndexLoadBound checks the sizing rule: a power of two with room for maxEntries at a load
// of at most 1/2.
func TestIndexLoadBound(t *testing.T) {
	for _, n := range []int32{1, 3, 4, 5, 1000, 26312, 32768} {
		x := newIndex(n)
		size := len(x.slots)
		if size&(size-1) != 0 || size < 2*int(n) || (size > minIndexSlots && size/2 >= 2*int(n)) {
			t.Errorf("newIndex(%d): %d slots", n, size)
		}
		if x.mask != uint64(size-1) || x.n != 0 {
			t.Errorf("newIndex(%d): mask %#x, %d entries", n, x.mask, x.n)
		}
	}
}

// TestIndexFullChurnKeepsProbesShort fills the index to its maximal load and churns it for many
// generations: with backward-shift deletion no tombstones pile up, so the longest probe stays
// that of a table at load 1/2.
func TestIndexFullChurnKeepsProbesShort(t *testing.T) {
	const n = 4096
	r := rand.New(rand.NewPCG(3, 4))
	x := newIndex(n)
	blocks := make([]block, n)
	for b := range int32(n) {
		blocks[b].hash = r.Uint64() | 1
		x.put(blocks[b].hash, b, blocks)
	}
	for range 50 * n {
		b := r.Int32N(n)
		if !x.deleteIf(blocks[b].hash, b) {
			t.Fatalf("entry of block %d missing", b)
		}
		blocks[b].hash = r.Uint64() | 1
		x.put(blocks[b].hash, b, blocks)
	}
	if err := x.check(blocks); err != nil {
		t.Fatal(err)
	}
	longest := 0
	for i, s := range x.slots {
		if s.block == nilBlock {
			continue
		}
		if d := int((uint64(i) - uint64(s.tag)) & x.mask); d > longest {
			longest = d
		}
	}
	if longest > 64 {
		t.Errorf("longest displacement %d after churn", longest)
	}
}

func TestIndexDoesNotAllocate(t *testing.T) {
	x := newIndex(128)
	blocks := make([]block, 128)
	r := rand.New(rand.NewPCG(5, 6))
	allocs := testing.AllocsPerRun(100, func() {
		for b := range int32(128) {
			if h := blocks[b].hash; h != NoHash {
				x.deleteIf(h, b)
			}
			blocks[b].hash = r.Uint64() | 1
			x.put(blocks[b].hash, b, blocks)
			x.get(blocks[b].hash, blocks)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per run", allocs)
	}
}
