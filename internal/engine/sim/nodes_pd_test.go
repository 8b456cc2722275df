package sim

import (
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

// pdNodeCluster is pdAutoscaled with node capacity: the prefill pool's two-GPU replicas on one
// six-GPU node (room for its three), the decode pool's one-GPU replicas on one-GPU nodes, one
// up at first and at most three, 10 s to provision one.
func pdNodeCluster() *Config {
	cfg := pdAutoscaled(policy.AutoscaleSpec{Template: policy.AutoscaleThreshold}, DrainWait)
	cfg.Autoscale.Nodes = &NodesConfig{GPUsPerReplica: 1, PrefillGPUsPerReplica: 2, Pools: []NodePoolConfig{
		{Name: "decode-nodes", Role: "decode", GPUsPerNode: 1, InitialNodes: 1, MinNodes: 1, MaxNodes: 3, Provisioning: Delay{MeanUs: 10 * sec}, CostPerNodeHour: 1},
		{Name: "prefill-nodes", Role: "prefill", GPUsPerNode: 6, InitialNodes: 1, MinNodes: 1, MaxNodes: 1, CostPerNodeHour: 3},
	}}
	return cfg
}

// A decode scale-up needs a new node of the decode node pool: the new decode replica is ready
// the node's 10 s later than without node capacity, while the prefill pool's scale-ups find
// room on its node. The node invariants (every replica on a node of its pool's role, free GPUs
// matching the replicas placed) hold after every evaluation.
func TestPDNodeProvisioningDelaysDecodeScaleUp(t *testing.T) {
	reqs := pdBurst(20)
	free, freeReady, _ := runWatching(t, pdAutoscaled(policy.AutoscaleSpec{Template: policy.AutoscaleThreshold}, DrainWait), reqs)
	res, readyAt, bad := runWatching(t, pdNodeCluster(), reqs)
	if bad {
		t.Fatal("a request reached a replica that was not ready")
	}
	first := func(r *Result, pool string) int64 {
		for _, a := range r.Autoscale.Actions {
			if a.Pool == pool && a.To > a.From {
				return a.Time
			}
		}
		return -1
	}
	if f, n := first(free, "decode"), first(res, "decode"); f < 0 || f != n {
		t.Fatalf("first decode scale-up at %d with nodes, %d without", n, f)
	}
	// Slot 4 is the decode pool's first new replica; slot 1 the prefill pool's.
	if freeReady[4] < 0 || readyAt[4]-freeReady[4] != 10*sec {
		t.Errorf("decode slot 4 ready at %d with a node to provision, %d without: want 10 s apart", readyAt[4], freeReady[4])
	}
	if first(free, "prefill") == first(res, "prefill") && readyAt[1] != freeReady[1] {
		t.Errorf("prefill slot 1 ready at %d with room on its node, %d without", readyAt[1], freeReady[1])
	}
	ns := res.Autoscale.Nodes
	if ns == nil || ns.Provisioned == 0 || ns.Released == 0 || ns.Released > ns.Provisioned || ns.PeakNodes < 3 || ns.PeakNodes > 4 {
		t.Fatalf("node stats %+v: want decode nodes provisioned and released, 3 or 4 nodes at the peak", ns)
	}
	for _, a := range res.Autoscale.Actions {
		if a.Pool == "decode" && a.To > 3 {
			t.Errorf("decode action %+v beyond the decode nodes' capacity", a)
		}
	}
	if res.PD.Transfers != int64(len(reqs)) {
		t.Errorf("%d transfers of %d requests", res.PD.Transfers, len(reqs))
	}
}

// The node counts stay consistent: nodes on at the end are the initial ones plus those
// provisioned minus those released.
func TestPDNodeCountsConsistent(t *testing.T) {
	s := mustSim(t, pdNodeCluster(), &sliceSource{reqs: pdBurst(20)})
	if err := s.run(); err != nil {
		t.Fatal(err)
	}
	ns := s.as.nodes
	var on int32
	for _, nd := range ns.nodes {
		if nd.on {
			on++
		}
	}
	if got := int64(on); got != 2+ns.stats.Provisioned-ns.stats.Released || on != ns.on() {
		t.Errorf("%d nodes on (counted %d), want 2 + %d provisioned - %d released", on, ns.on(), ns.stats.Provisioned, ns.stats.Released)
	}
	if err := ns.check(s.insts); err != nil {
		t.Error(err)
	}
	if st := s.res.Autoscale.Nodes; st.Provisioned == 0 || st.PeakNodes < 3 {
		t.Errorf("node stats %+v: want decode nodes provisioned", st)
	}
}

func TestPDNodesValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(n *NodesConfig)
		want string
	}{
		{"unknown role", func(n *NodesConfig) { n.Pools[0].Role = "gpu" }, `role must be "prefill", "decode" or empty`},
		{"no decode pool", func(n *NodesConfig) { n.Pools[0].Role, n.Pools[0].GPUsPerNode = "prefill", 2 }, "no node pool holds the decode pool's replicas"},
		{"prefill replicas too big", func(n *NodesConfig) { n.PrefillGPUsPerReplica = 8 }, "cannot hold a replica of 8 GPUs"},
		{"prefill GPUs unset", func(n *NodesConfig) { n.PrefillGPUsPerReplica = 0 }, "GPUs per prefill replica must be >= 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := pdNodeCluster()
			tc.mut(cfg.Autoscale.Nodes)
			err := cfg.Autoscale.Validate(len(cfg.Instances))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	// Three initial prefill replicas of two GPUs do not fit on one four-GPU node.
	cfg := pdNodeCluster()
	cfg.Autoscale.Prefill.InitialReplicas = 3
	cfg.Autoscale.Nodes.Pools[1].GPUsPerNode = 4
	if err := cfg.Autoscale.Validate(len(cfg.Instances)); err == nil || !strings.Contains(err.Error(), "hold 2 of the prefill pool's 3 initial replicas") {
		t.Errorf("initial replicas beyond the nodes: %v", err)
	}
	// A role on a cluster without disaggregation is refused.
	mono := nodeCluster(1, 2)
	mono.Autoscale.Nodes.Pools[0].Role = "decode"
	if err := mono.Autoscale.Validate(len(mono.Instances)); err == nil || !strings.Contains(err.Error(), "needs prefill and decode pools") {
		t.Errorf("role without disaggregation: %v", err)
	}
}
