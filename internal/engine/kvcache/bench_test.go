package kvcache

import (
	"math/rand/v2"
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

// BenchmarkManyCaches emulates the cache traffic of a large cluster simulation, which is bound
// by memory rather than by instructions: 16 instances of 26,312 blocks (llama-3.1-8b on H100),
// each running 128 requests with unique 512±256-token prompts and outputs. One op is one decode
// step of one instance (instances take turns): every running request gains one token, and a
// finished request releases its blocks and is replaced by a new one that claims, hashes and
// prefills its prompt. As in the simulator, decode tokens that fit in the last block are only
// counted, and Grow is called when a new block is needed.
func BenchmarkManyCaches(b *testing.B) {
	const (
		instances, blocks, blockSize = 16, 26312, 16
		running                      = 128
	)
	type req struct {
		t           Table
		hashes      []uint64
		left        int32 // decode tokens still to generate
		room, lazy  int32 // free token slots in the last block; tokens counted but not grown
		inputTokens int32
	}
	r := rand.New(rand.NewPCG(42, 1))
	length := func() int32 { return int32(min(max(512+r.NormFloat64()*256, 2), 7000)) }
	var next uint64
	admit := func(c *Cache, q *req) {
		c.Release(&q.t)
		next++
		q.inputTokens, q.left, q.lazy = length(), length(), 0
		q.hashes = PromptBlockHashes(q.hashes, nil, q.inputTokens, blockSize, next<<8|0x5a)
		c.ClaimPrefix(&q.t, q.hashes, q.inputTokens)
		if !c.Grow(&q.t, q.inputTokens-q.t.Tokens, q.hashes) {
			b.Fatal("prefill Grow failed")
		}
		q.room = int32(len(q.t.Blocks))*blockSize - q.t.Tokens
	}
	caches := make([]*Cache, instances)
	reqs := make([][]req, instances)
	for i := range caches {
		caches[i] = New(blocks, blockSize)
		reqs[i] = make([]req, running)
		for j := range reqs[i] {
			admit(caches[i], &reqs[i][j])
		}
	}
	step := func(i int) {
		c := caches[i%instances]
		for j := range reqs[i%instances] {
			q := &reqs[i%instances][j]
			switch {
			case q.left == 0:
				admit(c, q)
				continue
			case q.room > 0:
				q.room--
				q.lazy++
			default:
				if !c.Grow(&q.t, q.lazy+1, nil) {
					b.Fatal("decode Grow failed")
				}
				q.lazy = 0
				q.room = int32(len(q.t.Blocks))*blockSize - q.t.Tokens
			}
			q.left--
		}
	}
	for i := range 4 * instances * 1024 { // warm up: every block has been used
		step(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		step(i)
	}
}

// BenchmarkPromptBlockHashesUnique measures hashing a 512-token prompt with no shared content
// (32 blocks), the common case of synthetic workloads.
func BenchmarkPromptBlockHashesUnique(b *testing.B) {
	dst := make([]uint64, 0, 32)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		dst = PromptBlockHashes(dst, nil, 512, 16, uint64(i)|1<<40)
	}
}
