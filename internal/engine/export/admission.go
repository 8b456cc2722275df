package export

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/inference-sim/blis-operator/internal/engine/export/llmd"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

// NeverSaturatedQueueDepth is the utilization-detector queue threshold that llm-d's own samples
// use to keep legacy admission from ever shedding on queue depth.
const NeverSaturatedQueueDepth = 999999999

// alwaysAdmit is BLIS's default admission policy, which admits every request.
const alwaysAdmit = "always-admit"

// stagePolicy resolves which representation a stage uses, as the policy package does.
func stagePolicy(name string, tree *policy.TreeNode, cel, def string) string {
	switch {
	case tree != nil:
		return policy.PolicyTree
	case cel != "":
		return policy.PolicyCEL
	case name == "":
		return def
	}
	return name
}

func num(p policy.Params, k string, def float64) float64 {
	switch x := p[k].(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case float64:
		return x
	case float32:
		return float64(x)
	}
	return def
}

func str(p policy.Params, k, def string) string {
	if s, ok := p[k].(string); ok {
		return s
	}
	return def
}

func boolean(p policy.Params, k string) bool {
	b, _ := p[k].(bool)
	return b
}

// sloTable returns the class priorities the policy package uses for shedding: GAIE's defaults
// overridden by admission.slo_priorities.
func (bd *builder) sloTable() map[string]float64 {
	m := map[string]float64{}
	for k, v := range policy.DefaultSLOPriorities {
		m[k] = float64(v)
	}
	for k, v := range bd.b.Admission.SLOPriorities {
		m[k] = float64(v)
	}
	return m
}

// setClasses fixes the objective priorities from a class table. With the workload's classes
// known, only those get objectives (unknown classes rank as standard, as in the simulator).
func (bd *builder) setClasses(stage string, table map[string]float64) error {
	classes := bd.in.Cluster.SLOClasses
	if len(classes) == 0 {
		classes = sortedKeys(table)
	}
	out := map[string]int{}
	for _, c := range classes {
		v, ok := table[c]
		if !ok {
			v = table["standard"]
		}
		p, err := bd.roundInt(stage, fmt.Sprintf("priority of class %q", c), v)
		if err != nil {
			return err
		}
		out[c] = p
	}
	bd.classPriorities = out
	return nil
}

// priorityClasses maps the priority stage to per-class (or per-tenant) objective priorities.
func (bd *builder) priorityClasses() error {
	const stage = "priority"
	ps := &bd.b.Priority
	name := stagePolicy(ps.Policy, ps.Tree, ps.CEL, "constant")
	switch name {
	case policy.PolicyTree, policy.PolicyCEL:
		return refuse(stage, "a %s priority policy computes a priority per request; llm-d priorities are fixed per InferenceObjective", name)
	case "inverted-slo":
		return refuse(stage, "inverted-slo is a pathological baseline (inverted class priorities)")
	case "constant":
		return nil
	case "slo-based":
		table := bd.sloTable()
		if cs, ok := ps.Params["class_scores"].(map[string]any); ok {
			for k, v := range cs {
				table[k] = num(policy.Params{"v": v}, "v", 0)
			}
		} else if cs, ok := ps.Params["class_scores"].(policy.Params); ok {
			for k, v := range cs {
				table[k] = num(policy.Params{"v": v}, "v", 0)
			}
		}
		return bd.setClasses(stage, table)
	case "tenant-priority":
		scores := map[string]float64{}
		switch ts := ps.Params["tenant_scores"].(type) {
		case map[string]any:
			for k, v := range ts {
				scores[k] = num(policy.Params{"v": v}, "v", 0)
			}
		case policy.Params:
			for k, v := range ts {
				scores[k] = num(policy.Params{"v": v}, "v", 0)
			}
		}
		out := map[string]int{}
		for _, k := range sortedKeys(scores) {
			p, err := bd.roundInt(stage, fmt.Sprintf("score of tenant %q", k), scores[k])
			if err != nil {
				return err
			}
			out[k] = p
		}
		bd.classPriorities = out
		return bd.approx(stage, "tenant-priority: one InferenceObjective per tenant; each tenant's requests must send x-llm-d-inference-objective: <tenant> (other tenants get priority 0, the simulator gives them default_score %v)",
			num(ps.Params, "default_score", 0))
	case "deadline-aware":
		if err := bd.needsV09(stage, "deadline-aware (flow control with slo-deadline-ordering-policy)"); err != nil {
			return err
		}
		bd.flowControl = true
		bd.orderingRef = bd.addPlugin("slo-deadline-ordering-policy", nil)
		targets := map[string]float64{}
		for k, v := range bd.b.Admission.SLOTargets {
			targets[k] = float64(v)
		}
		switch ts := ps.Params["targets_us"].(type) {
		case map[string]any:
			for k, v := range ts {
				targets[k] = num(policy.Params{"v": v}, "v", 0)
			}
		case policy.Params:
			for k, v := range ts {
				targets[k] = num(policy.Params{"v": v}, "v", 0)
			}
		}
		var parts []string
		for _, k := range sortedKeys(targets) {
			parts = append(parts, fmt.Sprintf("%s=%g", k, targets[k]/1000))
		}
		def := num(ps.Params, "default_target_us", float64(policy.DefaultTTFTTarget)) / 1000
		return bd.approx(stage, "deadline-aware: earliest-deadline-first in llm-d's flow-control queues (slo-deadline-ordering-policy) instead of the instance queue; clients must send x-llm-d-slo-ttft-ms per class (%s; default %g), and ordering applies only while requests wait in the endpoint picker",
			strings.Join(parts, ", "), def)
	}
	return fmt.Errorf("export: priority policy %q is not known", name)
}

// admission maps the admission stage to legacy admission (utilization detector and sheddable
// objectives) or flow control.
func (bd *builder) admission() error {
	const stage = "admission"
	a := &bd.b.Admission
	name := stagePolicy(a.Policy, a.Tree, a.CEL, alwaysAdmit)
	p := a.EffectiveParams()
	if a.LatencyUs > 0 {
		bd.note(stage, "admission decision latency %d µs is a property of the simulated router, not a setting", a.LatencyUs)
	}
	switch name {
	case policy.PolicyTree, policy.PolicyCEL:
		return refuse(stage, "a %s admission policy has no llm-d equivalent (llm-d admits by saturation and objective priority only)", name)
	case "reject-all":
		return refuse(stage, "reject-all is a pathological baseline")
	case alwaysAdmit:
		if !bd.anyNegativePriority() {
			return nil
		}
		if !bd.t.AtLeast("llm-d-v0.9") {
			return bd.approx(stage, "always-admit: llm-d sheds requests of negative-priority objectives when saturated, and %s has no documented way to disable that", bd.t.Name)
		}
		bd.setDetector("utilization-detector", &llmd.UtilizationDetectorParams{
			QueueDepthThreshold: ptr(NeverSaturatedQueueDepth), KVCacheUtilThreshold: ptr(1.0)})
		return bd.approx(stage, "always-admit with sheddable objectives: utilization-detector thresholds set so the pool never saturates on queue depth; at 100%% KV-cache use llm-d still sheds negative-priority requests")
	case "gaie-legacy":
		if bd.classPriorities == nil {
			if err := bd.setClasses(stage, bd.sloTable()); err != nil {
				return err
			}
		}
		qd := num(p, "qd_threshold", policy.DefaultSaturationQueueThreshold)
		kv := num(p, "kv_threshold", policy.DefaultSaturationKVThreshold)
		if qd == policy.DefaultSaturationQueueThreshold && kv == policy.DefaultSaturationKVThreshold {
			return nil // llm-d's default detector and legacy admission are this template
		}
		if err := bd.needsV09(stage, "utilization-detector thresholds"); err != nil {
			return err
		}
		q, err := bd.roundInt(stage, "qd_threshold", qd)
		if err != nil {
			return err
		}
		bd.setDetector("utilization-detector", &llmd.UtilizationDetectorParams{QueueDepthThreshold: ptr(q), KVCacheUtilThreshold: ptr(kv)})
		return nil
	case "tier-shed":
		if err := bd.needsV09(stage, "tier-shed (utilization-detector)"); err != nil {
			return err
		}
		if bd.classPriorities == nil {
			if err := bd.setClasses(stage, bd.sloTable()); err != nil {
				return err
			}
		}
		minPrio := int(num(p, "min_priority", 3))
		thr := int(num(p, "threshold", 0))
		for k := range bd.classPriorities {
			bd.classPriorities[k] -= minPrio
		}
		bd.setDetector("utilization-detector", &llmd.UtilizationDetectorParams{QueueDepthThreshold: ptr(thr + 1), KVCacheUtilThreshold: ptr(1.0)})
		return bd.approx(stage, "tier-shed: objective priorities shifted by %d so that classes below min_priority %d are sheddable (negative); they are shed when the mean waiting queue reaches %d (llm-d's saturation) instead of when the largest queue+batch+in-flight load exceeds %d",
			-minPrio, minPrio, thr+1, thr)
	case "token-bucket":
		if err := bd.needsV09(stage, "token-bucket (flow control)"); err != nil {
			return err
		}
		c := int64(math.Floor(num(p, "capacity", 10000)))
		bd.flowControl = true
		if str(p, "cost", "input-tokens") == "request" {
			bd.setDetector("concurrency-detector", &llmd.ConcurrencyDetectorParams{ConcurrencyMode: "requests", MaxConcurrency: ptr(c)})
		} else {
			bd.setDetector("concurrency-detector", &llmd.ConcurrencyDetectorParams{ConcurrencyMode: "tokens", MaxTokenConcurrency: ptr(c)})
		}
		msg := fmt.Sprintf("token-bucket: llm-d has no rate limiter; approximated by a flow-control concurrency cap of %d in-flight %s (requests beyond it queue instead of being rejected; the refill rate %g/s is not representable)",
			c, map[bool]string{true: "requests", false: "tokens"}[str(p, "cost", "") == "request"], num(p, "refill_rate", 1000))
		if boolean(p, "per_tenant") {
			msg += "; the per-tenant buckets become one pool-wide cap"
		}
		return bd.approx(stage, "%s", msg)
	case "rate-limit":
		if err := bd.needsV09(stage, "rate-limit (flow control)"); err != nil {
			return err
		}
		limit := int64(math.Floor(num(p, "rate", 100) * num(p, "window_us", float64(policy.DefaultRateWindow)) / 1e6))
		bd.flowControl = true
		bd.setDetector("concurrency-detector", &llmd.ConcurrencyDetectorParams{ConcurrencyMode: "requests", MaxConcurrency: ptr(limit)})
		return bd.approx(stage, "rate-limit: llm-d has no rate limiter; approximated by a flow-control cap of %d concurrent requests (the per-window limit), with excess requests queued", limit)
	case "tenant-quota":
		if err := bd.needsV09(stage, "tenant-quota (flow control)"); err != nil {
			return err
		}
		capacity := int64(num(p, "capacity", 256))
		bd.flowControl = true
		bd.fairnessRef = bd.addPlugin("round-robin-fairness-policy", nil)
		bd.setDetector("concurrency-detector", &llmd.ConcurrencyDetectorParams{ConcurrencyMode: "requests", MaxConcurrency: ptr(capacity)})
		return bd.approx(stage, "tenant-quota: per-tenant quotas are not representable; approximated by round-robin fairness between tenants (header x-llm-d-inference-fairness-id) under a pool-wide cap of %d concurrent requests", capacity)
	}
	return fmt.Errorf("export: admission policy %q is not known", name)
}

func (bd *builder) anyNegativePriority() bool {
	for _, v := range bd.classPriorities {
		if v < 0 {
			return true
		}
	}
	return false
}

// setDetector adds the saturation detector plugin the flow control (and legacy admission)
// uses.
func (bd *builder) setDetector(typ string, params any) {
	name := bd.addPlugin(typ, params)
	bd.detector = &bd.cfg.Plugins[len(bd.cfg.Plugins)-1]
	if !bd.t.AtLeast("llm-d-v0.10") {
		// v0.9 reads the detector from the top-level key, which v0.10 keeps as a
		// deprecated alias of flowControl.saturationDetector.
		bd.cfg.SaturationDetector = &llmd.PluginRef{PluginRef: name}
		return
	}
	if bd.cfg.FlowControl == nil {
		bd.cfg.FlowControl = &llmd.FlowControl{}
	}
	bd.cfg.FlowControl.SaturationDetector = &llmd.PluginRef{PluginRef: name}
}

// flowControlConfig enables flow control when a mapping needs it, with one priority band per
// objective priority.
func (bd *builder) flowControlConfig() error {
	if !bd.flowControl {
		return nil
	}
	bd.cfg.FeatureGates = []string{"flowControl"}
	if bd.cfg.FlowControl == nil {
		bd.cfg.FlowControl = &llmd.FlowControl{}
	}
	fc := bd.cfg.FlowControl
	seen := map[int]bool{}
	var prios []int
	for _, v := range bd.classPriorities {
		if !seen[v] {
			seen[v] = true
			prios = append(prios, v)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(prios)))
	for _, v := range prios {
		fc.PriorityBands = append(fc.PriorityBands, llmd.PriorityBand{Priority: ptr(v), FairnessPolicyRef: bd.fairnessRef, OrderingPolicyRef: bd.orderingRef})
	}
	if bd.fairnessRef != "" || bd.orderingRef != "" {
		fc.DefaultPriorityBand = &llmd.PriorityBand{FairnessPolicyRef: bd.fairnessRef, OrderingPolicyRef: bd.orderingRef}
	}
	return nil
}

// objectives writes one InferenceObjective per class (or tenant).
func (bd *builder) objectives() ([]llmd.InferenceObjective, error) {
	if len(bd.classPriorities) == 0 {
		return nil, nil
	}
	var out []llmd.InferenceObjective
	used := map[string]string{}
	for _, c := range sortedKeys(bd.classPriorities) {
		n := objectName(c)
		if n == "" {
			return nil, fmt.Errorf("export: objectives: name %q has no valid Kubernetes object name", c)
		}
		if prev, dup := used[n]; dup {
			return nil, fmt.Errorf("export: objectives: %q and %q map to the same object name %q", prev, c, n)
		}
		used[n] = c
		if n != c {
			bd.note("objectives", "class %q is written as InferenceObjective %q; its requests must send x-llm-d-inference-objective: %s", c, n, n)
		}
		out = append(out, llmd.InferenceObjective{
			APIVersion: bd.t.ObjectiveAPIVersion, Kind: "InferenceObjective",
			Metadata: llmd.ObjectMeta{Name: n, Namespace: bd.opts.Namespace},
			Spec: llmd.InferenceObjectiveSpec{Priority: ptr(int32(bd.classPriorities[c])),
				PoolRef: llmd.PoolRef{Group: "inference.networking.k8s.io", Name: bd.opts.Name}},
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Metadata.Name < out[j].Metadata.Name })
	return out, nil
}
