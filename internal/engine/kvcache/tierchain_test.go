package kvcache

import (
	"math/rand/v2"
	"testing"
)

// TestTierChainConservation drives a cpu -> filesystem -> object-store chain with random
// stores and reloads: every tier keeps its structure and holds stored + demoted + promoted -
// evicted blocks, and the chain loses only the last tier's evictions.
func TestTierChainConservation(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	last := NewTier(40)
	chain := NewTier(8).Chain(NewTier(16).Chain(last))
	var offloaded int64
	for step := range 3000 {
		now := int64(step) * 1000
		hashes := make([]uint64, 1+rng.IntN(6))
		for i := range hashes {
			hashes[i] = 1 + uint64(rng.IntN(80))
		}
		if rng.IntN(2) == 0 {
			before := chain.Stats().Stored
			chain.Store(hashes, now)
			offloaded += chain.Stats().Stored - before
		} else if m := chain.MatchChain(hashes); m > 0 {
			var per [3]int32
			chain.ReloadChain(hashes[:m], now, 500, per[:])
			if per[0]+per[1]+per[2] != m {
				t.Fatalf("step %d: %d reloads per tier for %d blocks", step, per, m)
			}
		}
		if err := chain.CheckInvariants(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	var reloaded int64
	for tt := chain; tt != nil; tt = tt.Next() {
		st := tt.Stats()
		reloaded += st.Reloaded
		if tt.Next() != nil && tt.Next().Stats().Demoted > st.Evicted {
			t.Errorf("a tier received %d demotions, the tier above evicted %d", tt.Next().Stats().Demoted, st.Evicted)
		}
	}
	if offloaded == 0 || reloaded == 0 || last.Stats().Evicted == 0 || chain.Stats().Promoted == 0 {
		t.Errorf("the run exercised too little: %+v %+v", chain.Stats(), last.Stats())
	}
}
