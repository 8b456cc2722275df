package sim

import (
	"math"
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

// nodeCluster is autoscaledCluster with node capacity: one-GPU replicas on nodes of gpus GPUs,
// one node up at first, at most maxNodes, 10 s to provision a node, 2 per node hour.
func nodeCluster(gpus, maxNodes int32) *Config {
	cfg := autoscaledCluster(policy.AutoscaleSpec{Template: policy.AutoscaleThreshold}, DrainWait)
	cfg.Options.CheckInvariants = true
	cfg.Autoscale.Nodes = &NodesConfig{GPUsPerReplica: 1, Pools: []NodePoolConfig{{
		Name: "gpu", GPUsPerNode: gpus, InitialNodes: 1, MinNodes: 1, MaxNodes: maxNodes,
		Provisioning: Delay{MeanUs: 10 * sec}, CostPerNodeHour: 2,
	}}}
	return cfg
}

// The burst's first new replica needs a new node: it is ready the node's 10 s provisioning
// later than without node capacity. With room on the first node it is not delayed.
func TestNodeProvisioningDelaysScaleUp(t *testing.T) {
	free, freeReady, _ := runWatching(t, autoscaledCluster(policy.AutoscaleSpec{Template: policy.AutoscaleThreshold}, DrainWait), burstWorkload())
	res, readyAt, bad := runWatching(t, nodeCluster(1, 4), burstWorkload())
	if bad {
		t.Fatal("a request reached a replica that was not ready")
	}
	if free.Autoscale.Actions[0].Time != res.Autoscale.Actions[0].Time {
		t.Fatalf("first decision at %d vs %d", res.Autoscale.Actions[0].Time, free.Autoscale.Actions[0].Time)
	}
	if readyAt[1]-freeReady[1] != 10*sec {
		t.Errorf("slot 1 ready at %d with a node to provision, %d without: want 10 s apart", readyAt[1], freeReady[1])
	}
	ns := res.Autoscale.Nodes
	if ns == nil || ns.Provisioned == 0 || ns.Released == 0 || ns.Capped != 0 || ns.PeakNodes < 2 {
		t.Fatalf("node stats %+v", ns)
	}
	end := float64(res.End) / 1e6
	// The minimum node is up for the whole run; the others for part of it.
	if ns.NodeSeconds <= end || ns.NodeSeconds >= float64(ns.PeakNodes)*end {
		t.Errorf("node seconds %.1f outside (%.0f, %.0f)", ns.NodeSeconds, end, float64(ns.PeakNodes)*end)
	}
	if want := ns.NodeSeconds / 3600 * 2; math.Abs(ns.Cost-want) > 1e-9 {
		t.Errorf("node cost %v, want %v", ns.Cost, want)
	}
	// Nodes are released once empty: some of the burst's nodes are gone by the end.
	if ns.Released == 0 || ns.Released > ns.Provisioned {
		t.Errorf("provisioned %d nodes, released %d", ns.Provisioned, ns.Released)
	}

	// Four GPUs per node: the replicas fit on the initial node, no node is provisioned.
	roomy, roomyReady, _ := runWatching(t, nodeCluster(4, 4), burstWorkload())
	if roomyReady[1] != freeReady[1] || roomy.Autoscale.Nodes.Provisioned != 0 || roomy.Autoscale.Nodes.PeakNodes != 1 {
		t.Errorf("room on the first node: slot 1 ready at %d (want %d), nodes %+v", roomyReady[1], freeReady[1], roomy.Autoscale.Nodes)
	}
}

// maxNodes caps the replicas: two one-GPU nodes hold two replicas, and the scale-ups that
// wanted more are counted as capped.
func TestNodeMaxCapsReplicas(t *testing.T) {
	res, _, _ := runWatching(t, nodeCluster(1, 2), burstWorkload())
	as := res.Autoscale
	if as.PeakActive != 2 {
		t.Errorf("peak active %d, want 2 (two one-GPU nodes)", as.PeakActive)
	}
	if as.Nodes.Capped == 0 || as.Nodes.PeakNodes != 2 {
		t.Errorf("node stats %+v: want capped scale-ups and 2 nodes at the peak", as.Nodes)
	}
	for _, a := range as.Actions {
		if a.To > 2 {
			t.Errorf("action %+v beyond the nodes' capacity", a)
		}
	}
}

func TestNodesValidation(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*NodesConfig)
		want   string
	}{
		{func(n *NodesConfig) { n.GPUsPerReplica = 2 }, "cannot hold a replica"},
		{func(n *NodesConfig) { n.Pools[0].InitialNodes = 0; n.Pools[0].MinNodes = 0 }, "the initial nodes hold 0 replicas"},
		{func(n *NodesConfig) { n.Pools[0].MinNodes = 3 }, "min nodes"},
		{func(n *NodesConfig) { n.Pools = nil }, "at least one node pool"},
	} {
		cfg := nodeCluster(1, 4)
		tc.mutate(cfg.Autoscale.Nodes)
		err := cfg.Autoscale.Validate(4)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

// Node conservation at the end of a run: the nodes on are the initial ones plus those
// provisioned less those released, each holds exactly the replicas placed on it, and no
// active replica is without a node.
func TestNodeConservation(t *testing.T) {
	for _, gpus := range []int32{1, 2, 3} {
		cfg := nodeCluster(gpus, 3)
		s := mustSim(t, cfg, &sliceSource{reqs: burstWorkload()})
		if err := s.run(); err != nil {
			t.Fatal(err)
		}
		ns := s.as.nodes
		if err := ns.check(s.insts); err != nil {
			t.Fatalf("%d GPUs per node: %v", gpus, err)
		}
		st := s.res.Autoscale.Nodes
		if on := int64(ns.on()); on != 1+st.Provisioned-st.Released {
			t.Errorf("%d GPUs per node: %d nodes on, want 1 + %d provisioned - %d released", gpus, on, st.Provisioned, st.Released)
		}
		var placed int32
		for j := range ns.nodes {
			if ns.nodes[j].on {
				placed += ns.nodes[j].replicas
			}
		}
		var active int32
		for i := range s.insts {
			if s.insts[i].life != lifeOff {
				active++
			}
		}
		if placed != active {
			t.Errorf("%d GPUs per node: %d replicas placed on nodes, %d active", gpus, placed, active)
		}
	}
}
