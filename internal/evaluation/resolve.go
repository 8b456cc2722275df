package evaluation

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	sigsjson "sigs.k8s.io/json"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/blisfile"
	"github.com/inference-sim/blis-operator/internal/engine/model"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
	"github.com/inference-sim/blis-operator/internal/evaluation/fitness"
)

// Object kinds named by errors.
const (
	KindEvaluation       = "Evaluation"
	KindSimulatedCluster = "SimulatedCluster"
	KindPolicyBundle     = "PolicyBundle"
	KindWorkloadSpec     = "WorkloadSpec"
	KindConfigMap        = "ConfigMap"
)

// Reasons of resolution errors, usable as condition reasons.
const (
	// ReasonReferenceNotFound: a referenced object, ConfigMap key or file is missing.
	ReasonReferenceNotFound = "ReferenceNotFound"
	// ReasonInvalidSpec: a field fails the engine's validation.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonUnsupported: a field asks for something this engine version does not simulate.
	ReasonUnsupported = "Unsupported"
)

// Error is a resolution error: which object, which field, and why.
type Error struct {
	// Reason is one of the Reason constants.
	Reason string
	// Kind and Name identify the object at fault.
	Kind, Name string
	// Field is the field path within the object, for example spec.pools[1].role.
	Field string
	// Err is the underlying problem.
	Err error
}

// Error implements error: "<Kind> <name>: <field>: <problem>".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Kind)
	if e.Name != "" {
		b.WriteString(" " + e.Name)
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	b.WriteString(": " + e.Err.Error())
	return b.String()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Inputs are an Evaluation and everything it references, as the controller (or the CLI)
// fetched them. Referenced objects that could not be found are left nil; Resolve reports them.
type Inputs struct {
	// Name is the Evaluation's name (for messages).
	Name string
	// Spec is the Evaluation's spec.
	Spec blisv1alpha1.EvaluationSpec
	// Cluster, Policy and Workload are the objects Spec.ClusterRef, PolicyRef and WorkloadRef
	// name; ignored for inline specs.
	Cluster  *blisv1alpha1.SimulatedCluster
	Policy   *blisv1alpha1.PolicyBundle
	Workload *blisv1alpha1.WorkloadSpec
	// ConfigMaps holds the data of the ConfigMaps the inputs reference, by name.
	ConfigMaps map[string]map[string]string
	// Files holds the content of files on volumes (trace paths), by path. A path without an
	// entry stays a path in the document, read by the engine from its own mounts.
	Files map[string][]byte
}

// Resolved is a validated, self-contained evaluation input.
type Resolved struct {
	// Document is the resolved input.
	Document Document
	// Canonical is the document's canonical JSON; Hash its hex SHA-256.
	Canonical []byte
	Hash      string
	// Notes list settings of the inputs that this engine version accepts but does not
	// simulate, one sentence each, in a stable order.
	Notes []string

	plan *plan
}

// owner is the object a part of the spec belongs to and the path of that part within it.
type owner struct {
	kind, name, path string
}

func (o owner) err(reason, field string, err error) *Error {
	f := o.path
	if field != "" {
		f += "." + field
	}
	return &Error{Reason: reason, Kind: o.kind, Name: o.name, Field: f, Err: err}
}

// Resolve checks the inputs and builds the resolved document. Errors are *Error.
func Resolve(in Inputs) (*Resolved, error) {
	ev := owner{KindEvaluation, in.Name, "spec"}
	doc := Document{Format: DocumentFormat, EngineVersion: EngineVersion()}
	var notes []string

	// Cluster.
	cl, err := pick(ev, "clusterRef", "cluster", in.Spec.ClusterRef, in.Spec.Cluster, KindSimulatedCluster,
		func() (string, *blisv1alpha1.SimulatedClusterSpec) {
			if in.Cluster == nil {
				return "", nil
			}
			return in.Cluster.Name, &in.Cluster.Spec
		})
	if err != nil {
		return nil, err
	}
	cdoc, cnotes, err := resolveCluster(cl.owner, cl.spec)
	if err != nil {
		return nil, err
	}
	doc.Cluster = cdoc
	notes = append(notes, cnotes...)

	// Policy.
	po, err := pick(ev, "policyRef", "policy", in.Spec.PolicyRef, in.Spec.Policy, KindPolicyBundle,
		func() (string, *blisv1alpha1.PolicyBundleSpec) {
			if in.Policy == nil {
				return "", nil
			}
			return in.Policy.Name, &in.Policy.Spec
		})
	if err != nil {
		return nil, err
	}
	pol, polOwner, err := resolvePolicy(po.owner, po.spec, in.ConfigMaps)
	if err != nil {
		return nil, err
	}
	doc.Policy = pol
	if err := checkCombination(cl, po); err != nil {
		return nil, err
	}
	if err := checkNodePools(cl, po); err != nil {
		return nil, err
	}

	// Workload.
	wo, err := pick(ev, "workloadRef", "workload", in.Spec.WorkloadRef, in.Spec.Workload, KindWorkloadSpec,
		func() (string, *blisv1alpha1.WorkloadSpecSpec) {
			if in.Workload == nil {
				return "", nil
			}
			return in.Workload.Name, &in.Workload.Spec
		})
	if err != nil {
		return nil, err
	}
	wdoc, wlOwner, limits, err := resolveWorkload(wo.owner, wo.spec, in.ConfigMaps, in.Files)
	if err != nil {
		return nil, err
	}
	doc.Workload = wdoc

	// Evaluation settings.
	if len(in.Spec.Seeds) > 0 {
		seen := map[int64]bool{}
		for i, s := range in.Spec.Seeds {
			if seen[s] {
				return nil, ev.err(ReasonInvalidSpec, fmt.Sprintf("seeds[%d]", i), fmt.Errorf("seed %d is given twice", s))
			}
			seen[s] = true
		}
		if len(in.Spec.Seeds) > maxSeeds {
			return nil, ev.err(ReasonInvalidSpec, "seeds", fmt.Errorf("at most %d seeds, got %d", maxSeeds, len(in.Spec.Seeds)))
		}
		doc.Seeds = append([]int64(nil), in.Spec.Seeds...)
	} else {
		doc.Seeds = []int64{wdoc.Seed}
	}
	doc.Horizon, doc.NumRequests = limits.horizon, limits.numRequests
	if h := in.Spec.Horizon; h != nil {
		if *h < 1 {
			return nil, ev.err(ReasonInvalidSpec, "horizon", fmt.Errorf("must be >= 1, got %d", *h))
		}
		doc.Horizon = *h
	}
	if n := in.Spec.NumRequests; n != nil {
		if *n < 1 {
			return nil, ev.err(ReasonInvalidSpec, "numRequests", fmt.Errorf("must be >= 1, got %d", *n))
		}
		doc.NumRequests = *n
	}
	for i, o := range in.Spec.Objectives {
		d, err := fitness.ParseDirection(o.Direction)
		if err != nil {
			return nil, ev.err(ReasonInvalidSpec, fmt.Sprintf("objectives[%d].direction", i), err)
		}
		if math.IsNaN(o.Weight) || math.IsInf(o.Weight, 0) || o.Weight < 0 {
			return nil, ev.err(ReasonInvalidSpec, fmt.Sprintf("objectives[%d].weight", i), fmt.Errorf("must be a finite number >= 0, got %v", o.Weight))
		}
		doc.Objectives = append(doc.Objectives, fitness.Objective{Name: o.Name, Direction: d, Weight: o.Weight})
	}
	if len(doc.Objectives) > 0 && fitness.WeightedMean(doc.Objectives, ones(len(doc.Objectives))) == 0 {
		return nil, ev.err(ReasonInvalidSpec, "objectives", errors.New("at least one objective needs a positive weight"))
	}
	if len(in.Spec.FitnessWeights) > 0 {
		if err := fitness.CheckWeights(in.Spec.FitnessWeights); err != nil {
			return nil, ev.err(ReasonInvalidSpec, "fitnessWeights", err)
		}
		doc.FitnessWeights = make(map[string]float64, len(in.Spec.FitnessWeights))
		for k, v := range in.Spec.FitnessWeights {
			doc.FitnessWeights[k] = v
		}
	}
	if t := in.Spec.Trace; (t.Level != "" && t.Level != blisv1alpha1.TraceNone) || t.SummaryStrategy != "" || t.SummaryMaxTokens != 0 {
		doc.Trace = &TraceSettings{Level: string(t.Level), SummaryStrategy: t.SummaryStrategy, SummaryMaxTokens: t.SummaryMaxTokens}
		if t.Level == blisv1alpha1.TraceNone {
			doc.Trace.Level = ""
		}
	}
	r, err := load(&doc, func(part string, e error) error {
		switch part {
		case partCluster:
			return cl.owner.err(ReasonInvalidSpec, "", e)
		case partPolicy:
			return polOwner.err(ReasonInvalidSpec, "", e)
		case partWorkload:
			return wlOwner.err(ReasonInvalidSpec, "", e)
		}
		return ev.err(ReasonInvalidSpec, part, e)
	})
	if err != nil {
		return nil, err
	}
	r.Notes = append(notes, r.Notes...)
	return r, nil
}

func ones(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = 1
	}
	return out
}

// maxSeeds bounds the replicates of one evaluation (as the CRD does).
const maxSeeds = 32

// picked is the spec an Evaluation uses for one input, with its owner.
type picked[T any] struct {
	owner owner
	spec  *T
}

// pick returns the referenced object's spec or the inline spec.
func pick[T any](ev owner, refField, inlineField string, ref *blisv1alpha1.LocalObjectReference, inline *T, kind string,
	fetched func() (string, *T)) (picked[T], error) {
	switch {
	case ref != nil && inline != nil:
		return picked[T]{}, ev.err(ReasonInvalidSpec, refField, fmt.Errorf("set exactly one of %s and %s", refField, inlineField))
	case inline != nil:
		return picked[T]{owner{ev.kind, ev.name, ev.path + "." + inlineField}, inline}, nil
	case ref == nil:
		return picked[T]{}, ev.err(ReasonInvalidSpec, refField, fmt.Errorf("set exactly one of %s and %s", refField, inlineField))
	}
	name, spec := fetched()
	if spec == nil || name != ref.Name {
		return picked[T]{}, ev.err(ReasonReferenceNotFound, refField+".name", fmt.Errorf("%s %q not found", kind, ref.Name))
	}
	return picked[T]{owner{kind, name, "spec"}, spec}, nil
}

// checkCombination rejects a policy that depends on a signal the cluster does not produce,
// naming the policy's field and the cluster setting; each object is valid on its own.
func checkCombination(cl picked[blisv1alpha1.SimulatedClusterSpec], po picked[blisv1alpha1.PolicyBundleSpec]) error {
	if pc := cl.spec.Engine.EnablePrefixCaching; pc == nil || *pc || po.spec.Routing == nil {
		return nil
	}
	for i, sc := range po.spec.Routing.Scorers {
		if sc.Name == "precise-prefix-cache" {
			return po.owner.err(ReasonInvalidSpec, fmt.Sprintf("routing.scorers[%d].name", i),
				fmt.Errorf("precise-prefix-cache scores the replicas' own KV-cache contents, but %s %s disables prefix caching (%s.engine.enablePrefixCaching: false)",
					cl.owner.kind, cl.owner.name, cl.owner.path))
		}
	}
	return nil
}

// checkNodePools rejects node pools whose gpuType is not a GPU the cluster's replicas run on
// (the cluster's GPU, or with prefill and decode pools each pool's), naming the pool's field
// and the GPUs; on an autoscaled cluster with prefill and decode pools it also rejects a pool
// whose GPU no node pool has. A cluster whose model is not in the catalog is checked when its
// document is loaded.
func checkNodePools(cl picked[blisv1alpha1.SimulatedClusterSpec], po picked[blisv1alpha1.PolicyBundleSpec]) error {
	if len(po.spec.NodePools) == 0 {
		return nil
	}
	cat, err := model.DefaultCatalog()
	if err != nil {
		return nil
	}
	gpu := cl.spec.GPU
	if gpu == "" {
		if e, err := cat.LookupModel(cl.spec.Model.Name); err == nil {
			gpu = e.DefaultGPU
		}
	}
	if gpu == "" {
		gpu = "H100"
	}
	want, err := cat.Hardware().Lookup(gpu)
	if err != nil {
		return nil
	}
	// The GPUs of the replicas, with the field that sets each.
	type runsOn struct{ name, field string }
	var gpus []runsOn
	for i, p := range cl.spec.Pools {
		if p.Role != blisv1alpha1.PoolPrefill && p.Role != blisv1alpha1.PoolDecode {
			continue
		}
		g := runsOn{want.Name, cl.owner.path + ".gpu"}
		if p.GPU != "" {
			hw, err := cat.Hardware().Lookup(p.GPU)
			if err != nil {
				return nil
			}
			g = runsOn{hw.Name, fmt.Sprintf("%s.pools[%d].gpu", cl.owner.path, i)}
		}
		gpus = append(gpus, g)
	}
	pd := len(gpus) > 0
	if !pd {
		gpus = []runsOn{{want.Name, cl.owner.path + ".gpu"}}
	}
	matched := make([]bool, len(gpus))
	for i, np := range po.spec.NodePools {
		hw, err := cat.Hardware().Lookup(np.GpuType)
		ok := false
		for k, g := range gpus {
			if err == nil && hw.Name == g.name {
				ok, matched[k] = true, true
			}
		}
		if ok {
			continue
		}
		names := make([]string, 0, len(gpus))
		for _, g := range gpus {
			if !slices.Contains(names, g.name) {
				names = append(names, g.name)
			}
		}
		if !pd {
			return po.owner.err(ReasonInvalidSpec, fmt.Sprintf("nodePools[%d].gpuType", i),
				fmt.Errorf("node pool %s has GPU %q, but the replicas of %s %s run on %s (%s.gpu)", np.Name, np.GpuType, cl.owner.kind, cl.owner.name, want.Name, cl.owner.path))
		}
		return po.owner.err(ReasonInvalidSpec, fmt.Sprintf("nodePools[%d].gpuType", i),
			fmt.Errorf("node pool %s has GPU %q, but the prefill and decode pools of %s %s run on %s", np.Name, np.GpuType, cl.owner.kind, cl.owner.name, strings.Join(names, " and ")))
	}
	if pd && cl.spec.Autoscaling != nil {
		for k, g := range gpus {
			if !matched[k] {
				return po.owner.err(ReasonInvalidSpec, "nodePools",
					fmt.Errorf("no node pool has gpuType %s, the GPU of a prefill or decode pool of %s %s (%s): its replicas need nodes of their GPU", g.name, cl.owner.kind, cl.owner.name, g.field))
			}
		}
	}
	return nil
}

// resolveCluster maps a SimulatedCluster spec onto identical replicas of one instance.
func resolveCluster(o owner, s *blisv1alpha1.SimulatedClusterSpec) (ClusterDoc, []string, error) {
	var notes []string
	var d ClusterDoc
	if strings.TrimSpace(s.Model.Name) == "" && s.Model.Config == nil {
		return d, nil, o.err(ReasonInvalidSpec, "model.name", errors.New("required"))
	}
	if len(s.Pools) == 0 {
		return d, nil, o.err(ReasonInvalidSpec, "pools", errors.New("at least one pool is required"))
	}
	replicas, pd, poolNotes, err := resolvePools(o, s)
	if err != nil {
		return d, nil, err
	}
	d.Replicas, d.PD, notes = replicas, pd, append(notes, poolNotes...)
	tier, tierNotes, err := resolveTiers(o, s.KVTiers)
	if err != nil {
		return d, nil, err
	}
	d.CPUTier, notes = tier, append(notes, tierNotes...)
	if a := s.Autoscaling; a != nil {
		ad, err := resolveAutoscaling(o, a, d.Replicas)
		if err != nil {
			return d, nil, err
		}
		if pd != nil {
			if ad.Prefill, ad.Decode, err = resolvePoolBounds(o, s); err != nil {
				return d, nil, err
			}
		}
		d.Autoscaling = ad
	}
	if obs := s.Observability; obs != nil {
		d.Observability = &policy.ObservabilityConfig{
			QueueDepth: refresh(obs.QueueDepth), BatchSize: refresh(obs.BatchSize), KVUtilization: refresh(obs.KVUtilization),
			CacheHitRate: refresh(obs.CacheHitRate), RecentTTFT: refresh(obs.RecentTTFT), RecentTPOT: refresh(obs.RecentTPOT),
		}
		if err := d.Observability.Validate(); err != nil {
			return d, nil, o.err(ReasonInvalidSpec, "observability", err)
		}
	}
	if cp := s.ControlPlane; (cp.SnapshotRefreshIntervalUs != nil && *cp.SnapshotRefreshIntervalUs != 0) || (cp.CacheSignalDelayUs != nil && *cp.CacheSignalDelayUs != 0) {
		// The refresh interval makes the load fields that observability leaves unset periodic;
		// the delay lags the precise prefix producer's view of the caches. Both travel in the
		// document's observability (absent when unset, so other documents keep their hash).
		if d.Observability == nil {
			d.Observability = &policy.ObservabilityConfig{}
		}
		if v := cp.SnapshotRefreshIntervalUs; v != nil {
			d.Observability.SnapshotRefreshUs = *v
		}
		if v := cp.CacheSignalDelayUs; v != nil {
			d.Observability.CacheSignalDelayUs = *v
		}
		if err := d.Observability.Validate(); err != nil {
			return d, nil, o.err(ReasonInvalidSpec, "controlPlane", err)
		}
	}
	e := s.Engine
	if e.SwapSpaceGiB != nil || e.MoE != nil {
		notes = append(notes, "engine: swapSpaceGiB and moe options are not simulated")
	}
	if s.ControlPlane.AdmissionLatencyUs < 0 {
		return d, nil, o.err(ReasonInvalidSpec, "controlPlane.admissionLatencyUs", fmt.Errorf("must be >= 0, got %d", s.ControlPlane.AdmissionLatencyUs))
	}
	if s.ControlPlane.RoutingLatencyUs < 0 {
		return d, nil, o.err(ReasonInvalidSpec, "controlPlane.routingLatencyUs", fmt.Errorf("must be >= 0, got %d", s.ControlPlane.RoutingLatencyUs))
	}
	d.AdmissionLatencyUs = s.ControlPlane.AdmissionLatencyUs
	d.RoutingLatencyUs = s.ControlPlane.RoutingLatencyUs

	// The API server's defaults, applied here too so that manifests read without one (blis
	// evaluate) give the same document.
	backend := s.LatencyModel.Backend
	if backend == "" {
		backend = blisv1alpha1.LatencyTrainedPhysics
	}
	pp, dp, bs := max(e.PipelineParallelSize, 1), max(e.DataParallelSize, 1), e.BlockSize
	if bs == 0 {
		bs = 16
	}
	is := model.InstanceSpec{
		Model:        s.Model.Name,
		GPU:          s.GPU,
		LatencyModel: string(backend),
		AlphaCoeffs:  append([]float64(nil), s.LatencyModel.AlphaCoeffs...),
		BetaCoeffs:   append([]float64(nil), s.LatencyModel.BetaCoeffs...),
		Engine: model.EngineSettings{
			TensorParallelSize:   int(e.TensorParallelSize),
			PipelineParallelSize: int(pp),
			DataParallelSize:     int(dp),
			MaxNumSeqs:           int64(e.MaxNumSeqs),
			MaxNumBatchedTokens:  int64(e.MaxNumBatchedTokens),
			BlockSize:            int64(bs),
			MaxModelLen:          int64(e.MaxModelLen),
			EnableChunkedPrefill: e.EnableChunkedPrefill,
			EnablePrefixCaching:  e.EnablePrefixCaching,
			VLLMVersion:          e.VllmVersion,
		},
	}
	hw, hwNotes, err := resolveHardware(o, s.Hardware, backend)
	if err != nil {
		return d, nil, err
	}
	is.HardwareOverrides, notes = hw, append(notes, hwNotes...)
	if len(is.AlphaCoeffs) == 0 {
		is.AlphaCoeffs = nil
	}
	if len(is.BetaCoeffs) == 0 {
		is.BetaCoeffs = nil
	}
	if e.LongPrefillTokenThreshold != nil {
		is.Engine.LongPrefillTokenThreshold = int64(*e.LongPrefillTokenThreshold)
	}
	if e.MaxNumPartialPrefills != nil {
		// The spec has no max-long-partial-prefills: vLLM's default of 1 applies.
		is.Engine.MaxNumPartialPrefills = int64(*e.MaxNumPartialPrefills)
	}
	if e.GpuMemoryUtilization != nil {
		is.Engine.GPUMemoryUtilization = *e.GpuMemoryUtilization
	}
	if e.TotalKVBlocks != nil {
		is.Engine.TotalKVBlocks = *e.TotalKVBlocks
	}
	if s.Model.Config != nil {
		js, err := blisfile.HFConfigJSON(s.Model.Config)
		if err != nil {
			return d, nil, o.err(ReasonInvalidSpec, "model.config", err)
		}
		is.ModelConfigJSON = js
	}
	d.Instance = is
	if d.PD != nil {
		if d.PD.Prefill, d.PD.Decode, err = resolvePoolInstances(o, s, &is); err != nil {
			return d, nil, err
		}
		if d.PD.Prefill == nil && d.PD.Decode == nil {
			notes = append(notes, "pools: prefill and decode replicas share the cluster's model, GPU, engine settings and latency model")
		}
	}
	return d, notes, nil
}

// resolveHardware maps spec.hardware onto the instance's overrides of the cluster GPU's
// figures, which apply before the latency model and the KV capacity are computed. Blackbox
// coefficients are fitted per catalog GPU, so only memoryGiB (the KV cache) applies to them;
// roofline alone reads the MFUs.
func resolveHardware(o owner, h *blisv1alpha1.HardwareSpec, backend blisv1alpha1.LatencyBackend) (*model.HardwareOverrides, []string, error) {
	if h == nil {
		return nil, nil, nil
	}
	ov := &model.HardwareOverrides{TFlopsPeak: h.TFlopsPeak, TFlopsFP8: h.TFlopsFP8, BwPeakTBs: h.BwPeakTBs,
		MfuPrefill: h.MfuPrefill, MfuDecode: h.MfuDecode, MemoryGiB: h.MemoryGiB}
	if f := ov.ComputeFields(); len(f) > 0 && backend == blisv1alpha1.LatencyBlackbox {
		return nil, nil, o.err(ReasonUnsupported, "hardware."+f[0], fmt.Errorf("blackbox coefficients are fitted per catalog GPU, so %s cannot change its step times; use latencyModel roofline or trained-physics, or drop the override (memoryGiB alone is allowed)", strings.Join(f, ", ")))
	}
	var notes []string
	if (h.MfuPrefill != nil || h.MfuDecode != nil) && backend == blisv1alpha1.LatencyTrainedPhysics {
		notes = append(notes, "hardware: mfuPrefill and mfuDecode are read only by the roofline latency model; trained-physics ignores them")
	}
	return ov, notes, nil
}

// resolvePoolInstances maps the prefill and decode pools' overrides (gpu, engine, latencyModel)
// onto each role's instance, the cluster's instance with the overrides applied (nil: a role
// without overrides). The pools of one role must agree: the engine models one prefill and one
// decode pool. A latency model override replaces the cluster's backend and coefficients.
func resolvePoolInstances(o owner, s *blisv1alpha1.SimulatedClusterSpec, base *model.InstanceSpec) (*model.InstanceSpec, *model.InstanceSpec, error) {
	var out [2]*model.InstanceSpec
	first := [2]int{-1, -1}
	for i := range s.Pools {
		p := &s.Pools[i]
		k := 0
		switch p.Role {
		case blisv1alpha1.PoolPrefill:
		case blisv1alpha1.PoolDecode:
			k = 1
		default:
			continue
		}
		var spec *model.InstanceSpec
		if p.GPU != "" || p.Engine != nil || p.LatencyModel != nil {
			cp := *base
			spec = &cp
			if p.GPU != "" && !strings.EqualFold(p.GPU, base.GPU) {
				// spec.hardware overrides the cluster's GPU; a pool that names another GPU
				// runs that catalog GPU as it is.
				spec.GPU, spec.HardwareOverrides = p.GPU, nil
			}
			if e := p.Engine; e != nil {
				if e.GpuMemoryUtilization != nil && e.TotalKVBlocks != nil {
					return nil, nil, o.err(ReasonInvalidSpec, fmt.Sprintf("pools[%d].engine.totalKVBlocks", i), errors.New("set gpuMemoryUtilization or totalKVBlocks, not both"))
				}
				if e.TensorParallelSize != 0 {
					spec.Engine.TensorParallelSize = int(e.TensorParallelSize)
				}
				if e.MaxNumSeqs != 0 {
					spec.Engine.MaxNumSeqs = int64(e.MaxNumSeqs)
				}
				if e.MaxNumBatchedTokens != 0 {
					spec.Engine.MaxNumBatchedTokens = int64(e.MaxNumBatchedTokens)
				}
				if e.GpuMemoryUtilization != nil {
					spec.Engine.GPUMemoryUtilization, spec.Engine.TotalKVBlocks = *e.GpuMemoryUtilization, 0
				}
				if e.TotalKVBlocks != nil {
					spec.Engine.TotalKVBlocks = *e.TotalKVBlocks
				}
			}
			if lm := p.LatencyModel; lm != nil {
				backend := lm.Backend
				if backend == "" {
					backend = blisv1alpha1.LatencyTrainedPhysics
				}
				spec.LatencyModel, spec.AlphaCoeffs, spec.BetaCoeffs = string(backend), nil, nil
				if len(lm.AlphaCoeffs) > 0 {
					spec.AlphaCoeffs = append([]float64(nil), lm.AlphaCoeffs...)
				}
				if len(lm.BetaCoeffs) > 0 {
					spec.BetaCoeffs = append([]float64(nil), lm.BetaCoeffs...)
				}
				if f := spec.HardwareOverrides.ComputeFields(); len(f) > 0 && backend == blisv1alpha1.LatencyBlackbox {
					return nil, nil, o.err(ReasonUnsupported, fmt.Sprintf("pools[%d].latencyModel.backend", i),
						fmt.Errorf("blackbox coefficients are fitted per catalog GPU, so hardware.%s cannot change its step times; the pool would run with the cluster's GPU overrides", f[0]))
				}
			}
		}
		if first[k] < 0 {
			first[k], out[k] = i, spec
			continue
		}
		if !reflect.DeepEqual(out[k], spec) {
			return nil, nil, o.err(ReasonUnsupported, fmt.Sprintf("pools[%d]", i),
				fmt.Errorf("%s pools with different gpu, engine or latencyModel are not simulated (pools[%d] differs from pools[%d]); the engine models one %s pool", p.Role, i, first[k], p.Role))
		}
	}
	return out[0], out[1], nil
}

// refresh converts a signal's refresh rule (nil: the engine's default for the signal).
func refresh(r *blisv1alpha1.SignalRefresh) policy.FieldConfig {
	if r == nil {
		return policy.FieldConfig{}
	}
	f := policy.FieldConfig{Mode: policy.UpdateMode(r.Mode)}
	if r.IntervalUs != nil {
		f.IntervalUs = *r.IntervalUs
	}
	return f
}

// maxReplicas bounds the replicas of a simulated cluster: each owns a KV cache.
const maxReplicas = 10_000

// resolvePolicy renders a PolicyBundle spec (or the BLIS file it references) as the engine's
// policy file. It returns the owner of the content: the ConfigMap key for a referenced file.
func resolvePolicy(o owner, s *blisv1alpha1.PolicyBundleSpec, cms map[string]map[string]string) (string, owner, error) {
	if ref := s.BlisConfigMapRef; ref != nil {
		data, err := configMapKey(o, "blisConfigMapRef", ref, cms)
		if err != nil {
			return "", o, err
		}
		o = owner{KindConfigMap, ref.Name, "data." + ref.Key}
		parsed, err := blisfile.ParsePolicy([]byte(data))
		if err != nil {
			return "", o, o.err(ReasonInvalidSpec, "", err)
		}
		s = parsed
	}
	// The autoscale template and its parameters are the engine's extension of BLIS's
	// autoscaler block: they go around the BLIS conversion.
	var asPolicy string
	var asParams map[string]float64
	if a := s.Autoscaler; a != nil && (a.Policy != "" || len(a.Parameters) > 0) {
		cp, ac := *s, *a
		asPolicy, asParams = ac.Policy, ac.Parameters
		ac.Policy, ac.Parameters = "", nil
		cp.Autoscaler = &ac
		s = &cp
	}
	out, err := blisfile.PolicyToEngine(s)
	if err == nil && (asPolicy != "" || len(asParams) > 0) {
		out, err = withAutoscaleTemplate(out, asPolicy, asParams)
	}
	if err != nil {
		reason := ReasonInvalidSpec
		if strings.Contains(err.Error(), "does not implement") {
			reason = ReasonUnsupported
		}
		return "", o, o.err(reason, "", err)
	}
	return string(out), o, nil
}

// resolvePools sums the pools' replicas and maps prefill and decode pools (with kvTransfer)
// onto disaggregation: prefill replicas first, then decode replicas.
func resolvePools(o owner, s *blisv1alpha1.SimulatedClusterSpec) (int, *PDDoc, []string, error) {
	var notes []string
	var total, prefill, decode, mono int
	for i, p := range s.Pools {
		if p.Replicas < 0 {
			return 0, nil, nil, o.err(ReasonInvalidSpec, fmt.Sprintf("pools[%d].replicas", i), fmt.Errorf("must be >= 0, got %d", p.Replicas))
		}
		switch p.Role {
		case blisv1alpha1.PoolPrefill:
			prefill += int(p.Replicas)
		case blisv1alpha1.PoolDecode:
			decode += int(p.Replicas)
		default:
			mono += int(p.Replicas)
		}
		total += int(p.Replicas)
		if (p.Role == "" || p.Role == blisv1alpha1.PoolMonolithic) && (p.GPU != "" || p.Engine != nil || p.LatencyModel != nil) {
			return 0, nil, nil, o.err(ReasonInvalidSpec, fmt.Sprintf("pools[%d].role", i), errors.New("gpu, engine and latencyModel overrides apply only to prefill and decode pools"))
		}
		if (p.MinReplicas != nil || p.MaxReplicas != nil) && s.Autoscaling == nil {
			notes = append(notes, fmt.Sprintf("pool %s: minReplicas/maxReplicas apply only with autoscaling; the pool keeps its %d replicas", p.Name, p.Replicas))
		}
	}
	switch {
	case total < 1:
		return 0, nil, nil, o.err(ReasonInvalidSpec, "pools", errors.New("the pools have no replicas"))
	case total > maxReplicas:
		return 0, nil, nil, o.err(ReasonInvalidSpec, "pools", fmt.Errorf("at most %d replicas in all, got %d", maxReplicas, total))
	case prefill+decode == 0 && s.KVTransfer != nil:
		return 0, nil, nil, o.err(ReasonInvalidSpec, "kvTransfer", errors.New("a KV transfer and its decider need prefill and decode pools"))
	case prefill+decode == 0:
		return total, nil, notes, nil
	case mono > 0:
		return 0, nil, nil, o.err(ReasonUnsupported, "pools", errors.New("monolithic pools beside prefill and decode pools are not simulated; requests the decider keeps local run on the decode pool"))
	case prefill == 0 || decode == 0:
		return 0, nil, nil, o.err(ReasonInvalidSpec, "pools", fmt.Errorf("disaggregation needs prefill and decode replicas, got %d prefill and %d decode", prefill, decode))
	}
	pd := &PDDoc{PrefillReplicas: prefill, Decider: "always", BandwidthGBps: 25}
	if t := s.KVTransfer; t != nil {
		if t.Decider != "" {
			pd.Decider = t.Decider
		}
		if t.BandwidthGBps != 0 {
			pd.BandwidthGBps = t.BandwidthGBps
		}
		if !(pd.BandwidthGBps > 0) || math.IsInf(pd.BandwidthGBps, 0) {
			return 0, nil, nil, o.err(ReasonInvalidSpec, "kvTransfer.bandwidthGBps", fmt.Errorf("must be > 0, got %v", t.BandwidthGBps))
		}
		if t.BaseLatencyUs < 0 || t.DirectDecodeThreshold < 0 {
			return 0, nil, nil, o.err(ReasonInvalidSpec, "kvTransfer", errors.New("baseLatencyUs and directDecodeThreshold must be >= 0"))
		}
		pd.BaseLatencyUs, pd.NonCachedTokens = t.BaseLatencyUs, t.DirectDecodeThreshold
	}
	return total, pd, notes, nil
}

// resolvePoolBounds maps the prefill and decode pools' minReplicas/maxReplicas (absent: the
// pool's replicas, a pool that does not scale) onto each role's bounds. The cluster's
// autoscaling minReplicas and maxReplicas must equal the sums, so the cluster-wide block and
// the pools never disagree; its delays, drain policy and cost apply to both pools.
func resolvePoolBounds(o owner, s *blisv1alpha1.SimulatedClusterSpec) (*PoolBoundsDoc, *PoolBoundsDoc, error) {
	pre, dec := &PoolBoundsDoc{}, &PoolBoundsDoc{}
	for i, p := range s.Pools {
		b := pre
		if p.Role == blisv1alpha1.PoolDecode {
			b = dec
		}
		lo, hi := int(p.Replicas), int(p.Replicas)
		if p.MinReplicas != nil {
			lo = int(*p.MinReplicas)
		}
		if p.MaxReplicas != nil {
			hi = int(*p.MaxReplicas)
		}
		if lo > int(p.Replicas) || int(p.Replicas) > hi {
			return nil, nil, o.err(ReasonInvalidSpec, fmt.Sprintf("pools[%d]", i), fmt.Errorf("replicas (%d) must be within [minReplicas, maxReplicas] = [%d, %d]", p.Replicas, lo, hi))
		}
		b.MinReplicas += lo
		b.MaxReplicas += hi
	}
	for _, r := range []struct {
		role string
		b    *PoolBoundsDoc
	}{{"prefill", pre}, {"decode", dec}} {
		if r.b.MinReplicas < 1 {
			return nil, nil, o.err(ReasonInvalidSpec, "pools", fmt.Errorf("the %s pools' minReplicas must add up to >= 1 (each pool keeps a ready replica), got %d", r.role, r.b.MinReplicas))
		}
	}
	a := s.Autoscaling
	if int(a.MinReplicas) != pre.MinReplicas+dec.MinReplicas {
		return nil, nil, o.err(ReasonInvalidSpec, "autoscaling.minReplicas", fmt.Errorf("on a disaggregated cluster must equal the sum of the prefill and decode pools' minReplicas (%d + %d); each pool is autoscaled within its own bounds, got %d",
			pre.MinReplicas, dec.MinReplicas, a.MinReplicas))
	}
	if int(a.MaxReplicas) != pre.MaxReplicas+dec.MaxReplicas {
		return nil, nil, o.err(ReasonInvalidSpec, "autoscaling.maxReplicas", fmt.Errorf("on a disaggregated cluster must equal the sum of the prefill and decode pools' maxReplicas (%d + %d); each pool is autoscaled within its own bounds, got %d",
			pre.MaxReplicas, dec.MaxReplicas, a.MaxReplicas))
	}
	return pre, dec, nil
}

// resolveTiers maps a cluster's KV tiers to the chain cpu -> filesystem -> object-store (each
// kind at most once, in that order whatever the list's; a chain may start below cpu). The
// first tier's offload threshold applies; a lower tier's is noted as unused.
func resolveTiers(o owner, tiers []blisv1alpha1.KVTierSpec) (*KVTierDoc, []string, error) {
	var byKind [3]*KVTierDoc
	var thresholds [3]bool
	for i, t := range tiers {
		field := fmt.Sprintf("kvTiers[%d]", i)
		k := slices.Index([]string{"cpu", "filesystem", "object-store"}, t.Tier)
		switch {
		case k < 0:
			return nil, nil, o.err(ReasonInvalidSpec, field+".tier", fmt.Errorf("must be cpu, filesystem or object-store, got %q", t.Tier))
		case byKind[k] != nil:
			return nil, nil, o.err(ReasonInvalidSpec, field, fmt.Errorf("at most one %s tier", t.Tier))
		case t.CapacityBlocks < 1 || t.CapacityBlocks > math.MaxInt32:
			return nil, nil, o.err(ReasonInvalidSpec, field+".capacityBlocks", fmt.Errorf("must be in [1, %d], got %d", math.MaxInt32, t.CapacityBlocks))
		case !(t.BandwidthGBps > 0) || math.IsInf(t.BandwidthGBps, 0):
			return nil, nil, o.err(ReasonInvalidSpec, field+".bandwidthGBps", fmt.Errorf("must be > 0, got %v", t.BandwidthGBps))
		case t.BaseLatencyUs < 0:
			return nil, nil, o.err(ReasonInvalidSpec, field+".baseLatencyUs", fmt.Errorf("must be >= 0, got %d", t.BaseLatencyUs))
		}
		d := &KVTierDoc{CapacityBlocks: t.CapacityBlocks, BandwidthGBps: t.BandwidthGBps, BaseLatencyUs: t.BaseLatencyUs}
		if k > 0 {
			d.Tier = t.Tier
		}
		if t.OffloadThreshold != nil {
			d.OffloadThreshold, thresholds[k] = *t.OffloadThreshold, true
		}
		byKind[k] = d
	}
	var head, last *KVTierDoc
	var notes []string
	for k, d := range byKind {
		switch {
		case d == nil:
			continue
		case head == nil:
			head = d
		default:
			last.Next = d
			if thresholds[k] {
				notes = append(notes, fmt.Sprintf("kvTiers: the %s tier's offloadThreshold is unused; the first tier's applies", d.Tier))
			}
			d.OffloadThreshold = 0
		}
		last = d
	}
	return head, notes, nil
}

// resolveAutoscaling checks a cluster's autoscaling block against its initial replicas.
func resolveAutoscaling(o owner, a *blisv1alpha1.AutoscalingSpec, replicas int) (*AutoscalingDoc, error) {
	switch {
	case a.MinReplicas < 1:
		return nil, o.err(ReasonInvalidSpec, "autoscaling.minReplicas", fmt.Errorf("must be >= 1 (one replica stays ready), got %d", a.MinReplicas))
	case a.MinReplicas > a.MaxReplicas:
		return nil, o.err(ReasonInvalidSpec, "autoscaling.minReplicas", fmt.Errorf("must not exceed maxReplicas (%d), got %d", a.MaxReplicas, a.MinReplicas))
	case replicas < int(a.MinReplicas) || replicas > int(a.MaxReplicas):
		return nil, o.err(ReasonInvalidSpec, "pools", fmt.Errorf("the pools' %d replicas must be within autoscaling's [%d, %d]", replicas, a.MinReplicas, a.MaxReplicas))
	case a.MaxReplicas > maxReplicas:
		return nil, o.err(ReasonInvalidSpec, "autoscaling.maxReplicas", fmt.Errorf("at most %d, got %d", maxReplicas, a.MaxReplicas))
	case a.ProvisioningDelayUs < 0 || a.ModelLoadDelayUs < 0 || a.WarmupDelayUs < 0:
		return nil, o.err(ReasonInvalidSpec, "autoscaling", errors.New("delays must be >= 0"))
	}
	return &AutoscalingDoc{
		MinReplicas: int(a.MinReplicas), MaxReplicas: int(a.MaxReplicas),
		ProvisioningDelayUs: a.ProvisioningDelayUs, ModelLoadDelayUs: a.ModelLoadDelayUs, WarmupDelayUs: a.WarmupDelayUs,
		DrainPolicy: a.DrainPolicy, CostPerReplicaHour: a.CostPerReplicaHour,
	}, nil
}

// withAutoscaleTemplate sets the autoscale template and parameters in an engine policy file.
func withAutoscaleTemplate(data []byte, template string, params map[string]float64) ([]byte, error) {
	b, err := policy.Parse(data)
	if err != nil {
		return nil, err
	}
	b.Autoscaler.Policy, b.Autoscaler.Params = template, params
	return yaml.Marshal(b)
}

// limits are a workload's own request count and horizon when the document carries them at top
// level (trace replays).
type limits struct {
	horizon, numRequests int64
}

// resolveWorkload renders a WorkloadSpec spec as a BLIS workload spec (expanding scenarios and
// ConfigMap files) or a trace replay with its data.
func resolveWorkload(o owner, s *blisv1alpha1.WorkloadSpecSpec, cms map[string]map[string]string, files map[string][]byte) (WorkloadDoc, owner, limits, error) {
	d, lim, err := resolveWorkloadContent(&o, s, cms, files)
	return d, o, lim, err
}

// resolveWorkloadContent is resolveWorkload; it moves *o to the ConfigMap key of a referenced
// BLIS file.
func resolveWorkloadContent(o *owner, s *blisv1alpha1.WorkloadSpecSpec, cms map[string]map[string]string, files map[string][]byte) (WorkloadDoc, limits, error) {
	var d WorkloadDoc
	var lim limits
	if err := checkWorkloadSources(*o, s); err != nil {
		return d, lim, err
	}
	if ref := s.BlisConfigMapRef; ref != nil {
		data, err := configMapKey(*o, "blisConfigMapRef", ref, cms)
		if err != nil {
			return d, lim, err
		}
		*o = owner{KindConfigMap, ref.Name, "data." + ref.Key}
		parsed, err := blisfile.ParseWorkload([]byte(data))
		if err != nil {
			return d, lim, o.err(ReasonInvalidSpec, "", err)
		}
		s = parsed
	}
	if s.Seed != nil {
		d.Seed = *s.Seed
	}
	switch {
	case s.Trace != nil:
		t, err := resolveTrace(*o, s.Trace, cms, files)
		if err != nil {
			return d, lim, err
		}
		d.Trace = t
		if s.Horizon != nil {
			lim.horizon = *s.Horizon
		}
		if s.NumRequests != nil {
			lim.numRequests = *s.NumRequests
		}
		if len(s.GoodputSloTargets) > 0 {
			d.SLOTargets = map[string]workload.SLOTargets{}
			for k, v := range s.GoodputSloTargets {
				if !contains(workload.SLOClasses, k) {
					return d, lim, o.err(ReasonInvalidSpec, "goodputSloTargets."+k, fmt.Errorf("unknown SLO class; valid: %s", strings.Join(workload.SLOClasses, ", ")))
				}
				d.SLOTargets[k] = workload.SLOTargets{TTFT: v.TTFT, ITL: v.ITL, E2E: v.E2E}
			}
		}
		return d, lim, nil
	case s.Scenario != "":
		spec, err := workload.Scenario(s.Scenario)
		if err != nil {
			return d, lim, o.err(ReasonInvalidSpec, "scenario", err)
		}
		if s.Seed != nil {
			spec.Seed = *s.Seed
		}
		if s.Horizon != nil {
			spec.Horizon = *s.Horizon
		}
		if s.NumRequests != nil {
			spec.NumRequests = *s.NumRequests
		}
		out, err := yaml.Marshal(spec)
		if err != nil {
			return d, lim, o.err(ReasonInvalidSpec, "scenario", err)
		}
		d.Spec = string(out)
		d.Seed = spec.Seed
		return d, lim, nil
	}
	if err := rejectDistributionFiles(*o, s); err != nil {
		return d, lim, err
	}
	out, err := blisfile.WorkloadToBLIS(s)
	if err != nil {
		return d, lim, o.err(ReasonInvalidSpec, "", err)
	}
	d.Spec = string(out)
	return d, lim, nil
}

// checkWorkloadSources applies the WorkloadSpec's one-source rules (the API server checks them
// too; the CLI reads manifests without it): exactly one of the generated-workload fields, a
// scenario, a trace and blisConfigMapRef; nothing else with blisConfigMapRef; only seed,
// horizon and numRequests with a scenario.
func checkWorkloadSources(o owner, s *blisv1alpha1.WorkloadSpecSpec) error {
	n := 0
	for _, set := range []bool{s.BlisConfigMapRef != nil, s.Trace != nil, s.Scenario != "",
		len(s.Clients) > 0 || len(s.Cohorts) > 0 || s.InferencePerf != nil || s.ServegenData != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return o.err(ReasonInvalidSpec, "", errors.New("give exactly one request source: clients/cohorts/inferencePerf/servegenData, scenario, trace, or blisConfigMapRef"))
	}
	shared := s.Version != "" || s.Category != "" || s.AggregateRate != nil || len(s.GoodputSloTargets) > 0
	if s.BlisConfigMapRef != nil && (shared || s.Seed != nil || s.NumRequests != nil || s.Horizon != nil) {
		return o.err(ReasonInvalidSpec, "blisConfigMapRef", errors.New("blisConfigMapRef replaces the whole spec; no other field may be set with it"))
	}
	if s.Scenario != "" && shared {
		return o.err(ReasonInvalidSpec, "scenario", errors.New("a scenario defines the workload; only seed, horizon and numRequests may override it"))
	}
	return nil
}

// rejectDistributionFiles refuses empirical distributions read from files: the file would live
// outside the document, so the run could not be reproduced from it.
func rejectDistributionFiles(o owner, s *blisv1alpha1.WorkloadSpecSpec) error {
	js, err := json.Marshal(s)
	if err != nil {
		return o.err(ReasonInvalidSpec, "", err)
	}
	var doc any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, &doc); err != nil {
		return o.err(ReasonInvalidSpec, "", err)
	}
	if path := findKey(doc, "", "file"); path != "" {
		return o.err(ReasonUnsupported, path, errors.New("empirical distribution files are not supported in Evaluations (the document must be self-contained)"))
	}
	return nil
}

// findKey returns the path of the first (in sorted key order) object member named key, or "".
func findKey(v any, path, key string) string {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if k == key {
				return p
			}
			if f := findKey(t[k], p, key); f != "" {
				return f
			}
		}
	case []any:
		for i, e := range t {
			if f := findKey(e, path+"["+strconv.Itoa(i)+"]", key); f != "" {
				return f
			}
		}
	}
	return ""
}

// resolveTrace loads a trace's data (and blis-v2 header) from ConfigMaps or files.
func resolveTrace(o owner, t *blisv1alpha1.TraceSource, cms map[string]map[string]string, files map[string][]byte) (*TraceDoc, error) {
	d := &TraceDoc{Format: t.Format}
	if t.Speedup != nil {
		d.Speedup = *t.Speedup
	}
	switch {
	case t.ConfigMapRef != nil && t.Path != "":
		return nil, o.err(ReasonInvalidSpec, "trace", errors.New("set exactly one of configMapRef and path"))
	case t.ConfigMapRef != nil:
		data, err := configMapKey(o, "trace.configMapRef", t.ConfigMapRef, cms)
		if err != nil {
			return nil, err
		}
		d.Data = data
		if d.Format == "" {
			d.Format = formatFromName(t.ConfigMapRef.Key)
		}
	case t.Path != "":
		if data, ok := files[t.Path]; ok {
			d.Data = string(data)
		} else {
			d.Path = t.Path
		}
		if d.Format == "" {
			d.Format = formatFromName(t.Path)
		}
	default:
		return nil, o.err(ReasonInvalidSpec, "trace", errors.New("set configMapRef or path"))
	}
	switch d.Format {
	case string(workload.TraceAzure), string(workload.TraceMooncake):
		if t.HeaderConfigMapRef != nil || t.HeaderPath != "" {
			return nil, o.err(ReasonInvalidSpec, "trace", fmt.Errorf("a header applies only to blis-v2 traces, not %s", d.Format))
		}
	case traceBLISv2:
		switch {
		case t.HeaderConfigMapRef != nil:
			h, err := configMapKey(o, "trace.headerConfigMapRef", t.HeaderConfigMapRef, cms)
			if err != nil {
				return nil, err
			}
			d.Header = h
		case t.HeaderPath != "":
			if data, ok := files[t.HeaderPath]; ok {
				d.Header = string(data)
			} else {
				d.HeaderPath = t.HeaderPath
			}
		default:
			return nil, o.err(ReasonInvalidSpec, "trace", errors.New("a blis-v2 trace needs headerConfigMapRef or headerPath"))
		}
	case "":
		return nil, o.err(ReasonInvalidSpec, "trace.format", errors.New("cannot tell the format from the file name; set format (azure, mooncake or blis-v2)"))
	default:
		return nil, o.err(ReasonInvalidSpec, "trace.format", fmt.Errorf("unknown trace format %q; valid: azure, mooncake, blis-v2", d.Format))
	}
	return d, nil
}

// traceBLISv2 is the trace format name of BLIS trace v2 (header plus CSV).
const traceBLISv2 = "blis-v2"

func formatFromName(name string) string {
	switch {
	case strings.HasSuffix(strings.ToLower(name), ".csv"):
		return string(workload.TraceAzure)
	case strings.HasSuffix(strings.ToLower(name), ".jsonl"), strings.HasSuffix(strings.ToLower(name), ".json"):
		return string(workload.TraceMooncake)
	}
	return ""
}

// configMapKey returns the value of a referenced ConfigMap key.
func configMapKey(o owner, field string, ref *blisv1alpha1.ConfigMapKeyReference, cms map[string]map[string]string) (string, error) {
	data, ok := cms[ref.Name]
	if !ok {
		return "", o.err(ReasonReferenceNotFound, field+".name", fmt.Errorf("ConfigMap %q not found", ref.Name))
	}
	v, ok := data[ref.Key]
	if !ok {
		return "", o.err(ReasonReferenceNotFound, field+".key", fmt.Errorf("ConfigMap %q has no key %q", ref.Name, ref.Key))
	}
	return v, nil
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
