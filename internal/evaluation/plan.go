package evaluation

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/inference-sim/blis-operator/internal/engine/model"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/sim"
	"github.com/inference-sim/blis-operator/internal/engine/trace"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// Parts of a document, for attributing load errors.
const (
	partCluster  = "cluster"
	partPolicy   = "policy"
	partWorkload = "workload"
)

// plan is a loaded document, ready to run.
type plan struct {
	instance sim.InstanceConfig
	// pools are the prefill and decode pools' own instances (nil: instance).
	pools [2]*sim.InstanceConfig
	// poolModels are the prefill and decode pools' resolved instances (nil: the cluster's).
	poolModels [2]*model.Resolved
	replicas   int
	bundle     *policy.Bundle
	// autoscale is the autoscaler of every seed (nil: fixed replicas); slots are its max.
	autoscale *sim.AutoscaleConfig
	// pd is the disaggregation of every seed (nil: monolithic replicas).
	pd *sim.PDConfig
	// targets are the goodput SLO targets by class (ms).
	targets map[string]workload.SLOTargets
	// objectives are the resolved objective metrics, in Document.Objectives order.
	objectives []metricRef
	// level, strategy and maxTokens are the trace settings.
	level     trace.Level
	strategy  string
	maxTokens int
}

// Bounds of trace.summaryMaxTokens (as the CRD's).
const (
	minSummaryTokens = 100
	maxSummaryTokens = 4000
)

// Load validates a document on its own (as `blis engine` receives it) and prepares it for Run.
// Errors name the part of the document at fault. Notes carry only what the document itself
// shows (objectives without a value); settings dropped while resolving are not in it.
func Load(doc *Document) (*Resolved, error) {
	return load(doc, func(part string, err error) error {
		return fmt.Errorf("document %s: %w", part, err)
	})
}

// load validates doc with the engine's own validation, wrapping errors with wrap(part, err),
// and computes its canonical form and hash.
func load(doc *Document, wrap func(part string, err error) error) (*Resolved, error) {
	if doc.Format != DocumentFormat {
		return nil, wrap("format", fmt.Errorf("unknown document format %q; this engine reads %s", doc.Format, DocumentFormat))
	}
	p := &plan{}
	var notes []string

	// Cluster.
	r, err := model.Resolve(doc.Cluster.Instance)
	if err != nil {
		return nil, wrap(partCluster, err)
	}
	inst, err := p.replica(r, &doc.Cluster)
	if err != nil {
		return nil, wrap(partCluster, err)
	}
	if doc.Cluster.Replicas < 1 || doc.Cluster.Replicas > maxReplicas {
		return nil, wrap(partCluster, fmt.Errorf("replicas must be in [1, %d], got %d", maxReplicas, doc.Cluster.Replicas))
	}
	if doc.Cluster.AdmissionLatencyUs < 0 || doc.Cluster.RoutingLatencyUs < 0 {
		return nil, wrap(partCluster, errors.New("decision latencies must be >= 0"))
	}
	p.instance, p.replicas = inst, doc.Cluster.Replicas

	// Policy.
	b, err := policy.Parse([]byte(doc.Policy))
	if err != nil {
		return nil, wrap(partPolicy, err)
	}
	if doc.Cluster.Observability != nil {
		obs, err := mergeObservability(doc.Cluster.Observability, b.Observability)
		if err != nil {
			return nil, wrap(partPolicy, err)
		}
		b.Observability = obs
	}
	if err := b.Validate(); err != nil {
		return nil, wrap(partPolicy, err)
	}
	p.bundle = b
	if err := p.setAutoscale(doc, b, r, &notes); err != nil {
		return nil, wrap(partCluster, err)
	}

	// Workload.
	w := &doc.Workload
	switch {
	case w.Spec != "" && w.Trace != nil:
		return nil, wrap(partWorkload, errors.New("give a workload spec or a trace, not both"))
	case w.Spec != "":
		spec, err := workload.ParseSpec([]byte(w.Spec))
		if err != nil {
			return nil, wrap(partWorkload, err)
		}
		p.targets = spec.GoodputSLOTargets
	case w.Trace != nil:
		// A trace on a volume is read where the volume is mounted (the engine's pod), so only
		// inline traces are checked here; a bad mounted file fails the run.
		if w.Trace.Path == "" && w.Trace.HeaderPath == "" {
			src, err := openTrace(w.Trace, 1)
			if err != nil {
				return nil, wrap(partWorkload, err)
			}
			closeSource(src)
		}
		for k := range w.SLOTargets {
			if !contains(workload.SLOClasses, k) {
				return nil, wrap(partWorkload, fmt.Errorf("sloTargets.%s: unknown SLO class; valid: %s", k, strings.Join(workload.SLOClasses, ", ")))
			}
		}
		p.targets = w.SLOTargets
	default:
		return nil, wrap(partWorkload, errors.New("the document has neither a workload spec nor a trace"))
	}

	// Run settings.
	if len(doc.Seeds) == 0 || len(doc.Seeds) > maxSeeds {
		return nil, wrap("seeds", fmt.Errorf("between 1 and %d seeds are required, got %d", maxSeeds, len(doc.Seeds)))
	}
	if doc.Horizon < 0 {
		return nil, wrap("horizon", fmt.Errorf("must be >= 0, got %d", doc.Horizon))
	}
	if doc.NumRequests < 0 {
		return nil, wrap("numRequests", fmt.Errorf("must be >= 0, got %d", doc.NumRequests))
	}
	if len(doc.Objectives) > maxObjectives {
		return nil, wrap("objectives", fmt.Errorf("at most %d objectives, got %d", maxObjectives, len(doc.Objectives)))
	}
	seen := map[string]bool{}
	for i, o := range doc.Objectives {
		if seen[o.Name] {
			return nil, wrap(fmt.Sprintf("objectives[%d].name", i), fmt.Errorf("objective %q is given twice", o.Name))
		}
		seen[o.Name] = true
		ref, note, err := lookupMetric(o.Name, p.targets)
		if err != nil {
			return nil, wrap(fmt.Sprintf("objectives[%d].name", i), err)
		}
		if note != "" {
			notes = append(notes, note)
		}
		p.objectives = append(p.objectives, ref)
	}
	if t := doc.Trace; t != nil {
		lv, err := trace.ParseLevel(t.Level)
		if err != nil {
			return nil, wrap("trace.level", err)
		}
		if err := trace.CheckStrategy(t.SummaryStrategy); err != nil {
			return nil, wrap("trace.summaryStrategy", err)
		}
		if n := t.SummaryMaxTokens; n != 0 && (n < minSummaryTokens || n > maxSummaryTokens) {
			return nil, wrap("trace.summaryMaxTokens", fmt.Errorf("must be in [%d, %d], got %d", minSummaryTokens, maxSummaryTokens, n))
		}
		p.level, p.strategy, p.maxTokens = lv, t.SummaryStrategy, int(t.SummaryMaxTokens)
	}
	if len(doc.FitnessWeights) > maxObjectives {
		return nil, wrap("fitnessWeights", fmt.Errorf("at most %d weights, got %d", maxObjectives, len(doc.FitnessWeights)))
	}

	canon, err := Canonical(doc)
	if err != nil {
		return nil, wrap("format", err)
	}
	return &Resolved{Document: *doc, Canonical: canon, Hash: Hash(canon), Notes: notes, plan: p}, nil
}

// mergeObservability combines the cluster's observability with the bundle's (nil: none). Per
// signal refresh rules are set in one place only; the cluster's snapshot refresh interval and
// cache-signal delay may join a bundle's rules, whose fields then keep their own modes (the
// interval covers only the load fields the bundle leaves unset).
func mergeObservability(cl, b *policy.ObservabilityConfig) (*policy.ObservabilityConfig, error) {
	out := *cl
	if b == nil {
		return &out, nil
	}
	fieldsOnly := *cl
	fieldsOnly.SnapshotRefreshUs, fieldsOnly.CacheSignalDelayUs = 0, 0
	switch {
	case fieldsOnly != (policy.ObservabilityConfig{}):
		return nil, errors.New("observability: the cluster sets the signal staleness; the bundle must not")
	case cl.SnapshotRefreshUs != 0 && b.SnapshotRefreshUs != 0:
		return nil, errors.New("observability.snapshot_refresh_interval_us: set by both the cluster (controlPlane.snapshotRefreshIntervalUs) and the bundle")
	case cl.CacheSignalDelayUs != 0 && b.CacheSignalDelayUs != 0:
		return nil, errors.New("observability.cache_signal_delay_us: set by both the cluster (controlPlane.cacheSignalDelayUs) and the bundle")
	}
	out = *b
	out.SnapshotRefreshUs = max(out.SnapshotRefreshUs, cl.SnapshotRefreshUs)
	out.CacheSignalDelayUs = max(out.CacheSignalDelayUs, cl.CacheSignalDelayUs)
	return &out, nil
}

// maxObjectives bounds objectives and fitness weights (as the CRD does).
const maxObjectives = 16

// config is the simulation configuration of one seed.
func (p *plan) config(doc *Document, seed int64, horizon int64) *sim.Config {
	cfg := &sim.Config{
		Policy:           p.bundle,
		Seed:             seed,
		Horizon:          horizon,
		AdmissionLatency: doc.Cluster.AdmissionLatencyUs,
		RoutingLatency:   doc.Cluster.RoutingLatencyUs,
		PD:               p.pd,
	}
	n := p.replicas
	if p.autoscale != nil {
		a := *p.autoscale
		cfg.Autoscale = &a
		n = int(a.MaxReplicas)
		if a.Prefill != nil {
			n = int(a.Prefill.MaxReplicas + a.Decode.MaxReplicas)
		}
	}
	cfg.Instances = make([]sim.InstanceConfig, n)
	for i := range cfg.Instances {
		cfg.Instances[i] = p.instance
		k := 0
		if p.pd != nil && i >= p.pd.PrefillInstances {
			k = 1
		}
		if pi := p.pools[k]; pi != nil && p.pd != nil {
			cfg.Instances[i] = *pi
		}
	}
	return cfg
}

// source builds the workload of one seed and the simulation horizon that goes with it.
func (p *plan) source(doc *Document, seed int64) (workload.Source, int64, error) {
	w := &doc.Workload
	if w.Trace != nil {
		src, err := openTrace(w.Trace, doc.NumRequests)
		return src, doc.Horizon, err
	}
	spec, err := workload.ParseSpec([]byte(w.Spec))
	if err != nil {
		return nil, 0, err
	}
	if doc.NumRequests > 0 {
		spec.NumRequests = doc.NumRequests
	}
	if doc.Horizon > 0 {
		spec.Horizon = doc.Horizon
	}
	src, err := spec.Source(seed)
	return src, spec.Horizon, err
}

// openTrace opens a trace replay from inline data or a mounted file.
func openTrace(t *TraceDoc, maxRequests int64) (workload.Source, error) {
	opts := workload.TraceOptions{Format: workload.TraceFormat(t.Format), Speedup: t.Speedup, MaxRequests: maxRequests}
	if t.Format == traceBLISv2 {
		opts.Format = ""
		header := []byte(t.Header)
		if t.HeaderPath != "" {
			var err error
			if header, err = os.ReadFile(t.HeaderPath); err != nil {
				return nil, fmt.Errorf("trace header: %w", err)
			}
		}
		var h workload.TraceV2Header
		if err := yaml.Unmarshal(header, &h); err != nil {
			return nil, fmt.Errorf("trace header: %w", err)
		}
		if h.TraceVersion < 2 || h.TraceVersion > 3 {
			return nil, fmt.Errorf("trace header: trace_version: unsupported version %d; valid: 2, 3", h.TraceVersion)
		}
		switch h.TimeUnit {
		case "", "us", "µs", "microseconds":
		default:
			return nil, fmt.Errorf("trace header: time_unit: unsupported unit %q; valid: us", h.TimeUnit)
		}
		data, closer, err := traceData(t)
		if err != nil {
			return nil, err
		}
		src, err := workload.NewTraceV2Source(data, h, opts)
		if err != nil {
			closeQuietly(closer)
			return nil, fmt.Errorf("trace: %w", err)
		}
		return &closingSource{TraceSource: src, c: closer}, nil
	}
	data, closer, err := traceData(t)
	if err != nil {
		return nil, err
	}
	src, err := workload.NewTraceSource(data, opts)
	if err != nil {
		closeQuietly(closer)
		return nil, fmt.Errorf("trace: %w", err)
	}
	return &closingSource{TraceSource: src, c: closer}, nil
}

// traceData opens the trace's data: the inline text or the mounted file.
func traceData(t *TraceDoc) (io.Reader, io.Closer, error) {
	if t.Path == "" {
		return strings.NewReader(t.Data), nil, nil
	}
	f, err := os.Open(t.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("trace: %w", err)
	}
	return f, f, nil
}

// closingSource is a trace replay that owns the file it reads.
type closingSource struct {
	*workload.TraceSource
	c io.Closer
}

func closeQuietly(c io.Closer) {
	if c != nil {
		_ = c.Close()
	}
}

// closeSource releases a source's file, if it has one.
func closeSource(src workload.Source) {
	if cs, ok := src.(*closingSource); ok {
		closeQuietly(cs.c)
	}
}

// defaultAutoscaleIntervalUs is the evaluation period of an autoscaled cluster whose bundle
// sets none: the Kubernetes HPA's default sync period.
const defaultAutoscaleIntervalUs = 15_000_000

// autoscaleConfig builds the engine's autoscaler from the cluster's bounds and delays and the
// bundle's autoscaler block (interval, stabilization windows as cooldowns, template).
//
// On a disaggregated cluster (pd non-nil) each pool is autoscaled within its own bounds and
// starts with its own replicas; the prefill pool's slots come first.
func autoscaleConfig(a *AutoscalingDoc, replicas int, pd *PDDoc, b *policy.Autoscaler) (*sim.AutoscaleConfig, string, error) {
	spec, err := b.Spec()
	if err != nil {
		return nil, "", err
	}
	var note string
	interval := int64(b.IntervalUs)
	if interval <= 0 {
		interval = defaultAutoscaleIntervalUs
		note = "autoscaling: the policy bundle sets no autoscaler.intervalUs; the autoscaler evaluates every 15 s"
	}
	if a.MinReplicas < 1 || a.MinReplicas > a.MaxReplicas || a.MaxReplicas > maxReplicas || replicas < a.MinReplicas || replicas > a.MaxReplicas {
		return nil, "", fmt.Errorf("autoscaling: need 1 <= minReplicas (%d) <= replicas (%d) <= maxReplicas (%d) <= %d", a.MinReplicas, replicas, a.MaxReplicas, maxReplicas)
	}
	ac := &sim.AutoscaleConfig{
		Policy:      spec,
		MinReplicas: int32(a.MinReplicas), MaxReplicas: int32(a.MaxReplicas), InitialReplicas: int32(replicas),
		IntervalUs:          interval,
		ScaleUpCooldownUs:   int64(b.ScaleUpStabilizationWindowUs),
		ScaleDownCooldownUs: int64(b.ScaleDownStabilizationWindowUs),
		Provisioning:        sim.Delay{MeanUs: a.ProvisioningDelayUs},
		ModelLoad:           sim.Delay{MeanUs: a.ModelLoadDelayUs},
		Warmup:              sim.Delay{MeanUs: a.WarmupDelayUs},
		Drain:               sim.DrainPolicy(a.DrainPolicy),
		CostPerReplicaHour:  a.CostPerReplicaHour,
		ScrapeDelay:         sim.Delay{MeanUs: secondsToUs(b.HPAScrapeDelay.Mean), StddevUs: secondsToUs(b.HPAScrapeDelay.Stddev)},
	}
	slots := a.MaxReplicas
	switch {
	case pd != nil && (a.Prefill == nil || a.Decode == nil):
		return nil, "", errors.New("autoscaling: a disaggregated cluster needs the prefill and decode pools' bounds (autoscaling.prefill, autoscaling.decode)")
	case pd == nil && (a.Prefill != nil || a.Decode != nil):
		return nil, "", errors.New("autoscaling: prefill and decode bounds need prefill/decode disaggregation (cluster.pd)")
	case pd != nil:
		if a.Prefill.MinReplicas+a.Decode.MinReplicas != a.MinReplicas || a.Prefill.MaxReplicas+a.Decode.MaxReplicas != a.MaxReplicas {
			return nil, "", fmt.Errorf("autoscaling: minReplicas (%d) and maxReplicas (%d) must be the sums of the prefill and decode pools' bounds", a.MinReplicas, a.MaxReplicas)
		}
		ac.MinReplicas, ac.MaxReplicas, ac.InitialReplicas = 0, 0, 0
		ac.Prefill = &sim.PoolBounds{MinReplicas: int32(a.Prefill.MinReplicas), MaxReplicas: int32(a.Prefill.MaxReplicas), InitialReplicas: int32(pd.PrefillReplicas)}
		ac.Decode = &sim.PoolBounds{MinReplicas: int32(a.Decode.MinReplicas), MaxReplicas: int32(a.Decode.MaxReplicas), InitialReplicas: int32(replicas - pd.PrefillReplicas)}
	}
	if err := ac.Validate(slots); err != nil {
		return nil, "", err
	}
	return ac, note, nil
}

// secondsToUs converts a delay in seconds to whole microseconds (rounded; negative and NaN
// values become -1 so that validation rejects them).
func secondsToUs(v float64) int64 {
	if !(v >= 0) {
		return -1
	}
	return int64(math.Round(min(v*1e6, math.MaxInt64/4)))
}

// applyLifecycle maps the bundle's instance lifecycle onto the autoscaler. A loading delay,
// when set, replaces the cluster's modelLoadDelayUs (the bundle describes lifecycle, which is
// what an optimizer tunes) and is drawn from its own stream when it has a deviation; with a
// loading delay and no warm start the initial replicas load too before serving (on a
// disaggregated cluster they start ready, with a note).
func applyLifecycle(ac *sim.AutoscaleConfig, l *policy.InstanceLifecycle) string {
	d := l.LoadingDelay
	if d.Mean == 0 && d.Stddev == 0 {
		return ""
	}
	ac.ModelLoad = sim.Delay{MeanUs: secondsToUs(d.Mean), StddevUs: secondsToUs(d.Stddev)}
	ac.LoadingStream = true
	if l.WarmStartInitialInstances {
		return ""
	}
	if ac.Prefill != nil {
		return "instanceLifecycle: the initial replicas of prefill and decode pools start ready (a cold start is simulated only without disaggregation)"
	}
	ac.ColdStart = true
	return ""
}

// applyNodePools gives the autoscaler the bundle's node pools: a replica holds TP × PP × DP
// GPUs of one node. Without disaggregation the pools' gpuType must be the cluster's GPU; with
// prefill and decode pools (models: each pool's resolved instance) a node pool holds the
// replicas of the pools whose GPU it has, and each pool's GPU needs a node pool. A
// gpuMemoryGib given must be the matching GPU's memory (catalog or spec.hardware).
func applyNodePools(ac *sim.AutoscaleConfig, pools []policy.NodePool, r *model.Resolved, models [2]*model.Resolved) error {
	if len(pools) == 0 {
		return nil
	}
	cat, err := model.DefaultCatalog()
	if err != nil {
		return err
	}
	roles := []*model.Resolved{r}
	names := []string{"cluster"}
	if ac.Prefill != nil {
		roles, names = []*model.Resolved{r, r}, []string{"prefill", "decode"}
		for k, m := range models {
			if m != nil {
				roles[k] = m
			}
		}
	}
	nc := &sim.NodesConfig{GPUsPerReplica: int32(roles[len(roles)-1].Engine.TotalGPUs())}
	if ac.Prefill != nil {
		nc.PrefillGPUsPerReplica = int32(roles[0].Engine.TotalGPUs())
	}
	matched := make([]bool, len(roles))
	for i, np := range pools {
		hw, err := cat.Hardware().Lookup(np.GPUType)
		var serves []int
		var gpus []string
		for k, m := range roles {
			if err == nil && hw.Name == m.Hardware.Name {
				serves = append(serves, k)
				matched[k] = true
			}
			if !slices.Contains(gpus, m.Hardware.Name) {
				gpus = append(gpus, m.Hardware.Name)
			}
		}
		if len(serves) == 0 {
			return fmt.Errorf("node_pools[%d].gpu_type: node pool %s has GPU %q, but the cluster's replicas run on %s", i, np.Name, np.GPUType, strings.Join(gpus, " and "))
		}
		if mem := roles[serves[0]].Hardware.MemoryGiB; np.GPUMemoryGiB > 0 && math.Abs(np.GPUMemoryGiB-mem) > 0.5 {
			return fmt.Errorf("node_pools[%d].gpu_memory_gib: node pool %s has %v GiB GPUs, but the cluster's %s has %v GiB (set spec.hardware.memoryGiB to change it)", i, np.Name, np.GPUMemoryGiB, hw.Name, mem)
		}
		role := ""
		if ac.Prefill != nil && len(serves) == 1 {
			role = names[serves[0]]
		}
		nc.Pools = append(nc.Pools, sim.NodePoolConfig{
			Name: np.Name, GPUsPerNode: int32(np.GPUsPerNode), Role: role,
			InitialNodes: int32(np.InitialNodes), MinNodes: int32(np.MinNodes), MaxNodes: int32(np.MaxNodes),
			Provisioning:    sim.Delay{MeanUs: secondsToUs(np.ProvisioningDelay.Mean), StddevUs: secondsToUs(np.ProvisioningDelay.Stddev)},
			CostPerNodeHour: np.CostPerHour,
		})
	}
	for k, ok := range matched {
		if !ok {
			return fmt.Errorf("node_pools: no node pool has gpu_type %s, the GPU of the %s pool's replicas", roles[k].Hardware.Name, names[k])
		}
	}
	ac.Nodes = nc
	slots := ac.MaxReplicas
	if ac.Prefill != nil {
		slots = ac.Prefill.MaxReplicas + ac.Decode.MaxReplicas
	}
	return ac.Validate(int(slots))
}

// fixedColdStart gives a cluster without autoscaling the bundle's cold start: with a loading
// delay and no warm start its fixed replicas load before serving, through an autoscaler whose
// bounds are the replica count (it never scales). Prefill and decode pools start ready (noted).
func (p *plan) fixedColdStart(doc *Document, b *policy.Bundle, notes *[]string) error {
	l := &b.InstanceLifecycle
	if d := l.LoadingDelay; (d.Mean == 0 && d.Stddev == 0) || l.WarmStartInitialInstances {
		return nil
	}
	if doc.Cluster.PD != nil {
		*notes = append(*notes, "instanceLifecycle: the initial replicas of prefill and decode pools start ready (a cold start is simulated only without disaggregation)")
		return nil
	}
	interval := int64(b.Autoscaler.IntervalUs)
	if interval <= 0 {
		interval = defaultAutoscaleIntervalUs
	}
	load := sim.Delay{MeanUs: secondsToUs(l.LoadingDelay.Mean), StddevUs: secondsToUs(l.LoadingDelay.Stddev)}
	ac := sim.FixedColdStart(int32(doc.Cluster.Replicas), load, sim.Delay{}, interval)
	if err := ac.Validate(doc.Cluster.Replicas); err != nil {
		return err
	}
	p.autoscale = ac
	return nil
}

// setAutoscale builds the plan's autoscaler when the cluster has one, adding its note.
func (p *plan) setAutoscale(doc *Document, b *policy.Bundle, r *model.Resolved, notes *[]string) error {
	a := doc.Cluster.Autoscaling
	if a == nil && len(b.NodePools) > 0 {
		*notes = append(*notes, "nodePools: node capacity is simulated for autoscaled clusters; without autoscaling the replicas are placed as they are")
	}
	if a == nil {
		return p.fixedColdStart(doc, b, notes)
	}
	ac, note, err := autoscaleConfig(a, doc.Cluster.Replicas, doc.Cluster.PD, &b.Autoscaler)
	if note != "" {
		*notes = append(*notes, note)
	}
	if err == nil {
		if n := applyLifecycle(ac, &b.InstanceLifecycle); n != "" {
			*notes = append(*notes, n)
		}
		err = applyNodePools(ac, b.NodePools, r, p.poolModels)
	}
	p.autoscale = ac
	if err == nil && ac.Prefill != nil {
		// The prefill pool's slots are its maximum; its initial replicas start ready.
		pd := *p.pd
		pd.PrefillInstances = int(ac.Prefill.MaxReplicas)
		p.pd = &pd
	}
	return err
}

// poolInstances resolves the prefill and decode pools' own instances through the model
// package, as the cluster's. The KV transfer's bytes per token are the prefill pool's model's
// (the whole model's KV, over all tensor-parallel shards).
func (p *plan) poolInstances(c *ClusterDoc, blockSize int32) error {
	if c.PD == nil {
		return nil
	}
	for k, spec := range []*model.InstanceSpec{c.PD.Prefill, c.PD.Decode} {
		if spec == nil {
			continue
		}
		role := [2]string{"prefill", "decode"}[k]
		r, err := model.Resolve(*spec)
		if err != nil {
			return fmt.Errorf("%s pool: %w", role, err)
		}
		inst, err := sim.InstanceFromResolved(r)
		if err != nil {
			return fmt.Errorf("%s pool: %w", role, err)
		}
		partialPrefills(r, &inst)
		if inst.CPUTier, err = cpuTier(r, &inst, c.CPUTier); err != nil {
			return fmt.Errorf("%s pool: %w", role, err)
		}
		if inst.BlockSize != blockSize {
			return fmt.Errorf("%s pool: KV block size %d differs from the cluster's %d", role, inst.BlockSize, blockSize)
		}
		p.pools[k] = &inst
		p.poolModels[k] = r
		if k == 0 {
			p.pd.BytesPerToken = r.Model.KVCacheBytesPerToken()
		}
	}
	return nil
}

// partialPrefills sets an instance's concurrent partial prefills from its resolved engine
// (vLLM's defaults of 1 leave them unset: the classic behaviour).
func partialPrefills(r *model.Resolved, inst *sim.InstanceConfig) {
	if e := &r.Engine; e.MaxNumPartialPrefills > 1 {
		inst.MaxNumPartialPrefills = int32(e.MaxNumPartialPrefills)
		inst.MaxLongPartialPrefills = int32(e.MaxLongPartialPrefills)
	}
}

// cpuTier is the KV tier chain of a resolved instance (nil when the cluster has none): a
// block's bytes are the model's KV bytes per token times the block size.
func cpuTier(r *model.Resolved, inst *sim.InstanceConfig, t *KVTierDoc) (*sim.KVTierConfig, error) {
	if t == nil {
		return nil, nil
	}
	var head, last *sim.KVTierConfig
	for ; t != nil; t = t.Next {
		c := &sim.KVTierConfig{
			CapacityBlocks: int32(min(t.CapacityBlocks, math.MaxInt32)), BandwidthGBps: t.BandwidthGBps, BaseLatencyUs: t.BaseLatencyUs,
			BlockBytes: r.Model.KVCacheBytesPerToken() * int64(inst.BlockSize), OffloadThreshold: t.OffloadThreshold, Kind: t.Tier,
		}
		if head == nil {
			head = c
		} else {
			last.Next = c
		}
		last = c
	}
	return head, head.Validate()
}

// replica builds the replica of a resolved instance, with its CPU KV tier when the cluster has
// one, and the plan's disaggregation with the pools' own instances.
func (p *plan) replica(r *model.Resolved, c *ClusterDoc) (sim.InstanceConfig, error) {
	inst, err := sim.InstanceFromResolved(r)
	if err != nil {
		return inst, err
	}
	partialPrefills(r, &inst)
	if pd := c.PD; pd != nil {
		p.pd = &sim.PDConfig{
			PrefillInstances: pd.PrefillReplicas, Decider: sim.PDDecider(pd.Decider), NonCachedTokens: pd.NonCachedTokens,
			BandwidthGBps: pd.BandwidthGBps, BaseLatencyUs: pd.BaseLatencyUs, BytesPerToken: r.Model.KVCacheBytesPerToken(),
		}
		if err := p.pd.Validate(c.Replicas); err != nil {
			return inst, err
		}
	}
	if err := p.poolInstances(c, inst.BlockSize); err != nil {
		return inst, err
	}
	if c.CPUTier == nil {
		return inst, nil
	}
	if inst.CPUTier, err = cpuTier(r, &inst, c.CPUTier); err != nil {
		return inst, err
	}
	return inst, inst.Validate()
}
