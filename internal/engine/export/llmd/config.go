// Package llmd mirrors the configuration formats of llm-d-router (the EndpointPickerConfig
// file its endpoint picker reads at start-up) and the Kubernetes objects deployed next to it
// (InferenceObjective, InferencePool, KEDA ScaledObject), with an allow-list of plugin types
// and parameter keys per target router version.
//
// llm-d-router decodes its configuration strictly since v0.9.0: an unknown key anywhere stops
// it from starting. The router's Go module cannot be fetched by this project, so this package
// owns small structs with exactly the router's keys and decodes documents the same strict way
// (see Decode and Validate). Facts come from llm-d-router v0.10.0 (plugin registry, sample
// configurations) and its release notes.
package llmd

// KindEndpointPickerConfig is the kind of the endpoint picker's configuration document.
const KindEndpointPickerConfig = "EndpointPickerConfig"

// EndpointPickerConfig is the endpoint picker's configuration file (apix/config/v1alpha1 of
// llm-d-router, and the same keys in llm-d.ai/v1 except the data layer's).
type EndpointPickerConfig struct {
	APIVersion         string              `json:"apiVersion" yaml:"apiVersion"`
	Kind               string              `json:"kind" yaml:"kind"`
	FeatureGates       []string            `json:"featureGates,omitempty" yaml:"featureGates,omitempty"`
	Plugins            []Plugin            `json:"plugins" yaml:"plugins"`
	SchedulingProfiles []SchedulingProfile `json:"schedulingProfiles" yaml:"schedulingProfiles"`
	RequestHandler     *RequestHandler     `json:"requestHandler,omitempty" yaml:"requestHandler,omitempty"`
	FlowControl        *FlowControl        `json:"flowControl,omitempty" yaml:"flowControl,omitempty"`
	DataLayer          *DataLayer          `json:"dataLayer,omitempty" yaml:"dataLayer,omitempty"`
	// SaturationDetector and Parser are the deprecated top-level aliases of
	// flowControl.saturationDetector and requestHandler.parsers (v1alpha1 only).
	SaturationDetector *PluginRef `json:"saturationDetector,omitempty" yaml:"saturationDetector,omitempty"`
	Parser             *PluginRef `json:"parser,omitempty" yaml:"parser,omitempty"`
}

// Plugin is one plugins[] entry. Name defaults to Type. Parameters is a typed parameter struct
// of this package when built by the exporter, or the decoded JSON value when read.
type Plugin struct {
	Name       string `json:"name,omitempty" yaml:"name,omitempty"`
	Type       string `json:"type" yaml:"type"`
	Parameters any    `json:"parameters,omitempty" yaml:"parameters,omitempty"`
}

// RefName is the name profiles and references use for the plugin.
func (p *Plugin) RefName() string {
	if p.Name != "" {
		return p.Name
	}
	return p.Type
}

// SchedulingProfile is one schedulingProfiles[] entry.
type SchedulingProfile struct {
	Name    string          `json:"name" yaml:"name"`
	Plugins []ProfilePlugin `json:"plugins" yaml:"plugins"`
}

// ProfilePlugin references a plugin from a profile; Weight applies to scorers only (default 1).
type ProfilePlugin struct {
	PluginRef string   `json:"pluginRef" yaml:"pluginRef"`
	Weight    *float64 `json:"weight,omitempty" yaml:"weight,omitempty"`
}

// PluginRef names a plugins[] entry.
type PluginRef struct {
	PluginRef string `json:"pluginRef" yaml:"pluginRef"`
}

// RequestHandler selects the request parsers.
type RequestHandler struct {
	Parsers []PluginRef `json:"parsers,omitempty" yaml:"parsers,omitempty"`
}

// FlowControl is the flow-control layer; only honoured with the flowControl feature gate,
// except SaturationDetector, which legacy admission also uses.
type FlowControl struct {
	MaxBytes                    string         `json:"maxBytes,omitempty" yaml:"maxBytes,omitempty"`
	MaxRequests                 string         `json:"maxRequests,omitempty" yaml:"maxRequests,omitempty"`
	DefaultRequestTTL           string         `json:"defaultRequestTTL,omitempty" yaml:"defaultRequestTTL,omitempty"`
	SaturationDetector          *PluginRef     `json:"saturationDetector,omitempty" yaml:"saturationDetector,omitempty"`
	UsageLimitPolicyPluginRef   string         `json:"usageLimitPolicyPluginRef,omitempty" yaml:"usageLimitPolicyPluginRef,omitempty"`
	EnableEviction              *bool          `json:"enableEviction,omitempty" yaml:"enableEviction,omitempty"`
	DefaultPriorityBand         *PriorityBand  `json:"defaultPriorityBand,omitempty" yaml:"defaultPriorityBand,omitempty"`
	DefaultNegativePriorityBand *PriorityBand  `json:"defaultNegativePriorityBand,omitempty" yaml:"defaultNegativePriorityBand,omitempty"`
	PriorityBands               []PriorityBand `json:"priorityBands,omitempty" yaml:"priorityBands,omitempty"`
}

// PriorityBand configures the queues of one priority level.
type PriorityBand struct {
	Priority          *int   `json:"priority,omitempty" yaml:"priority,omitempty"`
	MaxBytes          string `json:"maxBytes,omitempty" yaml:"maxBytes,omitempty"`
	MaxRequests       string `json:"maxRequests,omitempty" yaml:"maxRequests,omitempty"`
	FairnessPolicyRef string `json:"fairnessPolicyRef,omitempty" yaml:"fairnessPolicyRef,omitempty"`
	OrderingPolicyRef string `json:"orderingPolicyRef,omitempty" yaml:"orderingPolicyRef,omitempty"`
}

// DataLayer configures metric sources. CrossReplicaSyncerPluginRef, CrossReplicaSyncInterval
// and Discovery (a plugin reference) are v1alpha1 keys; in llm-d.ai/v1 discovery is nested and
// the cross-replica keys move under crossReplica.
type DataLayer struct {
	InjectDefaults              *bool          `json:"injectDefaults,omitempty" yaml:"injectDefaults,omitempty"`
	Sources                     []DataSource   `json:"sources,omitempty" yaml:"sources,omitempty"`
	Discovery                   map[string]any `json:"discovery,omitempty" yaml:"discovery,omitempty"`
	CrossReplicaSyncerPluginRef string         `json:"crossReplicaSyncerPluginRef,omitempty" yaml:"crossReplicaSyncerPluginRef,omitempty"`
	CrossReplicaSyncInterval    string         `json:"crossReplicaSyncInterval,omitempty" yaml:"crossReplicaSyncInterval,omitempty"`
	CrossReplica                map[string]any `json:"crossReplica,omitempty" yaml:"crossReplica,omitempty"`
}

// DataSource is a data-layer source with its extractors.
type DataSource struct {
	PluginRef  string      `json:"pluginRef" yaml:"pluginRef"`
	Extractors []PluginRef `json:"extractors,omitempty" yaml:"extractors,omitempty"`
}

// ObjectMeta is the part of Kubernetes object metadata the exported objects use.
type ObjectMeta struct {
	Name      string            `json:"name" yaml:"name"`
	Namespace string            `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty" yaml:"labels,omitempty"`
}

// InferenceObjective gives requests that name it (header x-llm-d-inference-objective) a
// priority; negative priorities are sheddable.
type InferenceObjective struct {
	APIVersion string                 `json:"apiVersion" yaml:"apiVersion"`
	Kind       string                 `json:"kind" yaml:"kind"`
	Metadata   ObjectMeta             `json:"metadata" yaml:"metadata"`
	Spec       InferenceObjectiveSpec `json:"spec" yaml:"spec"`
}

// InferenceObjectiveSpec is an objective's priority and pool.
type InferenceObjectiveSpec struct {
	Priority *int32  `json:"priority,omitempty" yaml:"priority,omitempty"`
	PoolRef  PoolRef `json:"poolRef" yaml:"poolRef"`
}

// PoolRef references an InferencePool.
type PoolRef struct {
	Group string `json:"group,omitempty" yaml:"group,omitempty"`
	Kind  string `json:"kind,omitempty" yaml:"kind,omitempty"`
	Name  string `json:"name" yaml:"name"`
}

// InferencePool (inference.networking.k8s.io/v1) selects the model-server pods and names the
// endpoint picker that routes to them.
type InferencePool struct {
	APIVersion string            `json:"apiVersion" yaml:"apiVersion"`
	Kind       string            `json:"kind" yaml:"kind"`
	Metadata   ObjectMeta        `json:"metadata" yaml:"metadata"`
	Spec       InferencePoolSpec `json:"spec" yaml:"spec"`
}

// InferencePoolSpec is the pool's selector, ports and endpoint picker.
type InferencePoolSpec struct {
	Selector          LabelSelector     `json:"selector" yaml:"selector"`
	TargetPorts       []Port            `json:"targetPorts" yaml:"targetPorts"`
	AppProtocol       string            `json:"appProtocol,omitempty" yaml:"appProtocol,omitempty"`
	EndpointPickerRef EndpointPickerRef `json:"endpointPickerRef" yaml:"endpointPickerRef"`
}

// LabelSelector is an InferencePool selector (matchLabels only).
type LabelSelector struct {
	MatchLabels map[string]string `json:"matchLabels" yaml:"matchLabels"`
}

// Port is a port number.
type Port struct {
	Number int32 `json:"number" yaml:"number"`
}

// EndpointPickerRef names the endpoint picker's Service.
type EndpointPickerRef struct {
	Group       string `json:"group,omitempty" yaml:"group,omitempty"`
	Kind        string `json:"kind,omitempty" yaml:"kind,omitempty"`
	Name        string `json:"name" yaml:"name"`
	Port        *Port  `json:"port,omitempty" yaml:"port,omitempty"`
	FailureMode string `json:"failureMode,omitempty" yaml:"failureMode,omitempty"`
}

// ScaledObject is a KEDA ScaledObject (keda.sh/v1alpha1) scaling one model-server Deployment.
type ScaledObject struct {
	APIVersion string           `json:"apiVersion" yaml:"apiVersion"`
	Kind       string           `json:"kind" yaml:"kind"`
	Metadata   ObjectMeta       `json:"metadata" yaml:"metadata"`
	Spec       ScaledObjectSpec `json:"spec" yaml:"spec"`
}

// ScaledObjectSpec holds the target, bounds, timing and triggers.
type ScaledObjectSpec struct {
	ScaleTargetRef  ScaleTargetRef `json:"scaleTargetRef" yaml:"scaleTargetRef"`
	MinReplicaCount *int32         `json:"minReplicaCount,omitempty" yaml:"minReplicaCount,omitempty"`
	MaxReplicaCount *int32         `json:"maxReplicaCount,omitempty" yaml:"maxReplicaCount,omitempty"`
	PollingInterval *int32         `json:"pollingInterval,omitempty" yaml:"pollingInterval,omitempty"`
	Advanced        *Advanced      `json:"advanced,omitempty" yaml:"advanced,omitempty"`
	Triggers        []Trigger      `json:"triggers" yaml:"triggers"`
}

// ScaleTargetRef names the scaled workload.
type ScaleTargetRef struct {
	APIVersion string `json:"apiVersion,omitempty" yaml:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty" yaml:"kind,omitempty"`
	Name       string `json:"name" yaml:"name"`
}

// Advanced carries the HPA behaviour KEDA passes through.
type Advanced struct {
	HorizontalPodAutoscalerConfig *HPAConfig `json:"horizontalPodAutoscalerConfig,omitempty" yaml:"horizontalPodAutoscalerConfig,omitempty"`
}

// HPAConfig is the HPA configuration KEDA generates from.
type HPAConfig struct {
	Behavior *HPABehavior `json:"behavior,omitempty" yaml:"behavior,omitempty"`
}

// HPABehavior is autoscaling/v2 HorizontalPodAutoscalerBehavior.
type HPABehavior struct {
	ScaleUp   *HPAScalingRules `json:"scaleUp,omitempty" yaml:"scaleUp,omitempty"`
	ScaleDown *HPAScalingRules `json:"scaleDown,omitempty" yaml:"scaleDown,omitempty"`
}

// HPAScalingRules is one direction's stabilisation window and step policies.
type HPAScalingRules struct {
	StabilizationWindowSeconds *int32             `json:"stabilizationWindowSeconds,omitempty" yaml:"stabilizationWindowSeconds,omitempty"`
	Policies                   []HPAScalingPolicy `json:"policies,omitempty" yaml:"policies,omitempty"`
}

// HPAScalingPolicy limits one step: Type Pods or Percent, per PeriodSeconds.
type HPAScalingPolicy struct {
	Type          string `json:"type" yaml:"type"`
	Value         int32  `json:"value" yaml:"value"`
	PeriodSeconds int32  `json:"periodSeconds" yaml:"periodSeconds"`
}

// Trigger is a KEDA scaler trigger.
type Trigger struct {
	Type       string            `json:"type" yaml:"type"`
	Name       string            `json:"name,omitempty" yaml:"name,omitempty"`
	MetricType string            `json:"metricType,omitempty" yaml:"metricType,omitempty"`
	Metadata   map[string]string `json:"metadata" yaml:"metadata"`
}
