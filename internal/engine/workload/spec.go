package workload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Spec is a BLIS workload specification, version 2 (version 1 files are upgraded on load).
// Keys and semantics follow BLIS; docs/workloads.md describes every key.
type Spec struct {
	// Version is "2"; "1" (or empty) is upgraded: SLO classes realtime→critical and
	// interactive→standard.
	Version string `yaml:"version,omitempty" json:"version,omitempty"`
	// Seed is the workload's own seed; callers usually pass it to Source unless overridden.
	Seed int64 `yaml:"seed,omitempty" json:"seed,omitempty"`
	// Category is descriptive: language, multimodal, reasoning or agentic.
	Category string `yaml:"category,omitempty" json:"category,omitempty"`
	// AggregateRate is the total rate in requests (or sessions) per second, split between
	// rate-based clients by rate_fraction. 0 means absolute mode: every active client window
	// sets its own trace_rate.
	AggregateRate float64 `yaml:"aggregate_rate,omitempty" json:"aggregate_rate,omitempty"`
	// NumRequests caps the number of requests, counting every turn and agentic step (0 = no cap).
	NumRequests int64 `yaml:"num_requests,omitempty" json:"num_requests,omitempty"`
	// Horizon stops arrivals after this time in microseconds (0 = none).
	Horizon int64 `yaml:"horizon,omitempty" json:"horizon,omitempty"`
	// Clients are the workload's clients.
	Clients []ClientSpec `yaml:"clients,omitempty" json:"clients,omitempty"`
	// Cohorts are populations of identical clients, expanded into Population clients each.
	Cohorts []CohortSpec `yaml:"cohorts,omitempty" json:"cohorts,omitempty"`
	// ServeGenData is BLIS's ServeGen dataset reference; generation from it is not supported.
	ServeGenData *ServeGenDataSpec `yaml:"servegen_data,omitempty" json:"servegen_data,omitempty"`
	// InferencePerf is the compact inference-perf form, expanded into clients.
	InferencePerf *InferencePerfSpec `yaml:"inference_perf,omitempty" json:"inference_perf,omitempty"`
	// GoodputSLOTargets maps SLO classes to latency targets (used by metrics, not generation).
	GoodputSLOTargets map[string]SLOTargets `yaml:"goodput_slo_targets,omitempty" json:"goodput_slo_targets,omitempty"`

	baseDir string // directory of the spec file, for relative empirical files
}

// ClientSpec is one client: who sends (tenant, SLO class), how often (rate_fraction and
// arrival, or concurrency), what (length distributions, prefix group, multimodal, reasoning
// multi-turn, agentic workflow) and when (lifecycle windows).
type ClientSpec struct {
	// ID names the client (metrics, random stream "workload/client/<id>"); unique.
	ID string `yaml:"id,omitempty" json:"id,omitempty"`
	// TenantID is the tenant the requests belong to.
	TenantID string `yaml:"tenant_id,omitempty" json:"tenant_id,omitempty"`
	// SLOClass is one of SLOClasses (empty: standard).
	SLOClass string `yaml:"slo_class,omitempty" json:"slo_class,omitempty"`
	// Model and Adapter name the target model and LoRA adapter, copied into Request.Attrs.
	Model   string `yaml:"model,omitempty" json:"model,omitempty"`
	Adapter string `yaml:"adapter,omitempty" json:"adapter,omitempty"`
	// RateFraction is the client's share of aggregate_rate (normalized over the clients).
	RateFraction float64 `yaml:"rate_fraction,omitempty" json:"rate_fraction,omitempty"`
	// Concurrency makes the client closed loop: that many users, each waiting for its request.
	Concurrency int `yaml:"concurrency,omitempty" json:"concurrency,omitempty"`
	// ThinkTimeUs is a closed-loop user's pause between a finished request and the next.
	ThinkTimeUs int64 `yaml:"think_time_us,omitempty" json:"think_time_us,omitempty"`
	// Arrival is the arrival process of requests (or of sessions).
	Arrival ArrivalSpec `yaml:"arrival,omitempty" json:"arrival,omitempty"`
	// InputDist and OutputDist are the prompt and output length distributions.
	InputDist  *DistSpec `yaml:"input_distribution,omitempty" json:"input_distribution,omitempty"`
	OutputDist *DistSpec `yaml:"output_distribution,omitempty" json:"output_distribution,omitempty"`
	// PrefixGroup names shared prompt content prepended to every request of the client.
	PrefixGroup string `yaml:"prefix_group,omitempty" json:"prefix_group,omitempty"`
	// PrefixLength is the group prefix length in tokens (default DefaultPrefixLength).
	PrefixLength int `yaml:"prefix_length,omitempty" json:"prefix_length,omitempty"`
	// Streaming and Network are copied into Request.Attrs for the simulator and metrics.
	Streaming bool         `yaml:"streaming,omitempty" json:"streaming,omitempty"`
	Network   *NetworkSpec `yaml:"network,omitempty" json:"network,omitempty"`
	// Lifecycle restricts the client to activity windows.
	Lifecycle *LifecycleSpec `yaml:"lifecycle,omitempty" json:"lifecycle,omitempty"`
	// Multimodal composes the prompt from text and media tokens.
	Multimodal *MultimodalSpec `yaml:"multimodal,omitempty" json:"multimodal,omitempty"`
	// Reasoning configures reasoning output and multi-turn sessions.
	Reasoning *ReasoningSpec `yaml:"reasoning,omitempty" json:"reasoning,omitempty"`
	// Timeout is the per-request deadline in µs: omitted = engine default, 0 = none.
	Timeout *int64 `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// SLOTargetUs is a per-request TTFT target in µs for SLO attainment (0 = none).
	SLOTargetUs int64 `yaml:"slo_target_us,omitempty" json:"slo_target_us,omitempty"`
	// ClosedLoop (multi-turn only) false pre-schedules every round (default true).
	ClosedLoop *bool `yaml:"closed_loop,omitempty" json:"closed_loop,omitempty"`
	// Agentic makes every arrival start a session of this workflow.
	Agentic *AgenticSpec `yaml:"agentic,omitempty" json:"agentic,omitempty"`
}

// CohortSpec is a population of clients sharing one behaviour, with rate shaping over time.
type CohortSpec struct {
	// ID names the client (metrics, random stream "workload/client/<id>"); unique.
	ID string `yaml:"id,omitempty" json:"id,omitempty"`
	// Population is the number of member clients.
	Population int `yaml:"population" json:"population"`
	// TenantID is the tenant the requests belong to.
	TenantID string `yaml:"tenant_id,omitempty" json:"tenant_id,omitempty"`
	// SLOClass is one of SLOClasses (empty: standard).
	SLOClass string `yaml:"slo_class,omitempty" json:"slo_class,omitempty"`
	// Model and Adapter name the target model and LoRA adapter, copied into Request.Attrs.
	Model   string `yaml:"model,omitempty" json:"model,omitempty"`
	Adapter string `yaml:"adapter,omitempty" json:"adapter,omitempty"`
	// RateFraction is the client's share of aggregate_rate (normalized over the clients).
	RateFraction float64 `yaml:"rate_fraction,omitempty" json:"rate_fraction,omitempty"`
	// Arrival is the arrival process of requests (or of sessions).
	Arrival ArrivalSpec `yaml:"arrival,omitempty" json:"arrival,omitempty"`
	// InputDist and OutputDist are the prompt and output length distributions.
	InputDist  *DistSpec `yaml:"input_distribution,omitempty" json:"input_distribution,omitempty"`
	OutputDist *DistSpec `yaml:"output_distribution,omitempty" json:"output_distribution,omitempty"`
	// PrefixGroup names shared prompt content prepended to every request of the client.
	PrefixGroup string `yaml:"prefix_group,omitempty" json:"prefix_group,omitempty"`
	// PrefixLength is the group prefix length in tokens (default DefaultPrefixLength).
	PrefixLength int `yaml:"prefix_length,omitempty" json:"prefix_length,omitempty"`
	// PrefixSharing is shared (all members use the cohort's prefix group, the default) or
	// per_member (member i uses its own group "<prefix_group>-<i>").
	PrefixSharing string `yaml:"prefix_sharing,omitempty" json:"prefix_sharing,omitempty"`
	// Streaming and Network are copied into Request.Attrs for the simulator and metrics.
	Streaming bool         `yaml:"streaming,omitempty" json:"streaming,omitempty"`
	Network   *NetworkSpec `yaml:"network,omitempty" json:"network,omitempty"`
	// Multimodal composes the prompt from text and media tokens.
	Multimodal *MultimodalSpec `yaml:"multimodal,omitempty" json:"multimodal,omitempty"`
	// Reasoning configures reasoning output and multi-turn sessions.
	Reasoning *ReasoningSpec `yaml:"reasoning,omitempty" json:"reasoning,omitempty"`
	Timeout   *int64         `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// SLOTargetUs is a per-request TTFT target in µs for SLO attainment (0 = none).
	SLOTargetUs int64 `yaml:"slo_target_us,omitempty" json:"slo_target_us,omitempty"`
	// ClosedLoop (multi-turn only) false pre-schedules every round (default true).
	ClosedLoop *bool `yaml:"closed_loop,omitempty" json:"closed_loop,omitempty"`
	// Diurnal, Spike and Drain shape the cohort's rate over time.
	Diurnal *DiurnalSpec `yaml:"diurnal,omitempty" json:"diurnal,omitempty"`
	Spike   *SpikeSpec   `yaml:"spike,omitempty" json:"spike,omitempty"`
	Drain   *DrainSpec   `yaml:"drain,omitempty" json:"drain,omitempty"`
}

// DiurnalSpec shapes a cohort's rate as a 24-hour sinusoid peaking at PeakHour (hour 0 is
// simulation time 0) with the given peak/trough ratio; the rate averages to the cohort's rate.
type DiurnalSpec struct {
	PeakHour          float64 `yaml:"peak_hour" json:"peak_hour"`
	PeakToTroughRatio float64 `yaml:"peak_to_trough_ratio" json:"peak_to_trough_ratio"`
}

// SpikeSpec is a cohort traffic spike over [StartTimeUs, StartTimeUs+DurationUs). With
// TraceRate (req/s for the whole cohort) the cohort runs at that rate during the spike and at
// its normal rate otherwise; without it the cohort is active only during the spike.
type SpikeSpec struct {
	StartTimeUs int64    `yaml:"start_time_us" json:"start_time_us"`
	DurationUs  int64    `yaml:"duration_us" json:"duration_us"`
	TraceRate   *float64 `yaml:"trace_rate,omitempty" json:"trace_rate,omitempty"`
}

// DrainSpec ramps a cohort's rate linearly to zero over [StartTimeUs, StartTimeUs+RampDurationUs).
type DrainSpec struct {
	StartTimeUs    int64 `yaml:"start_time_us" json:"start_time_us"`
	RampDurationUs int64 `yaml:"ramp_duration_us" json:"ramp_duration_us"`
}

// NetworkSpec is a client's network: its delays are added to TTFT and E2E (Attrs.NetworkDelays).
type NetworkSpec struct {
	RTTMs         float64 `yaml:"rtt_ms" json:"rtt_ms"`
	BandwidthMbps float64 `yaml:"bandwidth_mbps,omitempty" json:"bandwidth_mbps,omitempty"`
}

// LifecycleSpec restricts a client to activity windows.
type LifecycleSpec struct {
	Windows []WindowSpec `yaml:"windows" json:"windows"`
}

// WindowSpec is an activity window [StartUs, EndUs). TraceRate (req/s for this client) and
// the arrival and distributions, when given, override the client's within the window.
type WindowSpec struct {
	StartUs    int64        `yaml:"start_us" json:"start_us"`
	EndUs      int64        `yaml:"end_us" json:"end_us"`
	TraceRate  *float64     `yaml:"trace_rate,omitempty" json:"trace_rate,omitempty"`
	Arrival    *ArrivalSpec `yaml:"arrival,omitempty" json:"arrival,omitempty"`
	InputDist  *DistSpec    `yaml:"input_distribution,omitempty" json:"input_distribution,omitempty"`
	OutputDist *DistSpec    `yaml:"output_distribution,omitempty" json:"output_distribution,omitempty"`
}

// MultimodalSpec composes the prompt from text and media tokens: input = text + Σ count×size
// over image, audio and video (a missing count distribution means one item).
type MultimodalSpec struct {
	TextDist       *DistSpec `yaml:"text_distribution,omitempty" json:"text_distribution,omitempty"`
	ImageDist      *DistSpec `yaml:"image_distribution,omitempty" json:"image_distribution,omitempty"`
	ImageCountDist *DistSpec `yaml:"image_count_distribution,omitempty" json:"image_count_distribution,omitempty"`
	AudioDist      *DistSpec `yaml:"audio_distribution,omitempty" json:"audio_distribution,omitempty"`
	AudioCountDist *DistSpec `yaml:"audio_count_distribution,omitempty" json:"audio_count_distribution,omitempty"`
	VideoDist      *DistSpec `yaml:"video_distribution,omitempty" json:"video_distribution,omitempty"`
	VideoCountDist *DistSpec `yaml:"video_count_distribution,omitempty" json:"video_count_distribution,omitempty"`
}

// ReasoningSpec configures reasoning output and multi-turn conversations.
type ReasoningSpec struct {
	// ReasonRatioDist samples the fraction of output tokens that are reasoning; those are not
	// carried into the next turn's context.
	ReasonRatioDist *DistSpec      `yaml:"reason_ratio_distribution,omitempty" json:"reason_ratio_distribution,omitempty"`
	MultiTurn       *MultiTurnSpec `yaml:"multi_turn,omitempty" json:"multi_turn,omitempty"`
}

// MultiTurnSpec makes each arrival start a conversation of MaxRounds rounds.
type MultiTurnSpec struct {
	MaxRounds   int   `yaml:"max_rounds" json:"max_rounds"`
	ThinkTimeUs int64 `yaml:"think_time_us,omitempty" json:"think_time_us,omitempty"`
	// ContextGrowth "accumulate" makes each round's prompt carry all earlier prompts and
	// answers; empty means rounds are independent (sharing only the prefix).
	ContextGrowth string `yaml:"context_growth,omitempty" json:"context_growth,omitempty"`
	// SingleSession makes each arrival of the client the next round of one running
	// conversation (inference-perf multi-turn chat), restarted after MaxRounds (0 = never).
	SingleSession bool `yaml:"single_session,omitempty" json:"single_session,omitempty"`
}

// ServeGenDataSpec is BLIS's ServeGen data reference.
type ServeGenDataSpec struct {
	Path      string `yaml:"path" json:"path"`
	SpanStart int64  `yaml:"span_start,omitempty" json:"span_start,omitempty"`
	SpanEnd   int64  `yaml:"span_end,omitempty" json:"span_end,omitempty"`
}

// InferencePerfSpec is inference-perf's load and shared-prefix data description.
type InferencePerfSpec struct {
	Stages       []StageSpec       `yaml:"stages" json:"stages"`
	SharedPrefix *SharedPrefixSpec `yaml:"shared_prefix" json:"shared_prefix"`
}

// StageSpec is a load stage: Rate req/s for Duration seconds.
type StageSpec struct {
	Rate     float64 `yaml:"rate" json:"rate"`
	Duration float64 `yaml:"duration" json:"duration"`
}

// SharedPrefixSpec describes inference-perf's shared-prefix data: N system prompts, M users
// per prompt, fixed lengths.
type SharedPrefixSpec struct {
	NumUniqueSystemPrompts  int  `yaml:"num_unique_system_prompts" json:"num_unique_system_prompts"`
	NumUsersPerSystemPrompt int  `yaml:"num_users_per_system_prompt" json:"num_users_per_system_prompt"`
	SystemPromptLen         int  `yaml:"system_prompt_len" json:"system_prompt_len"`
	QuestionLen             int  `yaml:"question_len" json:"question_len"`
	OutputLen               int  `yaml:"output_len" json:"output_len"`
	EnableMultiTurnChat     bool `yaml:"enable_multi_turn_chat,omitempty" json:"enable_multi_turn_chat,omitempty"`
}

// SLOTargets are latency targets in ms.
type SLOTargets struct {
	TTFT float64 `yaml:"ttft,omitempty" json:"ttft,omitempty"`
	ITL  float64 `yaml:"itl,omitempty" json:"itl,omitempty"`
	E2E  float64 `yaml:"e2e,omitempty" json:"e2e,omitempty"`
}

// classStandard is the default SLO class.
const classStandard = "standard"

// SLOClasses lists the valid SLO class names (v2).
var SLOClasses = []string{"critical", classStandard, "sheddable", "batch", "background"}

// Categories lists the valid categories.
var Categories = []string{"language", "multimodal", "reasoning", "agentic"}

// LoadSpecFile reads, strictly parses, upgrades and validates a workload spec file. Relative
// empirical distribution files are resolved against the file's directory.
func LoadSpecFile(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("workload spec: %w", err)
	}
	s, err := parseSpec(data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("workload spec %s: %w", path, err)
	}
	return s, nil
}

// LoadSpec parses and validates a workload spec from r; relative files resolve against the
// working directory.
func LoadSpec(r io.Reader) (*Spec, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("workload spec: %w", err)
	}
	s, err := parseSpec(data, "")
	if err != nil {
		return nil, fmt.Errorf("workload spec: %w", err)
	}
	return s, nil
}

// ParseSpec parses and validates a workload spec from YAML bytes.
func ParseSpec(data []byte) (*Spec, error) { return LoadSpec(bytes.NewReader(data)) }

func parseSpec(data []byte, baseDir string) (*Spec, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	if len(root.Content) == 0 {
		return nil, errors.New("empty document")
	}
	if err := checkKeys(root.Content[0], reflect.TypeOf(Spec{}), ""); err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	s.baseDir = baseDir
	if err := s.upgrade(); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// checkKeys rejects unknown keys anywhere in the document, naming the key, where it is (the
// client or step by id) and its line, and listing the valid keys.
func checkKeys(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return nil // the decoder reports the type mismatch with its line
		}
		fields := map[string]reflect.Type{} // lookup only
		var names []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if tag == "" || tag == "-" {
				continue
			}
			fields[tag] = f.Type
			names = append(names, tag)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			ft, ok := fields[k.Value]
			if !ok {
				where := path
				if where == "" {
					where = "top level"
				}
				return fmt.Errorf("%s: unknown key %q (line %d); valid keys: %s", where, k.Value, k.Line, strings.Join(names, ", "))
			}
			if err := checkKeys(n.Content[i+1], ft, join(path, k.Value)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return nil
		}
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			if id := mapValue(item, "id"); id != "" {
				p = fmt.Sprintf("%s[%d] (id %q)", path, i, id)
			}
			if err := checkKeys(item, t.Elem(), p); err != nil {
				return err
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := checkKeys(n.Content[i+1], t.Elem(), fmt.Sprintf("%s[%s]", path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func mapValue(n *yaml.Node, key string) string {
	if n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1].Value
		}
	}
	return ""
}

// upgrade applies BLIS's v1→v2 auto-upgrade.
func (s *Spec) upgrade() error {
	switch s.Version {
	case "", "1":
		v1 := map[string]string{"realtime": "critical", "interactive": "standard"}
		for i := range s.Clients {
			if n, ok := v1[s.Clients[i].SLOClass]; ok {
				s.Clients[i].SLOClass = n
			}
		}
		for i := range s.Cohorts {
			if n, ok := v1[s.Cohorts[i].SLOClass]; ok {
				s.Cohorts[i].SLOClass = n
			}
		}
		for _, old := range []string{"realtime", "interactive"} {
			if tg, ok := s.GoodputSLOTargets[old]; ok {
				if _, clash := s.GoodputSLOTargets[v1[old]]; clash {
					return fmt.Errorf("goodput_slo_targets: both %q and its v2 name %q are set", old, v1[old])
				}
				delete(s.GoodputSLOTargets, old)
				s.GoodputSLOTargets[v1[old]] = tg
			}
		}
		s.Version = "2"
	case "2":
	default:
		return fmt.Errorf("version: unknown version %q; valid: 1, 2", s.Version)
	}
	return nil
}

func clientField(i int, id string) string {
	if id == "" {
		return fmt.Sprintf("clients[%d]", i)
	}
	return fmt.Sprintf("client %q", id)
}

func cohortField(i int, id string) string {
	if id == "" {
		return fmt.Sprintf("cohorts[%d]", i)
	}
	return fmt.Sprintf("cohort %q", id)
}

func oneOf(v string, valid []string) bool {
	for _, x := range valid {
		if v == x {
			return true
		}
	}
	return false
}

// Validate checks the whole spec, returning the first problem with the client (or cohort,
// step) and field it concerns. It builds the generators without running them, so a spec that
// validates also generates.
func (s *Spec) Validate() error {
	_, err := s.build(s.Seed)
	return err
}

func (s *Spec) checkTop() error {
	if s.Category != "" && !oneOf(s.Category, Categories) {
		return fmt.Errorf("category: unknown category %q; valid: %s", s.Category, strings.Join(Categories, ", "))
	}
	if math.IsNaN(s.AggregateRate) || math.IsInf(s.AggregateRate, 0) || s.AggregateRate < 0 {
		return fmt.Errorf("aggregate_rate: must be a finite number >= 0, got %g", s.AggregateRate)
	}
	if s.NumRequests < 0 {
		return fmt.Errorf("num_requests: must be >= 0, got %d", s.NumRequests)
	}
	if s.Horizon < 0 {
		return fmt.Errorf("horizon: must be >= 0, got %d", s.Horizon)
	}
	if s.ServeGenData != nil {
		return errors.New("servegen_data: generating from ServeGen data files is not supported; convert the data to clients or replay it as a trace")
	}
	for _, k := range sortedKeys(s.GoodputSLOTargets) {
		if !oneOf(k, SLOClasses) {
			return fmt.Errorf("goodput_slo_targets.%s: unknown SLO class; valid: %s", k, strings.Join(SLOClasses, ", "))
		}
	}
	if len(s.Clients) == 0 && len(s.Cohorts) == 0 && s.InferencePerf == nil {
		return errors.New("clients: at least one client, cohort or inference_perf block is required")
	}
	return nil
}
