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

package promote

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/export"
	"github.com/inference-sim/blis-operator/internal/engine/model"
	"github.com/inference-sim/blis-operator/internal/evaluation"
)

// quickstart reads config/samples/quickstart.yaml.
func quickstart(t *testing.T) *evaluation.Manifests {
	t.Helper()
	path := filepath.Join("..", "..", "config", "samples", "quickstart.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m evaluation.Manifests
	if err := m.Add(path, data); err != nil {
		t.Fatal(err)
	}
	return &m
}

func TestInputFromEvaluation(t *testing.T) {
	m := quickstart(t)
	ev, err := m.Select("quickstart", false)
	if err != nil {
		t.Fatal(err)
	}
	in, err := m.Inputs(ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := evaluation.Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Input(res, &in.Cluster.Spec)
	if err != nil {
		t.Fatal(err)
	}
	c := got.Cluster
	if c.Model != "meta-llama/llama-3.1-8b-instruct" || c.GPU != "H100" || c.Engine.MaxNumSeqs != 256 || c.Engine.MaxNumBatchedTokens != 8192 {
		t.Fatalf("engine: %+v", c)
	}
	wantPools := []export.Pool{{Name: "serving", Role: export.RoleMonolithic, Replicas: 4}}
	if !reflect.DeepEqual(c.Pools, wantPools) {
		t.Fatalf("pools %+v, want %+v", c.Pools, wantPools)
	}
	if strings.Join(c.SLOClasses, ",") != "batch,critical" {
		t.Fatalf("SLO classes %v, want the workload's batch and critical", c.SLOClasses)
	}
	if got.Resolved == nil || got.Bundle == nil || got.Bundle.Routing.Policy != "weighted" || got.Bundle.Priority.Policy != "slo-based" {
		t.Fatalf("bundle %+v resolved %v", got.Bundle, got.Resolved)
	}
	r, err := export.Export(got, export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	objectives := string(r.File(export.FileObjectives))
	if !strings.Contains(objectives, "name: critical") || !strings.Contains(objectives, "name: batch") || strings.Contains(objectives, "name: sheddable") {
		t.Fatalf("objectives are not the workload's classes:\n%s", objectives)
	}

	// Without a cluster spec: one pool of the document's replicas.
	got, err = Input(res, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Cluster.Pools) != 1 || got.Cluster.Pools[0].Replicas != 4 || got.Cluster.Pools[0].Name != export.DefaultPoolName {
		t.Fatalf("default pool: %+v", got.Cluster.Pools)
	}
}

// pdCluster is a disaggregated cluster with a CPU tier and autoscaling bounds.
func pdCluster() *blisv1alpha1.SimulatedCluster {
	return &blisv1alpha1.SimulatedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "pd", Namespace: "default"},
		Spec: blisv1alpha1.SimulatedClusterSpec{
			Model:  blisv1alpha1.ModelSpec{Name: "meta-llama/llama-3.1-8b-instruct"},
			GPU:    "H100",
			Engine: blisv1alpha1.VLLMEngineSpec{MaxNumSeqs: 128, BlockSize: 32},
			Pools: []blisv1alpha1.ReplicaPoolSpec{
				{Name: "prefill", Role: blisv1alpha1.PoolPrefill, Replicas: 2},
				{Name: "decode", Role: blisv1alpha1.PoolDecode, Replicas: 6, MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](12)},
			},
			KVTransfer:  &blisv1alpha1.KVTransferSpec{BandwidthGBps: 25, BaseLatencyUs: 40, Decider: "prefix-threshold", DirectDecodeThreshold: 15},
			KVTiers:     []blisv1alpha1.KVTierSpec{{Tier: "cpu", CapacityBlocks: 50000, BandwidthGBps: 20, OffloadThreshold: ptr.To(0.9)}},
			Autoscaling: &blisv1alpha1.AutoscalingSpec{MinReplicas: 1, MaxReplicas: 8},
		},
	}
}

func TestResolveBundleDisaggregated(t *testing.T) {
	pb := &blisv1alpha1.PolicyBundle{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "default"},
		Spec: blisv1alpha1.PolicyBundleSpec{Routing: &blisv1alpha1.RoutingPolicy{Policy: "weighted",
			Scorers: []blisv1alpha1.Scorer{{Name: "queue-scorer", Weight: 2}, {Name: "prefix-cache-scorer", Weight: 3}}}}}
	cl := pdCluster()
	res, err := ResolveBundle(Bundle{Policy: pb, Cluster: cl})
	if err != nil {
		t.Fatal(err)
	}
	if res.Document.Workload.Spec != "" || res.Document.Workload.Trace != nil {
		t.Fatalf("the stand-in workload is kept: %+v", res.Document.Workload)
	}
	in, err := Input(res, &cl.Spec)
	if err != nil {
		t.Fatal(err)
	}
	c := in.Cluster
	want := export.Cluster{
		Model: "meta-llama/llama-3.1-8b-instruct", GPU: "H100", Engine: res.Document.Cluster.Instance.Engine,
		Pools: []export.Pool{
			{Name: "prefill", Role: export.RolePrefill, Replicas: 2},
			{Name: "decode", Role: export.RoleDecode, Replicas: 6, MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](12)},
		},
		Disaggregation: &export.Disaggregation{Decider: export.DeciderPrefixThreshold, Threshold: 15, TransferBandwidthGBps: 25, TransferBaseLatencyUs: 40},
		KVOffload:      &export.KVOffload{CPUBlocks: 50000, BandwidthGBps: 20, OffloadThreshold: ptr.To(0.9)},
		Autoscaling:    &export.Bounds{MinReplicas: 1, MaxReplicas: 8},
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("cluster\n got %+v\nwant %+v", c, want)
	}
	if c.Engine.MaxNumSeqs != 128 || c.Engine.BlockSize != 32 {
		t.Fatalf("engine settings not resolved from the cluster: %+v", c.Engine)
	}
	if c.SLOClasses != nil {
		t.Fatalf("SLO classes without a workload: %v", c.SLOClasses)
	}

	r, err := export.Export(in, export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	epp, servers := string(r.File(export.FileEPPConfig)), string(r.File(export.FileModelServers))
	for _, s := range []string{"disagg-profile-handler", "prefix-based-pd-decider", "nonCachedTokens: 16", "prefill-filter"} {
		if !strings.Contains(epp, s) {
			t.Errorf("epp-config lacks %q:\n%s", s, epp)
		}
	}
	for _, s := range []string{"OffloadingConnector", "NixlConnector", "llm-d.ai/role: prefill", "--block-size=32"} {
		if !strings.Contains(servers, s) {
			t.Errorf("model-servers lacks %q:\n%s", s, servers)
		}
	}

	// Deciders: the API default is always; never has no threshold.
	for decider, want := range map[string]*export.Disaggregation{
		"":      {Decider: export.DeciderAlways, TransferBandwidthGBps: 25, TransferBaseLatencyUs: 40},
		"never": {Decider: export.DeciderNever, TransferBandwidthGBps: 25, TransferBaseLatencyUs: 40},
	} {
		cl.Spec.KVTransfer.Decider = decider
		in, err := Input(res, &cl.Spec)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(in.Cluster.Disaggregation, want) {
			t.Errorf("decider %q: %+v, want %+v", decider, in.Cluster.Disaggregation, want)
		}
	}

	// A storage tier has no counterpart: the export warns about it.
	cl.Spec.KVTiers = append(cl.Spec.KVTiers, blisv1alpha1.KVTierSpec{Tier: "filesystem", CapacityBlocks: 10, BandwidthGBps: 1})
	got, err := Input(res, &cl.Spec)
	if err != nil || strings.Join(got.Cluster.LowerKVTiers, ",") != "filesystem" {
		t.Fatalf("filesystem tier: %v %+v", err, got.Cluster.LowerKVTiers)
	}
}

func TestResolveBundleWithWorkload(t *testing.T) {
	m := quickstart(t)
	b := Bundle{Policy: &m.Policies[0], Cluster: &m.Clusters[0], Workload: &m.Workloads[0]}
	res, err := ResolveBundle(b)
	if err != nil {
		t.Fatal(err)
	}
	in, err := Input(res, &b.Cluster.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(in.Cluster.SLOClasses, ",") != "batch,critical" {
		t.Fatalf("SLO classes %v", in.Cluster.SLOClasses)
	}
	if in.Cluster.Pools[0].Replicas != 4 {
		t.Fatalf("pools come from the cluster spec: %+v", in.Cluster.Pools)
	}

	// An invalid bundle is reported against the bundle.
	bad := m.Policies[0].DeepCopy()
	bad.Spec.Routing.Scorers[0].Name = "nope"
	b.Policy = bad
	if _, err := ResolveBundle(b); err == nil || !strings.Contains(err.Error(), "PolicyBundle "+bad.Name) {
		t.Fatalf("invalid bundle: %v", err)
	}
	if _, err := ResolveBundle(Bundle{Policy: bad}); err == nil {
		t.Fatal("no cluster accepted")
	}
}

func TestSLOClasses(t *testing.T) {
	got, err := sloClasses(evaluation.WorkloadDoc{Spec: "version: \"2\"\naggregate_rate: 1\nclients:\n- id: a\n  slo_class: batch\n  rate_fraction: 1\n  arrival: {process: poisson}\n" +
		"  input_distribution: {type: constant, params: {value: 10}}\n  output_distribution: {type: constant, params: {value: 10}}\n" +
		"- id: b\n  rate_fraction: 1\n  arrival: {process: poisson}\n  input_distribution: {type: constant, params: {value: 10}}\n  output_distribution: {type: constant, params: {value: 10}}\n"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []string{"batch", "standard"}) {
		t.Fatalf("classes %v", got)
	}
	if got, err := sloClasses(evaluation.WorkloadDoc{Trace: &evaluation.TraceDoc{}}); err != nil || got != nil {
		t.Fatalf("trace: %v %v", got, err)
	}
}

// pdSample reads the llama70b-pd sample: an inline 70B model, TP8 prefill replicas with their
// own step budget and TP4 decode replicas, the cluster fixing 60000 KV blocks.
func pdSample(t *testing.T) *blisv1alpha1.SimulatedCluster {
	t.Helper()
	path := filepath.Join("..", "..", "config", "samples", "blis_v1alpha1_simulatedcluster_pd.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m evaluation.Manifests
	if err := m.Add(path, data); err != nil {
		t.Fatal(err)
	}
	return &m.Clusters[0]
}

// serverArgs returns each model-server pool's vLLM arguments, by pool name.
func serverArgs(t *testing.T, r *export.Result) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range r.ModelServers {
		out[s.Name] = strings.Join(s.Args, " ") + " "
	}
	return out
}

// The prefill and decode pools' own engine settings reach their vLLM arguments through the
// promotion path, an Evaluation's and a PolicyBundle's alike, and are the settings the
// evaluation resolved for each pool.
func TestExportPoolOverrides(t *testing.T) {
	cl := pdSample(t)
	pb := &blisv1alpha1.PolicyBundle{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "default"},
		Spec: blisv1alpha1.PolicyBundleSpec{Routing: &blisv1alpha1.RoutingPolicy{Policy: "weighted",
			Scorers: []blisv1alpha1.Scorer{{Name: "queue-scorer", Weight: 1}}}}}
	fromBundle, err := ResolveBundle(Bundle{Policy: pb, Cluster: cl})
	if err != nil {
		t.Fatal(err)
	}
	in, err := Input(fromBundle, &cl.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if p := in.Cluster.Pools[0]; p.Engine == nil || *p.Engine != (export.PoolEngine{TensorParallelSize: 8, MaxNumBatchedTokens: 32768}) || p.GPU != "" || p.LatencyModel != "" {
		t.Fatalf("prefill pool %+v", p)
	}
	byBundle, err := export.Export(in, export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	args := serverArgs(t, byBundle)
	for pool, want := range map[string][]string{
		"prefill": {"--tensor-parallel-size=8 ", "--max-num-seqs=128 ", "--max-num-batched-tokens=32768 ", "--num-gpu-blocks-override=60000 "},
		"decode":  {"--tensor-parallel-size=4 ", "--max-num-seqs=128 ", "--max-num-batched-tokens=16384 ", "--num-gpu-blocks-override=60000 "},
	} {
		for _, w := range want {
			if !strings.Contains(args[pool], w) {
				t.Errorf("%s lacks %s: %s", pool, w, args[pool])
			}
		}
	}

	// An Evaluation of the same cluster exports the same model servers, and the prefill
	// pool's arguments are those of the instance the evaluation resolved for it.
	ev := evaluation.Inputs{Name: "pd", Cluster: cl, Policy: pb, Spec: blisv1alpha1.EvaluationSpec{
		ClusterRef: &blisv1alpha1.LocalObjectReference{Name: cl.Name}, PolicyRef: &blisv1alpha1.LocalObjectReference{Name: pb.Name},
		Workload: standInWorkload.DeepCopy()}}
	res, err := evaluation.Resolve(ev)
	if err != nil {
		t.Fatal(err)
	}
	byEvaluation, err := Export(res, &cl.Spec, export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := serverArgs(t, byEvaluation); !reflect.DeepEqual(got, args) {
		t.Fatalf("an Evaluation's model servers %v differ from the bundle's %v", got, args)
	}
	pd := res.Document.Cluster.PD
	if pd == nil || pd.Prefill == nil || pd.Decode != nil {
		t.Fatalf("the evaluation resolved no own prefill instance: %+v", pd)
	}
	simulated, err := model.Resolve(*pd.Prefill)
	if err != nil {
		t.Fatal(err)
	}
	e := simulated.Engine
	for _, w := range []string{fmt.Sprintf("--tensor-parallel-size=%d ", e.TensorParallelSize), fmt.Sprintf("--max-num-batched-tokens=%d ", e.MaxNumBatchedTokens),
		fmt.Sprintf("--max-model-len=%d ", e.MaxModelLen), fmt.Sprintf("--num-gpu-blocks-override=%d ", e.TotalKVBlocks)} {
		if !strings.Contains(args["prefill"], w) {
			t.Errorf("prefill lacks the simulated %s: %s", w, args["prefill"])
		}
	}
	if w := string(byEvaluation.File(export.FileWarnings)); strings.Contains(w, "pools (note)") {
		t.Errorf("notes about pools that keep the cluster's GPU and latency model:\n%s", w)
	}

	// A pool's GPU and latency model are notes; its memory fraction replaces the fixed blocks.
	cl.Spec.Pools[1].GPU = "A100-80"
	cl.Spec.Pools[1].Engine = &blisv1alpha1.PoolEngineSpec{GpuMemoryUtilization: ptr.To(0.95)}
	cl.Spec.Pools[1].LatencyModel = &blisv1alpha1.LatencyModelSpec{}
	in, err = Input(fromBundle, &cl.Spec)
	if err != nil {
		t.Fatal(err)
	}
	r, err := export.Export(in, export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	decode := serverArgs(t, r)["decode"]
	if !strings.Contains(decode, "--gpu-memory-utilization=0.95 ") || strings.Contains(decode, "--num-gpu-blocks-override") {
		t.Errorf("decode: %s", decode)
	}
	warnings := string(r.File(export.FileWarnings))
	for _, w := range []string{"decode: runs on A100-80 GPUs (the cluster's are H100)", "decode: latencyModel trained-physics sets the simulated step times only"} {
		if !strings.Contains(warnings, w) {
			t.Errorf("warnings lack %q:\n%s", w, warnings)
		}
	}
}
