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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PolicyBundleSpec is the full set of serving policies of a simulated cluster. Its sections
// are those of a BLIS policy file with the keys in camelCase (token_bucket_capacity is
// tokenBucketCapacity); each policy stage can alternatively be a decision tree or a CEL
// expression. Instead of typed fields, blisConfigMapRef may point at an unchanged BLIS policy
// file.
//
// +kubebuilder:validation:XValidation:rule="!has(self.blisConfigMapRef) || !(has(self.admission) || has(self.priority) || has(self.routing) || has(self.scheduler) || has(self.instanceScheduler) || has(self.preemption) || has(self.tenantBudgets) || has(self.nodePools) || has(self.autoscaler) || has(self.instanceLifecycle))",message="blisConfigMapRef and the typed policy fields are mutually exclusive",fieldPath=".blisConfigMapRef"
// +kubebuilder:validation:XValidation:rule="!has(self.scheduler) || !has(self.instanceScheduler) || !(has(self.instanceScheduler.decisionTree) || has(self.instanceScheduler.cel))",message="scheduler names a template; it cannot be combined with an instanceScheduler decisionTree or cel policy",fieldPath=".instanceScheduler"
// +kubebuilder:validation:XValidation:rule="!has(self.instanceScheduler) || !(has(self.instanceScheduler.parameters) || has(self.instanceScheduler.options) || has(self.instanceScheduler.parameterMaps)) || has(self.scheduler)",message="instanceScheduler parameters, options and parameterMaps belong to the scheduler template and need scheduler",fieldPath=".instanceScheduler"
type PolicyBundleSpec struct {
	// blisConfigMapRef points at a ConfigMap key holding an unchanged BLIS policy file, used
	// instead of the typed fields below.
	// +optional
	BlisConfigMapRef *ConfigMapKeyReference `json:"blisConfigMapRef,omitempty"`

	// admission decides whether an arriving request is admitted, rejected or delayed.
	// +optional
	Admission *AdmissionPolicy `json:"admission,omitempty"`

	// priority computes the priority score of an admitted request.
	// +optional
	Priority *PriorityPolicy `json:"priority,omitempty"`

	// routing picks the replica that serves a request.
	// +optional
	Routing *RoutingPolicy `json:"routing,omitempty"`

	// scheduler is the instance scheduler template that orders each replica's wait queue
	// (BLIS key scheduler).
	// +kubebuilder:validation:Enum=fcfs;priority-fcfs;sjf;reverse-priority
	// +optional
	Scheduler string `json:"scheduler,omitempty"`

	// instanceScheduler holds the settings of the scheduler template (parameters, options,
	// parameterMaps), or replaces the template with a decision tree or a CEL expression.
	// +optional
	InstanceScheduler *PolicyForms `json:"instanceScheduler,omitempty"`

	// preemption selects the victim when a replica runs out of KV blocks.
	// +optional
	Preemption *PreemptionPolicy `json:"preemption,omitempty"`

	// tenantBudgets maps a tenant ID to its fair share of cluster capacity in [0, 1].
	// Keys are tenant IDs exactly as they appear in the workload.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k] >= 0.0 && self[k] <= 1.0)",message="each tenant budget must be in [0, 1]"
	// +optional
	TenantBudgets map[string]float64 `json:"tenantBudgets,omitempty"`

	// nodePools are the node pools replicas are placed on, for autoscaling with node
	// provisioning.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	// +optional
	NodePools []NodePool `json:"nodePools,omitempty"`

	// autoscaler is the autoscale policy and the timing of the autoscaling pipeline.
	// +optional
	Autoscaler *AutoscalerPolicy `json:"autoscaler,omitempty"`

	// instanceLifecycle models how long replicas take to load.
	// +optional
	InstanceLifecycle *InstanceLifecycle `json:"instanceLifecycle,omitempty"`

	// lineage records where this bundle came from in an evolutionary search.
	// +optional
	Lineage *Lineage `json:"lineage,omitempty"`
}

// NumberTable maps names chosen by the user (SLO classes, tenants) to numbers.
// +kubebuilder:validation:MaxProperties=64
type NumberTable map[string]float64

// PolicyForms are the settings of a stage's template (numeric parameters, options and
// tables) and the non-template ways to express the stage. At most one of decisionTree and cel
// may be set.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.decisionTree) && has(self.cel))",message="set at most one of decisionTree and cel"
type PolicyForms struct {
	// parameters are the numeric parameters of the stage's template, by the template's
	// parameter names (for example score of constant, default_score of tenant-priority); the
	// names are checked when the bundle is resolved. This map is what parameter-space
	// optimizers mutate.
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	Parameters map[string]float64 `json:"parameters,omitempty"`

	// options are the template's non-numeric settings by name, for example cost: request
	// (token-bucket), tie_break: lowest (least-loaded), signal: queue-depth; switches are
	// written "true" or "false" (per_tenant: "true").
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 256)",message="option values are at most 256 characters"
	// +optional
	Options map[string]string `json:"options,omitempty"`

	// parameterMaps are the template's tables by name, each mapping user names to numbers,
	// for example class_scores (slo-based: SLO class to score), tenant_scores
	// (tenant-priority), targets_us (deadline-aware), quotas (tenant-quota).
	// +kubebuilder:validation:MaxProperties=8
	// +optional
	ParameterMaps map[string]NumberTable `json:"parameterMaps,omitempty"`

	// decisionTree expresses the policy as an interpretable decision tree.
	// +optional
	DecisionTree *DecisionTree `json:"decisionTree,omitempty"`

	// cel expresses the policy as a Common Expression Language expression over the stage's
	// observables (for example request.inputTokens, instance.kvUtilization). It runs in a
	// sandbox with a cost limit and no I/O, so its results are deterministic. The result type
	// depends on the stage: bool (admit) for admission, double for priority, the instance's
	// double score for routing (evaluated once per instance). The expression is compiled and
	// type-checked when the bundle is resolved.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	CEL string `json:"cel,omitempty"`
}

// AdmissionPolicy is the admission stage. Set policy (a template, with parameters),
// decisionTree or cel; with none of them the stage is always-admit.
//
// +kubebuilder:validation:XValidation:rule="(has(self.policy) ? 1 : 0) + (has(self.decisionTree) ? 1 : 0) + (has(self.cel) ? 1 : 0) <= 1",message="set at most one of policy, decisionTree and cel"
// +kubebuilder:validation:XValidation:rule="!(has(self.parameters) || has(self.options) || has(self.parameterMaps)) || has(self.policy)",message="parameters, options and parameterMaps apply to a template and need policy"
// +kubebuilder:validation:XValidation:rule="!has(self.decisionTree) || self.decisionTree.nodes.all(n, !has(n.action) || n.action.decision in ['admit', 'reject', 'delay'])",message="admission tree leaves decide admit, reject or delay",fieldPath=".decisionTree"
type AdmissionPolicy struct {
	// policy is the admission template.
	// +kubebuilder:validation:Enum=always-admit;token-bucket;rate-limit;tenant-quota;reject-all;tier-shed;gaie-legacy
	// +optional
	Policy string `json:"policy,omitempty"`

	PolicyForms `json:",inline"`

	// tokenBucketCapacity is the token-bucket size in tokens (default 10000); each request
	// costs its input tokens.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TokenBucketCapacity *float64 `json:"tokenBucketCapacity,omitempty"`

	// tokenBucketRefillRate is the token-bucket refill in tokens per simulated second
	// (default 1000).
	// +kubebuilder:validation:Minimum=0
	// +optional
	TokenBucketRefillRate *float64 `json:"tokenBucketRefillRate,omitempty"`

	// tierShedThreshold is the per-instance load above which tier-shed starts shedding
	// (default 0).
	// +kubebuilder:validation:Minimum=0
	// +optional
	TierShedThreshold *int32 `json:"tierShedThreshold,omitempty"`

	// tierShedMinPriority is the lowest SLO-tier priority tier-shed still admits under
	// overload (default 3, standard).
	// +optional
	TierShedMinPriority *int32 `json:"tierShedMinPriority,omitempty"`

	// gaieQdThreshold is the per-instance queue depth at which gaie-legacy starts rejecting
	// sheddable requests (default 5).
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +optional
	GaieQdThreshold *float64 `json:"gaieQdThreshold,omitempty"`

	// gaieKvThreshold is the KV utilisation in (0, 1] at which gaie-legacy starts rejecting
	// sheddable requests (default 0.8).
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +optional
	GaieKvThreshold *float64 `json:"gaieKvThreshold,omitempty"`

	// sloPriorities overrides the SLO-class-to-priority mapping (defaults: critical 4,
	// standard 3, batch -1, sheddable -2, background -3; negative is sheddable). Keys are
	// SLO class names.
	// +kubebuilder:validation:MaxProperties=16
	// +optional
	SloPriorities map[string]int32 `json:"sloPriorities,omitempty"`

	// sloTargets are per-SLO-class TTFT targets in microseconds, used by deadline ordering.
	// Keys are SLO class names.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k] > 0)",message="SLO targets must be positive"
	// +optional
	SloTargets map[string]int64 `json:"sloTargets,omitempty"`
}

// PriorityPolicy is the priority stage. With no policy, decisionTree or cel it is constant.
//
// +kubebuilder:validation:XValidation:rule="(has(self.policy) ? 1 : 0) + (has(self.decisionTree) ? 1 : 0) + (has(self.cel) ? 1 : 0) <= 1",message="set at most one of policy, decisionTree and cel"
// +kubebuilder:validation:XValidation:rule="!(has(self.parameters) || has(self.options) || has(self.parameterMaps)) || has(self.policy)",message="parameters, options and parameterMaps apply to a template and need policy"
// +kubebuilder:validation:XValidation:rule="!has(self.decisionTree) || self.decisionTree.nodes.all(n, !has(n.action) || n.action.decision == 'score')",message="tree leaves of this stage decide score (with value)",fieldPath=".decisionTree"
type PriorityPolicy struct {
	// policy is the priority template.
	// +kubebuilder:validation:Enum=constant;slo-based;tenant-priority;deadline-aware;inverted-slo
	// +optional
	Policy string `json:"policy,omitempty"`

	PolicyForms `json:",inline"`
}

// RoutingPolicy is the routing stage. With no policy, decisionTree or cel it is round-robin.
//
// +kubebuilder:validation:XValidation:rule="(has(self.policy) ? 1 : 0) + (has(self.decisionTree) ? 1 : 0) + (has(self.cel) ? 1 : 0) <= 1",message="set at most one of policy, decisionTree and cel"
// +kubebuilder:validation:XValidation:rule="!(has(self.parameters) || has(self.options) || has(self.parameterMaps)) || has(self.policy)",message="parameters, options and parameterMaps apply to a template and need policy"
// +kubebuilder:validation:XValidation:rule="!has(self.scorers) || (has(self.policy) && self.policy in ['weighted', 'weighted-scoring'])",message="scorers apply only to the weighted (weighted-scoring) routing policy",fieldPath=".scorers"
// +kubebuilder:validation:XValidation:rule="!has(self.picker) || (has(self.policy) && self.policy in ['weighted', 'weighted-scoring'])",message="picker applies only to the weighted (weighted-scoring) routing policy",fieldPath=".picker"
// +kubebuilder:validation:XValidation:rule="!has(self.decisionTree) || self.decisionTree.nodes.all(n, !has(n.action) || n.action.decision == 'score')",message="tree leaves of this stage decide score (with value)",fieldPath=".decisionTree"
type RoutingPolicy struct {
	// policy is the routing template; weighted (BLIS's name) and weighted-scoring are the same
	// scorer-weighted policy.
	// +kubebuilder:validation:Enum=round-robin;least-loaded;weighted;weighted-scoring;prefix-affinity;always-busiest
	// +optional
	Policy string `json:"policy,omitempty"`

	PolicyForms `json:",inline"`

	// scorers are the weighted scorers of the weighted policy: a replica's score is the sum of
	// weight x score over scorers, each score in [0, 1]. Names are llm-d scorer names or
	// their BLIS aliases, each at most once.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Scorers []Scorer `json:"scorers,omitempty"`

	// picker selects among scored replicas (default max-score).
	// +kubebuilder:validation:Enum=max-score;random;weighted-random
	// +optional
	Picker string `json:"picker,omitempty"`
}

// ScorerName is an llm-d scorer plugin type or a BLIS alias of one. Aliases: queue-depth
// (queue-scorer), kv-utilization (kv-cache-utilization-scorer), prefix-affinity and
// precise-prefix-cache (prefix-cache-scorer, approximate and precise prefix producer),
// no-hit-lru (no-hit-lru-scorer), load-aware (load-aware-scorer), active-requests and
// inflight-requests (active-request-scorer), running-requests (running-requests-size-scorer),
// token-load (token-load-scorer). load-balance is BLIS's own 1/(1+load) scorer.
// +kubebuilder:validation:Enum=queue-scorer;kv-cache-utilization-scorer;prefix-cache-scorer;load-aware-scorer;active-request-scorer;token-load-scorer;no-hit-lru-scorer;running-requests-size-scorer;load-balance;queue-depth;kv-utilization;prefix-affinity;precise-prefix-cache;no-hit-lru;load-aware;active-requests;inflight-requests;running-requests;token-load
type ScorerName string

// Scorer is one weighted routing scorer.
type Scorer struct {
	// name is the scorer.
	// +required
	Name ScorerName `json:"name"`

	// weight multiplies the scorer's [0, 1] score; only ratios between weights matter.
	// +kubebuilder:validation:Minimum=0
	// +required
	Weight float64 `json:"weight"`

	// parameters are scorer parameters by llm-d parameter name (for example threshold of
	// load-aware-scorer).
	// +kubebuilder:validation:MaxProperties=8
	// +optional
	Parameters map[string]float64 `json:"parameters,omitempty"`
}

// PreemptionPolicy is the preemption stage. With no policy, decisionTree or cel it is fcfs
// (preempt the most recently scheduled request).
//
// +kubebuilder:validation:XValidation:rule="(has(self.policy) ? 1 : 0) + (has(self.decisionTree) ? 1 : 0) + (has(self.cel) ? 1 : 0) <= 1",message="set at most one of policy, decisionTree and cel"
// +kubebuilder:validation:XValidation:rule="!(has(self.parameters) || has(self.options) || has(self.parameterMaps)) || has(self.policy)",message="parameters, options and parameterMaps apply to a template and need policy"
type PreemptionPolicy struct {
	// policy is the preemption template.
	// +kubebuilder:validation:Enum=fcfs;priority
	// +optional
	Policy string `json:"policy,omitempty"`

	PolicyForms `json:",inline"`
}

// NodePool is a pool of identical nodes replicas are placed on.
//
// +kubebuilder:validation:XValidation:rule="self.minNodes <= self.maxNodes",message="minNodes must not exceed maxNodes",fieldPath=".minNodes"
// +kubebuilder:validation:XValidation:rule="self.initialNodes >= self.minNodes && self.initialNodes <= self.maxNodes",message="initialNodes must be within [minNodes, maxNodes]",fieldPath=".initialNodes"
type NodePool struct {
	// name identifies the pool.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Name string `json:"name"`

	// gpuType is the GPU of the pool's nodes (a hardware catalog name).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	GpuType string `json:"gpuType"`

	// gpusPerNode is the number of GPUs per node.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +required
	GpusPerNode int32 `json:"gpusPerNode"`

	// gpuMemoryGib is the memory of one GPU in GiB.
	// +kubebuilder:validation:Minimum=0
	// +optional
	GpuMemoryGib float64 `json:"gpuMemoryGib,omitempty"`

	// initialNodes is the number of nodes at the start.
	// +kubebuilder:validation:Minimum=0
	// +optional
	InitialNodes int32 `json:"initialNodes,omitempty"`

	// minNodes is the fewest nodes.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinNodes int32 `json:"minNodes,omitempty"`

	// maxNodes is the most nodes.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4096
	// +required
	MaxNodes int32 `json:"maxNodes"`

	// provisioningDelay is the time to add a node, in seconds.
	// +optional
	ProvisioningDelay *DelaySpec `json:"provisioningDelay,omitempty"`

	// costPerHour is the cost of one node for one hour.
	// +kubebuilder:validation:Minimum=0
	// +optional
	CostPerHour float64 `json:"costPerHour,omitempty"`
}

// AutoscalerPolicy is the autoscale stage and the timing of the autoscaling pipeline. The
// autoscaler runs only when intervalUs > 0. With no policy, decisionTree or cel it uses the
// saturation analyzer configured by analyzer.
//
// +kubebuilder:validation:XValidation:rule="(has(self.policy) ? 1 : 0) + (has(self.decisionTree) ? 1 : 0) + (has(self.cel) ? 1 : 0) <= 1",message="set at most one of policy, decisionTree and cel"
// +kubebuilder:validation:XValidation:rule="!(has(self.parameters) || has(self.options) || has(self.parameterMaps)) || has(self.policy)",message="parameters, options and parameterMaps apply to a template and need policy"
type AutoscalerPolicy struct {
	// policy is the autoscale template.
	// +kubebuilder:validation:Enum=threshold;target-utilization;queue-depth;oscillator
	// +optional
	Policy string `json:"policy,omitempty"`

	PolicyForms `json:",inline"`

	// intervalUs is the period of autoscaling decisions in microseconds; 0 disables the
	// autoscaler.
	// +kubebuilder:validation:Minimum=0
	// +optional
	IntervalUs int64 `json:"intervalUs,omitempty"`

	// scaleUpStabilizationWindowUs is the HPA scale-up stabilisation window in microseconds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ScaleUpStabilizationWindowUs int64 `json:"scaleUpStabilizationWindowUs,omitempty"`

	// scaleDownStabilizationWindowUs is the HPA scale-down stabilisation window in
	// microseconds (Kubernetes' default is 300000000, five minutes).
	// +kubebuilder:validation:Minimum=0
	// +optional
	ScaleDownStabilizationWindowUs int64 `json:"scaleDownStabilizationWindowUs,omitempty"`

	// hpaScrapeDelay is the lag of the metrics the autoscaler reads, in seconds.
	// +optional
	HpaScrapeDelay *DelaySpec `json:"hpaScrapeDelay,omitempty"`

	// analyzer holds the saturation analyzer's thresholds.
	// +optional
	Analyzer *AutoscalerAnalyzer `json:"analyzer,omitempty"`
}

// AutoscalerAnalyzer holds saturation-analyzer thresholds; absent values take the defaults
// (0.8, 0.8, 0.4, 512).
type AutoscalerAnalyzer struct {
	// kvCacheThreshold is the KV utilisation in (0, 1] that counts as saturated.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +optional
	KvCacheThreshold *float64 `json:"kvCacheThreshold,omitempty"`

	// scaleUpThreshold is the saturation above which the analyzer scales up.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +optional
	ScaleUpThreshold *float64 `json:"scaleUpThreshold,omitempty"`

	// scaleDownBoundary is the saturation below which the analyzer scales down.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +optional
	ScaleDownBoundary *float64 `json:"scaleDownBoundary,omitempty"`

	// avgInputTokens is the assumed mean prompt length for capacity estimates.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +optional
	AvgInputTokens *float64 `json:"avgInputTokens,omitempty"`
}

// InstanceLifecycle models replica start-up.
type InstanceLifecycle struct {
	// loadingDelay is the time a new replica spends loading, in seconds.
	// +optional
	LoadingDelay *DelaySpec `json:"loadingDelay,omitempty"`

	// warmStartInitialInstances skips loading for the replicas that exist at the start.
	// +optional
	WarmStartInitialInstances bool `json:"warmStartInitialInstances,omitempty"`
}

// Lineage is the evolutionary metadata of a bundle.
type Lineage struct {
	// generation is the evolutionary generation that produced the bundle (0 for a seed).
	// +kubebuilder:validation:Minimum=0
	// +optional
	Generation int64 `json:"generation,omitempty"`

	// parentID identifies the bundle this one was mutated from.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ParentID string `json:"parentID,omitempty"`

	// mutations describe, most recent last, the changes made to the parent.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=256
	// +optional
	Mutations []string `json:"mutations,omitempty"`
}

// DecisionTree is a binary decision tree stored as a flat list of nodes (CRD schemas cannot
// recurse). Nodes are numbered; node 0 is the root. An inner node has a condition and the
// numbers of its trueNode and falseNode, which must be greater than its own, so every tree
// is acyclic and finite; a leaf has an action.
//
// +kubebuilder:validation:XValidation:rule="self.nodes.exists(n, n.id == 0)",message="the root node (id 0) is missing",fieldPath=".nodes"
// +kubebuilder:validation:XValidation:rule="self.nodes.all(n, !has(n.trueNode) || self.nodes.exists(m, m.id == n.trueNode))",message="trueNode must be the id of a node of this tree",fieldPath=".nodes"
// +kubebuilder:validation:XValidation:rule="self.nodes.all(n, !has(n.falseNode) || self.nodes.exists(m, m.id == n.falseNode))",message="falseNode must be the id of a node of this tree",fieldPath=".nodes"
type DecisionTree struct {
	// nodes are the tree's nodes.
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=63
	// +required
	Nodes []DecisionNode `json:"nodes"`
}

// DecisionNode is one node of a DecisionTree: a condition with two children, or a leaf
// action.
//
// +kubebuilder:validation:XValidation:rule="has(self.condition) != has(self.action)",message="a node has either a condition (inner node) or an action (leaf)"
// +kubebuilder:validation:XValidation:rule="has(self.condition) == (has(self.trueNode) && has(self.falseNode))",message="an inner node needs both trueNode and falseNode, and a leaf has neither"
// +kubebuilder:validation:XValidation:rule="!has(self.trueNode) || self.trueNode > self.id",message="trueNode must be greater than the node's own id (children are numbered after their parent)",fieldPath=".trueNode"
// +kubebuilder:validation:XValidation:rule="!has(self.falseNode) || self.falseNode > self.id",message="falseNode must be greater than the node's own id (children are numbered after their parent)",fieldPath=".falseNode"
type DecisionNode struct {
	// id numbers the node within the tree; 0 is the root.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=62
	// +required
	ID int32 `json:"id"`

	// comment describes the node for readers; it has no effect.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Comment string `json:"comment,omitempty"`

	// condition compares an observable with a threshold.
	// +optional
	Condition *DecisionCondition `json:"condition,omitempty"`

	// trueNode is the id of the node visited when the condition holds.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=62
	// +optional
	TrueNode *int32 `json:"trueNode,omitempty"`

	// falseNode is the id of the node visited when the condition does not hold.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=62
	// +optional
	FalseNode *int32 `json:"falseNode,omitempty"`

	// action is the decision of a leaf.
	// +optional
	Action *DecisionAction `json:"action,omitempty"`
}

// DecisionCondition compares an observable with a constant: `observable operator threshold`
// for numeric observables, `observable operator value` (== or != only) for string observables
// such as request.sloClass.
//
// +kubebuilder:validation:XValidation:rule="has(self.threshold) != has(self.value)",message="set exactly one of threshold (numeric observables) and value (string observables)"
// +kubebuilder:validation:XValidation:rule="!has(self.value) || self.operator in ['==', '!=']",message="string comparisons take only == and !=",fieldPath=".operator"
type DecisionCondition struct {
	// observable is a signal the stage may read, named as in CEL expressions, for example
	// request.inputTokens, request.sloClass, tenant.recentRate, global.inFlight,
	// instance.kvUtilization or score.prefixCache. The list per stage is in the PolicyBundle
	// documentation; whether the stage may read the signal is checked when the bundle is
	// resolved.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z][a-zA-Z0-9]*\.[a-z][a-zA-Z0-9]*$`
	// +required
	Observable string `json:"observable"`

	// operator compares the observable (left) with the constant (right).
	// +kubebuilder:validation:Enum="<";"<=";">";">=";"==";"!="
	// +required
	Operator string `json:"operator"`

	// threshold is the numeric right-hand side.
	// +optional
	Threshold *float64 `json:"threshold,omitempty"`

	// value is the string right-hand side, for string observables.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Value *string `json:"value,omitempty"`
}

// DecisionAction is the outcome of a decision-tree leaf. Per stage: admission admit, reject
// or delay (value = the delay in microseconds); priority score (value = the priority score);
// routing score (value = the score of the instance the tree is evaluated for; the highest
// score wins).
//
// +kubebuilder:validation:XValidation:rule="self.decision != 'delay' || (has(self.value) && self.value > 0.0)",message="delay needs value, the delay in microseconds (> 0)",fieldPath=".value"
// +kubebuilder:validation:XValidation:rule="self.decision != 'score' || has(self.value)",message="score needs value",fieldPath=".value"
type DecisionAction struct {
	// decision is admit, reject or delay (admission) or score (priority and routing).
	// +kubebuilder:validation:Enum=admit;reject;delay;score
	// +required
	Decision string `json:"decision"`

	// value is the delay in microseconds, or the score.
	// +optional
	Value *float64 `json:"value,omitempty"`

	// reason is recorded with the decision in traces.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Reason string `json:"reason,omitempty"`
}

// PolicyBundleStatus is the observed state of a PolicyBundle.
type PolicyBundleStatus struct {
	// conditions: Ready is True when the bundle (or its referenced BLIS file) resolves and
	// every template, parameter, observable and expression is valid.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// contentHash is the SHA-256 of the resolved bundle, hex encoded.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	ContentHash string `json:"contentHash,omitempty"`
}

// PolicyBundle is a complete set of serving policies (admission, priority, routing,
// scheduling, preemption, autoscaling) for a simulated cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pbundle;pb,categories=blis
// +kubebuilder:printcolumn:name="Admission",type=string,JSONPath=`.spec.admission.policy`
// +kubebuilder:printcolumn:name="Routing",type=string,JSONPath=`.spec.routing.policy`
// +kubebuilder:printcolumn:name="Scheduler",type=string,JSONPath=`.spec.scheduler`
// +kubebuilder:printcolumn:name="Lineage-Gen",type=integer,JSONPath=`.spec.lineage.generation`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PolicyBundle struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the set of policies.
	// +required
	Spec PolicyBundleSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status PolicyBundleStatus `json:"status,omitempty"`
}

// PolicyBundleList is a list of PolicyBundle.
//
// +kubebuilder:object:root=true
type PolicyBundleList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the PolicyBundles.
	Items []PolicyBundle `json:"items"`
}

func init() {
	registerKnownTypes(&PolicyBundle{}, &PolicyBundleList{})
}
