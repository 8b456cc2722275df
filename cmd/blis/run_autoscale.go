package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/sim"
)

// autoscaleFlags are the autoscaling flags of `blis run`. Autoscaling is on when
// --max-replicas is set; --num-instances is then the initial replica count.
type autoscaleFlags struct {
	template                              string
	intervalUs                            int64
	minReplicas, maxReplicas              int
	scaleUp, scaleDown, target, queue     float64
	step                                  int
	upCooldownUs, downCooldownUs          int64
	provisioningUs, modelLoadUs, warmupUs int64
	drain                                 string
	costPerReplicaHour                    float64
	scrapeDelayUs                         int64
	nodes                                 nodeFlags
}

func addAutoscaleFlags(fl *pflag.FlagSet, f *autoscaleFlags) {
	fl.IntVar(&f.maxReplicas, "max-replicas", 0, "turn on autoscaling with at most this many replicas (0 = fixed --num-instances replicas)")
	fl.IntVar(&f.minReplicas, "min-replicas", 1, "fewest replicas the autoscaler keeps (>= 1)")
	fl.StringVar(&f.template, "autoscale-policy", "", "autoscale template: "+strings.Join(policy.AutoscaleTemplateNames(), ", ")+" (default: the policy config's autoscaler.policy, else threshold)")
	fl.Int64Var(&f.intervalUs, "autoscale-interval-us", 0, "period of autoscaler evaluations in microseconds (default: the policy config's autoscaler.interval_us, else 15 s)")
	fl.Float64Var(&f.scaleUp, "scale-up-threshold", 0, "utilization above which threshold adds replicas (default 0.8, or the analyzer's)")
	fl.Float64Var(&f.scaleDown, "scale-down-threshold", 0, "utilization below which threshold and queue-depth remove replicas (default 0.3, or the analyzer's)")
	fl.Float64Var(&f.target, "target-utilization", 0, "set point of target-utilization in (0, 1] (default 0.7)")
	fl.Float64Var(&f.queue, "target-queue-depth", 0, "queued requests per ready replica above which queue-depth adds replicas (default 4)")
	fl.IntVar(&f.step, "scale-step", 0, "replicas one threshold, queue-depth or oscillator action adds or removes (default 1)")
	fl.Int64Var(&f.upCooldownUs, "scale-up-cooldown-us", -1, "least time since the last scaling action before a scale-up (default: the scale-up stabilization window)")
	fl.Int64Var(&f.downCooldownUs, "scale-down-cooldown-us", -1, "least time since the last scaling action before a scale-down (default: the scale-down stabilization window)")
	fl.Int64Var(&f.provisioningUs, "provisioning-delay-us", 0, "time from a scale-up decision to a provisioned replica")
	fl.Int64Var(&f.modelLoadUs, "model-load-delay-us", 0, "time a new replica loads the model (default: --loading-delay-us)")
	fl.Int64Var(&f.warmupUs, "warmup-delay-us", 0, "time a loaded replica warms up before it is routed to")
	fl.StringVar(&f.drain, "drain-policy", string(sim.DrainWait), "what a removed replica does with its requests: wait, immediate or redirect")
	fl.Float64Var(&f.costPerReplicaHour, "cost-per-replica-hour", 0, "price of one replica hour, for the autoscaler's cost")
	fl.Int64Var(&f.scrapeDelayUs, "hpa-scrape-delay-us", 0, "age in microseconds of the load the autoscaler decides on, as an HPA reads a metrics pipeline (default: the policy config's autoscaler.hpa_scrape_delay)")
	addNodeFlags(fl, &f.nodes)
}

// autoscaleConfig builds the run's autoscaler from the flags and the policy config's
// autoscaler and instance_lifecycle blocks (nil when autoscaling is off). pools, when set, are
// the prefill and decode pools' bounds of a disaggregated run, each autoscaled on its own.
func autoscaleConfig(fl *pflag.FlagSet, f *autoscaleFlags, initial int, b *policy.Bundle, pools []sim.PoolBounds) (*sim.AutoscaleConfig, error) {
	if f.maxReplicas == 0 && pools == nil {
		for _, n := range []string{"min-replicas", "autoscale-policy", "autoscale-interval-us", "drain-policy", "provisioning-delay-us", "hpa-scrape-delay-us"} {
			if fl.Changed(n) {
				return nil, fmt.Errorf("--%s needs --max-replicas (autoscaling; with --prefill-instances, --prefill-max-replicas or --decode-max-replicas)", n)
			}
		}
		return nil, nil
	}
	var blk policy.Autoscaler
	if b != nil {
		blk = b.Autoscaler
	}
	load, lifecycleLoad, cold, err := lifecycle(fl, &f.nodes, b)
	if err != nil {
		return nil, err
	}
	if f.template != "" {
		blk.Policy = f.template
	}
	spec, err := blk.Spec()
	if err != nil {
		return nil, err
	}
	for _, o := range []struct {
		name string
		dst  *float64
		v    float64
	}{
		{"scale-up-threshold", &spec.ScaleUpThreshold, f.scaleUp}, {"scale-down-threshold", &spec.ScaleDownThreshold, f.scaleDown},
		{"target-utilization", &spec.TargetUtilization, f.target}, {"target-queue-depth", &spec.TargetQueueDepth, f.queue},
	} {
		if fl.Changed(o.name) {
			*o.dst = o.v
		}
	}
	if fl.Changed("scale-step") {
		spec.Step = int32(f.step)
	}
	interval := int64(blk.IntervalUs)
	if fl.Changed("autoscale-interval-us") {
		interval = f.intervalUs
	} else if interval == 0 {
		interval = 15_000_000
	}
	pick := func(name string, v int64, def int64) int64 {
		if fl.Changed(name) {
			return v
		}
		return def
	}
	slots := f.maxReplicas
	if pools == nil {
		if f.maxReplicas > maxInstances {
			return nil, fmt.Errorf("--max-replicas must be <= %d, got %d", maxInstances, f.maxReplicas)
		}
		if f.minReplicas < 1 || f.minReplicas > f.maxReplicas {
			return nil, fmt.Errorf("need 1 <= --min-replicas (%d) <= --max-replicas (%d)", f.minReplicas, f.maxReplicas)
		}
		if initial < f.minReplicas || initial > f.maxReplicas {
			return nil, fmt.Errorf("--num-instances (%d, the initial replicas) must be within [--min-replicas %d, --max-replicas %d]", initial, f.minReplicas, f.maxReplicas)
		}
	} else if fl.Changed("min-replicas") {
		return nil, errors.New("--min-replicas bounds a monolithic cluster; with --prefill-instances use --prefill-min-replicas and --decode-min-replicas")
	}
	a := &sim.AutoscaleConfig{
		Policy:              spec,
		IntervalUs:          interval,
		ScaleUpCooldownUs:   pick("scale-up-cooldown-us", f.upCooldownUs, int64(blk.ScaleUpStabilizationWindowUs)),
		ScaleDownCooldownUs: pick("scale-down-cooldown-us", f.downCooldownUs, int64(blk.ScaleDownStabilizationWindowUs)),
		Provisioning:        sim.Delay{MeanUs: f.provisioningUs},
		ModelLoad:           sim.Delay{MeanUs: f.modelLoadUs},
		Warmup:              sim.Delay{MeanUs: f.warmupUs},
		Drain:               sim.DrainPolicy(f.drain),
		CostPerReplicaHour:  f.costPerReplicaHour,
	}
	if pools == nil {
		a.MinReplicas, a.MaxReplicas, a.InitialReplicas = int32(f.minReplicas), int32(f.maxReplicas), int32(initial)
	} else {
		a.Prefill, a.Decode = &pools[0], &pools[1]
		slots = int(pools[0].MaxReplicas + pools[1].MaxReplicas)
	}
	if lifecycleLoad {
		// The lifecycle's loading delay, on its own random stream; without a warm start the
		// initial replicas of a monolithic cluster load too (prefill and decode pools start
		// ready).
		a.ModelLoad, a.LoadingStream = load, true
		switch {
		case cold && pools == nil:
			a.ColdStart = true
		case cold && fl.Changed("loading-delay-us"):
			return nil, errors.New("--loading-delay-us without --warm-start cold-starts the initial replicas, which is not simulated with --prefill-instances; add --warm-start")
		}
	}
	if fl.Changed("hpa-scrape-delay-us") {
		a.ScrapeDelay = sim.Delay{MeanUs: f.scrapeDelayUs}
	} else {
		a.ScrapeDelay = sim.Delay{MeanUs: int64(blk.HPAScrapeDelay.Mean * 1e6), StddevUs: int64(blk.HPAScrapeDelay.Stddev * 1e6)}
	}
	if err := a.Validate(slots); err != nil {
		return nil, err
	}
	return a, nil
}

// poolScaleOut is one pool's part of the autoscaler summary of a disaggregated run.
type poolScaleOut struct {
	Pool           string  `json:"pool"`
	ScaleUps       int64   `json:"scale_ups"`
	ScaleDowns     int64   `json:"scale_downs"`
	Oscillations   int64   `json:"scale_oscillations"`
	ReplicaSeconds float64 `json:"replica_seconds"`
	PeakReplicas   int32   `json:"peak_replicas"`
}

// nodesOut is the node pools' part of the autoscaler summary of a run with node capacity.
type nodesOut struct {
	Provisioned int64   `json:"nodes_provisioned"`
	Released    int64   `json:"nodes_released"`
	Capped      int64   `json:"capped_replicas"`
	PeakNodes   int32   `json:"peak_nodes"`
	NodeSeconds float64 `json:"node_seconds"`
	Cost        float64 `json:"node_cost"`
}

// writeAutoscale prints the autoscaler's summary after the metrics blocks, in the same
// "=== ... ===" then JSON layout.
func writeAutoscale(w io.Writer, st *sim.AutoscaleStats) error {
	if st == nil {
		return nil
	}
	out := struct {
		Policy          string         `json:"policy"`
		Evaluations     int64          `json:"evaluations"`
		ScaleUps        int64          `json:"scale_ups"`
		ScaleDowns      int64          `json:"scale_downs"`
		ReplicasAdded   int64          `json:"replicas_added"`
		ReplicasRemoved int64          `json:"replicas_removed"`
		Oscillations    int64          `json:"scale_oscillations"`
		ReplicaSeconds  float64        `json:"replica_seconds"`
		Cost            float64        `json:"cost"`
		PeakReplicas    int32          `json:"peak_replicas"`
		Redirected      int64          `json:"redirected_requests"`
		DroppedDrain    int64          `json:"dropped_by_drain"`
		Pools           []poolScaleOut `json:"pools,omitempty"`
		Nodes           *nodesOut      `json:"nodes,omitempty"`
	}{st.Policy, st.Evaluations, st.ScaleUps, st.ScaleDowns, st.ReplicasAdded, st.ReplicasRemoved, st.Oscillations,
		st.ReplicaSeconds, st.Cost, st.PeakActive, st.Redirected, st.DroppedScaledDown, nil, nil}
	if n := st.Nodes; n != nil {
		out.Nodes = &nodesOut{n.Provisioned, n.Released, n.Capped, n.PeakNodes, n.NodeSeconds, n.Cost}
	}
	for _, p := range st.Pools {
		out.Pools = append(out.Pools, poolScaleOut{p.Pool, p.ScaleUps, p.ScaleDowns, p.Oscillations, p.ReplicaSeconds, p.PeakActive})
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "=== Autoscaler ===\n%s\n", data); err != nil {
		return errors.Join(errors.New("writing the autoscaler summary"), err)
	}
	return nil
}
