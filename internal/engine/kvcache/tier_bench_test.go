package kvcache

import "testing"

// benchTierPrompt is the prompt length in blocks of the tier benchmarks, and benchTierCapacity
// the tier size: workload B's 50,000-block CPU tier, which its offloads keep full.
const (
	benchTierPrompt   = 32
	benchTierCapacity = 50_000
)

// fullTier returns a tier filled to capacity with hashes no benchmark stores again.
func fullTier() *Tier {
	tr := NewTier(benchTierCapacity)
	hs := make([]uint64, benchTierPrompt)
	for i := uint64(0); tr.Len() < benchTierCapacity; i += benchTierPrompt {
		for j := range hs {
			hs[j] = mix(1<<40 + i + uint64(j))
		}
		tr.Store(hs, 0)
	}
	return tr
}

// BenchmarkTierStoreNew measures the offload of a prompt of new blocks into a full tier, each
// block evicting the least recently used: workload B's offload traffic, where no prompt
// shares a block with another. One op is one prompt.
func BenchmarkTierStoreNew(b *testing.B) {
	tr := fullTier()
	hs := make([]uint64, benchTierPrompt)
	var next uint64
	b.ReportAllocs()
	for b.Loop() {
		for j := range hs {
			next++
			hs[j] = mix(next)
		}
		tr.Store(hs, int64(next))
	}
}

// BenchmarkTierStoreShared measures the offload of prompts that share a 24-block prefix among
// 16 groups and end in 8 new blocks: the prefix blocks are held and only refreshed. One op is
// one prompt.
func BenchmarkTierStoreShared(b *testing.B) {
	const groups, prefix = 16, 24
	tr := fullTier()
	hs := make([]uint64, benchTierPrompt)
	var next uint64
	b.ReportAllocs()
	for b.Loop() {
		next++
		g := next % groups
		for j := range prefix {
			hs[j] = mix(1<<50 + g<<8 + uint64(j))
		}
		for j := prefix; j < benchTierPrompt; j++ {
			hs[j] = mix(next<<8 + uint64(j))
		}
		tr.Store(hs, int64(next))
	}
}

// BenchmarkTierMatch measures the tier lookup of an admission: a prompt whose first half is
// held. One op is one prompt.
func BenchmarkTierMatch(b *testing.B) {
	tr := fullTier()
	hs := make([]uint64, benchTierPrompt)
	for j := range hs {
		hs[j] = mix(uint64(j) + 1)
	}
	tr.Store(hs[:benchTierPrompt/2], 0)
	b.ReportAllocs()
	for b.Loop() {
		if tr.Match(hs) != benchTierPrompt/2 {
			b.Fatal("wrong match")
		}
	}
}
