package evaluation

import (
	"context"
	"errors"
	"strings"
	"testing"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// The bundle's nodePools give an autoscaled cluster node capacity: one-GPU replicas of the
// H100 cluster on nodes of the pool, provisioned with the pool's delay and priced at its rate.
func TestEvaluationNodePools(t *testing.T) {
	in := autoscaledInputs(t, "threshold", "wait")
	p := in.Policy.DeepCopy()
	p.Spec.NodePools = []blisv1alpha1.NodePool{{
		Name: "h100", GpuType: "H100", GpusPerNode: 2, GpuMemoryGib: 80,
		InitialNodes: 1, MinNodes: 1, MaxNodes: 1,
		ProvisioningDelay: &blisv1alpha1.DelaySpec{Mean: 30}, CostPerHour: 36,
	}}
	in.Policy = p
	r := mustResolve(t, in)
	for _, n := range r.Notes {
		if strings.Contains(n, "nodePools") {
			t.Errorf("note %q: node pools are simulated", n)
		}
	}
	nc := r.plan.autoscale.Nodes
	if nc == nil || nc.GPUsPerReplica != 1 || len(nc.Pools) != 1 {
		t.Fatalf("nodes %+v", nc)
	}
	if np := nc.Pools[0]; np.GPUsPerNode != 2 || np.MaxNodes != 1 || np.Provisioning.MeanUs != 30_000_000 || np.CostPerNodeHour != 36 {
		t.Fatalf("node pool %+v", np)
	}
	res, err := Run(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if st := res.Status(); st.Metrics == nil || st.Metrics.ReplicaSeconds <= 0 {
		t.Fatalf("status metrics %+v", st.Metrics)
	}

	// A pool of another GPU is refused, naming the field.
	p.Spec.NodePools[0].GpuType = "A100-80"
	_, err = Resolve(in)
	var re *Error
	if !errors.As(err, &re) || re.Kind != KindPolicyBundle || re.Field != "spec.nodePools[0].gpuType" || !strings.Contains(err.Error(), "H100") {
		t.Fatalf("mismatched gpuType: %v", err)
	}
	// A node smaller than a replica is refused when the document is loaded.
	p.Spec.NodePools[0].GpuType = "H100"
	c := in.Cluster.DeepCopy()
	c.Spec.Engine.TensorParallelSize = 4
	in.Cluster = c
	if _, err := Resolve(in); err == nil || !strings.Contains(err.Error(), "cannot hold a replica of 4 GPUs") {
		t.Fatalf("two-GPU nodes for four-GPU replicas: %v", err)
	}
}

// With prefill and decode pools, each node pool holds the replicas of the pool whose GPU it
// has: H100 nodes for the prefill pool, A100 nodes for the decode pool on A100-80. A pool
// whose GPU no node pool has is refused, naming nodePools.
func TestEvaluationNodePoolsDisaggregated(t *testing.T) {
	in := autoscaledInputs(t, "threshold", "wait")
	one, two := int32(1), int32(2)
	c := in.Cluster.DeepCopy()
	c.Spec.Pools = []blisv1alpha1.ReplicaPoolSpec{
		{Name: "d", Role: blisv1alpha1.PoolDecode, Replicas: 1, MinReplicas: &one, MaxReplicas: &two, GPU: "A100-80",
			LatencyModel: &blisv1alpha1.LatencyModelSpec{Backend: blisv1alpha1.LatencyRoofline}},
		{Name: "p", Role: blisv1alpha1.PoolPrefill, Replicas: 1, MinReplicas: &one, MaxReplicas: &two},
	}
	c.Spec.Autoscaling.MinReplicas, c.Spec.Autoscaling.MaxReplicas = 2, 4
	in.Cluster = c
	p := in.Policy.DeepCopy()
	p.Spec.NodePools = []blisv1alpha1.NodePool{
		{Name: "a100", GpuType: "A100-80", GpusPerNode: 1, InitialNodes: 1, MinNodes: 1, MaxNodes: 2,
			ProvisioningDelay: &blisv1alpha1.DelaySpec{Mean: 20}, CostPerHour: 10},
		{Name: "h100", GpuType: "H100", GpusPerNode: 2, InitialNodes: 1, MinNodes: 1, MaxNodes: 1, CostPerHour: 30},
	}
	in.Policy = p
	r := mustResolve(t, in)
	for _, n := range r.Notes {
		if strings.Contains(n, "nodePools") {
			t.Errorf("note %q: node pools are simulated", n)
		}
	}
	nc := r.plan.autoscale.Nodes
	if nc == nil || nc.GPUsPerReplica != 1 || nc.PrefillGPUsPerReplica != 1 || len(nc.Pools) != 2 {
		t.Fatalf("nodes %+v", nc)
	}
	if a, h := nc.Pools[0], nc.Pools[1]; a.Role != "decode" || h.Role != "prefill" || a.Provisioning.MeanUs != 20_000_000 || a.MaxNodes != 2 {
		t.Fatalf("node pools %+v", nc.Pools)
	}
	res, err := Run(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if st := res.Status(); st.Metrics == nil || st.Metrics.CompletedRequests == 0 {
		t.Fatalf("status metrics %+v", st.Metrics)
	}

	// Without a node pool of the decode pool's GPU the bundle is refused, naming the field.
	p.Spec.NodePools = p.Spec.NodePools[1:]
	_, err = Resolve(in)
	var re *Error
	if !errors.As(err, &re) || re.Kind != KindPolicyBundle || re.Field != "spec.nodePools" || !strings.Contains(err.Error(), "A100-80") || !strings.Contains(err.Error(), "pools[0].gpu") {
		t.Fatalf("no node pool for the decode GPU: %v", err)
	}
	// A node pool of neither pool's GPU is refused, naming its gpuType.
	p.Spec.NodePools = append(p.Spec.NodePools, blisv1alpha1.NodePool{Name: "l40", GpuType: "L40S", GpusPerNode: 1, InitialNodes: 1, MaxNodes: 1})
	_, err = Resolve(in)
	if !errors.As(err, &re) || re.Field != "spec.nodePools[1].gpuType" {
		t.Fatalf("node pool of another GPU: %v", err)
	}
}
