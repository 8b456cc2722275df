package sim

import (
	"errors"
	"fmt"
	"math"

	"github.com/inference-sim/blis-operator/internal/engine/kvcache"
	"github.com/inference-sim/blis-operator/internal/engine/metrics"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// This file is prefill/decode disaggregation. The first PrefillInstances instances form the
// prefill pool and the others the decode pool. At its first routing a request is either
// disaggregated (the decider says so) or served locally by the decode pool. A disaggregated
// request is routed among the prefill instances, runs its prompt there and produces its first
// token; its KV blocks are then released on the prefill instance (they stay cached there) and
// moved to the decode pool over one shared link: a transfer waits for the link, occupies it for
// bytes / bandwidth, and lands base latency later. The request is then routed among the decode
// instances, where admission allocates blocks for its transferred prompt (no prefill compute)
// and decoding continues. A request holds KV blocks on at most one instance at any time: none
// while in transfer. Its E2E includes the handoff (first token to the first decode step); its
// inter-token latencies are those of the decode steps. A disaggregated request preempted on the
// decode instance loses its KV and is recomputed there like a local one.
//
// The pools' instances may differ (GPU, parallelism, engine limits, latency model) but share
// the KV block size; a transfer's bytes are the prompt tokens times the prefill pool's KV bytes
// per token. With autoscaling each pool is scaled on its own (autoscale.go) and routing only
// considers the ready instances of the request's pool. Per-pool metrics come from the decode
// instances' collectors and a prefill-pool collector holding one record per handoff.

// PDDecider chooses which requests are disaggregated.
type PDDecider string

// Deciders.
const (
	// DecideNever serves every request on the decode pool, monolithically.
	DecideNever PDDecider = "never"
	// DecideAlways disaggregates every request with more than one output token.
	DecideAlways PDDecider = "always"
	// DecidePrefixThreshold disaggregates a request when its prompt tokens not already cached
	// on the best decode instance exceed NonCachedTokens (llm-d's prefix-based-pd-decider).
	DecidePrefixThreshold PDDecider = "prefix-threshold"
)

// PDConfig turns on prefill/decode disaggregation.
type PDConfig struct {
	// PrefillInstances is the size of the prefill pool: instances 0..PrefillInstances-1; the
	// rest are the decode pool. Both pools need at least one instance.
	PrefillInstances int
	// Decider picks the disaggregated requests (empty = always).
	Decider PDDecider
	// NonCachedTokens is the prefix-threshold decider's threshold.
	NonCachedTokens int32
	// BandwidthGBps is the transfer link's bandwidth (> 0); BaseLatencyUs the fixed cost of a
	// transfer; BytesPerToken the KV size of one token (> 0).
	BandwidthGBps float64
	BaseLatencyUs int64
	BytesPerToken int64
}

// Validate checks the configuration against a cluster of n instances.
func (p *PDConfig) Validate(n int) error {
	switch {
	case p.PrefillInstances < 1 || p.PrefillInstances >= n:
		return fmt.Errorf("disaggregation needs a prefill pool and a decode pool of at least one instance each: %d prefill instances of %d", p.PrefillInstances, n)
	case math.IsNaN(p.BandwidthGBps) || math.IsInf(p.BandwidthGBps, 0) || p.BandwidthGBps <= 0:
		return fmt.Errorf("KV transfer bandwidth must be > 0 GB/s, got %v", p.BandwidthGBps)
	case p.BaseLatencyUs < 0:
		return fmt.Errorf("KV transfer base latency must be >= 0, got %d", p.BaseLatencyUs)
	case p.BytesPerToken <= 0:
		return fmt.Errorf("KV transfer bytes per token must be > 0, got %d", p.BytesPerToken)
	case p.NonCachedTokens < 0:
		return fmt.Errorf("decider nonCachedTokens must be >= 0, got %d", p.NonCachedTokens)
	}
	switch p.Decider {
	case "", DecideNever, DecideAlways, DecidePrefixThreshold:
	default:
		return fmt.Errorf("P/D decider must be %q, %q or %q, got %q", DecideNever, DecideAlways, DecidePrefixThreshold, p.Decider)
	}
	return nil
}

// PDStats summarizes disaggregation (nil in runs without it).
type PDStats struct {
	// PrefillInstances is the prefill pool's size in instance slots (the first instances).
	PrefillInstances int
	// PrefillPeakKVUtilization and DecodePeakKVUtilization are each pool's largest instance
	// peak of KV blocks in use over its capacity.
	PrefillPeakKVUtilization, DecodePeakKVUtilization float64
	// Prefill holds the prefill pool's side of disaggregated requests: one completed record
	// per handoff (its prompt, its first token and TTFT), for the pool's metrics.
	Prefill *metrics.Collector
	// Disaggregated counts requests sent to the prefill pool, Local those served by the decode
	// pool alone.
	Disaggregated, Local int64
	// Transfers counts KV handoffs, TransferredBytes their volume; TransferUs sums the transfer
	// times (link wait + bytes / bandwidth + base latency) and LinkWaitUs the waits for the link.
	Transfers, TransferredBytes int64
	TransferUs, LinkWaitUs      int64
}

// Request phases of disaggregation (reqState.pd).
const (
	pdUndecided uint8 = iota // not yet routed
	pdLocal                  // served by one decode-pool instance
	pdPrefill                // on (or routed to) the prefill pool
	pdDecode                 // prefilled, in transfer or on the decode pool
)

// disagg is a run's disaggregation state.
type disagg struct {
	cfg             *PDConfig
	decider         PDDecider
	prefill, decode []int32
	linkFree        int64
	hashes          []uint64
	stats           PDStats
}

// newDisagg sets up disaggregation after the autoscaler (if any), whose pools must be the
// prefill and decode pools (Run validates this; the check guards direct setups).
func (s *simulation) newDisagg() error {
	c := s.cfg.PD
	if s.as != nil && (len(s.as.pools) != 2 || int(s.as.pools[1].lo) != c.PrefillInstances) {
		return errors.New("an autoscaled disaggregated cluster needs per-pool autoscaling bounds matching the prefill pool")
	}
	d := &disagg{cfg: c, decider: c.Decider}
	d.stats.PrefillInstances = c.PrefillInstances
	d.stats.Prefill = metrics.NewCollector("prefill-pool", false)
	if d.decider == "" {
		d.decider = DecideAlways
	}
	for i := range s.insts {
		if i < c.PrefillInstances {
			d.prefill = append(d.prefill, int32(i))
		} else {
			d.decode = append(d.decode, int32(i))
		}
	}
	s.pd = d
	return nil
}

// routable returns the pool the request in slot is routed among, deciding at its first routing.
func (d *disagg) routable(s *simulation, slot int32) []int32 {
	r := &s.slab.reqs[slot]
	if r.pd == pdUndecided {
		if d.disaggregate(s, r) {
			r.pd = pdPrefill
			d.stats.Disaggregated++
		} else {
			r.pd = pdLocal
			d.stats.Local++
		}
	}
	if r.pd == pdPrefill {
		return d.pool(s, 0)
	}
	return d.pool(s, 1)
}

// pool returns the routable instances of the prefill (k = 0) or decode (k = 1) pool: all of
// them, or with autoscaling the pool's ready ones (never empty: the autoscaler keeps a ready
// replica in each pool).
func (d *disagg) pool(s *simulation, k int) []int32 {
	if s.as != nil {
		return s.as.pools[k].ready
	}
	if k == 0 {
		return d.prefill
	}
	return d.decode
}

// disaggregate is the decider.
func (d *disagg) disaggregate(s *simulation, r *reqState) bool {
	if r.output <= 1 {
		return false // the prefill produces the only token: nothing to hand off
	}
	switch d.decider {
	case DecideNever:
		return false
	case DecideAlways:
		return true
	}
	// prefix-threshold: the prompt tokens the best decode instance would have to compute.
	var best int32
	for _, i := range d.pool(s, 1) {
		in := &s.insts[i]
		if in.cfg.DisablePrefixCaching {
			continue
		}
		d.hashes = kvcache.PromptBlockHashes(d.hashes, r.segs, r.input, in.cfg.BlockSize, uniqueKey(r.id))
		best = max(best, in.kv.CachedPrefix(d.hashes)*in.cfg.BlockSize)
	}
	return r.input-best > d.cfg.NonCachedTokens
}

// handoff moves a request whose prefill completed on in at done to the decode pool.
func (s *simulation) handoff(in *instance, slot int32, done int64) {
	d := s.pd
	r := &s.slab.reqs[slot]
	in.stats.HandedOff++
	rec := s.record(slot, OutcomeCompleted, done)
	s.collect(d.stats.Prefill, &rec)
	if s.ctl != nil {
		s.ctl.p.Withdraw(&s.ctl.st[slot].ticket)
	}
	s.dead.cancel(slot)
	r.inst = -1
	r.state = stArriving
	r.pd = pdDecode
	r.skipped = r.skipped[:0]
	bytes := int64(r.input) * d.cfg.BytesPerToken
	xfer := int64(math.Ceil(float64(bytes) / (d.cfg.BandwidthGBps * 1e3)))
	start := max(done, d.linkFree)
	d.linkFree = start + xfer
	arrive := start + xfer + d.cfg.BaseLatencyUs
	d.stats.Transfers++
	d.stats.TransferredBytes += bytes
	d.stats.TransferUs += arrive - done
	d.stats.LinkWaitUs += start - done
	s.heap.push(arrive, evRouting, -1, slot)
	if s.as != nil && in.life == lifeDraining {
		// The request left like a completed one: a draining instance may now be idle.
		s.maybeShutdown(in)
	}
}

// admitTransferred admits a request whose prompt KV arrived by transfer: blocks for the prompt
// and the token decoded in this step, no prefill compute, and one decode token in the step
// being formed. It reports false when the blocks are not free (head-of-line).
func (s *simulation) admitTransferred(in *instance, slot int32, r *reqState, t *kvcache.Table, now int64) bool {
	var hashes []uint64
	if !in.cfg.DisablePrefixCaching {
		hashes = r.hashes
	}
	if !in.kv.Grow(t, r.input+1, hashes) {
		return false
	}
	in.waitQ.popFront(true)
	if in.track {
		in.sig.admitted(r.input, 0)
		if in.victim != nil {
			in.runSeq++
			s.ctl.st[slot].key.RunSeq = in.runSeq
		}
		if s.ctl.obs != nil {
			s.ctl.obs.scheduled(in.idx, slot, 0)
		}
	}
	in.running = append(in.running, runEntry{
		slot: slot, progress: r.input, input: r.input, output: r.output,
		numNew: 1, stamp: int32(in.stepCount),
	})
	in.cold = append(in.cold, runCold{kv: *t, decodeFrom: in.stepCount})
	*t = kvcache.Table{}
	in.setRoom(&in.running[len(in.running)-1], &in.cold[len(in.cold)-1].kv)
	r.state = stRunning
	r.scheduledAt = now
	r.schedDelay = now - r.arrival
	r.pdGap = now - r.firstTokenAt
	in.shape.DecodeRequests++
	in.shape.DecodeContext += int64(r.input)
	return true
}

// finishDisagg records the disaggregation summary.
func (s *simulation) finishDisagg() {
	st := s.pd.stats
	for i := range s.insts {
		in := &s.insts[i]
		u := float64(in.stats.PeakKVBlocks) / float64(in.cfg.TotalKVBlocks)
		if i < st.PrefillInstances {
			st.PrefillPeakKVUtilization = max(st.PrefillPeakKVUtilization, u)
			st.Prefill.Events.Preemptions += in.stats.Preemptions
			st.Prefill.Events.KVAllocationFailures += in.stats.KVAllocationFailures
		} else {
			st.DecodePeakKVUtilization = max(st.DecodePeakKVUtilization, u)
		}
	}
	s.res.PD = &st
}

// PoolReport is the metrics of one pool of a disaggregated run.
type PoolReport struct {
	// Pool is "prefill" or "decode"; Instances its size in instance slots.
	Pool      string
	Instances int
	// Metrics is the pool's BLIS block: for the prefill pool, its handoffs (TTFT, prompt
	// tokens, prefill throughput); for the decode pool, the requests served there (ITL, E2E,
	// output throughput), local ones included.
	Metrics metrics.Output
	// PeakKVUtilization is the pool's largest instance peak KV utilization.
	PeakKVUtilization float64
}

// PoolReports returns the prefill and the decode pool's reports (nil without disaggregation).
// names are the workload's name tables; opts' gateway is not part of either pool.
func (r *Result) PoolReports(names *workload.Tables, opts metrics.Options) []PoolReport {
	pd := r.PD
	if pd == nil {
		return nil
	}
	opts.Gateway = nil
	pool := func(name string, cols []*metrics.Collector, n int, peak float64) PoolReport {
		opts.ClusterID = name + "-pool"
		out := metrics.Finalize(cols, r.End, names, opts).Cluster
		out.Requests = nil
		return PoolReport{Pool: name, Instances: n, Metrics: out, PeakKVUtilization: peak}
	}
	return []PoolReport{
		pool("prefill", []*metrics.Collector{pd.Prefill}, pd.PrefillInstances, pd.PrefillPeakKVUtilization),
		pool("decode", r.Collectors[pd.PrefillInstances:], len(r.Collectors)-pd.PrefillInstances, pd.DecodePeakKVUtilization),
	}
}
