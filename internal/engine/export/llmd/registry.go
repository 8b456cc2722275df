package llmd

import (
	"encoding/json"
	"sort"
)

// Stability levels of registered plugins. Alpha plugins stop the router at start-up unless it
// runs with --allow-experimental-plugins.
const (
	Beta  = "Beta"
	Alpha = "Alpha"
)

// Roles of plugins in a scheduling profile or elsewhere in the configuration.
const (
	RoleFilter   = "filter"
	RoleScorer   = "scorer"
	RolePicker   = "picker"
	RoleHandler  = "profile-handler"
	RoleDecider  = "decider"
	RoleProducer = "data-producer"
	RoleFlow     = "flow-control"
	RoleAdmitter = "admitter"
	RoleParser   = "parser"
	RoleData     = "data-layer"
	RoleOther    = "other"
)

// PluginInfo describes one registered plugin type.
type PluginInfo struct {
	// Type is the registered type name.
	Type string
	// Stability is Beta or Alpha.
	Stability string
	// Role says where the plugin is used.
	Role string
	// Deprecated names the replacement when the type is deprecated.
	Deprecated string
	// since and until bound the release lines that register the type (until exclusive, 0 =
	// still registered).
	since, until int
	// params returns a fresh parameter struct for strict decoding; nil means the parameters
	// are not checked key by key (plugins the exporter never writes).
	params func() any
}

// HasParamSchema reports whether the plugin's parameter keys are checked.
func (p PluginInfo) HasParamSchema() bool { return p.params != nil }

// NoParams is the parameter struct of plugins without parameters: any key is unknown.
type NoParams struct{}

// PrefixCacheScorerParams are prefix-cache-scorer's parameters.
type PrefixCacheScorerParams struct {
	PrefixMatchInfoProducerName string   `json:"prefixMatchInfoProducerName,omitempty" yaml:"prefixMatchInfoProducerName,omitempty"`
	MatchLengthWeight           *float64 `json:"matchLengthWeight,omitempty" yaml:"matchLengthWeight,omitempty"`
	MatchLengthScaleTokens      *int     `json:"matchLengthScaleTokens,omitempty" yaml:"matchLengthScaleTokens,omitempty"`
}

// LoadAwareScorerParams are load-aware-scorer's parameters.
type LoadAwareScorerParams struct {
	Threshold *int `json:"threshold,omitempty" yaml:"threshold,omitempty"`
}

// ActiveRequestScorerParams are active-request-scorer's parameters (requestTimeout is
// deprecated and ignored, still accepted).
type ActiveRequestScorerParams struct {
	IdleThreshold            *int     `json:"idleThreshold,omitempty" yaml:"idleThreshold,omitempty"`
	MaxBusyScore             *float64 `json:"maxBusyScore,omitempty" yaml:"maxBusyScore,omitempty"`
	InFlightLoadProducerName string   `json:"inFlightLoadProducerName,omitempty" yaml:"inFlightLoadProducerName,omitempty"`
	RequestTimeout           string   `json:"requestTimeout,omitempty" yaml:"requestTimeout,omitempty"`
}

// TokenLoadScorerParams are token-load-scorer's parameters.
type TokenLoadScorerParams struct {
	QueueThresholdTokens     *int   `json:"queueThresholdTokens,omitempty" yaml:"queueThresholdTokens,omitempty"`
	InFlightLoadProducerName string `json:"inFlightLoadProducerName,omitempty" yaml:"inFlightLoadProducerName,omitempty"`
}

// NoHitLRUScorerParams are no-hit-lru-scorer's parameters.
type NoHitLRUScorerParams struct {
	PrefixPluginType            string `json:"prefixPluginType,omitempty" yaml:"prefixPluginType,omitempty"`
	PrefixPluginName            string `json:"prefixPluginName,omitempty" yaml:"prefixPluginName,omitempty"`
	LRUSize                     *int   `json:"lruSize,omitempty" yaml:"lruSize,omitempty"`
	PrefixMatchInfoProducerName string `json:"prefixMatchInfoProducerName,omitempty" yaml:"prefixMatchInfoProducerName,omitempty"`
}

// ApproxPrefixCacheProducerParams are approx-prefix-cache-producer's parameters (blockSize
// is the deprecated spelling of blockSizeTokens).
type ApproxPrefixCacheProducerParams struct {
	AutoTune               *bool `json:"autoTune,omitempty" yaml:"autoTune,omitempty"`
	BlockSizeTokens        *int  `json:"blockSizeTokens,omitempty" yaml:"blockSizeTokens,omitempty"`
	BlockSize              *int  `json:"blockSize,omitempty" yaml:"blockSize,omitempty"`
	MaxPrefixBlocksToMatch *int  `json:"maxPrefixBlocksToMatch,omitempty" yaml:"maxPrefixBlocksToMatch,omitempty"`
	MaxPrefixTokensToMatch *int  `json:"maxPrefixTokensToMatch,omitempty" yaml:"maxPrefixTokensToMatch,omitempty"`
	LRUCapacityPerServer   *int  `json:"lruCapacityPerServer,omitempty" yaml:"lruCapacityPerServer,omitempty"`
}

// PrecisePrefixCacheParams are the parameters of precise-prefix-cache-producer (and of the
// deprecated precise-prefix-cache-scorer wrapper).
type PrecisePrefixCacheParams struct {
	TokenProcessorConfig *TokenProcessorConfig `json:"tokenProcessorConfig,omitempty" yaml:"tokenProcessorConfig,omitempty"`
	// IndexerConfig is passed to the KV-block indexer library; its keys are not checked here.
	IndexerConfig       map[string]any  `json:"indexerConfig,omitempty" yaml:"indexerConfig,omitempty"`
	KVEventsConfig      *KVEventsConfig `json:"kvEventsConfig,omitempty" yaml:"kvEventsConfig,omitempty"`
	SpeculativeIndexing *bool           `json:"speculativeIndexing,omitempty" yaml:"speculativeIndexing,omitempty"`
	SpeculativeTTL      string          `json:"speculativeTTL,omitempty" yaml:"speculativeTTL,omitempty"`
}

// TokenProcessorConfig sets the precise producer's hashing (blockSizeTokens must equal vLLM's
// --block-size and hashSeed its PYTHONHASHSEED).
type TokenProcessorConfig struct {
	BlockSizeTokens *int   `json:"blockSizeTokens,omitempty" yaml:"blockSizeTokens,omitempty"`
	BlockSize       *int   `json:"blockSize,omitempty" yaml:"blockSize,omitempty"`
	HashSeed        string `json:"hashSeed,omitempty" yaml:"hashSeed,omitempty"`
}

// KVEventsConfig is how the precise producer receives vLLM's KV events.
type KVEventsConfig struct {
	TopicFilter        string              `json:"topicFilter,omitempty" yaml:"topicFilter,omitempty"`
	Concurrency        *int                `json:"concurrency,omitempty" yaml:"concurrency,omitempty"`
	DiscoverPods       *bool               `json:"discoverPods,omitempty" yaml:"discoverPods,omitempty"`
	PodDiscoveryConfig *PodDiscoveryConfig `json:"podDiscoveryConfig,omitempty" yaml:"podDiscoveryConfig,omitempty"`
	ZMQEndpoint        string              `json:"zmqEndpoint,omitempty" yaml:"zmqEndpoint,omitempty"`
	EngineType         string              `json:"engineType,omitempty" yaml:"engineType,omitempty"`
}

// PodDiscoveryConfig is the KV-events socket port on each pod.
type PodDiscoveryConfig struct {
	SocketPort *int `json:"socketPort,omitempty" yaml:"socketPort,omitempty"`
}

// PickerParams are the pickers' parameters.
type PickerParams struct {
	MaxNumOfEndpoints *int `json:"maxNumOfEndpoints,omitempty" yaml:"maxNumOfEndpoints,omitempty"`
}

// DisaggProfileHandlerParams are disagg-profile-handler's parameters; the flat keys are the
// deprecated spellings still accepted by v0.10.
type DisaggProfileHandlerParams struct {
	Profiles                 *DisaggProfiles `json:"profiles,omitempty" yaml:"profiles,omitempty"`
	Deciders                 *DisaggDeciders `json:"deciders,omitempty" yaml:"deciders,omitempty"`
	StageOrder               string          `json:"stageOrder,omitempty" yaml:"stageOrder,omitempty"`
	DecodeProfile            string          `json:"decodeProfile,omitempty" yaml:"decodeProfile,omitempty"`
	PrefillProfile           string          `json:"prefillProfile,omitempty" yaml:"prefillProfile,omitempty"`
	EncodeProfile            string          `json:"encodeProfile,omitempty" yaml:"encodeProfile,omitempty"`
	PrefillDeciderPluginName string          `json:"prefillDeciderPluginName,omitempty" yaml:"prefillDeciderPluginName,omitempty"`
	EncodeDeciderPluginName  string          `json:"encodeDeciderPluginName,omitempty" yaml:"encodeDeciderPluginName,omitempty"`
	DeciderPluginName        string          `json:"deciderPluginName,omitempty" yaml:"deciderPluginName,omitempty"`
}

// DisaggProfiles names the profile of each stage.
type DisaggProfiles struct {
	Decode  string `json:"decode,omitempty" yaml:"decode,omitempty"`
	Prefill string `json:"prefill,omitempty" yaml:"prefill,omitempty"`
	Encode  string `json:"encode,omitempty" yaml:"encode,omitempty"`
}

// DisaggDeciders names the decider plugin of each optional stage.
type DisaggDeciders struct {
	Prefill string `json:"prefill,omitempty" yaml:"prefill,omitempty"`
	Encode  string `json:"encode,omitempty" yaml:"encode,omitempty"`
}

// PDProfileHandlerParams are the deprecated pd-profile-handler's parameters.
type PDProfileHandlerParams struct {
	DecodeProfile               string `json:"decodeProfile,omitempty" yaml:"decodeProfile,omitempty"`
	PrefillProfile              string `json:"prefillProfile,omitempty" yaml:"prefillProfile,omitempty"`
	PrefixPluginType            string `json:"prefixPluginType,omitempty" yaml:"prefixPluginType,omitempty"`
	PrefixPluginName            string `json:"prefixPluginName,omitempty" yaml:"prefixPluginName,omitempty"`
	PrimaryPort                 *int   `json:"primaryPort,omitempty" yaml:"primaryPort,omitempty"`
	DeciderPluginName           string `json:"deciderPluginName,omitempty" yaml:"deciderPluginName,omitempty"`
	PrefixMatchInfoProducerName string `json:"prefixMatchInfoProducerName,omitempty" yaml:"prefixMatchInfoProducerName,omitempty"`
}

// PrefixBasedPDDeciderParams are prefix-based-pd-decider's parameters: disaggregate when the
// uncached prompt tokens on the chosen decode endpoint reach NonCachedTokens (0 = never), and
// (v0.10) the prompt has at least PromptTokens tokens.
type PrefixBasedPDDeciderParams struct {
	NonCachedTokens *int `json:"nonCachedTokens,omitempty" yaml:"nonCachedTokens,omitempty"`
	PromptTokens    *int `json:"promptTokens,omitempty" yaml:"promptTokens,omitempty"`
}

// DataParallelProfileHandlerParams are data-parallel-profile-handler's parameters.
type DataParallelProfileHandlerParams struct {
	PrimaryPort *int `json:"primaryPort,omitempty" yaml:"primaryPort,omitempty"`
}

// UtilizationDetectorParams are utilization-detector's parameters: the pool is saturated when
// the mean over endpoints of max(queue/queueDepthThreshold, kv/kvCacheUtilThreshold) reaches 1.
type UtilizationDetectorParams struct {
	QueueDepthThreshold       *int     `json:"queueDepthThreshold,omitempty" yaml:"queueDepthThreshold,omitempty"`
	KVCacheUtilThreshold      *float64 `json:"kvCacheUtilThreshold,omitempty" yaml:"kvCacheUtilThreshold,omitempty"`
	MetricsStalenessThreshold string   `json:"metricsStalenessThreshold,omitempty" yaml:"metricsStalenessThreshold,omitempty"`
	Headroom                  *float64 `json:"headroom,omitempty" yaml:"headroom,omitempty"`
}

// ConcurrencyDetectorParams cap in-flight requests or tokens.
type ConcurrencyDetectorParams struct {
	ConcurrencyMode          string   `json:"concurrencyMode,omitempty" yaml:"concurrencyMode,omitempty"`
	MaxConcurrency           *int64   `json:"maxConcurrency,omitempty" yaml:"maxConcurrency,omitempty"`
	MaxTokenConcurrency      *int64   `json:"maxTokenConcurrency,omitempty" yaml:"maxTokenConcurrency,omitempty"`
	Headroom                 *float64 `json:"headroom,omitempty" yaml:"headroom,omitempty"`
	InFlightLoadProducerName string   `json:"inFlightLoadProducerName,omitempty" yaml:"inFlightLoadProducerName,omitempty"`
}

// StaticUsageLimitParams is static-usage-limit-policy's dispatch ceiling.
type StaticUsageLimitParams struct {
	Threshold *float64 `json:"threshold,omitempty" yaml:"threshold,omitempty"`
}

// ProbabilisticAdmitterParams are probabilistic-admitter's parameters.
type ProbabilisticAdmitterParams struct {
	QueueDepthThreshold  *int     `json:"queueDepthThreshold,omitempty" yaml:"queueDepthThreshold,omitempty"`
	KVCacheUtilThreshold *float64 `json:"kvCacheUtilThreshold,omitempty" yaml:"kvCacheUtilThreshold,omitempty"`
	Power                *float64 `json:"power,omitempty" yaml:"power,omitempty"`
	K                    *float64 `json:"k,omitempty" yaml:"k,omitempty"`
}

// ProgramAwareFairnessParams are program-aware-fairness's v0.10 parameters.
type ProgramAwareFairnessParams struct {
	Strategy             string   `json:"strategy,omitempty" yaml:"strategy,omitempty"`
	LASWeightService     *float64 `json:"lasWeightService,omitempty" yaml:"lasWeightService,omitempty"`
	LASWeightHeadWait    *float64 `json:"lasWeightHeadWait,omitempty" yaml:"lasWeightHeadWait,omitempty"`
	LASDecayFactor       *float64 `json:"lasDecayFactor,omitempty" yaml:"lasDecayFactor,omitempty"`
	EvictionTTLSeconds   *int     `json:"evictionTtlSeconds,omitempty" yaml:"evictionTtlSeconds,omitempty"`
	EvictionSweepSeconds *int     `json:"evictionSweepSeconds,omitempty" yaml:"evictionSweepSeconds,omitempty"`
}

// TokenProducerParams are token-producer's parameters (nested blocks not checked).
type TokenProducerParams struct {
	ModelName          string         `json:"modelName,omitempty" yaml:"modelName,omitempty"`
	VLLM               map[string]any `json:"vllm,omitempty" yaml:"vllm,omitempty"`
	Estimate           map[string]any `json:"estimate,omitempty" yaml:"estimate,omitempty"`
	UDSTokenizerConfig map[string]any `json:"udsTokenizerConfig,omitempty" yaml:"udsTokenizerConfig,omitempty"`
}

// PriorityHoldbackParams are priority-holdback-policy's parameters.
type PriorityHoldbackParams struct {
	Shape      string   `json:"shape,omitempty" yaml:"shape,omitempty"`
	Domain     string   `json:"domain,omitempty" yaml:"domain,omitempty"`
	MinCeiling *float64 `json:"minCeiling,omitempty" yaml:"minCeiling,omitempty"`
	MaxCeiling *float64 `json:"maxCeiling,omitempty" yaml:"maxCeiling,omitempty"`
}

func none() any { return &NoParams{} }

func schema[T any]() func() any { return func() any { return new(T) } }

// registry lists every type registered by llm-d-router v0.10.0 (plugin_registry_v0.10.0.tsv)
// plus the names registered before or after it. since/until are release-line ranks.
var registry = func() map[string]PluginInfo {
	m := map[string]PluginInfo{}
	add := func(t, stab, role string, params func() any) {
		m[t] = PluginInfo{Type: t, Stability: stab, Role: role, params: params}
	}
	// Filters.
	for _, t := range []string{"decode-filter", "prefill-filter", "encode-filter"} {
		add(t, Beta, RoleFilter, none)
	}
	add("label-selector-filter", Beta, RoleFilter, nil)
	add("by-label-selector", Beta, RoleFilter, nil)
	add("by-label", Beta, RoleFilter, nil)
	add("prefix-cache-affinity-filter", Beta, RoleFilter, nil)
	add("slo-headroom-tier-filter", Beta, RoleFilter, nil)
	add("header-based-testing-filter", Beta, RoleFilter, nil)
	for _, t := range []string{"session-affinity-filter", "endpoint-attribute-filter", "topology-affinity-filter",
		"utilization-filter", "multicluster-session-affinity-filter"} {
		add(t, Alpha, RoleFilter, nil)
	}
	add("active-request-filter", Beta, RoleFilter, nil)
	// Scorers.
	add("queue-scorer", Beta, RoleScorer, none)
	add("kv-cache-utilization-scorer", Beta, RoleScorer, none)
	add("running-requests-size-scorer", Beta, RoleScorer, none)
	add("lora-affinity-scorer", Beta, RoleScorer, none)
	add("prefix-cache-scorer", Beta, RoleScorer, schema[PrefixCacheScorerParams]())
	add("load-aware-scorer", Beta, RoleScorer, schema[LoadAwareScorerParams]())
	add("active-request-scorer", Beta, RoleScorer, schema[ActiveRequestScorerParams]())
	add("token-load-scorer", Beta, RoleScorer, schema[TokenLoadScorerParams]())
	add("no-hit-lru-scorer", Beta, RoleScorer, schema[NoHitLRUScorerParams]())
	add("precise-prefix-cache-scorer", Beta, RoleScorer, schema[PrecisePrefixCacheParams]())
	add("context-length-aware", Beta, RoleScorer, nil)
	add("latency-scorer", Beta, RoleScorer, nil)
	add("mm-embeddings-cache-scorer", Beta, RoleScorer, nil)
	for _, t := range []string{"session-affinity-scorer", "header-label-affinity-scorer", "endpoint-attribute-scorer",
		"topology-affinity-scorer", "multicluster-queue-scorer", "multicluster-kv-cache-utilization-scorer",
		"multicluster-prefix-cache-scorer"} {
		add(t, Alpha, RoleScorer, nil)
	}
	// Pickers.
	for _, t := range []string{"max-score-picker", "random-picker", "weighted-random-picker"} {
		add(t, Beta, RolePicker, schema[PickerParams]())
	}
	// Profile handlers and deciders.
	add("single-profile-handler", Beta, RoleHandler, none)
	add("disagg-profile-handler", Beta, RoleHandler, schema[DisaggProfileHandlerParams]())
	add("pd-profile-handler", Beta, RoleHandler, schema[PDProfileHandlerParams]())
	add("data-parallel-profile-handler", Beta, RoleHandler, schema[DataParallelProfileHandlerParams]())
	add("header-profile-handler", Alpha, RoleHandler, nil)
	add("disagg-headers-handler", Beta, RoleOther, nil)
	add("prefill-header-handler", Beta, RoleOther, nil)
	add("prefix-based-pd-decider", Beta, RoleDecider, schema[PrefixBasedPDDeciderParams]())
	add("always-disagg-pd-decider", Beta, RoleDecider, none)
	add("always-disagg-multimodal-decider", Beta, RoleDecider, none)
	// Data producers.
	add("approx-prefix-cache-producer", Beta, RoleProducer, schema[ApproxPrefixCacheProducerParams]())
	add("precise-prefix-cache-producer", Beta, RoleProducer, schema[PrecisePrefixCacheParams]())
	add("inflight-load-producer", Beta, RoleProducer, nil)
	add("predicted-latency-producer", Beta, RoleProducer, nil)
	add("token-producer", Beta, RoleProducer, schema[TokenProducerParams]())
	add("tokenizer", Beta, RoleProducer, nil)
	add("mm-embeddings-cache-producer", Beta, RoleProducer, nil)
	add("session-id-producer", Beta, RoleProducer, nil)
	for _, t := range []string{"burst-prefix-cache-producer", "p2p-source-producer", "multicluster-approx-prefix-cache-producer"} {
		add(t, Alpha, RoleProducer, nil)
	}
	// Admitters and request control.
	add("latency-slo-admitter", Beta, RoleAdmitter, nil)
	add("probabilistic-admitter", Beta, RoleAdmitter, schema[ProbabilisticAdmitterParams]())
	add("request-attribute-reporter", Beta, RoleOther, nil)
	add("destination-endpoint-served-verifier", Beta, RoleOther, nil)
	add("disaggregatedset-rollout-screener", Alpha, RoleOther, nil)
	add("agent-identity", Alpha, RoleOther, nil)
	// Flow control.
	add("global-strict-fairness-policy", Beta, RoleFlow, none)
	add("round-robin-fairness-policy", Beta, RoleFlow, none)
	add("program-aware-fairness", Beta, RoleFlow, schema[ProgramAwareFairnessParams]())
	add("fcfs-ordering-policy", Beta, RoleFlow, none)
	add("edf-ordering-policy", Beta, RoleFlow, none)
	add("slo-deadline-ordering-policy", Beta, RoleFlow, none)
	add("static-usage-limit-policy", Beta, RoleFlow, schema[StaticUsageLimitParams]())
	add("utilization-detector", Beta, RoleFlow, schema[UtilizationDetectorParams]())
	add("concurrency-detector", Beta, RoleFlow, schema[ConcurrencyDetectorParams]())
	add("sheddable-eviction-filter", Alpha, RoleFlow, nil)
	add("priority-then-time-eviction-order-policy", Alpha, RoleFlow, nil)
	add("priority-holdback-policy", Alpha, RoleFlow, schema[PriorityHoldbackParams]())
	add("soft-reflective-ceiling-policy", Alpha, RoleFlow, none)
	// Parsers.
	for _, t := range []string{"openai-parser", "vllmgrpc-parser", "passthrough-parser", "anthropic-parser",
		"vllmhttp-parser", "vertexai-parser", "sglanghttp-parser"} {
		add(t, Beta, RoleParser, none)
	}
	// Data layer.
	for _, t := range []string{"metrics-data-source", "core-metrics-extractor", "models-data-source",
		"models-data-extractor", "k8s-notification-source", "endpoint-notification-source", "file-discovery"} {
		add(t, Beta, RoleData, nil)
	}
	for _, t := range []string{"topology-extractor", "dcgm-data-source", "dcgm-extractor", "multicluster-metrics-data-source",
		"multicluster-metrics-extractor", "multicluster-file-discovery"} {
		add(t, Alpha, RoleData, nil)
	}

	// Release lines (from the router's release notes): names added in v0.9 by renames, in
	// v0.10, after v0.10, and the deprecated names removed after v0.10.
	bound := func(t string, since, until int, deprecated string) {
		p := m[t]
		p.since, p.until, p.Deprecated = since, until, deprecated
		m[t] = p
	}
	bound("label-selector-filter", v09, 0, "")
	bound("token-producer", v09, 0, "")
	bound("utilization-filter", v010, 0, "")
	bound("vertexai-parser", v010, 0, "")
	bound("sglanghttp-parser", vMain, 0, "")
	bound("active-request-filter", v08, v010, "utilization-filter")
	bound("by-label-selector", v08, vMain, "label-selector-filter")
	bound("by-label", v08, vMain, "label-selector-filter")
	bound("tokenizer", v08, vMain, "token-producer")
	bound("disagg-headers-handler", v08, vMain, "disagg-profile-handler")
	bound("prefill-header-handler", v08, vMain, "disagg-profile-handler")
	bound("pd-profile-handler", v08, 0, "disagg-profile-handler")
	bound("precise-prefix-cache-scorer", v08, 0, "precise-prefix-cache-producer with prefix-cache-scorer")
	return m
}()

// Lookup returns the registry entry of a plugin type registered by target t.
func Lookup(t Target, typ string) (PluginInfo, bool) {
	p, ok := registry[typ]
	if !ok {
		return PluginInfo{}, false
	}
	if p.since != 0 && t.order < p.since || p.until != 0 && t.order >= p.until {
		return PluginInfo{}, false
	}
	return p, true
}

// Info returns the registry entry of a plugin type registered by any supported release.
func Info(typ string) (PluginInfo, bool) {
	p, ok := registry[typ]
	return p, ok
}

// RegisteredTypes lists the plugin types target t registers, sorted.
func RegisteredTypes(t Target) []string {
	var out []string
	for typ := range registry {
		if _, ok := Lookup(t, typ); ok {
			out = append(out, typ)
		}
	}
	sort.Strings(out)
	return out
}

// decodeParams strictly decodes raw parameters into the plugin's parameter struct.
func (p PluginInfo) decodeParams(raw []byte) (any, error) {
	v := p.params()
	if err := strictJSON(raw, v); err != nil {
		return nil, err
	}
	return v, nil
}

// ParamsJSON returns a plugin's parameters as JSON (nil when absent).
func ParamsJSON(pl *Plugin) ([]byte, error) {
	if pl.Parameters == nil {
		return nil, nil
	}
	if raw, ok := pl.Parameters.(json.RawMessage); ok {
		return raw, nil
	}
	return json.Marshal(pl.Parameters)
}
