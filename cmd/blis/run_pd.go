package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/spf13/pflag"

	"github.com/inference-sim/blis-operator/internal/engine/metrics"
	"github.com/inference-sim/blis-operator/internal/engine/model"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/sim"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// pdFlags are the prefill/decode disaggregation flags of `blis run`: --prefill-instances of the
// --num-instances form the prefill pool, the rest the decode pool. Each pool may have its own
// hardware, parallelism, engine limits and latency model (--prefill-*, --decode-*; absent: the
// cluster's flags), and its own autoscaling bounds.
type pdFlags struct {
	prefill         int
	decider         string
	nonCachedTokens int
	bandwidthGBps   float64
	baseLatencyUs   int64
	pools           [2]poolFlags
}

// poolFlags are one pool's overrides of the cluster's instance flags and its autoscaling
// bounds.
type poolFlags struct {
	role                     string
	hardware, latencyModel   string
	tp                       int
	alphaCoeffs, betaCoeffs  []float64
	maxNumSeqs, maxBatched   int64
	totalKVBlocks            int64
	gpuMemoryUtilization     float64
	minReplicas, maxReplicas int
}

// Suffixes of the per-pool engine flags (also the cluster's flag names).
const (
	flagMaxNumSeqs    = "max-num-seqs"
	flagMaxBatched    = "max-num-batched-tokens"
	flagTotalKVBlocks = "total-kv-blocks"
)

// poolRoles are the pools in instance order.
var poolRoles = [2]string{"prefill", "decode"}

func addPDFlags(fl *pflag.FlagSet, f *pdFlags) {
	fl.IntVar(&f.prefill, "prefill-instances", 0, "disaggregate: the first this many instances form the prefill pool, the rest the decode pool (0 = monolithic)")
	fl.StringVar(&f.decider, "pd-decider", string(sim.DecideAlways), "which requests are disaggregated: never, always or prefix-threshold")
	fl.IntVar(&f.nonCachedTokens, "pd-non-cached-tokens", 0, "prefix-threshold: disaggregate when more prompt tokens than this are not cached on the best decode instance")
	fl.Float64Var(&f.bandwidthGBps, "pd-transfer-bandwidth-gbps", 25, "KV transfer link bandwidth in GB/s, shared by all transfers")
	fl.Int64Var(&f.baseLatencyUs, "pd-transfer-base-latency-us", 0, "fixed cost of one KV transfer in microseconds")
	for k, role := range poolRoles {
		p := &f.pools[k]
		p.role = role
		fl.StringVar(&p.hardware, role+"-hardware", "", "GPU type of the "+role+" pool (default: --hardware)")
		fl.IntVar(&p.tp, role+"-tp", 0, "tensor parallelism of the "+role+" pool (default: --tp)")
		fl.StringVar(&p.latencyModel, role+"-latency-model", "", "latency model of the "+role+" pool: "+strings.Join(model.LatencyKinds(), ", ")+" (default: --latency-model)")
		fl.Float64SliceVar(&p.alphaCoeffs, role+"-alpha-coeffs", nil, "alpha coefficients of the "+role+" pool's latency model (default: --alpha-coeffs with the same latency model, else the model's)")
		fl.Float64SliceVar(&p.betaCoeffs, role+"-beta-coeffs", nil, "beta coefficients of the "+role+" pool's latency model (default: --beta-coeffs with the same latency model, else the model's)")
		fl.Int64Var(&p.maxNumSeqs, role+"-"+flagMaxNumSeqs, 0, "max-num-seqs of the "+role+" pool (default: --max-num-seqs)")
		fl.Int64Var(&p.maxBatched, role+"-"+flagMaxBatched, 0, "max-num-batched-tokens of the "+role+" pool (default: --max-num-batched-tokens)")
		fl.Int64Var(&p.totalKVBlocks, role+"-"+flagTotalKVBlocks, 0, "KV-cache blocks per "+role+" instance (default: --total-kv-blocks)")
		fl.Float64Var(&p.gpuMemoryUtilization, role+"-gpu-memory-utilization", 0, "gpu-memory-utilization of the "+role+" pool (default: --gpu-memory-utilization)")
		fl.IntVar(&p.minReplicas, role+"-min-replicas", 1, "fewest "+role+" replicas the autoscaler keeps (with "+role+" or decode max replicas)")
		fl.IntVar(&p.maxReplicas, role+"-max-replicas", 0, "autoscale the "+role+" pool up to this many replicas (0 = its --prefill-instances share, fixed)")
	}
}

// flagName is the pool's flag of the given suffix.
func (p *poolFlags) flagName(suffix string) string { return p.role + "-" + suffix }

// overrides reports whether any of the pool's instance flags is set.
func (p *poolFlags) overrides(fl *pflag.FlagSet) bool {
	for _, s := range []string{"hardware", "tp", "latency-model", "alpha-coeffs", "beta-coeffs", flagMaxNumSeqs, flagMaxBatched, flagTotalKVBlocks, "gpu-memory-utilization"} {
		if fl.Changed(p.flagName(s)) {
			return true
		}
	}
	return false
}

// scales reports whether any of the pool's autoscaling flags is set.
func (p *poolFlags) scales(fl *pflag.FlagSet) bool {
	return fl.Changed(p.flagName("min-replicas")) || fl.Changed(p.flagName("max-replicas"))
}

// spec applies the pool's overrides to the cluster's instance specification. Coefficients
// given for the cluster carry over only while the pool keeps the cluster's latency model.
func (p *poolFlags) spec(fl *pflag.FlagSet, base model.InstanceSpec) (model.InstanceSpec, error) {
	s := base
	if fl.Changed(p.flagName("hardware")) {
		s.GPU = p.hardware
	}
	if fl.Changed(p.flagName("tp")) {
		if p.tp <= 0 {
			return s, fmt.Errorf("--%s must be > 0, got %d", p.flagName("tp"), p.tp)
		}
		s.Engine.TensorParallelSize = p.tp
	}
	if fl.Changed(p.flagName("latency-model")) && p.latencyModel != base.LatencyModel {
		s.LatencyModel, s.AlphaCoeffs, s.BetaCoeffs = p.latencyModel, nil, nil
	}
	if fl.Changed(p.flagName("alpha-coeffs")) {
		s.AlphaCoeffs = p.alphaCoeffs
	}
	if fl.Changed(p.flagName("beta-coeffs")) {
		s.BetaCoeffs = p.betaCoeffs
	}
	for _, o := range []struct {
		name string
		v    int64
		dst  *int64
	}{{flagMaxNumSeqs, p.maxNumSeqs, &s.Engine.MaxNumSeqs}, {flagMaxBatched, p.maxBatched, &s.Engine.MaxNumBatchedTokens}, {flagTotalKVBlocks, p.totalKVBlocks, &s.Engine.TotalKVBlocks}} {
		if !fl.Changed(p.flagName(o.name)) {
			continue
		}
		if o.v <= 0 || o.v > math.MaxInt32 {
			return s, fmt.Errorf("--%s must be in [1, %d], got %d", p.flagName(o.name), math.MaxInt32, o.v)
		}
		*o.dst = o.v
	}
	if fl.Changed(p.flagName("gpu-memory-utilization")) {
		if u := p.gpuMemoryUtilization; math.IsNaN(u) || u <= 0 || u > 1 {
			return s, fmt.Errorf("--%s must be in (0, 1], got %g", p.flagName("gpu-memory-utilization"), u)
		}
		s.Engine.GPUMemoryUtilization, s.Engine.TotalKVBlocks = p.gpuMemoryUtilization, 0
	}
	return s, nil
}

// clusterDynamics sets the run's autoscaler, disaggregation and instances: every instance is
// inst, except that the pools of a disaggregated run get their own hardware, engine settings and
// latency model. An autoscaled run has one instance per replica slot; with disaggregation each
// pool is autoscaled on its own (--prefill-max-replicas, --decode-max-replicas), the prefill
// pool's slots first.
func clusterDynamics(fl *pflag.FlagSet, f *runFlags, cfg *sim.Config, inst sim.InstanceConfig, r *model.Resolved, bundle *policy.Bundle) error {
	d := &f.pd
	if d.prefill == 0 {
		for k := range d.pools {
			if p := &d.pools[k]; p.overrides(fl) || p.scales(fl) {
				return fmt.Errorf("--%s-* flags need --prefill-instances (prefill and decode pools)", p.role)
			}
		}
		var err error
		if cfg.Autoscale, err = autoscaleConfig(fl, &f.scale, f.numInstances, bundle, nil); err != nil {
			return err
		}
		if err = nodesConfig(fl, &f.scale.nodes, cfg.Autoscale, bundle, []*model.Resolved{r}); err != nil {
			return err
		}
		if cfg.Autoscale == nil {
			// Fixed replicas: they cold-start with the lifecycle's loading delay.
			if cfg.Autoscale, err = fixedColdStart(fl, &f.scale, f.numInstances, bundle); err != nil {
				return err
			}
		}
		if cfg.PD, err = pdConfig(fl, d, f.numInstances, r); err != nil {
			return err
		}
		n := f.numInstances
		if cfg.Autoscale != nil {
			n = int(cfg.Autoscale.MaxReplicas) // replica slots; --num-instances start ready
		}
		for range n {
			cfg.Instances = append(cfg.Instances, inst)
		}
		return nil
	}
	if f.scale.maxReplicas != 0 {
		return errors.New("--max-replicas bounds a monolithic cluster; with --prefill-instances autoscale each pool with --prefill-max-replicas and --decode-max-replicas")
	}
	initial := [2]int{d.prefill, f.numInstances - d.prefill}
	var bounds []sim.PoolBounds
	if d.pools[0].scales(fl) || d.pools[1].scales(fl) {
		for k := range d.pools {
			p := &d.pools[k]
			b := sim.PoolBounds{MinReplicas: int32(initial[k]), MaxReplicas: int32(initial[k]), InitialReplicas: int32(initial[k])}
			if fl.Changed(p.flagName("max-replicas")) {
				if p.maxReplicas > maxInstances {
					return fmt.Errorf("--%s must be <= %d, got %d", p.flagName("max-replicas"), maxInstances, p.maxReplicas)
				}
				b.MaxReplicas, b.MinReplicas = int32(p.maxReplicas), 1
			}
			if fl.Changed(p.flagName("min-replicas")) {
				b.MinReplicas = int32(p.minReplicas)
			}
			if b.MinReplicas < 1 || b.MinReplicas > b.InitialReplicas || b.InitialReplicas > b.MaxReplicas {
				return fmt.Errorf("the %s pool needs 1 <= --%s (%d) <= its initial replicas (%d) <= --%s (%d)",
					p.role, p.flagName("min-replicas"), b.MinReplicas, b.InitialReplicas, p.flagName("max-replicas"), b.MaxReplicas)
			}
			bounds = append(bounds, b)
		}
	}
	var err error
	if cfg.Autoscale, err = autoscaleConfig(fl, &f.scale, f.numInstances, bundle, bounds); err != nil {
		return err
	}
	slots := initial
	if bounds != nil {
		slots = [2]int{int(bounds[0].MaxReplicas), int(bounds[1].MaxReplicas)}
	}
	if _, _, cold, err := lifecycle(fl, &f.scale.nodes, bundle); err == nil && cold && bounds == nil && fl.Changed("loading-delay-us") {
		return errors.New("--loading-delay-us without --warm-start cold-starts the initial replicas, which is not simulated with --prefill-instances; add --warm-start")
	}
	var pre *model.Resolved
	models := make([]*model.Resolved, 2)
	for k := range d.pools {
		p := &d.pools[k]
		pi, pr := inst, r
		if p.overrides(fl) {
			if pi, pr, err = poolInstance(fl, f, p, inst.CPUTier); err != nil {
				return err
			}
		}
		if k == 0 {
			pre = pr
		}
		models[k] = pr
		for range slots[k] {
			cfg.Instances = append(cfg.Instances, pi)
		}
	}
	// The transfer moves the prefill pool's KV: its bytes per token (the whole model's, over
	// all tensor-parallel shards).
	if err = nodesConfig(fl, &f.scale.nodes, cfg.Autoscale, bundle, models); err != nil {
		return err
	}
	cfg.PD, err = pdConfig(fl, d, slots[0]+slots[1], pre)
	if err == nil {
		cfg.PD.PrefillInstances = slots[0]
		err = cfg.PD.Validate(len(cfg.Instances))
	}
	return err
}

// poolInstance resolves a pool's instance from the cluster's flags and the pool's overrides,
// with the cluster's CPU KV tier (its block size in bytes recomputed for the pool).
func poolInstance(fl *pflag.FlagSet, f *runFlags, p *poolFlags, tier *sim.KVTierConfig) (sim.InstanceConfig, *model.Resolved, error) {
	spec, err := p.spec(fl, instanceSpec(fl, f))
	if err != nil {
		return sim.InstanceConfig{}, nil, err
	}
	cat, err := model.DefaultCatalog()
	if err != nil {
		return sim.InstanceConfig{}, nil, err
	}
	r, err := cat.Resolve(spec)
	if err != nil {
		return sim.InstanceConfig{}, nil, fmt.Errorf("%s pool: %w", p.role, err)
	}
	inst, err := sim.InstanceFromResolved(r)
	if err != nil {
		return inst, nil, fmt.Errorf("%s pool: %w", p.role, err)
	}
	if tier != nil {
		t := *tier
		t.BlockBytes = r.Model.KVCacheBytesPerToken() * r.Engine.BlockSize
		inst.CPUTier = &t
	}
	return inst, r, nil
}

// pdConfig returns the run's disaggregation (nil without --prefill-instances).
func pdConfig(fl *pflag.FlagSet, f *pdFlags, instances int, r *model.Resolved) (*sim.PDConfig, error) {
	if f.prefill == 0 {
		for _, n := range []string{"pd-decider", "pd-non-cached-tokens", "pd-transfer-bandwidth-gbps", "pd-transfer-base-latency-us"} {
			if fl.Changed(n) {
				return nil, fmt.Errorf("--%s needs --prefill-instances (prefill and decode pools)", n)
			}
		}
		return nil, nil
	}
	if f.nonCachedTokens < 0 || f.nonCachedTokens > 1<<31-1 {
		return nil, fmt.Errorf("--pd-non-cached-tokens must be in [0, %d], got %d", 1<<31-1, f.nonCachedTokens)
	}
	c := &sim.PDConfig{
		PrefillInstances: f.prefill, Decider: sim.PDDecider(f.decider), NonCachedTokens: int32(f.nonCachedTokens),
		BandwidthGBps: f.bandwidthGBps, BaseLatencyUs: f.baseLatencyUs, BytesPerToken: r.Model.KVCacheBytesPerToken(),
	}
	return c, c.Validate(instances)
}

// writePools prints one "=== Pool Metrics ===" block per pool of a disaggregated run after
// the BLIS metrics blocks: the pool's BLIS block (prefill: its handoffs and TTFT; decode: the
// requests served there, ITL and E2E), its peak KV utilization and the KV transfers.
func writePools(w io.Writer, res *sim.Result, names *workload.Tables, opts metrics.Options) error {
	for _, p := range res.PoolReports(names, opts) {
		st := res.PD
		out := struct {
			Pool              string         `json:"pool"`
			Instances         int            `json:"instances"`
			PeakKVUtilization float64        `json:"peak_kv_utilization"`
			Transfers         int64          `json:"kv_transfers"`
			TransferredBytes  int64          `json:"kv_transferred_bytes"`
			TransferMs        float64        `json:"kv_transfer_time_ms"`
			LinkWaitMs        float64        `json:"kv_link_wait_ms"`
			Metrics           metrics.Output `json:"metrics"`
		}{p.Pool, p.Instances, p.PeakKVUtilization, st.Transfers, st.TransferredBytes,
			float64(st.TransferUs) / 1e3, float64(st.LinkWaitUs) / 1e3, p.Metrics}
		data, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "=== Pool Metrics ===\n%s\n", data); err != nil {
			return errors.Join(errors.New("writing the pool metrics"), err)
		}
	}
	return nil
}
