package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/inference-sim/blis-operator/internal/engine/rng"
)

// This file is node capacity of autoscaled runs: a replica needs GPUsPerReplica GPUs on one
// node of a node pool. A scale-up places the replica on the node with enough free GPUs that is
// ready first (an up node before a provisioning one), else provisions a node of the first
// pool below its maximum, else it cannot start (counted as capped). A replica on a node still
// provisioning starts its own provisioning when the node is up. A node left without replicas
// is released at once while its pool has more than its minimum.

// NodeStream names the random stream of node provisioning delays (drawn only when random).
const NodeStream = "node-provisioning"

// Roles of a node pool in a disaggregated run: the pool whose replicas its nodes hold.
const (
	RolePrefill = "prefill"
	RoleDecode  = "decode"
)

// NodePoolConfig is one pool of identical nodes.
type NodePoolConfig struct {
	// Name identifies the pool in errors.
	Name string
	// GPUsPerNode is the GPUs of one node (>= GPUsPerReplica of the NodesConfig).
	GPUsPerNode int32
	// InitialNodes are up at time 0; MinNodes and MaxNodes bound the pool (0 <= min <=
	// initial <= max).
	InitialNodes, MinNodes, MaxNodes int32
	// Provisioning is the time from a node's request to the node being up.
	Provisioning Delay
	// CostPerNodeHour prices node time (from the request to the release).
	CostPerNodeHour float64
	// Role is, in a disaggregated run, the pool whose replicas the nodes hold: "prefill",
	// "decode", or empty for both (the only choice without disaggregation).
	Role string
}

// NodesConfig turns on node capacity for an autoscaled run. In a disaggregated run (per-pool
// bounds) a prefill or decode replica is placed only on nodes of a pool of its role (or of no
// role).
type NodesConfig struct {
	// GPUsPerReplica is the GPUs one replica holds on its node (TP × PP × DP); in a
	// disaggregated run, a decode replica's.
	GPUsPerReplica int32
	// PrefillGPUsPerReplica is the GPUs a prefill replica holds in a disaggregated run.
	PrefillGPUsPerReplica int32
	// Pools are the node pools, in placement order.
	Pools []NodePoolConfig
}

// Validate checks the node pools of a run without disaggregation and that they can hold the
// initial replicas.
func (n *NodesConfig) Validate(initialReplicas int32) error {
	return n.validate([2]int32{initialReplicas, 0}, false)
}

// ValidatePools checks the node pools of a disaggregated run and that each role's pools can
// hold the initial replicas of its pool.
func (n *NodesConfig) ValidatePools(initialPrefill, initialDecode int32) error {
	return n.validate([2]int32{initialPrefill, initialDecode}, true)
}

// serves reports whether nodes of role hold replicas of group g (0: prefill or the whole
// cluster, 1: decode).
func serves(role string, g int8) bool {
	switch role {
	case RolePrefill:
		return g == 0
	case RoleDecode:
		return g == 1
	}
	return true
}

// need returns the GPUs per replica of node group g.
func (n *NodesConfig) need(g int8, pooled bool) int32 {
	if pooled && g == 0 {
		return n.PrefillGPUsPerReplica
	}
	return n.GPUsPerReplica
}

func (n *NodesConfig) validate(initial [2]int32, pooled bool) error {
	groups := 1
	if pooled {
		groups = 2
	}
	names := [2]string{RolePrefill, RoleDecode}
	for g := range groups {
		if need := n.need(int8(g), pooled); need < 1 {
			if pooled {
				return fmt.Errorf("nodes: GPUs per %s replica must be >= 1, got %d", names[g], need)
			}
			return fmt.Errorf("nodes: GPUs per replica must be >= 1, got %d", need)
		}
	}
	if len(n.Pools) == 0 {
		return errors.New("nodes: at least one node pool is required")
	}
	var hold int32
	var pools [2]int
	for i, p := range n.Pools {
		switch {
		case !pooled && p.Role != "":
			return fmt.Errorf("node pool %q: a role (%q) needs prefill and decode pools", p.Name, p.Role)
		case p.Role != "" && p.Role != RolePrefill && p.Role != RoleDecode:
			return fmt.Errorf("node pool %q: role must be \"prefill\", \"decode\" or empty, got %q", p.Name, p.Role)
		}
		var need int32
		for g := range int8(groups) {
			if serves(p.Role, g) {
				need = max(need, n.need(g, pooled))
				pools[g]++
			}
		}
		switch {
		case p.GPUsPerNode < need:
			return fmt.Errorf("node pool %q: %d GPUs per node cannot hold a replica of %d GPUs", p.Name, p.GPUsPerNode, need)
		case p.MinNodes < 0 || p.MinNodes > p.InitialNodes || p.InitialNodes > p.MaxNodes:
			return fmt.Errorf("node pool %q: need 0 <= min nodes (%d) <= initial nodes (%d) <= max nodes (%d)", p.Name, p.MinNodes, p.InitialNodes, p.MaxNodes)
		case math.IsNaN(p.CostPerNodeHour) || math.IsInf(p.CostPerNodeHour, 0) || p.CostPerNodeHour < 0:
			return fmt.Errorf("node pool %q: cost per node hour must be a finite number >= 0, got %v", p.Name, p.CostPerNodeHour)
		}
		if err := p.Provisioning.validate(fmt.Sprintf("node pool %q provisioning delay", n.Pools[i].Name)); err != nil {
			return err
		}
		hold += p.InitialNodes * (p.GPUsPerNode / need)
	}
	if !pooled {
		if hold < initial[0] {
			return fmt.Errorf("nodes: the initial nodes hold %d replicas of %d GPUs, but the cluster starts with %d", hold, n.GPUsPerReplica, initial[0])
		}
		return nil
	}
	for g := range 2 {
		if pools[g] == 0 {
			return fmt.Errorf("nodes: no node pool holds the %s pool's replicas", names[g])
		}
	}
	// Place the initial replicas as the run does (prefill first, each on the first initial
	// node of its role with room).
	var free []int32
	var role []string
	for _, p := range n.Pools {
		for range p.InitialNodes {
			free = append(free, p.GPUsPerNode)
			role = append(role, p.Role)
		}
	}
	for g := range int8(2) {
		need := n.need(g, true)
		for r := range initial[g] {
			j := -1
			for x := range free {
				if free[x] >= need && serves(role[x], g) {
					j = x
					break
				}
			}
			if j < 0 {
				return fmt.Errorf("nodes: the initial nodes hold %d of the %s pool's %d initial replicas of %d GPUs", r, names[g], initial[g], need)
			}
			free[j] -= need
		}
	}
	return nil
}

// NodeStats summarizes the nodes of a run.
type NodeStats struct {
	// Provisioned and Released count nodes requested and released during the run (initial
	// nodes are not provisioned).
	Provisioned, Released int64
	// Capped counts replicas a scale-up could not start for want of a node (every pool at its
	// maximum and no free GPUs).
	Capped int64
	// PeakNodes is the largest number of nodes up or provisioning at once.
	PeakNodes int32
	// NodeSeconds is node time from each node's request (0 for initial nodes) to its release
	// or the end of the run; Cost prices it at each pool's rate.
	NodeSeconds, Cost float64
}

// node is one node: its pool, free GPUs, when it is (or was) up, and whether it is on.
type node struct {
	pool     int32
	free     int32
	replicas int32
	readyAt  int64
	onSince  int64
	on       bool
}

// nodeState is the node capacity of a run.
type nodeState struct {
	cfg   *NodesConfig
	rng   *rand.Rand
	nodes []node
	// of is each instance's node (-1: none); group its node group (the role of its pool) and
	// need the GPUs it holds.
	of    []int32
	group []int8
	need  []int32
	count []int32 // nodes on per pool
	stats NodeStats
}

// newNodes places the initial replicas (instances marked in initial) on the initial nodes.
// prefill is the number of prefill instance slots of a disaggregated run (-1 without).
func newNodes(cfg *NodesConfig, streams *rng.Partitioned, n, prefill int, initial func(i int) bool) *nodeState {
	ns := &nodeState{cfg: cfg, of: make([]int32, n), group: make([]int8, n), need: make([]int32, n), count: make([]int32, len(cfg.Pools))}
	for i := range n {
		if prefill >= 0 && i >= prefill {
			ns.group[i] = 1
		}
		ns.need[i] = cfg.need(ns.group[i], prefill >= 0)
	}
	for k, p := range cfg.Pools {
		if p.Provisioning.StddevUs > 0 && ns.rng == nil {
			ns.rng = streams.Stream(NodeStream)
		}
		for j := int32(0); j < p.InitialNodes; j++ {
			ns.nodes = append(ns.nodes, node{pool: int32(k), free: p.GPUsPerNode, on: true})
		}
		ns.count[k] = p.InitialNodes
	}
	for i := range ns.of {
		ns.of[i] = -1
		if initial(i) {
			ns.of[i] = ns.pick(int32(i), 0)
			ns.take(int32(i), ns.of[i])
		}
	}
	ns.stats.PeakNodes = ns.on()
	return ns
}

// on counts the nodes up or provisioning.
func (ns *nodeState) on() int32 {
	var c int32
	for _, x := range ns.count {
		c += x
	}
	return c
}

// pick returns the on node of instance i's group with room for its replica that is up first
// (ties: the lowest index), or -1.
func (ns *nodeState) pick(i int32, now int64) int32 {
	best := int32(-1)
	g, need := ns.group[i], ns.need[i]
	for j := range ns.nodes {
		nd := &ns.nodes[j]
		if nd.on && nd.free >= need && serves(ns.cfg.Pools[nd.pool].Role, g) && (best < 0 || max(nd.readyAt, now) < max(ns.nodes[best].readyAt, now)) {
			best = int32(j)
		}
	}
	return best
}

func (ns *nodeState) take(i, j int32) {
	ns.nodes[j].free -= ns.need[i]
	ns.nodes[j].replicas++
}

// place finds a node for a new replica of instance i at now, provisioning one if needed, and
// returns how long the replica waits for it (-1: no node can be had).
func (ns *nodeState) place(i int32, now int64) int64 {
	j := ns.pick(i, now)
	if j < 0 {
		for k, p := range ns.cfg.Pools {
			if ns.count[k] >= p.MaxNodes || !serves(p.Role, ns.group[i]) {
				continue
			}
			nd := node{pool: int32(k), free: p.GPUsPerNode, readyAt: now + p.Provisioning.draw(ns.rng), onSince: now, on: true}
			j = -1
			for x := range ns.nodes {
				if !ns.nodes[x].on {
					j = int32(x)
					break
				}
			}
			if j < 0 {
				j = int32(len(ns.nodes))
				ns.nodes = append(ns.nodes, nd)
			} else {
				ns.nodes[j] = nd
			}
			ns.count[k]++
			ns.stats.Provisioned++
			ns.stats.PeakNodes = max(ns.stats.PeakNodes, ns.on())
			break
		}
	}
	if j < 0 {
		ns.stats.Capped++
		return -1
	}
	ns.take(i, j)
	ns.of[i] = j
	return max(ns.nodes[j].readyAt-now, 0)
}

// free returns instance i's GPUs to its node and releases the node when it is left empty and
// its pool is above its minimum.
func (ns *nodeState) free(i int32, now int64) {
	j := ns.of[i]
	if j < 0 {
		return
	}
	ns.of[i] = -1
	nd := &ns.nodes[j]
	nd.free += ns.need[i]
	nd.replicas--
	if nd.replicas == 0 && ns.count[nd.pool] > ns.cfg.Pools[nd.pool].MinNodes {
		ns.close(nd, now)
		nd.on = false
		ns.count[nd.pool]--
		ns.stats.Released++
	}
}

// close adds nd's node time up to end.
func (ns *nodeState) close(nd *node, end int64) {
	if end > nd.onSince {
		d := float64(end-nd.onSince) / 1e6
		ns.stats.NodeSeconds += d
		ns.stats.Cost += d / 3600 * ns.cfg.Pools[nd.pool].CostPerNodeHour
	}
	nd.onSince = end
}

// finish closes the books of the nodes still on at end.
func (ns *nodeState) finish(end int64) *NodeStats {
	for j := range ns.nodes {
		if nd := &ns.nodes[j]; nd.on {
			ns.close(nd, end)
		}
	}
	st := ns.stats
	return &st
}

// check verifies node conservation: every node's free GPUs and replicas match the instances
// placed on it, no node is over-committed, every active replica has a node and an off one
// none, and each pool's node count is within its bounds.
func (ns *nodeState) check(insts []instance) error {
	used := make([]int32, len(ns.nodes))
	gpus := make([]int32, len(ns.nodes))
	for i := range insts {
		j := ns.of[i]
		active := insts[i].life != lifeOff
		switch {
		case active && j < 0:
			return fmt.Errorf("invariant nodes: instance %d is %s without a node", i, insts[i].life)
		case !active && j >= 0:
			return fmt.Errorf("invariant nodes: instance %d is off but holds GPUs on node %d", i, j)
		case j >= 0:
			if !ns.nodes[j].on {
				return fmt.Errorf("invariant nodes: instance %d is on released node %d", i, j)
			}
			if !serves(ns.cfg.Pools[ns.nodes[j].pool].Role, ns.group[i]) {
				return fmt.Errorf("invariant nodes: instance %d is on node %d of pool %q, of another role", i, j, ns.cfg.Pools[ns.nodes[j].pool].Name)
			}
			used[j]++
			gpus[j] += ns.need[i]
		}
	}
	count := make([]int32, len(ns.count))
	for j := range ns.nodes {
		nd := &ns.nodes[j]
		if !nd.on {
			continue
		}
		count[nd.pool]++
		total := ns.cfg.Pools[nd.pool].GPUsPerNode
		if used[j] != nd.replicas || nd.free != total-gpus[j] || nd.free < 0 {
			return fmt.Errorf("invariant nodes: node %d has %d free GPUs and %d replicas, but %d replicas holding %d GPUs are placed on it (of %d)", j, nd.free, nd.replicas, used[j], gpus[j], total)
		}
	}
	for k, p := range ns.cfg.Pools {
		if count[k] != ns.count[k] || count[k] < p.MinNodes || count[k] > p.MaxNodes {
			return fmt.Errorf("invariant nodes: pool %q has %d nodes on (counted %d), outside [%d, %d]", p.Name, count[k], ns.count[k], p.MinNodes, p.MaxNodes)
		}
	}
	return nil
}
