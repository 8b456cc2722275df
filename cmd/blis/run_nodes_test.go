package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// autoscaleSummary is the part of the autoscaler block the node and lifecycle tests read.
type autoscaleSummary struct {
	Evaluations    int64   `json:"evaluations"`
	ScaleUps       int64   `json:"scale_ups"`
	ScaleDowns     int64   `json:"scale_downs"`
	PeakReplicas   int32   `json:"peak_replicas"`
	ReplicaSeconds float64 `json:"replica_seconds"`
	Pools          []struct {
		Pool         string `json:"pool"`
		PeakReplicas int32  `json:"peak_replicas"`
	} `json:"pools"`
	Nodes *struct {
		Provisioned int64   `json:"nodes_provisioned"`
		Released    int64   `json:"nodes_released"`
		Capped      int64   `json:"capped_replicas"`
		PeakNodes   int32   `json:"peak_nodes"`
		NodeSeconds float64 `json:"node_seconds"`
		Cost        float64 `json:"node_cost"`
	} `json:"nodes"`
}

// runAutoscaled runs blis with args and returns the metrics blocks and the autoscaler summary.
func runAutoscaled(t *testing.T, args ...string) (string, autoscaleSummary) {
	t.Helper()
	out, err := runCLI(t, append([]string{"--model", testModel, "--seed", "5"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(out, "=== Autoscaler ===\n")
	if len(parts) != 2 {
		t.Fatalf("want one autoscaler block, got output %q", out)
	}
	var st autoscaleSummary
	if err := json.Unmarshal([]byte(parts[1]), &st); err != nil {
		t.Fatal(err)
	}
	return parts[0], st
}

// --node-pool caps an autoscaled cluster at what its nodes hold: two one-GPU nodes of the
// model's H100 hold two replicas, however many the autoscaler wants (a tiny target
// utilization asks for all four as soon as a few requests are in flight).
func TestRunNodePoolFlags(t *testing.T) {
	_, st := runAutoscaled(t, "--num-instances", "1", "--max-replicas", "4", "--autoscale-policy", "target-utilization", "--target-utilization", "0.01",
		"--autoscale-interval-us", "500000", "--num-requests", "200", "--rate", "20",
		"--node-pool", "name=h100,gpu=H100,gpus-per-node=1,max-nodes=2,provisioning-delay-us=2000000,cost-per-hour=36")
	n := st.Nodes
	if n == nil {
		t.Fatal("no node summary in the autoscaler block")
	}
	if st.PeakReplicas != 2 || n.PeakNodes != 2 || n.Provisioned == 0 || n.Capped == 0 || n.Cost <= 0 {
		t.Errorf("peak replicas %d, nodes %+v: want two replicas on two nodes, with capped scale-ups", st.PeakReplicas, *n)
	}
	if want := n.NodeSeconds / 3600 * 36; n.Cost < want-1e-9 || n.Cost > want+1e-9 {
		t.Errorf("node cost %v, want %v", n.Cost, want)
	}
}

// With prefill and decode pools each --node-pool holds the replicas of the pool running its
// GPU: the decode pool on A100-80 is capped by its one-GPU node pool of two nodes.
func TestRunNodePoolFlagsDisaggregated(t *testing.T) {
	_, st := runAutoscaled(t, "--num-instances", "2", "--prefill-instances", "1",
		"--decode-hardware", "A100-80", "--decode-latency-model", "roofline",
		"--prefill-max-replicas", "2", "--decode-max-replicas", "4", "--autoscale-policy", "target-utilization", "--target-utilization", "0.01",
		"--autoscale-interval-us", "500000", "--num-requests", "100", "--rate", "20",
		"--node-pool", "name=h100,gpu=H100,gpus-per-node=2,max-nodes=1",
		"--node-pool", "name=a100,gpu=A100-80,gpus-per-node=1,max-nodes=2,provisioning-delay-us=1000000")
	if st.Nodes == nil || len(st.Pools) != 2 {
		t.Fatalf("autoscaler summary %+v", st)
	}
	if p, d := st.Pools[0], st.Pools[1]; p.PeakReplicas > 2 || d.PeakReplicas != 2 {
		t.Errorf("peak replicas: prefill %d, decode %d; want the decode pool at its two A100 nodes", p.PeakReplicas, d.PeakReplicas)
	}
	if n := st.Nodes; n.PeakNodes != 3 || n.Provisioned == 0 || n.Capped == 0 {
		t.Errorf("nodes %+v: want one H100 node and two A100 nodes at the peak, with capped scale-ups", *n)
	}
}

// --loading-delay-us without autoscaling cold-starts the fixed replicas: the one request
// arrives at 1 s (one request per second), waits for the 2 s load to end, and gets its first
// token 1 s later than on warm replicas; the autoscaler summary shows no scaling.
// --warm-start keeps them ready.
func TestRunLoadingDelayColdStart(t *testing.T) {
	args := []string{"--model", testModel, "--num-instances", "2", "--num-requests", "1", "--seed", "5"}
	warmOut, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(warmOut, "=== Autoscaler ===") {
		t.Fatal("a run without autoscaling or a lifecycle printed an autoscaler block")
	}
	warm := splitBlocks(t, warmOut)
	blocks, st := runAutoscaled(t, append(args[2:], "--loading-delay-us", "2000000")...)
	cold := splitBlocks(t, blocks)
	w, c := warm[len(warm)-1], cold[len(cold)-1]
	if d := c.TTFTMeanMs - w.TTFTMeanMs; d < 999.999 || d > 1000.001 {
		t.Errorf("cold TTFT %v ms, warm %v ms: want the rest of the 2 s load (1 s) between them", c.TTFTMeanMs, w.TTFTMeanMs)
	}
	if st.ScaleUps+st.ScaleDowns != 0 || st.PeakReplicas != 2 || st.ReplicaSeconds <= 0 {
		t.Errorf("fixed cold start summary %+v", st)
	}
	same, err := runCLI(t, append(args, "--loading-delay-us", "2000000", "--warm-start")...)
	if err != nil {
		t.Fatal(err)
	}
	if same != warmOut {
		t.Error("--warm-start changed the output of a run without autoscaling")
	}
}

// The lifecycle's cold start applies to autoscaled runs too: the initial replica loads for
// 1.5 s, so the request arriving at 1 s waits 0.5 s.
func TestRunLoadingDelayAutoscaled(t *testing.T) {
	base := []string{"--num-instances", "1", "--max-replicas", "2", "--num-requests", "1"}
	warm, _ := runAutoscaled(t, append(base, "--loading-delay-us", "1500000", "--warm-start")...)
	cold, _ := runAutoscaled(t, append(base, "--loading-delay-us", "1500000")...)
	w, c := splitBlocks(t, warm), splitBlocks(t, cold)
	if d := c[len(c)-1].TTFTMeanMs - w[len(w)-1].TTFTMeanMs; d < 499.999 || d > 500.001 {
		t.Errorf("cold TTFT %v ms vs warm %v ms: want the rest of the 1.5 s load (0.5 s) between them", c[len(c)-1].TTFTMeanMs, w[len(w)-1].TTFTMeanMs)
	}
}

func TestRunNodeFlagErrors(t *testing.T) {
	h100 := "name=h,gpu=H100,gpus-per-node=1,max-nodes=2"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--node-pool", h100}, "--node-pool needs autoscaling"},
		{[]string{"--max-replicas", "2", "--node-pool", "gpu=H100,gpus-per-node=1"}, "max-nodes is required"},
		{[]string{"--max-replicas", "2", "--node-pool", h100 + ",zone=a"}, `"zone=a" is not key=value`},
		{[]string{"--max-replicas", "2", "--node-pool", "gpu=H100,gpus-per-node=x,max-nodes=1"}, "gpus-per-node"},
		{[]string{"--max-replicas", "2", "--node-pool", "gpu=A100-80,gpus-per-node=1,max-nodes=2"}, `GPU "A100-80", but the replicas run on H100`},
		{[]string{"--max-replicas", "2", "--node-pool", "gpu=H100,gpus-per-node=1,max-nodes=2,initial-nodes=0"}, "initial nodes hold 0 replicas"},
		{[]string{"--num-instances", "2", "--prefill-instances", "1", "--decode-hardware", "A100-80", "--decode-latency-model", "roofline",
			"--decode-max-replicas", "2", "--node-pool", h100}, "no node pool has the GPU of the decode pool's replicas (A100-80)"},
		{[]string{"--loading-delay-us", "1", "--model-load-delay-us", "1", "--max-replicas", "2"}, "give one"},
		{[]string{"--loading-delay-us", "-1"}, "--loading-delay-us must be >= 0"},
		{[]string{"--num-instances", "2", "--prefill-instances", "1", "--loading-delay-us", "1000"}, "add --warm-start"},
		{[]string{"--num-instances", "2", "--prefill-instances", "1", "--decode-max-replicas", "3", "--loading-delay-us", "1000"}, "add --warm-start"},
	} {
		_, err := runCLI(t, append([]string{"--model", testModel, "--num-requests", "5"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}
