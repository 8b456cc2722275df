package kvcache

import "testing"

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
