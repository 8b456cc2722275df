package sim

import (
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/kvcache"
	"github.com/inference-sim/blis-operator/internal/engine/metrics"
)

func TestLowerTierRaisesCacheHitRate(t *testing.T) {
	run := func(tier *KVTierConfig) (*Result, float64) {
		cfg := &Config{Instances: []InstanceConfig{tieredInstance(tier)}, Options: Options{CheckInvariants: true}}
		src := tierWorkload()
		res, err := Run(cfg, src)
		if err != nil {
			t.Fatal(err)
		}
		out := res.Report(src.Tables(), metrics.Options{}).Cluster
		if out.CacheHitRate == nil {
			t.Fatal("no cache hit rate")
		}
		return res, *out.CacheHitRate
	}
	// GPU (400 blocks) + CPU (300) hold about half of the 1280-block working set.
	cpu := &KVTierConfig{CapacityBlocks: 300, BandwidthGBps: 20, BaseLatencyUs: 100, BlockBytes: 2 << 20}
	_, cpuHit := run(cpu)
	fs := *cpu
	fs.Next = &KVTierConfig{Kind: TierFilesystem, CapacityBlocks: 4000, BandwidthGBps: 4, BaseLatencyUs: 500, BlockBytes: 2 << 20}
	res, fsHit := run(&fs)
	t.Logf("hit rate GPU+CPU %.3f, GPU+CPU+filesystem %.3f", cpuHit, fsHit)
	if !(fsHit > cpuHit+0.1) {
		t.Errorf("a filesystem tier should raise the hit rate above %.3f, got %.3f", cpuHit, fsHit)
	}
	if st := res.Instances[0]; st.KVReloadedBlocks == 0 {
		t.Errorf("no reloads: %+v", st)
	}

	// A filesystem tier straight below GPU memory works alone.
	alone := *fs.Next
	alone.OffloadThreshold = cpu.OffloadThreshold
	if _, h := run(&alone); !(h > 0) {
		t.Errorf("GPU -> filesystem hit rate %.3f", h)
	}
}

// TestTierChainDemotionAndReloadTime follows blocks down a cpu -> filesystem -> object-store
// chain and checks a reload's charge with known numbers.
func TestTierChainDemotionAndReloadTime(t *testing.T) {
	os := &KVTierConfig{Kind: TierObjectStore, CapacityBlocks: 10, BandwidthGBps: 0.25, BaseLatencyUs: 1000, BlockBytes: 1}
	fs := &KVTierConfig{Kind: TierFilesystem, CapacityBlocks: 2, BandwidthGBps: 0.5, BaseLatencyUs: 100, BlockBytes: 1, Next: os}
	cpu := &KVTierConfig{CapacityBlocks: 2, BandwidthGBps: 1, BaseLatencyUs: 10, BlockBytes: 1000, Next: fs}
	if err := cpu.Validate(); err != nil {
		t.Fatal(err)
	}
	in := &instance{cfg: &InstanceConfig{BlockSize: 16, CPUTier: cpu}, stats: &InstanceStats{}}
	in.newTier()
	// Six blocks through a 2-block CPU tier and a 2-block filesystem tier: 1 and 2 end in the
	// object store, 3 and 4 on the filesystem, 5 and 6 in CPU memory.
	in.tier.Store([]uint64{1, 2, 3, 4, 5, 6}, 0)
	stats := func() []kvcache.TierStats {
		var out []kvcache.TierStats
		for tt := in.tier; tt != nil; tt = tt.Next() {
			out = append(out, tt.Stats())
		}
		return out
	}
	st := stats()
	if st[0].Stored != 6 || st[0].Evicted != 4 || st[1].Demoted != 4 || st[1].Evicted != 2 || st[2].Demoted != 2 || st[2].Evicted != 0 {
		t.Fatalf("after the stores: %+v", st)
	}
	if err := in.tier.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	r := &reqState{input: 7 * 16, hashes: []uint64{1, 2, 3, 4, 5, 6, 7}}
	if m := in.tier.MatchChain(r.hashes); m != 6 {
		t.Fatalf("chain match %d, want 6", m)
	}
	s := &simulation{now: 5_000_000}
	s.reloaded(in, r, 0, 6)
	// 1000-byte blocks: 2 from CPU at 1 GB/s (10 + 2 µs), 2 from the filesystem at 0.5 GB/s
	// (100 + 4 µs), 2 from the object store at 0.25 GB/s (1000 + 8 µs): the first tier's block
	// size applies to every tier.
	if want := int64(12 + 104 + 1008); in.reloadUs != want {
		t.Errorf("reload time %d µs, want %d", in.reloadUs, want)
	}
	st = stats()
	if st[0].Reloaded != 2 || st[1].Reloaded != 2 || st[2].Reloaded != 2 || in.stats.KVReloadedBlocks != 6 {
		t.Errorf("reloads per tier %+v, total %d", st, in.stats.KVReloadedBlocks)
	}
	// The four blocks read from below are promoted to CPU memory after 5 and 6, which cascade
	// down to the object store: CPU memory keeps the last two promoted, the filesystem the
	// first two.
	if st[0].Promoted != 4 || in.tier.Match([]uint64{3, 4}) != 2 || in.tier.Next().Match([]uint64{1, 2}) != 2 || in.tier.Next().Next().Match([]uint64{5, 6}) != 2 {
		t.Errorf("after the reload: %+v", st)
	}
	if err := in.tier.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	// A reload from the CPU tier alone charges only its own cost.
	in.reloadUs = 0
	s.reloaded(in, r, 2, 2)
	if in.reloadUs != 12 {
		t.Errorf("CPU-only reload time %d µs, want 12", in.reloadUs)
	}
}

func TestTierChainValidation(t *testing.T) {
	base := func(kind string, next *KVTierConfig) *KVTierConfig {
		return &KVTierConfig{Kind: kind, CapacityBlocks: 1, BandwidthGBps: 1, BlockBytes: 1, Next: next}
	}
	for _, c := range []struct {
		tier *KVTierConfig
		want string
	}{
		{base(TierFilesystem, base(TierCPU, nil)), "cannot be below"},
		{base(TierCPU, base(TierCPU, nil)), "cannot be below"},
		{base(TierObjectStore, base(TierFilesystem, nil)), "cannot be below"},
		{base("tape", nil), "kind"},
		{base(TierCPU, &KVTierConfig{Kind: TierFilesystem, CapacityBlocks: 1, BlockBytes: 1}), "bandwidth"},
	} {
		if err := c.tier.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.tier, err, c.want)
		}
	}
	if err := base(TierCPU, base(TierFilesystem, base(TierObjectStore, nil))).Validate(); err != nil {
		t.Error(err)
	}
	if err := base(TierFilesystem, nil).Validate(); err != nil {
		t.Error(err)
	}
}
