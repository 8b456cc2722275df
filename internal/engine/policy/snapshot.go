package policy

import (
	"fmt"
	"math"
)

// UpdateMode says when a snapshot field is refreshed from the live instance.
type UpdateMode string

// Update modes (seed 001 §D.5.2).
const (
	// Immediate re-reads the field at every access (connection tracking).
	Immediate UpdateMode = "immediate"
	// Periodic re-reads it on a fixed grid of IntervalUs (a metrics scrape).
	Periodic UpdateMode = "periodic"
	// OnDemand re-reads it only after RequestRefresh (a probe).
	OnDemand UpdateMode = "on-demand"
)

// FieldConfig is the refresh rule of one field.
type FieldConfig struct {
	Mode       UpdateMode `yaml:"mode" json:"mode"`
	IntervalUs int64      `yaml:"interval_us,omitempty" json:"interval_us,omitempty"`
}

// ObservabilityConfig sets how stale each configurable snapshot field is. InFlightRequests,
// FreeKVBlocks and EstimatedWait are always immediate; Extended is on-demand.
type ObservabilityConfig struct {
	QueueDepth    FieldConfig `yaml:"queue_depth,omitempty" json:"queue_depth,omitempty"`
	BatchSize     FieldConfig `yaml:"batch_size,omitempty" json:"batch_size,omitempty"`
	KVUtilization FieldConfig `yaml:"kv_utilization,omitempty" json:"kv_utilization,omitempty"`
	CacheHitRate  FieldConfig `yaml:"cache_hit_rate,omitempty" json:"cache_hit_rate,omitempty"`
	RecentTTFT    FieldConfig `yaml:"recent_ttft,omitempty" json:"recent_ttft,omitempty"`
	RecentTPOT    FieldConfig `yaml:"recent_tpot,omitempty" json:"recent_tpot,omitempty"`
	// SnapshotRefreshUs is the router's periodic snapshot refresh (BLIS's
	// --snapshot-refresh-interval): when > 0, each load field (queue depth, batch size, KV
	// utilization) that sets no mode of its own is periodic with this interval. A field's own
	// mode always wins, so a bundle can keep one signal immediate. 0 leaves the load fields
	// immediate.
	SnapshotRefreshUs int64 `yaml:"snapshot_refresh_interval_us,omitempty" json:"snapshot_refresh_interval_us,omitempty"`
	// CacheSignalDelayUs is how late the router's view of the instances' prefix caches is (the
	// KV-events path of llm-d's precise prefix producer): a block stored on an instance is
	// credited to it by the precise producer only this long after the store. 0 = no lag.
	CacheSignalDelayUs int64 `yaml:"cache_signal_delay_us,omitempty" json:"cache_signal_delay_us,omitempty"`
}

// DefaultObservability is the seed's default: load fields immediate, cache hit rate every
// 10 ms, recent TTFT and TPOT every 100 ms.
func DefaultObservability() ObservabilityConfig {
	return ObservabilityConfig{
		QueueDepth:    FieldConfig{Mode: Immediate},
		BatchSize:     FieldConfig{Mode: Immediate},
		KVUtilization: FieldConfig{Mode: Immediate},
		CacheHitRate:  FieldConfig{Mode: Periodic, IntervalUs: 10_000},
		RecentTTFT:    FieldConfig{Mode: Periodic, IntervalUs: 100_000},
		RecentTPOT:    FieldConfig{Mode: Periodic, IntervalUs: 100_000},
	}
}

// fields lists the configurable fields in a fixed order.
func (c *ObservabilityConfig) fields() [numFields]*FieldConfig {
	return [numFields]*FieldConfig{&c.QueueDepth, &c.BatchSize, &c.KVUtilization, &c.CacheHitRate, &c.RecentTTFT, &c.RecentTPOT}
}

var fieldNames = [numFields]string{"queue_depth", "batch_size", "kv_utilization", "cache_hit_rate", "recent_ttft", "recent_tpot"}

const numFields = 6

// withDefaults fills fields left empty with the defaults, after the snapshot refresh interval
// has filled the load fields that set no mode.
func (c ObservabilityConfig) withDefaults() ObservabilityConfig {
	if c.SnapshotRefreshUs > 0 {
		for _, f := range [...]*FieldConfig{&c.QueueDepth, &c.BatchSize, &c.KVUtilization} {
			if f.Mode == "" {
				*f = FieldConfig{Mode: Periodic, IntervalUs: c.SnapshotRefreshUs}
			}
		}
	}
	d := DefaultObservability()
	df := d.fields()
	for i, f := range c.fields() {
		if f.Mode == "" {
			*f = *df[i]
		}
	}
	return c
}

// Validate checks every field's mode and interval, and the refresh interval and cache-signal
// delay.
func (c ObservabilityConfig) Validate() error {
	if c.SnapshotRefreshUs < 0 {
		return fmt.Errorf("observability.snapshot_refresh_interval_us must be >= 0, got %d", c.SnapshotRefreshUs)
	}
	if c.CacheSignalDelayUs < 0 {
		return fmt.Errorf("observability.cache_signal_delay_us must be >= 0, got %d", c.CacheSignalDelayUs)
	}
	c = c.withDefaults()
	for i, f := range c.fields() {
		switch f.Mode {
		case Immediate, OnDemand:
			if f.IntervalUs != 0 {
				return fmt.Errorf("observability.%s: interval_us applies only to periodic fields", fieldNames[i])
			}
		case Periodic:
			if f.IntervalUs <= 0 {
				return fmt.Errorf("observability.%s: periodic needs interval_us > 0, got %d", fieldNames[i], f.IntervalUs)
			}
		default:
			return fmt.Errorf("observability.%s: mode must be immediate, periodic or on-demand, got %q", fieldNames[i], f.Mode)
		}
	}
	return nil
}

// Defaulted returns c with the snapshot refresh interval applied and every field left empty
// set to its default: the rules the router follows.
func (c ObservabilityConfig) Defaulted() ObservabilityConfig { return c.withDefaults() }

// SnapshotSource is implemented by the simulator: Observe writes the live state of instance i
// at time now into dst (every field, including Index).
type SnapshotSource interface {
	Observe(i int, now int64, dst *InstanceSnapshot)
}

// SnapshotProvider keeps the router's (possibly stale) copy of every instance's snapshot and
// refreshes each field according to an ObservabilityConfig. Periodic fields refresh on the grid
// k·interval: the first access at or after a grid point re-reads the field, which equals a
// scrape at that point when the simulator calls RefreshAll from an event on the grid.
type SnapshotProvider struct {
	cfg     [numFields]FieldConfig
	src     SnapshotSource
	snaps   []InstanceSnapshot
	last    [][numFields]int64
	pending []bool
	live    InstanceSnapshot
}

// NewSnapshotProvider returns a provider over n instances.
func NewSnapshotProvider(n int, cfg ObservabilityConfig, src SnapshotSource) (*SnapshotProvider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	p := &SnapshotProvider{src: src}
	for i, f := range cfg.fields() {
		p.cfg[i] = *f
	}
	p.Resize(n)
	return p, nil
}

// Resize changes the number of instances (autoscaling); new instances are read in full at
// their first access.
func (p *SnapshotProvider) Resize(n int) {
	for len(p.snaps) < n {
		i := len(p.snaps)
		p.snaps = append(p.snaps, InstanceSnapshot{Index: int32(i)})
		var l [numFields]int64
		for f := range l {
			l[f] = math.MinInt64
		}
		p.last = append(p.last, l)
		p.pending = append(p.pending, true)
	}
	p.snaps, p.last, p.pending = p.snaps[:n], p.last[:n], p.pending[:n]
}

// RequestRefresh makes the next access re-read instance i's on-demand fields.
func (p *SnapshotProvider) RequestRefresh(i int) { p.pending[i] = true }

// Snapshots refreshes what is due at now and returns the snapshots, indexed by instance. The
// slice is owned by the provider and valid until the next call.
func (p *SnapshotProvider) Snapshots(now int64) []InstanceSnapshot {
	p.RefreshAll(now)
	return p.snaps
}

// RefreshAll brings every instance's snapshot up to date with respect to now.
func (p *SnapshotProvider) RefreshAll(now int64) {
	for i := range p.snaps {
		p.refresh(i, now)
	}
}

func (p *SnapshotProvider) due(i, f int, now int64) bool {
	c := &p.cfg[f]
	last := p.last[i][f]
	switch c.Mode {
	case Immediate:
		return true
	case Periodic:
		if last == math.MinInt64 || now >= last+c.IntervalUs {
			p.last[i][f] = now - now%c.IntervalUs
			return true
		}
		return false
	}
	if p.pending[i] {
		p.last[i][f] = now
		return true
	}
	return false
}

func (p *SnapshotProvider) refresh(i int, now int64) {
	l := &p.live
	p.src.Observe(i, now, l)
	s := &p.snaps[i]
	s.Index = int32(i)
	s.Timestamp = now
	s.InFlightRequests = l.InFlightRequests
	s.FreeKVBlocks = l.FreeKVBlocks
	s.EstimatedWait = l.EstimatedWait
	if p.due(i, 0, now) {
		s.QueueDepth = l.QueueDepth
	}
	if p.due(i, 1, now) {
		s.BatchSize = l.BatchSize
	}
	if p.due(i, 2, now) {
		s.KVUtilization = l.KVUtilization
	}
	if p.due(i, 3, now) {
		s.CacheHitRate = l.CacheHitRate
	}
	if p.due(i, 4, now) {
		s.RecentTTFT = l.RecentTTFT
	}
	if p.due(i, 5, now) {
		s.RecentTPOT = l.RecentTPOT
	}
	if p.pending[i] {
		s.Extended = l.Extended
		p.pending[i] = false
	}
}
