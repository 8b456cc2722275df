package main

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/inference-sim/blis-operator/internal/engine/model"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/sim"
)

// nodeFlags are the node-pool and instance-lifecycle flags of `blis run`. Node pools give an
// autoscaled cluster node capacity; the lifecycle's loading delay is the model load time of
// new replicas and, without --warm-start, makes the initial replicas load before serving.
type nodeFlags struct {
	pools          []string
	loadingDelayUs int64
	warmStart      bool
}

// nodePoolKeys are the keys of a --node-pool value, in the order the help lists them.
var nodePoolKeys = []string{"name", "gpu", "gpus-per-node", "initial-nodes", "min-nodes", "max-nodes", "provisioning-delay-us", "cost-per-hour"}

func addNodeFlags(fl *pflag.FlagSet, f *nodeFlags) {
	fl.StringArrayVar(&f.pools, "node-pool", nil, "a node pool of the autoscaled cluster (repeatable, in placement order): "+
		"name=NAME,gpu=GPU,gpus-per-node=N,max-nodes=N[,initial-nodes=N (default 1)][,min-nodes=N (default 0)]"+
		"[,provisioning-delay-us=US][,cost-per-hour=X]; with --prefill-instances a pool holds the replicas of the pools running its GPU "+
		"(default: the policy config's node_pools)")
	fl.Int64Var(&f.loadingDelayUs, "loading-delay-us", 0, "instance lifecycle: time a replica loads the model, for new replicas and, without --warm-start, the initial ones, which load before serving (default: the policy config's instance_lifecycle.loading_delay)")
	fl.BoolVar(&f.warmStart, "warm-start", false, "instance lifecycle: the initial replicas are ready at time 0 even with a loading delay (default: the policy config's instance_lifecycle.warm_start_initial_instances)")
}

// lifecycle is the run's instance lifecycle: the loading delay (set reports whether it applies,
// replacing --model-load-delay-us's default) and whether the initial replicas cold-start. The
// flags override the policy config's instance_lifecycle.
func lifecycle(fl *pflag.FlagSet, f *nodeFlags, b *policy.Bundle) (load sim.Delay, set, cold bool, err error) {
	warm := false
	if b != nil {
		d := b.InstanceLifecycle.LoadingDelay
		load = sim.Delay{MeanUs: int64(math.Round(d.Mean * 1e6)), StddevUs: int64(math.Round(d.Stddev * 1e6))}
		warm = b.InstanceLifecycle.WarmStartInitialInstances
	}
	if fl.Changed("loading-delay-us") {
		switch {
		case f.loadingDelayUs < 0:
			return load, false, false, fmt.Errorf("--loading-delay-us must be >= 0, got %d", f.loadingDelayUs)
		case fl.Changed("model-load-delay-us"):
			return load, false, false, errors.New("--loading-delay-us and --model-load-delay-us both set the model load time; give one")
		}
		load = sim.Delay{MeanUs: f.loadingDelayUs}
	}
	if fl.Changed("warm-start") {
		warm = f.warmStart
	}
	set = (load.MeanUs > 0 || load.StddevUs > 0) && !fl.Changed("model-load-delay-us")
	return load, set, set && !warm, nil
}

// fixedColdStart is the autoscaler of a run without autoscaling whose fixed replicas
// cold-start (nil when they start ready): its bounds are --num-instances, so it never scales.
func fixedColdStart(fl *pflag.FlagSet, f *autoscaleFlags, replicas int, b *policy.Bundle) (*sim.AutoscaleConfig, error) {
	load, _, cold, err := lifecycle(fl, &f.nodes, b)
	if err != nil || !cold {
		return nil, err
	}
	interval := int64(15_000_000)
	if b != nil && b.Autoscaler.IntervalUs > 0 {
		interval = int64(b.Autoscaler.IntervalUs)
	}
	if fl.Changed("autoscale-interval-us") {
		interval = f.intervalUs
	}
	a := sim.FixedColdStart(int32(replicas), load, sim.Delay{MeanUs: f.warmupUs}, interval)
	return a, a.Validate(replicas)
}

// parseNodePool reads one --node-pool value.
func parseNodePool(v string, k int) (gpu string, p sim.NodePoolConfig, err error) {
	p = sim.NodePoolConfig{Name: fmt.Sprintf("pool-%d", k), InitialNodes: 1}
	seen := map[string]bool{}
	for field := range strings.SplitSeq(v, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(field), "=")
		if !ok || !slices.Contains(nodePoolKeys, key) {
			return "", p, fmt.Errorf("--node-pool %q: %q is not key=value with a key among %s", v, field, strings.Join(nodePoolKeys, ", "))
		}
		seen[key] = true
		var n int64
		var x float64
		switch key {
		case "name":
			p.Name = val
			continue
		case "gpu":
			gpu = val
			continue
		case "cost-per-hour":
			x, err = strconv.ParseFloat(val, 64)
		default:
			n, err = strconv.ParseInt(val, 10, 32)
		}
		if err != nil {
			return "", p, fmt.Errorf("--node-pool %q: %s: %w", v, key, err)
		}
		switch key {
		case "gpus-per-node":
			p.GPUsPerNode = int32(n)
		case "initial-nodes":
			p.InitialNodes = int32(n)
		case "min-nodes":
			p.MinNodes = int32(n)
		case "max-nodes":
			p.MaxNodes = int32(n)
		case "provisioning-delay-us":
			p.Provisioning.MeanUs = n
		case "cost-per-hour":
			p.CostPerNodeHour = x
		}
	}
	for _, key := range []string{"gpu", "gpus-per-node", "max-nodes"} {
		if !seen[key] {
			return "", p, fmt.Errorf("--node-pool %q: %s is required", v, key)
		}
	}
	if !seen["initial-nodes"] {
		p.InitialNodes = min(p.InitialNodes, p.MaxNodes)
	}
	return gpu, p, nil
}

// nodesConfig gives the autoscaler a (nil: no autoscaling) its node pools: the --node-pool flags, else the policy
// config's node_pools. models are the resolved instances of the cluster, or of the prefill and
// decode pools of a disaggregated run; a node pool holds the replicas running its GPU.
func nodesConfig(fl *pflag.FlagSet, f *nodeFlags, a *sim.AutoscaleConfig, b *policy.Bundle, models []*model.Resolved) error {
	if a == nil {
		if fl.Changed("node-pool") {
			return errors.New("--node-pool needs autoscaling (--max-replicas; with --prefill-instances, --prefill-max-replicas or --decode-max-replicas)")
		}
		return nil
	}
	var gpus []string
	var pools []sim.NodePoolConfig
	what := func(k int) string { return fmt.Sprintf("--node-pool %q", f.pools[k]) }
	if fl.Changed("node-pool") {
		for k, v := range f.pools {
			gpu, p, err := parseNodePool(v, k)
			if err != nil {
				return err
			}
			gpus, pools = append(gpus, gpu), append(pools, p)
		}
	} else if b != nil {
		for _, np := range b.NodePools {
			gpus = append(gpus, np.GPUType)
			pools = append(pools, sim.NodePoolConfig{
				Name: np.Name, GPUsPerNode: int32(np.GPUsPerNode),
				InitialNodes: int32(np.InitialNodes), MinNodes: int32(np.MinNodes), MaxNodes: int32(np.MaxNodes),
				Provisioning:    sim.Delay{MeanUs: int64(math.Round(np.ProvisioningDelay.Mean * 1e6)), StddevUs: int64(math.Round(np.ProvisioningDelay.Stddev * 1e6))},
				CostPerNodeHour: np.CostPerHour,
			})
		}
		what = func(k int) string { return fmt.Sprintf("the policy config's node_pools[%d]", k) }
	}
	if len(pools) == 0 {
		return nil
	}
	cat, err := model.DefaultCatalog()
	if err != nil {
		return err
	}
	roles := []string{""}
	if len(models) == 2 {
		roles = []string{sim.RolePrefill, sim.RoleDecode}
	}
	matched := make([]bool, len(models))
	for k := range pools {
		hw, err := cat.Hardware().Lookup(gpus[k])
		var serves []int
		for m, r := range models {
			if err == nil && hw.Name == r.Hardware.Name {
				serves, matched[m] = append(serves, m), true
			}
		}
		if len(serves) == 0 {
			var runs []string
			for _, r := range models {
				if !slices.Contains(runs, r.Hardware.Name) {
					runs = append(runs, r.Hardware.Name)
				}
			}
			return fmt.Errorf("%s: GPU %q, but the replicas run on %s", what(k), gpus[k], strings.Join(runs, " and "))
		}
		if len(serves) == 1 {
			pools[k].Role = roles[serves[0]]
		}
	}
	for m, ok := range matched {
		if !ok {
			return fmt.Errorf("no node pool has the GPU of the %s pool's replicas (%s)", roles[m], models[m].Hardware.Name)
		}
	}
	nc := &sim.NodesConfig{GPUsPerReplica: int32(models[len(models)-1].Engine.TotalGPUs()), Pools: pools}
	if len(models) == 2 {
		nc.PrefillGPUsPerReplica = int32(models[0].Engine.TotalGPUs())
	}
	a.Nodes = nc
	slots := a.MaxReplicas
	if a.Prefill != nil {
		slots = a.Prefill.MaxReplicas + a.Decode.MaxReplicas
	}
	return a.Validate(int(slots))
}
