// Package export turns a simulated policy bundle and its cluster into llm-d configuration (an
// EndpointPickerConfig, InferenceObjectives, an InferencePool, vLLM model-server arguments and
// a KEDA ScaledObject), and reads llm-d EndpointPickerConfigs back into policy bundles so a
// team's current configuration can be simulated as a baseline.
//
// The bridge is the policy package's llm-d-named scorers: they compute llm-d-router's formulas,
// so a weight evolved in simulation means the same in the exported profile. What llm-d cannot
// express is reported as a Warning naming the approximation used, or refused with an error when
// nothing is close; nothing is dropped silently. The exporter decodes its own output strictly
// and validates it against the target router release (package llmd) before returning it.
// docs/llm-d-export.md has the mapping table.
package export

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/inference-sim/blis-operator/internal/engine/export/llmd"
	"github.com/inference-sim/blis-operator/internal/engine/model"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

// File names of an export, also the keys of the ConfigMap the operator writes.
const (
	FileEPPConfig     = "epp-config.yaml"
	FileObjectives    = "inference-objectives.yaml"
	FilePool          = "inference-pool.yaml"
	FileModelServers  = "model-servers.yaml"
	FileScaledObjects = "scaled-objects.yaml"
	FileWarnings      = "export-warnings.txt"
)

// Input is what is exported: a policy bundle and the cluster it was simulated on.
type Input struct {
	// Bundle is the policy bundle (nil = every default).
	Bundle *policy.Bundle
	// Cluster is the deployment.
	Cluster Cluster
	// Resolved optionally gives the already resolved engine of Cluster (the operator has it);
	// nil resolves Cluster.Model, GPU and Engine with the model catalog. A pool with its own
	// GPU or engine settings is resolved with Resolved's model architecture and its overrides.
	Resolved *model.Resolved
}

// Options select the target and the names of the generated objects.
type Options struct {
	// Target is a target name (llmd.TargetNames); "" is llmd.DefaultTarget.
	Target string
	// AllowExperimental permits Alpha plugins (the router then needs
	// --allow-experimental-plugins).
	AllowExperimental bool
	// Strict refuses every approximation instead of warning about it.
	Strict bool
	// InferencePool also writes an InferencePool.
	InferencePool bool
	// Name is the InferencePool name, the prefix of the endpoint picker's Service and the
	// value of the pods' "app" label (default "blis").
	Name string
	// Namespace is set on the generated Kubernetes objects when not empty.
	Namespace string
	// TargetPort is the model servers' port (default 8000).
	TargetPort int32
	// PrometheusAddress is the Prometheus server the ScaledObject queries.
	PrometheusAddress string
}

// Default option values.
const (
	DefaultName              = "blis"
	DefaultTargetPort        = 8000
	DefaultPrometheusAddress = "http://prometheus-operated.monitoring.svc:9090"
	// EPPPort is the endpoint picker's gRPC (ext-proc) port.
	EPPPort = 9002
)

// Warning reports something the target cannot express exactly.
type Warning struct {
	// Stage is the bundle or cluster part concerned (routing, admission, ...).
	Stage string
	// Message says what was done instead.
	Message string
	// Approximation is true when behaviour differs from the simulation (Strict refuses
	// these); false for settings that only the simulation models.
	Approximation bool
}

// String formats the warning as "stage: message".
func (w Warning) String() string {
	kind := "note"
	if w.Approximation {
		kind = "approximation"
	}
	return fmt.Sprintf("%s (%s): %s", w.Stage, kind, w.Message)
}

// File is one generated file.
type File struct {
	Name    string
	Content []byte
}

// ModelServer is the vLLM invocation of one replica pool.
type ModelServer struct {
	// Name is the pool and Deployment name.
	Name string `json:"name" yaml:"name"`
	// Role is monolithic, prefill or decode.
	Role string `json:"role" yaml:"role"`
	// Replicas is the pool's initial replica count.
	Replicas int32 `json:"replicas" yaml:"replicas"`
	// Labels must be on the pods (InferencePool selection, llm-d.ai/role for P/D).
	Labels map[string]string `json:"labels" yaml:"labels"`
	// Command and Args are the container's command line.
	Command []string `json:"command" yaml:"command"`
	Args    []string `json:"args" yaml:"args"`
	// Env are environment variables the arguments rely on.
	Env []EnvVar `json:"env,omitempty" yaml:"env,omitempty"`
}

// EnvVar is a container environment variable, a value or a pod field.
type EnvVar struct {
	Name      string        `json:"name" yaml:"name"`
	Value     string        `json:"value,omitempty" yaml:"value,omitempty"`
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty" yaml:"valueFrom,omitempty"`
}

// EnvVarSource reads a pod field.
type EnvVarSource struct {
	FieldRef *FieldRef `json:"fieldRef,omitempty" yaml:"fieldRef,omitempty"`
}

// FieldRef names a pod field (for example status.podIP).
type FieldRef struct {
	FieldPath string `json:"fieldPath" yaml:"fieldPath"`
}

// Result is a complete export.
type Result struct {
	// Target is the router release written for.
	Target llmd.Target
	// Config is the EndpointPickerConfig.
	Config *llmd.EndpointPickerConfig
	// Objectives are the InferenceObjectives, one per SLO class (or tenant).
	Objectives []llmd.InferenceObjective
	// Pool is the InferencePool (nil unless requested).
	Pool *llmd.InferencePool
	// ModelServers are the vLLM invocations per pool (nil without a model).
	ModelServers []ModelServer
	// ScaledObjects are the KEDA ScaledObjects (nil without an autoscaler).
	ScaledObjects []llmd.ScaledObject
	// Warnings list every approximation and every setting not exported.
	Warnings []Warning

	files []File
}

// Files returns the generated files in a fixed order, empty ones left out. Their names are
// valid ConfigMap keys; FileEPPConfig is the endpoint picker's --config-file.
func (r *Result) Files() []File {
	return append([]File(nil), r.files...)
}

// ConfigMapData returns the files as ConfigMap data (file name → content), the form the
// operator stores a promoted configuration in; an endpoint picker mounting the ConfigMap reads
// FileEPPConfig as its --config-file.
func (r *Result) ConfigMapData() map[string]string {
	m := make(map[string]string, len(r.files))
	for _, f := range r.files {
		m[f.Name] = string(f.Content)
	}
	return m
}

// File returns the content of a generated file, nil if it was not generated.
func (r *Result) File(name string) []byte {
	for _, f := range r.files {
		if f.Name == name {
			return f.Content
		}
	}
	return nil
}

// errRefused marks refusals: the bundle needs something llm-d has nothing close to.
var errRefused = errors.New("no llm-d equivalent")

// builder accumulates one export.
type builder struct {
	in       Input
	opts     Options
	t        llmd.Target
	b        *policy.Bundle
	engine   *model.VLLMEngineConfig // nil without a model
	resolved *model.Resolved
	model    string
	pools    []Pool
	pd       bool

	cfg      llmd.EndpointPickerConfig
	warnings []Warning
	names    map[string]int

	classPriorities map[string]int // objective name -> priority
	flowControl     bool
	fairnessRef     string
	orderingRef     string
	detector        *llmd.Plugin
	precise         bool
	priorityArgs    bool
}

// Export maps in to llm-d configuration for the selected target. The error names the part of
// the bundle that has no llm-d equivalent, the unsupported target (listing the supported
// ones), or the Alpha plugin that needs AllowExperimental.
func Export(in Input, opts Options) (*Result, error) {
	t, err := llmd.LookupTarget(opts.Target)
	if err != nil {
		return nil, err
	}
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if !validName(opts.Name) {
		return nil, fmt.Errorf("export: name %q must be a DNS label", opts.Name)
	}
	if opts.TargetPort == 0 {
		opts.TargetPort = DefaultTargetPort
	}
	if opts.PrometheusAddress == "" {
		opts.PrometheusAddress = DefaultPrometheusAddress
	}
	bundle := in.Bundle
	if bundle == nil {
		bundle = &policy.Bundle{}
	}
	if err := bundle.Validate(); err != nil {
		return nil, fmt.Errorf("export: invalid bundle: %w", err)
	}
	if err := in.Cluster.Validate(); err != nil {
		return nil, err
	}
	bd := &builder{in: in, opts: opts, t: t, b: bundle, names: map[string]int{},
		pools: in.Cluster.effectivePools(), pd: in.Cluster.disaggregated()}
	if err := bd.resolveEngine(); err != nil {
		return nil, err
	}
	bd.cfg = llmd.EndpointPickerConfig{APIVersion: t.APIVersion, Kind: llmd.KindEndpointPickerConfig,
		Plugins: []llmd.Plugin{}, SchedulingProfiles: []llmd.SchedulingProfile{}}

	steps := []func() error{bd.priorityClasses, bd.admission, bd.routing, bd.scheduler, bd.flowControlConfig, bd.infraNotes}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	res := &Result{Target: t, Config: &bd.cfg}
	objectives, err := bd.objectives()
	if err != nil {
		return nil, err
	}
	res.Objectives = objectives
	if res.ModelServers, err = bd.modelServers(); err != nil {
		return nil, err
	}
	if res.ScaledObjects, err = bd.scaledObjects(); err != nil {
		return nil, err
	}
	if opts.InferencePool {
		res.Pool = bd.inferencePool()
	}
	res.Warnings = bd.warnings
	if err := res.render(bd, opts); err != nil {
		return nil, err
	}
	return res, nil
}

// resolveEngine resolves the model and engine settings the simulation used.
func (bd *builder) resolveEngine() error {
	r := bd.in.Resolved
	if r == nil && bd.in.Cluster.Model != "" {
		var err error
		r, err = model.Resolve(model.InstanceSpec{Model: bd.in.Cluster.Model, GPU: bd.in.Cluster.GPU, Engine: bd.in.Cluster.Engine})
		if err != nil {
			return fmt.Errorf("export: cluster: %w", err)
		}
	}
	if r == nil {
		return nil
	}
	e := r.Engine
	bd.engine, bd.resolved = &e, r
	bd.model = bd.in.Cluster.Model
	if bd.model == "" {
		bd.model = r.ModelName
	}
	return nil
}

// approx records an approximation, or refuses it in strict mode.
func (bd *builder) approx(stage, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	if bd.opts.Strict {
		return fmt.Errorf("export: %s: %s (refused: strict mode)", stage, msg)
	}
	bd.warnings = append(bd.warnings, Warning{Stage: stage, Message: msg, Approximation: true})
	return nil
}

// note records a setting only the simulation models.
func (bd *builder) note(stage, format string, a ...any) {
	bd.warnings = append(bd.warnings, Warning{Stage: stage, Message: fmt.Sprintf(format, a...)})
}

// refuse is the error for a bundle part llm-d has nothing close to.
func refuse(stage, format string, a ...any) error {
	return fmt.Errorf("export: %s: %s: %w", stage, fmt.Sprintf(format, a...), errRefused)
}

// addPlugin appends a plugin and returns the name profiles reference it by. The first plugin
// of a type is named by its type (the router's default); later ones get a numbered name.
func (bd *builder) addPlugin(typ string, params any) string {
	n := bd.names[typ]
	bd.names[typ] = n + 1
	if params != nil && isZeroParams(params) {
		params = nil // every parameter at its default: write none
	}
	p := llmd.Plugin{Type: typ, Parameters: params}
	if n > 0 {
		p.Name = fmt.Sprintf("%s-%d", typ, n+1)
	}
	bd.cfg.Plugins = append(bd.cfg.Plugins, p)
	return p.RefName()
}

// needsV09 refuses features whose configuration keys are not known for the v0.8 line.
func (bd *builder) needsV09(stage, what string) error {
	if bd.t.AtLeast("llm-d-v0.9") {
		return nil
	}
	return fmt.Errorf("export: %s: %s needs target llm-d-v0.9 or later (%s does not document it)", stage, what, bd.t.Name)
}

// render marshals every object, decodes the endpoint picker configuration back strictly and
// validates it against the target, so that what is returned is what the router loads.
func (res *Result) render(bd *builder, opts Options) error {
	var header bytes.Buffer
	fmt.Fprintf(&header, "# EndpointPickerConfig for %s, exported by blis from a simulated policy bundle.\n", bd.t.Router)
	if m := bd.b.Metadata; m.Generation != 0 || m.Parent != "" {
		fmt.Fprintf(&header, "# Bundle lineage: generation %d, parent %q.\n", m.Generation, m.Parent)
	}
	if bd.needsExperimental() {
		header.WriteString("# Uses Alpha plugins: run the endpoint picker with --allow-experimental-plugins.\n")
	}
	body, err := llmd.Marshal(res.Config)
	if err != nil {
		return err
	}
	back, err := llmd.Decode(body)
	if err != nil {
		return fmt.Errorf("export: generated configuration does not decode strictly: %w", err)
	}
	warns, err := llmd.Validate(back, bd.t, llmd.ValidateOptions{AllowExperimental: opts.AllowExperimental})
	if err != nil {
		return fmt.Errorf("export: generated configuration is not accepted by %s: %w", bd.t.Router, err)
	}
	for _, w := range warns {
		bd.note("llm-d", "%s", w)
	}
	res.Warnings = bd.warnings
	res.files = append(res.files, File{Name: FileEPPConfig, Content: append(header.Bytes(), body...)})

	if len(res.Objectives) > 0 {
		var buf bytes.Buffer
		for i := range res.Objectives {
			b, err := llmd.Marshal(&res.Objectives[i])
			if err != nil {
				return err
			}
			if _, err := llmd.DecodeObjective(b); err != nil {
				return fmt.Errorf("export: generated objective: %w", err)
			}
			buf.WriteString("---\n")
			buf.Write(b)
		}
		res.files = append(res.files, File{Name: FileObjectives, Content: buf.Bytes()})
	}
	if res.Pool != nil {
		b, err := llmd.Marshal(res.Pool)
		if err != nil {
			return err
		}
		res.files = append(res.files, File{Name: FilePool, Content: b})
	}
	if len(res.ModelServers) > 0 {
		b, err := llmd.Marshal(struct {
			Model        string        `yaml:"model"`
			ModelServers []ModelServer `yaml:"modelServers"`
		}{bd.model, res.ModelServers})
		if err != nil {
			return err
		}
		head := "# vLLM model-server command lines per replica pool (container command and args of each\n" +
			"# pool's Deployment, or llm-d-modelservice containers[].args); pods need the labels.\n"
		res.files = append(res.files, File{Name: FileModelServers, Content: append([]byte(head), b...)})
	}
	if len(res.ScaledObjects) > 0 {
		var buf bytes.Buffer
		for i := range res.ScaledObjects {
			b, err := llmd.Marshal(&res.ScaledObjects[i])
			if err != nil {
				return err
			}
			buf.WriteString("---\n")
			buf.Write(b)
		}
		res.files = append(res.files, File{Name: FileScaledObjects, Content: buf.Bytes()})
	}
	if len(res.Warnings) > 0 {
		var buf bytes.Buffer
		for _, w := range res.Warnings {
			buf.WriteString(w.String())
			buf.WriteByte('\n')
		}
		res.files = append(res.files, File{Name: FileWarnings, Content: buf.Bytes()})
	}
	return nil
}

// needsExperimental reports whether the configuration has an Alpha plugin.
func (bd *builder) needsExperimental() bool {
	for _, p := range bd.cfg.Plugins {
		if info, ok := llmd.Lookup(bd.t, p.Type); ok && info.Stability == llmd.Alpha {
			return true
		}
	}
	return false
}

// roundInt converts a bundle number to the integer llm-d needs, warning when it is not one.
func (bd *builder) roundInt(stage, what string, v float64) (int, error) {
	r := math.Round(v)
	if r != v {
		if err := bd.approx(stage, "%s %v rounded to %v (llm-d takes an integer)", what, v, r); err != nil {
			return 0, err
		}
	}
	if math.Abs(r) > math.MaxInt32 {
		return 0, fmt.Errorf("export: %s: %s %v out of range", stage, what, v)
	}
	return int(r), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func ptr[T any](v T) *T { return &v }

// objectName turns a class or tenant name into a Kubernetes object name.
func objectName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-.")
}
