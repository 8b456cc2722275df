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
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/export"
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

	// A storage tier has no counterpart: an error naming the field.
	cl.Spec.KVTiers = append(cl.Spec.KVTiers, blisv1alpha1.KVTierSpec{Tier: "filesystem", CapacityBlocks: 10, BandwidthGBps: 1})
	if _, err := Input(res, &cl.Spec); err == nil || !strings.Contains(err.Error(), "kvTiers[1]") {
		t.Fatalf("filesystem tier: %v", err)
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
