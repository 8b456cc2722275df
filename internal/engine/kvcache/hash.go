package kvcache

import "github.com/inference-sim/blis-operator/internal/engine/workload"

// Hashing of prompt content.
//
// Real vLLM hashes the token IDs of every full block, chained with the previous block's hash,
// and BLIS does the same with SHA-256 over random token IDs. The simulator never materializes
// token IDs: a prompt is a list of (Key, Offset, Length) runs (workload.Segment), and two tokens
// are equal exactly when their (Key, Offset+i) coordinates are equal. A block's content is
// therefore fully described by the runs that cover it, and hashing those runs instead of the
// tokens is exact and O(runs) instead of O(tokens).
//
// The hash is a 64-bit multiply-xorshift construction. Collisions are ignored: with n distinct
// block hashes alive in a cache the probability of any collision is about n²/2⁶⁵, i.e. below
// 10⁻⁹ for a million blocks, and a collision would only make one request reuse the wrong
// (simulated) KV content, which changes timing slightly and never breaks an invariant. A
// cryptographic hash would cost far more per block for no observable benefit.

// NoHash is the hash value meaning "no content hash". PromptBlockHashes never returns it, and
// Grow does not register a block whose hash is NoHash.
const NoHash uint64 = 0

const (
	// seedHash starts every chain so that the first block's hash is not a trivial function of
	// its first run.
	seedHash uint64 = 0x6a09e667f3bcc909 // fractional bits of sqrt(2)
	// runSalt separates a run's key word from its position word.
	runSalt uint64 = 0x9e3779b97f4a7c15 // 2^64 / golden ratio
	// blockSalt is folded in when a block closes, so the state after a block never equals a
	// mid-block state.
	blockSalt uint64 = 0xbb67ae8584caa73b // fractional bits of sqrt(3)
)

// mix is a bijective 64-bit finalizer (xorshift-multiply rounds with odd multipliers, the
// structure of the well-known "fmix64"/SplitMix finalizers, constants from David Stafford's
// published variant 13). Every input bit affects every output bit with probability ~1/2.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// feedRun folds one maximal run (key, offset, length) of a block into the chain state h.
func feedRun(h, key uint64, offset, length int32) uint64 {
	h = mix(h ^ mix(key+runSalt))
	return mix(h ^ (uint64(uint32(offset))<<32 | uint64(uint32(length))))
}

// PromptBlockHashes appends to dst[:0] the chained hashes of the prompt's full blocks and
// returns the result: h_i = H(h_{i-1}, runs of block i), where a block's runs are the maximal
// (Key, Offset, Length) runs of segs that cover its tokens. Adjacent segments that continue the
// same content (same Key, contiguous offsets) are merged first, so the hashes depend only on
// the tokens, never on how the prompt happened to be split into segments.
//
// Tokens not covered by segs (segs empty or shorter than inputLen) are unique content: they are
// treated as the run (unique, 0, ...) continuing across blocks, so callers pass a value that is
// distinct per request (for example a random draw or the request ID mixed with a salt).
// Segments beyond inputLen are ignored, as is a trailing partial block. Zero-length segments are
// skipped.
//
// Two prompts with identical tokens in their first k blocks get identical first k hashes, and a
// difference in any token changes the hash of its block and of every later block. No hash equals
// NoHash. Runs in O(full blocks + segments) and does not allocate when dst has the capacity of
// inputLen/blockSize.
func PromptBlockHashes(dst []uint64, segs []workload.Segment, inputLen, blockSize int32, unique uint64) []uint64 {
	dst = dst[:0]
	if blockSize <= 0 || inputLen < blockSize {
		return dst
	}
	nFull := inputLen / blockSize
	h := seedHash
	si := 0          // current segment
	var segPos int32 // tokens of segs[si] already consumed
	var uniquePos int32
	for b := int32(0); b < nFull; b++ {
		for si < len(segs) && segs[si].Length-segPos <= 0 {
			si, segPos = si+1, 0 // exhausted or empty segment
		}
		if si == len(segs) {
			// The rest of the prompt is the unique run: each block is the single run
			// (unique, uniquePos, blockSize), and the run's key word is the same for all.
			ku := mix(unique + runSalt)
			for ; b < nFull; b++ {
				h = mix(mix(h^ku) ^ (uint64(uint32(uniquePos))<<32 | uint64(uint32(blockSize))))
				h = mix(h ^ blockSalt)
				if h == NoHash {
					h = 1
				}
				dst = append(dst, h)
				uniquePos += blockSize
			}
			break
		}
		if sg := &segs[si]; sg.Length-segPos >= blockSize {
			// The block lies within one segment: it is the single run the loop below would
			// build, without the merging bookkeeping (the common case of long segments).
			off := sg.Offset + segPos
			segPos += blockSize
			if segPos == sg.Length {
				si, segPos = si+1, 0
			}
			h = mix(feedRun(h, sg.Key, off, blockSize) ^ blockSalt)
			if h == NoHash {
				h = 1
			}
			dst = append(dst, h)
			continue
		}
		need := blockSize
		var pk uint64
		var po, pl int32
		have := false
		for need > 0 {
			var k uint64
			var off, l int32
			if si < len(segs) {
				s := &segs[si]
				rem := s.Length - segPos
				if rem <= 0 {
					si++
					segPos = 0
					continue
				}
				l = min(rem, need)
				k, off = s.Key, s.Offset+segPos
				segPos += l
				if segPos == s.Length {
					si++
					segPos = 0
				}
			} else {
				l = need
				k, off = unique, uniquePos
				uniquePos += l
			}
			need -= l
			if have && k == pk && off == po+pl {
				pl += l
				continue
			}
			if have {
				h = feedRun(h, pk, po, pl)
			}
			pk, po, pl, have = k, off, l, true
		}
		h = mix(feedRun(h, pk, po, pl) ^ blockSalt)
		if h == NoHash {
			h = 1 // remap the single reserved value; a 2^-64 event
		}
		dst = append(dst, h)
	}
	return dst
}
