package policy

import "testing"

// liveSource reports a value that changes every call, so staleness is visible.
type liveSource struct{ v int32 }

func (s *liveSource) Observe(i int, now int64, dst *InstanceSnapshot) {
	s.v++
	*dst = InstanceSnapshot{Index: int32(i), QueueDepth: s.v, BatchSize: s.v, KVUtilization: float64(s.v),
		InFlightRequests: s.v, CacheHitRate: float64(s.v), RecentTTFT: float64(s.v), RecentTPOT: float64(s.v),
		Extended: map[string]float64{"probe": float64(s.v)}}
}

func TestSnapshotProviderStaleness(t *testing.T) {
	cfg := ObservabilityConfig{
		KVUtilization: FieldConfig{Mode: Periodic, IntervalUs: 100},
		BatchSize:     FieldConfig{Mode: OnDemand},
	}
	src := &liveSource{}
	p, err := NewSnapshotProvider(1, cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Snapshots(50)[0] // first access reads everything (live value 1)
	if s.QueueDepth != 1 || s.KVUtilization != 1 || s.BatchSize != 1 || s.Extended["probe"] != 1 {
		t.Fatalf("first read %+v", s)
	}
	s = p.Snapshots(99)[0] // live 2: immediate fields follow, periodic and on-demand do not
	if s.QueueDepth != 2 || s.InFlightRequests != 2 || s.KVUtilization != 1 || s.BatchSize != 1 || s.CacheHitRate != 1 {
		t.Fatalf("at 99 %+v", s)
	}
	s = p.Snapshots(100)[0] // live 3: the grid point 100 refreshes the KV field
	if s.KVUtilization != 3 || s.BatchSize != 1 || s.Timestamp != 100 {
		t.Fatalf("at 100 %+v", s)
	}
	s = p.Snapshots(150)[0]
	if s.KVUtilization != 3 {
		t.Fatalf("at 150 the scrape of 100 is still current, got %v", s.KVUtilization)
	}
	p.RequestRefresh(0)
	s = p.Snapshots(160)[0] // live 5
	if s.BatchSize != 5 || s.Extended["probe"] != 5 {
		t.Fatalf("on-demand refresh %+v", s)
	}
	if s = p.Snapshots(170)[0]; s.BatchSize != 5 {
		t.Fatal("on-demand field refreshed without a request")
	}
	// Default cache-hit rate refreshes every 10 ms.
	if s = p.Snapshots(10_000)[0]; s.CacheHitRate != 7 {
		t.Fatalf("periodic default: %v", s.CacheHitRate)
	}
	p.Resize(2)
	if all := p.Snapshots(10_001); len(all) != 2 || all[1].Index != 1 || all[1].KVUtilization == 0 {
		t.Fatalf("resize: %+v", all)
	}
}

func TestObservabilityValidation(t *testing.T) {
	bad := []ObservabilityConfig{
		{QueueDepth: FieldConfig{Mode: "sometimes"}},
		{RecentTTFT: FieldConfig{Mode: Periodic}},
		{BatchSize: FieldConfig{Mode: Immediate, IntervalUs: 5}},
	}
	for _, c := range bad {
		if c.Validate() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if err := (ObservabilityConfig{}).Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestRateWindowSlides(t *testing.T) {
	st := NewRouterState(1, []string{""}, 1_000_000)
	for i := int64(0); i < 10; i++ {
		st.arrive(0, i*100_000) // 10 arrivals over 0.9 s
	}
	if r := st.Global.RequestRate(950_000); r != 10 {
		t.Fatalf("rate %v, want 10", r)
	}
	if r := st.Global.RequestRate(1_450_000); r != 5 {
		t.Fatalf("after half a window the first five left: rate %v", r)
	}
	if r := st.Tenant(0).RecentRate(10_000_000); r != 0 {
		t.Fatalf("idle gap: %v", r)
	}
	if ids := st.TenantIDs(); len(ids) != 1 {
		t.Fatalf("tenants %v", ids)
	}
}

func TestSnapshotRefreshIntervalFillsUnsetLoadFields(t *testing.T) {
	cfg := ObservabilityConfig{SnapshotRefreshUs: 50_000, BatchSize: FieldConfig{Mode: Immediate}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	d := cfg.Defaulted()
	want := FieldConfig{Mode: Periodic, IntervalUs: 50_000}
	if d.QueueDepth != want || d.KVUtilization != want {
		t.Errorf("load fields %+v, %+v; want %+v", d.QueueDepth, d.KVUtilization, want)
	}
	if d.BatchSize.Mode != Immediate {
		t.Errorf("the bundle's own batch-size mode was replaced: %+v", d.BatchSize)
	}
	if d.CacheHitRate != DefaultObservability().CacheHitRate {
		t.Errorf("cache hit rate %+v is not the default", d.CacheHitRate)
	}
	if (ObservabilityConfig{}).Defaulted() != DefaultObservability() {
		t.Error("an empty configuration is not the default")
	}
	src := &liveSource{}
	p, err := NewSnapshotProvider(1, cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	p.Snapshots(0)
	if s := p.Snapshots(49_999)[0]; s.QueueDepth != 1 || s.BatchSize != 2 {
		t.Errorf("before the next refresh: %+v", s)
	}
	if s := p.Snapshots(50_000)[0]; s.QueueDepth != 3 {
		t.Errorf("at the refresh: %+v", s)
	}
	for _, bad := range []ObservabilityConfig{{SnapshotRefreshUs: -1}, {CacheSignalDelayUs: -1}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}
