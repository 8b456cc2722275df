package kvcache

import (
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// BenchmarkRequestLifecycle measures one request's full cache traffic: claim a shared 1024-token
// system prompt, compute the rest of a 2048-token prompt in 512-token chunks, 256 decode steps
// of one token, and release. The cache is large and warm, as in a steady-state instance.
func BenchmarkRequestLifecycle(b *testing.B) {
	const inputLen, outputLen = 2048, 256
	c := New(26312, 16)
	hashes := make([]uint64, 0, inputLen/16)
	segs := []workload.Segment{{Key: 1, Offset: 0, Length: 1024}, {Key: 0, Offset: 0, Length: 1024}}
	var t Table
	t.Blocks = make([]int32, 0, (inputLen+outputLen)/16+1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		segs[1].Key = uint64(i) + 2
		hashes = PromptBlockHashes(hashes, segs, inputLen, 16, 0)
		c.ClaimPrefix(&t, hashes, inputLen)
		for t.Tokens < inputLen {
			if !c.Grow(&t, min(512, inputLen-t.Tokens), hashes) {
				b.Fatal("prefill Grow failed")
			}
		}
		for range outputLen {
			if !c.Grow(&t, 1, hashes) {
				b.Fatal("decode Grow failed")
			}
		}
		c.Release(&t)
	}
}

// BenchmarkGrowDecode measures the hot path of a decode step: Grow by one token, most of the
// time within the last block.
func BenchmarkGrowDecode(b *testing.B) {
	c := New(4096, 16)
	var t Table
	t.Blocks = make([]int32, 0, 4096)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if !c.Grow(&t, 1, nil) {
			c.Release(&t)
		}
	}
}

// BenchmarkGrowRelease measures allocating and freeing a 64-block table, evicting cached blocks.
func BenchmarkGrowRelease(b *testing.B) {
	c := New(1024, 16)
	hashes := PromptBlockHashes(nil, nil, 64*16, 16, 1)
	var t Table
	t.Blocks = make([]int32, 0, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		hashes[0] = uint64(i) + 1 // new content each round, so registrations churn the map
		c.Grow(&t, 64*16, hashes)
		c.Release(&t)
	}
}

// BenchmarkClaimPrefix measures claiming and releasing a 64-block cached prefix.
func BenchmarkClaimPrefix(b *testing.B) {
	c := New(1024, 16)
	hashes := PromptBlockHashes(nil, nil, 65*16, 16, 1)
	var warm, t Table
	c.Grow(&warm, 65*16, hashes)
	c.Release(&warm)
	t.Blocks = make([]int32, 0, 65)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if c.ClaimPrefix(&t, hashes, 65*16) != 64 {
			b.Fatal("prefix not cached")
		}
		c.Release(&t)
	}
}

// BenchmarkPromptBlockHashes measures hashing a 4096-token prompt of Mooncake-style 512-token
// shared segments (256 blocks).
func BenchmarkPromptBlockHashes(b *testing.B) {
	segs := make([]workload.Segment, 8)
	for i := range segs {
		segs[i] = workload.Segment{Key: uint64(i) + 100, Length: 512}
	}
	dst := make([]uint64, 0, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		dst = PromptBlockHashes(dst, segs, 4096, 16, 7)
	}
}
