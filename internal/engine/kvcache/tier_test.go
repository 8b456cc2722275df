package kvcache

import (
	"math/rand/v2"
	"testing"
)

func TestTierLRUAndThrashing(t *testing.T) {
	tr := NewTier(3)
	tr.Store([]uint64{1, 2, 3}, 0)
	if tr.Len() != 3 || tr.Match([]uint64{1, 2, 3, 4}) != 3 {
		t.Fatalf("len %d, match %d", tr.Len(), tr.Match([]uint64{1, 2, 3, 4}))
	}
	// 1 becomes the most recent, so storing 4 evicts 2.
	if n := tr.Reload([]uint64{1}, 10, 5); n != 0 {
		t.Errorf("reload 10 after the store with window 5: %d thrashed", n)
	}
	tr.Store([]uint64{4}, 20)
	if tr.Match([]uint64{2}) != 0 || tr.Match([]uint64{1}) != 1 || tr.Match([]uint64{3, 4}) != 2 {
		t.Error("LRU order wrong: 2 should have been evicted")
	}
	if n := tr.Reload([]uint64{4}, 22, 5); n != 1 {
		t.Errorf("reload 2 after the store with window 5: %d thrashed, want 1", n)
	}
	if n := tr.Reload([]uint64{4}, 30, 5); n != 0 {
		t.Errorf("reload 8 after the previous reload with window 5: %d thrashed, want 0", n)
	}
	tr.Store([]uint64{NoHash, 4}, 30) // refresh, no new block
	st := tr.Stats()
	if st.Stored != 4 || st.Evicted != 1 || st.Reloaded != 3 || st.Thrashed != 1 {
		t.Errorf("stats %+v", st)
	}
	if err := tr.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	for i := uint64(100); i < 200; i++ {
		tr.Store([]uint64{i}, int64(i))
		if tr.Len() > 3 {
			t.Fatalf("tier exceeds its capacity: %d", tr.Len())
		}
	}
	if err := tr.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if tr.Match([]uint64{197, 198, 199}) != 3 {
		t.Error("the three most recent blocks should be held")
	}
}

// tierModel is the tier's specification in the plainest form: the held hashes in LRU order
// (least recent first) in a slice, their last move times in a map.
type tierModel struct {
	capacity int
	order    []uint64
	moved    map[uint64]int64
	stats    TierStats
}

func (m *tierModel) touch(h uint64) {
	for i, x := range m.order {
		if x == h {
			m.order = append(m.order[:i], m.order[i+1:]...)
			break
		}
	}
	m.order = append(m.order, h)
}

func (m *tierModel) store(hashes []uint64, now int64) {
	for _, h := range hashes {
		if h == NoHash {
			continue
		}
		if _, ok := m.moved[h]; ok {
			m.touch(h)
			continue
		}
		if len(m.order) == m.capacity {
			delete(m.moved, m.order[0])
			m.order = m.order[1:]
			m.stats.Evicted++
		}
		m.order = append(m.order, h)
		m.moved[h] = now
		m.stats.Stored++
	}
}

func (m *tierModel) match(hashes []uint64) int32 {
	var n int32
	for _, h := range hashes {
		if _, ok := m.moved[h]; !ok {
			break
		}
		n++
	}
	return n
}

func (m *tierModel) reload(hashes []uint64, now, window int64) int64 {
	var thrashed int64
	for _, h := range hashes {
		if now-m.moved[h] < window {
			thrashed++
		}
		m.moved[h] = now
		m.touch(h)
	}
	m.stats.Reloaded += int64(len(hashes))
	m.stats.Thrashed += thrashed
	return thrashed
}

// compareTier checks that tr and m hold the same hashes in the same LRU order with the same
// move times and counters, and that tr's structure is sound.
func compareTier(t *testing.T, tr *Tier, m *tierModel, step int) {
	t.Helper()
	if err := tr.CheckInvariants(); err != nil {
		t.Fatalf("step %d: %v", step, err)
	}
	if tr.Len() != int32(len(m.order)) {
		t.Fatalf("step %d: tier holds %d blocks, model %d", step, tr.Len(), len(m.order))
	}
	k := 0
	for i := tr.head; i >= 0; i = tr.nodes[i].next {
		nd := &tr.nodes[i]
		if nd.hash != m.order[k] || nd.moved != m.moved[nd.hash] {
			t.Fatalf("step %d: LRU position %d holds %#x moved at %d, model %#x moved at %d",
				step, k, nd.hash, nd.moved, m.order[k], m.moved[m.order[k]])
		}
		k++
	}
	if tr.Stats() != m.stats {
		t.Fatalf("step %d: stats %+v, model %+v", step, tr.Stats(), m.stats)
	}
}

// tierPool returns n distinct nonzero hashes built to collide in the index: a few low-32-bit
// values (the tag, which also gives the home slot) shared by several high halves, so probes meet
// equal tags with different keys and deletions shift long clusters, mixed with well-spread
// hashes like PromptBlockHashes'.
func tierPool(rng *rand.Rand, n int) []uint64 {
	seen := map[uint64]bool{NoHash: true}
	pool := make([]uint64, 0, n)
	for len(pool) < n {
		var h uint64
		switch rng.IntN(3) {
		case 0:
			h = uint64(rng.IntN(4))<<32 | uint64(rng.IntN(16))
		case 1:
			h = rng.Uint64()<<32 | uint64(rng.IntN(64))
		default:
			h = mix(rng.Uint64())
		}
		if !seen[h] {
			seen[h] = true
			pool = append(pool, h)
		}
	}
	return pool
}

// TestTierMatchesModel drives the tier and the model through the same random sequences of
// prompt-like stores (runs of the pool, so prefixes repeat and get refreshed, with NoHash
// holes), matches of held and unheld runs, and reloads of held blocks, at several capacities,
// and compares everything after every operation.
func TestTierMatchesModel(t *testing.T) {
	for _, capacity := range []int{1, 2, 3, 7, 64, 300} {
		for seed := uint64(1); seed <= 4; seed++ {
			rng := rand.New(rand.NewPCG(seed, uint64(capacity)))
			pool := tierPool(rng, 3*capacity+8)
			run := func() []uint64 {
				start := rng.IntN(len(pool))
				n := 1 + rng.IntN(min(len(pool)-start, 2*capacity+2))
				return pool[start : start+n]
			}
			tr := NewTier(int32(capacity))
			m := &tierModel{capacity: capacity, moved: map[uint64]int64{}}
			var now int64
			for step := range 1500 {
				now += int64(rng.IntN(5))
				switch op := rng.IntN(10); {
				case op < 5:
					hs := append([]uint64(nil), run()...)
					if rng.IntN(4) == 0 {
						hs[rng.IntN(len(hs))] = NoHash
					}
					tr.Store(hs, now)
					m.store(hs, now)
				case op < 7:
					hs := run()
					if rng.IntN(2) == 0 && len(m.order) > 0 {
						// A run of held blocks, most recent last, so the match is long.
						from := rng.IntN(len(m.order))
						hs = append(append([]uint64(nil), m.order[from:]...), hs...)
					}
					if got, want := tr.Match(hs), m.match(hs); got != want {
						t.Fatalf("cap %d seed %d step %d: Match %d, model %d", capacity, seed, step, got, want)
					}
				default:
					if len(m.order) == 0 {
						continue
					}
					// Reload held blocks in random order, the most recent among them included
					// sometimes, with a window that makes some of them thrash.
					n := 1 + rng.IntN(len(m.order))
					hs := make([]uint64, n)
					for i := range hs {
						hs[i] = m.order[rng.IntN(len(m.order))]
					}
					if rng.IntN(3) == 0 {
						hs[n-1] = m.order[len(m.order)-1]
					}
					window := int64(rng.IntN(20))
					if got, want := tr.Reload(hs, now, window), m.reload(hs, now, window); got != want {
						t.Fatalf("cap %d seed %d step %d: Reload thrashed %d, model %d", capacity, seed, step, got, want)
					}
				}
				compareTier(t, tr, m, step)
			}
		}
	}
}

// TestTierGrowsIndex fills a tier past the size its index is first built for, so the index is
// rebuilt while it holds entries, then cycles the tier through evictions.
func TestTierGrowsIndex(t *testing.T) {
	const capacity = 3 * tierPresize
	tr := NewTier(capacity)
	hs := make([]uint64, capacity+capacity/2)
	for i := range hs {
		hs[i] = mix(uint64(i) + 1)
	}
	for i := 0; i < capacity; i += 1000 {
		tr.Store(hs[i:min(i+1000, capacity)], int64(i))
	}
	if err := tr.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if tr.Len() != capacity || tr.Match(hs[:capacity]) != capacity || tr.Match(hs[capacity:]) != 0 {
		t.Fatalf("full tier holds %d, matches %d stored and %d new", tr.Len(), tr.Match(hs[:capacity]), tr.Match(hs[capacity:]))
	}
	if len(tr.index.slots) < 2*capacity {
		t.Fatalf("index of %d slots for %d entries", len(tr.index.slots), capacity)
	}
	tr.Store(hs[capacity:], 1)
	if err := tr.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	half := capacity / 2
	if st := tr.Stats(); st.Stored != int64(len(hs)) || st.Evicted != int64(half) {
		t.Fatalf("stats %+v", st)
	}
	if tr.Match(hs[:half]) != 0 || tr.Match(hs[half:]) != int32(len(hs)-half) {
		t.Fatal("the oldest blocks should be the evicted ones")
	}
}
