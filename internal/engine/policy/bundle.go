package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Policy names selecting the two non-template representations.
const (
	PolicyCEL  = "cel"
	PolicyTree = "decision-tree"
)

// Bundle is a complete policy configuration: BLIS's policy-config YAML (every BLIS key loads
// unchanged) plus the extensions of this project (template parameters, decision trees, CEL,
// decision latencies, observability, metadata). Keys follow BLIS's snake_case spelling.
type Bundle struct {
	Admission AdmissionSpec `yaml:"admission,omitempty" json:"admission,omitempty"`
	Routing   RoutingSpec   `yaml:"routing,omitempty" json:"routing,omitempty"`
	Priority  PrioritySpec  `yaml:"priority,omitempty" json:"priority,omitempty"`
	// Scheduler names the instance scheduler template (fcfs, priority-fcfs, sjf,
	// reverse-priority); SchedulerParams are its parameters.
	Scheduler       string         `yaml:"scheduler,omitempty" json:"scheduler,omitempty"`
	SchedulerParams Params         `yaml:"scheduler_params,omitempty" json:"scheduler_params,omitempty"`
	Preemption      PreemptionSpec `yaml:"preemption,omitempty" json:"preemption,omitempty"`
	// TenantBudgets gives each tenant a fraction of capacity (used by tenant-quota).
	TenantBudgets map[string]float64 `yaml:"tenant_budgets,omitempty" json:"tenant_budgets,omitempty"`
	// NodePools, Autoscaler and InstanceLifecycle are BLIS's infrastructure keys; they are
	// parsed and validated here and consumed by the cluster layer.
	NodePools         []NodePool        `yaml:"node_pools,omitempty" json:"node_pools,omitempty"`
	Autoscaler        Autoscaler        `yaml:"autoscaler,omitempty" json:"autoscaler,omitempty"`
	InstanceLifecycle InstanceLifecycle `yaml:"instance_lifecycle,omitempty" json:"instance_lifecycle,omitempty"`

	// Observability sets snapshot staleness (extension; defaults when nil).
	Observability *ObservabilityConfig `yaml:"observability,omitempty" json:"observability,omitempty"`
	// Metadata records the bundle's lineage for evolutionary search (extension).
	Metadata Metadata `yaml:"metadata,omitempty" json:"metadata,omitempty"`
}

// Metadata is a bundle's lineage.
type Metadata struct {
	Generation int      `yaml:"generation,omitempty" json:"generation,omitempty"`
	Parent     string   `yaml:"parent,omitempty" json:"parent,omitempty"`
	Mutations  []string `yaml:"mutations,omitempty" json:"mutations,omitempty"`
}

// AdmissionSpec configures the admission stage. The flat BLIS keys set the parameters of
// the template they belong to; Params sets any template parameter by name.
type AdmissionSpec struct {
	Policy                string           `yaml:"policy,omitempty" json:"policy,omitempty"`
	TokenBucketCapacity   *float64         `yaml:"token_bucket_capacity,omitempty" json:"token_bucket_capacity,omitempty"`
	TokenBucketRefillRate *float64         `yaml:"token_bucket_refill_rate,omitempty" json:"token_bucket_refill_rate,omitempty"`
	TierShedThreshold     *int             `yaml:"tier_shed_threshold,omitempty" json:"tier_shed_threshold,omitempty"`
	TierShedMinPriority   *int             `yaml:"tier_shed_min_priority,omitempty" json:"tier_shed_min_priority,omitempty"`
	GAIEQDThreshold       *float64         `yaml:"gaie_qd_threshold,omitempty" json:"gaie_qd_threshold,omitempty"`
	GAIEKVThreshold       *float64         `yaml:"gaie_kv_threshold,omitempty" json:"gaie_kv_threshold,omitempty"`
	SLOPriorities         map[string]int   `yaml:"slo_priorities,omitempty" json:"slo_priorities,omitempty"`
	SLOTargets            map[string]int64 `yaml:"slo_targets,omitempty" json:"slo_targets,omitempty"`

	Params    Params    `yaml:"params,omitempty" json:"params,omitempty"`
	Tree      *TreeNode `yaml:"tree,omitempty" json:"tree,omitempty"`
	CEL       string    `yaml:"cel,omitempty" json:"cel,omitempty"`
	LatencyUs int64     `yaml:"latency_us,omitempty" json:"latency_us,omitempty"`
}

// RoutingSpec configures the routing stage.
type RoutingSpec struct {
	Policy  string       `yaml:"policy,omitempty" json:"policy,omitempty"`
	Scorers []ScorerSpec `yaml:"scorers,omitempty" json:"scorers,omitempty"`
	// PrefixCache holds the approx-prefix-cache-producer parameters (llm-d names).
	PrefixCache *PrefixCacheSpec `yaml:"prefix_cache,omitempty" json:"prefix_cache,omitempty"`

	Params    Params    `yaml:"params,omitempty" json:"params,omitempty"`
	Tree      *TreeNode `yaml:"tree,omitempty" json:"tree,omitempty"`
	CEL       string    `yaml:"cel,omitempty" json:"cel,omitempty"`
	LatencyUs int64     `yaml:"latency_us,omitempty" json:"latency_us,omitempty"`
}

// PrefixCacheSpec mirrors llm-d's approx-prefix-cache-producer parameters.
type PrefixCacheSpec struct {
	AutoTune               *bool `yaml:"autoTune,omitempty" json:"autoTune,omitempty"`
	BlockSizeTokens        *int  `yaml:"blockSizeTokens,omitempty" json:"blockSizeTokens,omitempty"`
	MaxPrefixBlocksToMatch *int  `yaml:"maxPrefixBlocksToMatch,omitempty" json:"maxPrefixBlocksToMatch,omitempty"`
	MaxPrefixTokensToMatch *int  `yaml:"maxPrefixTokensToMatch,omitempty" json:"maxPrefixTokensToMatch,omitempty"`
	LRUCapacityPerServer   *int  `yaml:"lruCapacityPerServer,omitempty" json:"lruCapacityPerServer,omitempty"`
}

// PrioritySpec configures the priority stage.
type PrioritySpec struct {
	Policy string    `yaml:"policy,omitempty" json:"policy,omitempty"`
	Params Params    `yaml:"params,omitempty" json:"params,omitempty"`
	Tree   *TreeNode `yaml:"tree,omitempty" json:"tree,omitempty"`
	CEL    string    `yaml:"cel,omitempty" json:"cel,omitempty"`
}

// PreemptionSpec selects the preemption victim policy (fcfs or priority).
type PreemptionSpec struct {
	Policy string `yaml:"policy,omitempty" json:"policy,omitempty"`
}

// DelaySpec is a delay distribution in seconds (BLIS).
type DelaySpec struct {
	Mean   float64 `yaml:"mean,omitempty" json:"mean,omitempty"`
	Stddev float64 `yaml:"stddev,omitempty" json:"stddev,omitempty"`
}

// NodePool is one BLIS node pool.
type NodePool struct {
	Name              string    `yaml:"name" json:"name"`
	GPUType           string    `yaml:"gpu_type" json:"gpu_type"`
	GPUsPerNode       int       `yaml:"gpus_per_node" json:"gpus_per_node"`
	GPUMemoryGiB      float64   `yaml:"gpu_memory_gib" json:"gpu_memory_gib"`
	InitialNodes      int       `yaml:"initial_nodes" json:"initial_nodes"`
	MinNodes          int       `yaml:"min_nodes" json:"min_nodes"`
	MaxNodes          int       `yaml:"max_nodes" json:"max_nodes"`
	ProvisioningDelay DelaySpec `yaml:"provisioning_delay" json:"provisioning_delay"`
	CostPerHour       float64   `yaml:"cost_per_hour" json:"cost_per_hour"`
}

// Analyzer holds BLIS's saturation analyzer thresholds (0 = default).
type Analyzer struct {
	KVCacheThreshold  float64 `yaml:"kv_cache_threshold,omitempty" json:"kv_cache_threshold,omitempty"`
	ScaleUpThreshold  float64 `yaml:"scale_up_threshold,omitempty" json:"scale_up_threshold,omitempty"`
	ScaleDownBoundary float64 `yaml:"scale_down_boundary,omitempty" json:"scale_down_boundary,omitempty"`
	AvgInputTokens    float64 `yaml:"avg_input_tokens,omitempty" json:"avg_input_tokens,omitempty"`
}

// Autoscaler is BLIS's autoscaler block (IntervalUs 0 = disabled).
type Autoscaler struct {
	IntervalUs                     float64   `yaml:"interval_us,omitempty" json:"interval_us,omitempty"`
	ScaleUpStabilizationWindowUs   float64   `yaml:"scale_up_stabilization_window_us,omitempty" json:"scale_up_stabilization_window_us,omitempty"`
	ScaleDownStabilizationWindowUs float64   `yaml:"scale_down_stabilization_window_us,omitempty" json:"scale_down_stabilization_window_us,omitempty"`
	HPAScrapeDelay                 DelaySpec `yaml:"hpa_scrape_delay,omitempty" json:"hpa_scrape_delay,omitempty"`
	Analyzer                       Analyzer  `yaml:"analyzer,omitempty" json:"analyzer,omitempty"`
	// Policy and Params select the autoscale template and its parameters (an extension of
	// BLIS's block; see Autoscaler.Spec). Empty Policy means threshold on the analyzer's bounds.
	Policy string             `yaml:"policy,omitempty" json:"policy,omitempty"`
	Params map[string]float64 `yaml:"params,omitempty" json:"params,omitempty"`
}

// InstanceLifecycle is BLIS's instance loading model.
type InstanceLifecycle struct {
	LoadingDelay              DelaySpec `yaml:"loading_delay,omitempty" json:"loading_delay,omitempty"`
	WarmStartInitialInstances bool      `yaml:"warm_start_initial_instances,omitempty" json:"warm_start_initial_instances,omitempty"`
}

// Parse decodes a bundle strictly: unknown keys and wrong types are errors with their line.
func Parse(data []byte) (*Bundle, error) {
	var b Bundle
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&b); err != nil {
		if errors.Is(err, io.EOF) {
			return &b, nil // an empty file selects every default, as in BLIS
		}
		return nil, fmt.Errorf("policy config: %w", err)
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("policy config: expected one YAML document")
	}
	return &b, nil
}

// Load reads and strictly decodes a bundle file.
func Load(path string) (*Bundle, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading policy config: %w", err)
	}
	b, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// Validate checks the whole bundle without running anything: names, parameters, types,
// trees and CEL (compiled and cost-checked). The error names the policy, the field and, for
// CEL, the position in the expression.
func (b *Bundle) Validate() error {
	if err := b.validateInfra(); err != nil {
		return err
	}
	_, err := Build(b, BuildEnv{Instances: []InstanceInfo{{}}, validateOnly: true})
	return err
}

func finiteNonNeg(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("%s must be a finite non-negative number, got %v", name, v)
	}
	return nil
}

func (b *Bundle) validateInfra() error {
	for _, k := range sortedKeys(b.TenantBudgets) {
		if v := b.TenantBudgets[k]; math.IsNaN(v) || v < 0 || v > 1 {
			return fmt.Errorf("tenant_budgets[%q] must be in [0, 1], got %v", k, v)
		}
	}
	a := &b.Autoscaler
	for _, c := range []struct {
		n string
		v float64
	}{
		{"autoscaler.interval_us", a.IntervalUs},
		{"autoscaler.scale_up_stabilization_window_us", a.ScaleUpStabilizationWindowUs},
		{"autoscaler.scale_down_stabilization_window_us", a.ScaleDownStabilizationWindowUs},
		{"autoscaler.hpa_scrape_delay.mean", a.HPAScrapeDelay.Mean},
		{"autoscaler.hpa_scrape_delay.stddev", a.HPAScrapeDelay.Stddev},
		{"instance_lifecycle.loading_delay.mean", b.InstanceLifecycle.LoadingDelay.Mean},
		{"instance_lifecycle.loading_delay.stddev", b.InstanceLifecycle.LoadingDelay.Stddev},
	} {
		if err := finiteNonNeg(c.n, c.v); err != nil {
			return err
		}
	}
	if v := a.Analyzer.KVCacheThreshold; v != 0 && (math.IsNaN(v) || v < 0 || v > 1) {
		return fmt.Errorf("autoscaler.analyzer.kv_cache_threshold must be in (0, 1], got %v", v)
	}
	if _, err := a.Spec(); err != nil && (a.IntervalUs > 0 || a.Policy != "" || len(a.Params) > 0) {
		return err
	}
	for i, p := range b.NodePools {
		if p.Name == "" {
			return fmt.Errorf("node_pools[%d]: name is required", i)
		}
		if p.MinNodes < 0 || p.MaxNodes < p.MinNodes || p.InitialNodes < p.MinNodes || p.InitialNodes > p.MaxNodes {
			return fmt.Errorf("node_pools[%d] %q: need 0 <= min_nodes <= initial_nodes <= max_nodes", i, p.Name)
		}
	}
	if b.Admission.LatencyUs < 0 {
		return fmt.Errorf("admission.latency_us must be >= 0, got %d", b.Admission.LatencyUs)
	}
	if b.Routing.LatencyUs < 0 {
		return fmt.Errorf("routing.latency_us must be >= 0, got %d", b.Routing.LatencyUs)
	}
	return nil
}

// ParseScorers parses BLIS's --routing-scorers syntax: "name:weight,name:weight".
func ParseScorers(s string) ([]ScorerSpec, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out []ScorerSpec
	for i, part := range strings.Split(s, ",") {
		name, w, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("routing scorers: entry %d %q: want name:weight", i, part)
		}
		weight, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
		if err != nil || math.IsNaN(weight) || math.IsInf(weight, 0) {
			return nil, fmt.Errorf("routing scorers: entry %d %q: weight must be a finite number", i, part)
		}
		name = strings.TrimSpace(name)
		if _, ok := CanonicalScorer(name); !ok {
			return nil, fmt.Errorf("routing scorers: entry %d: unknown scorer %q (known: %s)", i, name, strings.Join(ScorerNames(), ", "))
		}
		out = append(out, ScorerSpec{Name: name, Weight: weight})
	}
	return out, nil
}

// Flags are the policy flags of `blis run`. A nil field was not given on the command line;
// given flags override the policy-config file, as in BLIS.
type Flags struct {
	PolicyConfig          string
	AdmissionPolicy       *string
	PriorityPolicy        *string
	RoutingPolicy         *string
	RoutingScorers        *string
	Scheduler             *string
	PreemptionPolicy      *string
	AdmissionLatency      *int64 // µs
	RoutingLatency        *int64 // µs
	TokenBucketCapacity   *float64
	TokenBucketRefillRate *float64
}

// FromFlags loads --policy-config (when given), applies the flag overrides and validates the
// result.
func FromFlags(f Flags) (*Bundle, error) {
	b := &Bundle{}
	if f.PolicyConfig != "" {
		var err error
		if b, err = Load(f.PolicyConfig); err != nil {
			return nil, err
		}
	}
	if f.AdmissionPolicy != nil {
		b.Admission.Policy = *f.AdmissionPolicy
	}
	if f.PriorityPolicy != nil {
		b.Priority.Policy = *f.PriorityPolicy
	}
	if f.RoutingPolicy != nil {
		b.Routing.Policy = *f.RoutingPolicy
	}
	if f.RoutingScorers != nil {
		sc, err := ParseScorers(*f.RoutingScorers)
		if err != nil {
			return nil, fmt.Errorf("--routing-scorers: %w", err)
		}
		b.Routing.Scorers = sc
	}
	if f.Scheduler != nil {
		b.Scheduler = *f.Scheduler
	}
	if f.PreemptionPolicy != nil {
		b.Preemption.Policy = *f.PreemptionPolicy
	}
	if f.AdmissionLatency != nil {
		b.Admission.LatencyUs = *f.AdmissionLatency
	}
	if f.RoutingLatency != nil {
		b.Routing.LatencyUs = *f.RoutingLatency
	}
	if f.TokenBucketCapacity != nil {
		b.Admission.TokenBucketCapacity = f.TokenBucketCapacity
	}
	if f.TokenBucketRefillRate != nil {
		b.Admission.TokenBucketRefillRate = f.TokenBucketRefillRate
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return b, nil
}

// EffectiveParams merges BLIS's flat admission keys (token_bucket_capacity, tier_shed_threshold,
// gaie_qd_threshold, ...) into the parameters of the template they belong to; explicit params
// win. It is what the admission template reads, and what an exporter must map.
func (a *AdmissionSpec) EffectiveParams() Params {
	p := Params{}
	set := func(tmpl, k string, v any) {
		if a.Policy == tmpl {
			p[k] = v
		}
	}
	if a.TokenBucketCapacity != nil {
		set("token-bucket", "capacity", *a.TokenBucketCapacity)
	}
	if a.TokenBucketRefillRate != nil {
		set("token-bucket", "refill_rate", *a.TokenBucketRefillRate)
	}
	if a.TierShedThreshold != nil {
		set("tier-shed", "threshold", *a.TierShedThreshold)
	}
	if a.TierShedMinPriority != nil {
		set("tier-shed", "min_priority", *a.TierShedMinPriority)
	}
	if a.GAIEQDThreshold != nil {
		set("gaie-legacy", "qd_threshold", *a.GAIEQDThreshold)
	}
	if a.GAIEKVThreshold != nil {
		set("gaie-legacy", "kv_threshold", *a.GAIEKVThreshold)
	}
	for k, v := range a.Params {
		p[k] = v
	}
	return p
}
