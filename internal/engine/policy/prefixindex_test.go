package policy

import "testing"

func TestPrefixIndexGreedyMatchCreditsEveryHolder(t *testing.T) {
	x := NewPrefixIndex([]int{100, 100, 100})
	x.Add(0, []uint64{10, 12})
	x.Add(1, []uint64{11})
	out := make([]int32, 3)
	// Walk 10 (holder 0), 11 (holder 1), 12 (holder 0), 13 (nobody: stop).
	if !x.Match([]uint64{10, 11, 12, 13, 10}, out) {
		t.Fatal("expected a match")
	}
	if out[0] != 2 || out[1] != 1 || out[2] != 0 {
		t.Fatalf("got %v, want [2 1 0]", out)
	}
	if x.Match([]uint64{99, 10}, out) || out[0] != 0 {
		t.Fatalf("a miss on the first block must stop the walk, got %v", out)
	}
}

func TestPrefixIndexLRUEvictsLeastRecentlyAdded(t *testing.T) {
	x := NewPrefixIndex([]int{3})
	x.Add(0, []uint64{1, 2, 3})
	x.Add(0, []uint64{1}) // 1 becomes most recent; 2 is now the oldest
	x.Add(0, []uint64{4}) // evicts 2
	if x.Holds(0, 2) || !x.Holds(0, 1) || !x.Holds(0, 3) || !x.Holds(0, 4) {
		t.Fatal("wrong eviction")
	}
	if x.Len(0) != 3 {
		t.Fatalf("len %d, want 3", x.Len(0))
	}
	out := make([]int32, 1)
	x.Match([]uint64{2}, out)
	if out[0] != 0 {
		t.Fatal("evicted hash still matched")
	}
	x.Reset(0)
	if x.Len(0) != 0 || x.Match([]uint64{1}, out) {
		t.Fatal("reset kept entries")
	}
}

func TestPrefixIndexManyInstances(t *testing.T) {
	caps := make([]int, 130)
	x := NewPrefixIndex(caps)
	x.Add(0, []uint64{7})
	x.Add(64, []uint64{7})
	x.Add(129, []uint64{7, 8})
	out := make([]int32, 130)
	x.Match([]uint64{7, 8}, out)
	if out[0] != 1 || out[64] != 1 || out[129] != 2 || out[1] != 0 {
		t.Fatalf("multi-word sets: got %v %v %v", out[0], out[64], out[129])
	}
}

func TestPrefixIndexAddDoesNotAllocateAtSteadyState(t *testing.T) {
	x := NewPrefixIndex([]int{64})
	hashes := make([]uint64, 16)
	next := uint64(1)
	fill := func() {
		for i := range hashes {
			hashes[i] = next
			next++
		}
	}
	for i := 0; i < 20; i++ {
		fill()
		x.Add(0, hashes)
	}
	out := make([]int32, 1)
	allocs := testing.AllocsPerRun(50, func() {
		x.Match(hashes, out)
	})
	if allocs != 0 {
		t.Fatalf("Match allocates %v times", allocs)
	}
}
