/*
Copyright 2026 The blis-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package promote maps the project's resources onto the llm-d exporter's input
// (internal/engine/export): the policy and replica engine an Evaluation resolved, and from the
// SimulatedCluster the deployment topology the simulation document does not carry (replica
// pools with their roles and bounds, prefill/decode disaggregation, the CPU KV tier, the
// autoscaling bounds), plus the SLO class names of the workload.
//
// It is the one mapping behind `blis export -f`, the operator's promotion of a PolicyBundle or
// an Evaluation, and a PolicyStudy's promotion of its winner, so the three write the same
// configuration for the same objects.
package promote

import (
	"errors"
	"fmt"
	"sort"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/export"
	"github.com/inference-sim/blis-operator/internal/engine/model"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
	"github.com/inference-sim/blis-operator/internal/evaluation"
)

// Annotations of promotion on a PolicyBundle or an Evaluation.
const (
	// AnnotationPromote names the ConfigMap the object's llm-d configuration is written to.
	AnnotationPromote = blisv1alpha1.AnnotationPromote
	// AnnotationTarget selects the router release (export targets; default the exporter's).
	AnnotationTarget = "blis.inference-sim.io/promote-target"
	// AnnotationCluster names the SimulatedCluster a PolicyBundle is exported for (its model,
	// engine settings and pools).
	AnnotationCluster = "blis.inference-sim.io/promote-cluster"
	// AnnotationPromoted records the last promotion: "<configmap>@<content hash>".
	AnnotationPromoted = "blis.inference-sim.io/promoted"
	// AnnotationError records why the last promotion attempt was refused or failed; it is
	// removed by the next successful promotion.
	AnnotationError = "blis.inference-sim.io/promote-error"
)

// Labels of a promotion ConfigMap, naming its source.
const (
	// LabelSourceKind is the kind of the promoted object (PolicyBundle or Evaluation).
	LabelSourceKind = "blis.inference-sim.io/promoted-kind"
	// LabelSourceName is the promoted object's name (left out when it is not a valid label
	// value; AnnotationSource always has it).
	LabelSourceName = "blis.inference-sim.io/promoted-name"
	// AnnotationSource is "<Kind>/<name>" of the promoted object, on the ConfigMap (which
	// also carries AnnotationTarget: the router release it was written for).
	AnnotationSource = "blis.inference-sim.io/promoted-from"
)

// Input maps a resolved evaluation and the SimulatedCluster spec it resolved onto the
// exporter's input:
//
//   - the bundle is the document's policy and the engine is the document's replica instance
//     (model, GPU, vLLM settings after the simulator's resolution), so the export describes
//     what was simulated;
//   - from cluster (nil: one monolithic pool of the document's replicas): the pools with their
//     roles, replicas and bounds, and a prefill or decode pool's own GPU, engine settings and
//     latency model (the exporter resolves each such pool from the document's instance with
//     them, as the evaluation does); kvTransfer's decider, threshold, bandwidth and latency as
//     disaggregation; the cpu KV tier as CPU offload; the autoscaling bounds;
//   - the SLO class names of the document's generated workload (none for a trace replay or a
//     bundle resolved without a workload: objectives are then written for every class the
//     bundle names).
//
// A filesystem or object-store KV tier has no llm-d counterpart in the exporter: it travels in
// the cluster's LowerKVTiers and becomes a warning of the export, never dropped silently.
func Input(res *evaluation.Resolved, cluster *blisv1alpha1.SimulatedClusterSpec) (export.Input, error) {
	if res == nil {
		return export.Input{}, errors.New("promote: no resolved evaluation")
	}
	b, err := policy.Parse([]byte(res.Document.Policy))
	if err != nil {
		return export.Input{}, fmt.Errorf("promote: policy: %w", err)
	}
	inst := res.Document.Cluster.Instance
	mr, err := model.Resolve(inst)
	if err != nil {
		return export.Input{}, fmt.Errorf("promote: engine: %w", err)
	}
	c := export.Cluster{Model: inst.Model, GPU: inst.GPU, Engine: inst.Engine}
	if cluster != nil {
		if err := topology(&c, cluster); err != nil {
			return export.Input{}, err
		}
	}
	if len(c.Pools) == 0 {
		c.Pools = []export.Pool{{Name: export.DefaultPoolName, Role: export.RoleMonolithic, Replicas: int32(res.Document.Cluster.Replicas)}}
	}
	if c.SLOClasses, err = sloClasses(res.Document.Workload); err != nil {
		return export.Input{}, err
	}
	return export.Input{Bundle: b, Cluster: c, Resolved: mr}, nil
}

// Export maps res and cluster with Input and exports them with opts.
func Export(res *evaluation.Resolved, cluster *blisv1alpha1.SimulatedClusterSpec, opts export.Options) (*export.Result, error) {
	in, err := Input(res, cluster)
	if err != nil {
		return nil, err
	}
	return export.Export(in, opts)
}

// topology copies the cluster's pools (with a prefill or decode pool's own GPU, engine
// settings and latency model), disaggregation, KV tiers and autoscaling bounds.
func topology(c *export.Cluster, s *blisv1alpha1.SimulatedClusterSpec) error {
	for _, p := range s.Pools {
		role := string(p.Role)
		if role == "" {
			role = export.RoleMonolithic
		}
		ep := export.Pool{Name: p.Name, Role: role, Replicas: p.Replicas, GPU: p.GPU,
			MinReplicas: copyInt32(p.MinReplicas), MaxReplicas: copyInt32(p.MaxReplicas)}
		if e := p.Engine; e != nil {
			ep.Engine = &export.PoolEngine{TensorParallelSize: int(e.TensorParallelSize), MaxNumSeqs: int64(e.MaxNumSeqs),
				MaxNumBatchedTokens: int64(e.MaxNumBatchedTokens)}
			if e.GpuMemoryUtilization != nil {
				ep.Engine.GPUMemoryUtilization = *e.GpuMemoryUtilization
			}
			if e.TotalKVBlocks != nil {
				ep.Engine.TotalKVBlocks = *e.TotalKVBlocks
			}
		}
		if lm := p.LatencyModel; lm != nil {
			ep.LatencyModel = string(lm.Backend)
			if ep.LatencyModel == "" {
				ep.LatencyModel = string(blisv1alpha1.LatencyTrainedPhysics)
			}
		}
		c.Pools = append(c.Pools, ep)
	}
	if t := s.KVTransfer; t != nil {
		d := &export.Disaggregation{Decider: t.Decider, TransferBandwidthGBps: t.BandwidthGBps, TransferBaseLatencyUs: t.BaseLatencyUs}
		if d.Decider == "" {
			d.Decider = export.DeciderAlways
		}
		if d.Decider == export.DeciderPrefixThreshold {
			d.Threshold = int64(t.DirectDecodeThreshold)
		}
		c.Disaggregation = d
	}
	for i, t := range s.KVTiers {
		switch t.Tier {
		case "cpu":
		case "filesystem", "object-store":
			// No llm-d equivalent in the export (only a cpu tier, as vLLM's OffloadingConnector):
			// the exporter warns about it.
			c.LowerKVTiers = append(c.LowerKVTiers, t.Tier)
			continue
		default:
			return fmt.Errorf("promote: SimulatedCluster spec.kvTiers[%d]: unknown tier %q", i, t.Tier)
		}
		o := &export.KVOffload{CPUBlocks: t.CapacityBlocks, BandwidthGBps: t.BandwidthGBps, BaseLatencyUs: t.BaseLatencyUs}
		if t.OffloadThreshold != nil {
			v := *t.OffloadThreshold
			o.OffloadThreshold = &v
		}
		c.KVOffload = o
	}
	if a := s.Autoscaling; a != nil {
		c.Autoscaling = &export.Bounds{MinReplicas: a.MinReplicas, MaxReplicas: a.MaxReplicas}
	}
	return nil
}

func copyInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// standardClass is the class of a client that names none.
const standardClass = "standard"

// sloClasses returns the sorted SLO class names of a generated workload's clients and cohorts
// (a client without one is standard); nil for a trace or an empty workload.
func sloClasses(w evaluation.WorkloadDoc) ([]string, error) {
	if w.Spec == "" {
		return nil, nil
	}
	s, err := workload.ParseSpec([]byte(w.Spec))
	if err != nil {
		return nil, fmt.Errorf("promote: workload: %w", err)
	}
	seen := map[string]bool{}
	add := func(class string) {
		if class == "" {
			class = standardClass
		}
		seen[class] = true
	}
	for _, c := range s.Clients {
		add(c.SLOClass)
	}
	for _, c := range s.Cohorts {
		add(c.SLOClass)
	}
	if s.InferencePerf != nil {
		add("")
	}
	if len(seen) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Strings(out)
	return out, nil
}

// Bundle is a PolicyBundle to export for a SimulatedCluster, as `blis export -f` and the
// operator's PolicyBundle promotion read them.
type Bundle struct {
	// Policy is the bundle (required).
	Policy *blisv1alpha1.PolicyBundle
	// Cluster gives the engine settings and the topology (required).
	Cluster *blisv1alpha1.SimulatedCluster
	// Workload optionally gives the SLO class names the objectives are written for.
	Workload *blisv1alpha1.WorkloadSpec
	// ConfigMaps holds the data of the ConfigMaps the bundle (and workload) reference, by name.
	ConfigMaps map[string]map[string]string
}

// standInWorkload carries a bundle through resolution when no workload is given; its content
// is not exported.
var standInWorkload = blisv1alpha1.WorkloadSpecSpec{Scenario: "bursty-traffic"}

// ResolveBundle resolves b the way an Evaluation of the bundle on the cluster is resolved (the
// same policy conversion, engine validation and engine defaults), for Input. The replica
// engine is what every pool runs, so it is resolved on one monolithic replica: the topology
// (pools, kvTransfer, kvTiers, autoscaling) is taken from the cluster spec by Input, also for
// a disaggregated cluster. Without b.Workload the document's workload is left empty.
func ResolveBundle(b Bundle) (*evaluation.Resolved, error) {
	if b.Policy == nil || b.Cluster == nil {
		return nil, errors.New("promote: a PolicyBundle and a SimulatedCluster are needed")
	}
	cl := b.Cluster.DeepCopy()
	pool := "promote"
	if len(cl.Spec.Pools) > 0 {
		pool = cl.Spec.Pools[0].Name
	}
	cl.Spec.Pools = []blisv1alpha1.ReplicaPoolSpec{{Name: pool, Role: blisv1alpha1.PoolMonolithic, Replicas: 1}}
	cl.Spec.KVTransfer, cl.Spec.KVTiers, cl.Spec.Autoscaling = nil, nil, nil
	in := evaluation.Inputs{
		Name: b.Policy.Name,
		Spec: blisv1alpha1.EvaluationSpec{
			ClusterRef: &blisv1alpha1.LocalObjectReference{Name: cl.Name},
			PolicyRef:  &blisv1alpha1.LocalObjectReference{Name: b.Policy.Name},
		},
		Cluster:    cl,
		Policy:     b.Policy,
		ConfigMaps: b.ConfigMaps,
	}
	if b.Workload != nil {
		in.Workload = b.Workload
		in.Spec.WorkloadRef = &blisv1alpha1.LocalObjectReference{Name: b.Workload.Name}
	} else {
		in.Spec.Workload = standInWorkload.DeepCopy()
	}
	res, err := evaluation.Resolve(in)
	if err != nil {
		return nil, err
	}
	if b.Workload == nil {
		res.Document.Workload = evaluation.WorkloadDoc{}
	}
	return res, nil
}
