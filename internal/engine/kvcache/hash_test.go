package kvcache

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

func seg(key uint64, off, n int32) workload.Segment {
	return workload.Segment{Key: key, Offset: off, Length: n}
}

func TestPromptBlockHashesCountAndTrailingPartialBlock(t *testing.T) {
	for _, tc := range []struct{ inputLen, want int32 }{{0, 0}, {15, 0}, {16, 1}, {17, 1}, {100, 6}, {512, 32}} {
		got := PromptBlockHashes(nil, nil, tc.inputLen, 16, 7)
		if int32(len(got)) != tc.want {
			t.Errorf("inputLen %d: %d hashes, want %d", tc.inputLen, len(got), tc.want)
		}
		for i, h := range got {
			if h == NoHash {
				t.Errorf("inputLen %d: hash %d is NoHash", tc.inputLen, i)
			}
		}
	}
	if got := PromptBlockHashes(nil, nil, 100, 0, 7); len(got) != 0 {
		t.Errorf("block size 0 gave %d hashes", len(got))
	}
}

func TestSharedRunsGiveSharedHashes(t *testing.T) {
	// A 64-token system prompt (4 blocks) followed by different user text.
	a := PromptBlockHashes(nil, []workload.Segment{seg(1, 0, 64), seg(100, 0, 50)}, 114, 16, 0)
	b := PromptBlockHashes(nil, []workload.Segment{seg(1, 0, 64), seg(200, 0, 70)}, 134, 16, 0)
	if len(a) != 7 || len(b) != 8 {
		t.Fatalf("lengths %d, %d", len(a), len(b))
	}
	for i := range 4 {
		if a[i] != b[i] {
			t.Errorf("block %d of the shared system prompt differs", i)
		}
	}
	for i := 4; i < 7; i++ {
		if a[i] == b[i] {
			t.Errorf("block %d after the system prompt is equal", i)
		}
	}
}

func TestHashesIgnoreSegmentation(t *testing.T) {
	// The same tokens split into runs differently must hash identically.
	whole := PromptBlockHashes(nil, []workload.Segment{seg(9, 10, 80)}, 80, 16, 1)
	split := PromptBlockHashes(nil, []workload.Segment{seg(9, 10, 5), seg(9, 15, 0), seg(9, 15, 30), seg(9, 45, 45)}, 80, 16, 2)
	if len(whole) != 5 || len(split) != 5 {
		t.Fatalf("lengths %d, %d", len(whole), len(split))
	}
	for i := range whole {
		if whole[i] != split[i] {
			t.Errorf("block %d differs between segmentations", i)
		}
	}
	// A unique tail is one run continuing across blocks, so it is also segmentation-free:
	// segs covering only the start, then unique content, equals explicit unique segments.
	implicit := PromptBlockHashes(nil, []workload.Segment{seg(3, 0, 20)}, 64, 16, 77)
	explicit := PromptBlockHashes(nil, []workload.Segment{seg(3, 0, 20), seg(77, 0, 44)}, 64, 16, 0)
	for i := range implicit {
		if implicit[i] != explicit[i] {
			t.Errorf("block %d: implicit unique tail differs from explicit segment", i)
		}
	}
}

func TestChangedEarlyTokenChangesEveryLaterHash(t *testing.T) {
	base := []workload.Segment{seg(5, 0, 160)}
	ref := PromptBlockHashes(nil, base, 160, 16, 0)
	// Replace token 37 (block 2) by a different token.
	changed := []workload.Segment{seg(5, 0, 37), seg(6, 0, 1), seg(5, 38, 122)}
	got := PromptBlockHashes(nil, changed, 160, 16, 0)
	for i := range ref {
		if i < 2 && got[i] != ref[i] {
			t.Errorf("block %d before the change differs", i)
		}
		if i >= 2 && got[i] == ref[i] {
			t.Errorf("block %d at or after the change is equal", i)
		}
	}
	// A change of offset only (same key, shifted content) also counts as different tokens.
	shifted := PromptBlockHashes(nil, []workload.Segment{seg(5, 1, 160)}, 160, 16, 0)
	for i := range ref {
		if shifted[i] == ref[i] {
			t.Errorf("block %d equal despite shifted content", i)
		}
	}
	// Different unique keys differ from the first block on.
	u1 := PromptBlockHashes(nil, nil, 48, 16, 1)
	u2 := PromptBlockHashes(nil, nil, 48, 16, 2)
	for i := range u1 {
		if u1[i] == u2[i] {
			t.Errorf("unique prompts share block %d", i)
		}
	}
}

func TestMooncakeHashIDsShare32BlocksEach(t *testing.T) {
	// Mooncake traces describe prompts as lists of 512-token hash ids.
	prompt := func(ids ...uint64) []workload.Segment {
		var s []workload.Segment
		for _, id := range ids {
			s = append(s, seg(id, 0, 512))
		}
		return s
	}
	a := PromptBlockHashes(nil, prompt(11, 12, 13, 14), 4*512, 16, 0)
	b := PromptBlockHashes(nil, prompt(11, 12, 99, 14), 4*512, 16, 0)
	if len(a) != 128 || len(b) != 128 {
		t.Fatalf("lengths %d, %d", len(a), len(b))
	}
	shared := 0
	for shared < len(a) && a[shared] == b[shared] {
		shared++
	}
	if shared != 64 {
		t.Errorf("prompts sharing 2 hash ids share %d blocks, want 64", shared)
	}
	for i := 64; i < 128; i++ {
		if a[i] == b[i] {
			t.Errorf("block %d equal after the differing hash id", i)
		}
	}
	// Only the prefix matters: the same hash id in a later position is different content.
	c := PromptBlockHashes(nil, prompt(12), 512, 16, 0)
	if c[0] == a[32] {
		t.Error("hash id 12 at position 0 hashes like hash id 12 at position 1")
	}
}

func TestHashesDistinctOnRandomPrompts(t *testing.T) {
	// No collisions among many distinct blocks, a smoke test of the mixing.
	r := rand.New(rand.NewPCG(1, 2))
	seen := make(map[uint64]bool)
	var dst []uint64
	for range 2000 {
		n := int32(16 + r.IntN(400))
		dst = PromptBlockHashes(dst, []workload.Segment{seg(r.Uint64N(8), int32(r.IntN(4)), n)}, n, 16, r.Uint64())
		for _, h := range dst {
			seen[h] = true
		}
	}
	// Prompts from 8 keys x 4 offsets share prefixes heavily; count distinct (key, offset, block)
	// triples reachable and make sure every distinct content got a distinct hash.
	want := make(map[[3]uint64]bool)
	r = rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := int32(16 + r.IntN(400))
		k, off := r.Uint64N(8), uint64(r.IntN(4))
		r.Uint64()
		for b := range uint64(n / 16) {
			want[[3]uint64{k, off, b}] = true
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%d distinct hashes for %d distinct blocks", len(seen), len(want))
	}
}

func TestPromptBlockHashesDoesNotAllocate(t *testing.T) {
	segs := []workload.Segment{seg(1, 0, 300), seg(2, 0, 212), seg(3, 5, 1000)}
	dst := make([]uint64, 0, 128)
	allocs := testing.AllocsPerRun(100, func() {
		dst = PromptBlockHashes(dst, segs, 2000, 16, 42)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per call", allocs)
	}
}

// TestHashesDependOnlyOnTokens checks on random prompts that re-splitting runs into smaller
// segments never changes the hashes, and that changing one random token changes exactly the
// hashes of its block and every later block.
func TestHashesDependOnlyOnTokens(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 43))
	for trial := range 300 {
		// A prompt of a few runs of content.
		var segs []workload.Segment
		var total int32
		for range 1 + r.IntN(5) {
			n := int32(1 + r.IntN(90))
			segs = append(segs, seg(r.Uint64N(4), int32(r.IntN(50)), n))
			total += n
		}
		inputLen := total + int32(r.IntN(40)) // maybe a unique tail
		ref := PromptBlockHashes(nil, segs, inputLen, 16, 99)

		// Split every run at random points.
		var split []workload.Segment
		for _, s := range segs {
			for s.Length > 0 {
				n := int32(1 + r.IntN(int(s.Length)))
				split = append(split, seg(s.Key, s.Offset, n))
				s.Offset += n
				s.Length -= n
			}
		}
		if got := PromptBlockHashes(nil, split, inputLen, 16, 99); !slices.Equal(got, ref) {
			t.Fatalf("trial %d: re-splitting changed the hashes", trial)
		}

		// Replace token k by a token of a fresh key.
		if total == 0 {
			continue
		}
		k := int32(r.IntN(int(total)))
		var changed []workload.Segment
		var pos int32
		for _, s := range segs {
			if k >= pos && k < pos+s.Length {
				i := k - pos
				if i > 0 {
					changed = append(changed, seg(s.Key, s.Offset, i))
				}
				changed = append(changed, seg(1000, 0, 1))
				if rest := s.Length - i - 1; rest > 0 {
					changed = append(changed, seg(s.Key, s.Offset+i+1, rest))
				}
			} else {
				changed = append(changed, s)
			}
			pos += s.Length
		}
		got := PromptBlockHashes(nil, changed, inputLen, 16, 99)
		for b := range ref {
			if same := got[b] == ref[b]; same != (int32(b) < k/16) {
				t.Fatalf("trial %d: token %d changed, block %d equal=%v", trial, k, b, same)
			}
		}
	}
}

// TestUniqueTailMatchesExplicitRun checks that tokens not covered by segments hash exactly as
// the explicit run (unique, 0, ...) would, whether the prompt is all unique or the unique part
// starts inside a block, after empty segments or at a block boundary.
func TestUniqueTailMatchesExplicitRun(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	for trial := range 500 {
		const unique = 0xfeed
		var segs []workload.Segment
		var covered int32
		for range r.IntN(4) {
			n := int32(r.IntN(40)) // zero-length segments included
			segs = append(segs, seg(r.Uint64N(3)+1, int32(r.IntN(9)), n))
			covered += n
		}
		if r.IntN(3) == 0 {
			pad := (16 - covered%16) % 16 // end the segments on a block boundary
			segs = append(segs, seg(7, 0, pad))
			covered += pad
		}
		inputLen := covered + int32(r.IntN(100))
		explicit := append(slices.Clone(segs), seg(unique, 0, inputLen-covered))
		got := PromptBlockHashes(nil, segs, inputLen, 16, unique)
		want := PromptBlockHashes(nil, explicit, inputLen, 16, 0x1234)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: segs %v, %d tokens: unique tail hashes %x, explicit run %x", trial, segs, inputLen, got, want)
		}
	}
}

// TestPromptBlockHashesGolden pins hash values, which results depend on (a change would alter
// which blocks are shared, and so every simulation).
func TestPromptBlockHashesGolden(t *testing.T) {
	for _, tc := range []struct {
		segs     []workload.Segment
		inputLen int32
		unique   uint64
		want     []uint64
	}{
		{nil, 100, 7, []uint64{0x8c642608704e9486, 0x1b1c0dcbce266ba9, 0xc9df24e7ad7b5741, 0x824db076c1cf89fe, 0xdcfeb934535be90d, 0x106e9a97340e905e}},
		{[]workload.Segment{seg(3, 5, 40), seg(0, 0, 0)}, 130, 9, []uint64{0x363005062c8fb368, 0xd124f4e144276424, 0x5545f2786732bc66, 0xae4066883c3ca800, 0x51c4867f04509611, 0x92606cd15a3b5639, 0xf3f045b5e76d4c7c, 0xaf11c2c2212107c0}},
	} {
		if got := PromptBlockHashes(nil, tc.segs, tc.inputLen, 16, tc.unique); !slices.Equal(got, tc.want) {
			t.Errorf("PromptBlockHashes(%v, %d, 16, %d) = %#x, want %#x", tc.segs, tc.inputLen, tc.unique, got, tc.want)
		}
	}
}
