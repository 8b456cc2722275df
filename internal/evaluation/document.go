// Package evaluation turns the project's resources into an engine run and the engine's result
// into Evaluation status. The `blis evaluate` command and the operator both go through it, so
// they give identical results:
//
//  1. Resolve checks an Evaluation and the SimulatedCluster, PolicyBundle and WorkloadSpec it
//     names (with the ConfigMap data and files they reference) with the engine's own
//     validation, and builds the resolved input Document: everything the engine needs, in
//     canonical JSON, with its SHA-256 content hash.
//  2. Run simulates the document once per seed.
//  3. Result.ApplyTo writes the metrics, replicate statistics, fitness, input hash and engine
//     version into an EvaluationStatus; it is the only code that builds those status fields.
//
// A Document alone reproduces a run (Load, then Run): that is how the `blis engine` Job
// entrypoint works.
package evaluation

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/inference-sim/blis-operator/internal/engine/model"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
	"github.com/inference-sim/blis-operator/internal/evaluation/fitness"
)

// DocumentFormat identifies the resolved input document format.
const DocumentFormat = "blis.inference-sim.io/resolved-evaluation/v1alpha1"

// Document is the resolved input of an Evaluation: everything the engine needs to run it and
// to compute its status, with no references left. Its canonical JSON (Canonical) is what the
// input hash covers.
type Document struct {
	// Format is DocumentFormat.
	Format string `json:"format"`
	// EngineVersion is the version of the engine that resolved the document (EngineVersion()).
	EngineVersion string `json:"engineVersion"`
	// Cluster is the simulated deployment.
	Cluster ClusterDoc `json:"cluster"`
	// Policy is the policy bundle in the engine's policy file form (YAML, for policy.Parse).
	Policy string `json:"policy"`
	// Workload is the request workload.
	Workload WorkloadDoc `json:"workload"`
	// Seeds are the simulation seeds, one run each, in this order.
	Seeds []int64 `json:"seeds"`
	// Horizon overrides the workload's simulated duration in µs (0 = the workload's).
	Horizon int64 `json:"horizon,omitempty"`
	// NumRequests overrides the workload's request count (0 = the workload's).
	NumRequests int64 `json:"numRequests,omitempty"`
	// Objectives are the fitness objectives over status metric names.
	Objectives []fitness.Objective `json:"objectives,omitempty"`
	// FitnessWeights are BLIS --fitness-weights (BLIS metric keys).
	FitnessWeights map[string]float64 `json:"fitnessWeights,omitempty"`
	// Trace sets the decision trace and the status summary (nil: level none, the
	// issue_focused strategy, trace.DefaultMaxTokens). It changes status.traceSummary, so it is
	// part of the hash.
	Trace *TraceSettings `json:"trace,omitempty"`
}

// TraceSettings are an Evaluation's trace settings.
type TraceSettings struct {
	// Level is none, decisions or full (empty = none).
	Level string `json:"level,omitempty"`
	// SummaryStrategy is issue_focused, decision_audit, counterfactual or pattern_mining (empty
	// = issue_focused).
	SummaryStrategy string `json:"summaryStrategy,omitempty"`
	// SummaryMaxTokens bounds the summary in estimated tokens (0 = trace.DefaultMaxTokens).
	SummaryMaxTokens int32 `json:"summaryMaxTokens,omitempty"`
}

// ClusterDoc is the resolved cluster: identical replicas behind the router.
type ClusterDoc struct {
	// Instance is the model, GPU, engine settings and latency model of every replica, in the
	// model package's form (model.Resolve fills in the defaults when the document is loaded).
	Instance model.InstanceSpec `json:"instance"`
	// Replicas is the number of replicas.
	Replicas int `json:"replicas"`
	// AdmissionLatencyUs and RoutingLatencyUs are the control-plane decision latencies.
	AdmissionLatencyUs int64 `json:"admissionLatencyUs,omitempty"`
	RoutingLatencyUs   int64 `json:"routingLatencyUs,omitempty"`
	// Observability is the staleness of the instance signals the router reads (nil: the
	// engine's defaults); it becomes the policy bundle's observability.
	Observability *policy.ObservabilityConfig `json:"observability,omitempty"`
	// Autoscaling bounds and actuates the replica count (nil: Replicas fixed). The policy
	// bundle's autoscaler block gives the evaluation interval, cooldowns and template.
	Autoscaling *AutoscalingDoc `json:"autoscaling,omitempty"`
	// CPUTier is every replica's first KV tier below GPU memory, the head of the chain cpu ->
	// filesystem -> object-store (nil: GPU KV only; the field keeps its name for the hash).
	CPUTier *KVTierDoc `json:"cpuTier,omitempty"`
	// PD is prefill/decode disaggregation (nil: every replica monolithic); the first
	// PrefillReplicas replicas are the prefill pool.
	PD *PDDoc `json:"pd,omitempty"`
}

// PDDoc is prefill/decode disaggregation: the prefill pool's size, the decider (never, always,
// prefix-threshold with NonCachedTokens) and the KV transfer link.
type PDDoc struct {
	PrefillReplicas int     `json:"prefillReplicas"`
	Decider         string  `json:"decider"`
	NonCachedTokens int32   `json:"nonCachedTokens,omitempty"`
	BandwidthGBps   float64 `json:"bandwidthGBps"`
	BaseLatencyUs   int64   `json:"baseLatencyUs,omitempty"`
	// Prefill and Decode are a pool's own instance (its GPU, engine settings or latency model
	// differ from the cluster's); nil: the cluster's Instance.
	Prefill *model.InstanceSpec `json:"prefill,omitempty"`
	Decode  *model.InstanceSpec `json:"decode,omitempty"`
}

// KVTierDoc is a KV tier below GPU memory: capacity per replica, transfer bandwidth and base
// latency, and (the first tier's) the GPU utilization above which computed prompt blocks are
// offloaded. Tier is its kind (empty: cpu) and Next the tier below it, which receives the
// blocks it evicts; both are absent for a lone cpu tier, which keeps that document's hash.
type KVTierDoc struct {
	Tier             string     `json:"tier,omitempty"`
	CapacityBlocks   int64      `json:"capacityBlocks"`
	BandwidthGBps    float64    `json:"bandwidthGBps"`
	BaseLatencyUs    int64      `json:"baseLatencyUs,omitempty"`
	OffloadThreshold float64    `json:"offloadThreshold,omitempty"`
	Next             *KVTierDoc `json:"next,omitempty"`
}

// AutoscalingDoc is the autoscaled cluster: Replicas start ready, and the autoscaler keeps the
// active replicas within [MinReplicas, MaxReplicas].
type AutoscalingDoc struct {
	MinReplicas int `json:"minReplicas"`
	MaxReplicas int `json:"maxReplicas"`
	// ProvisioningDelayUs, ModelLoadDelayUs and WarmupDelayUs are a new replica's actuation
	// delays (constant).
	ProvisioningDelayUs int64 `json:"provisioningDelayUs,omitempty"`
	ModelLoadDelayUs    int64 `json:"modelLoadDelayUs,omitempty"`
	WarmupDelayUs       int64 `json:"warmupDelayUs,omitempty"`
	// DrainPolicy is wait, immediate or redirect (empty = wait).
	DrainPolicy string `json:"drainPolicy,omitempty"`
	// CostPerReplicaHour prices replica time.
	CostPerReplicaHour float64 `json:"costPerReplicaHour,omitempty"`
	// Prefill and Decode bound the pools of a disaggregated cluster, each autoscaled on its own
	// (nil otherwise); MinReplicas and MaxReplicas are then their sums.
	Prefill *PoolBoundsDoc `json:"prefill,omitempty"`
	Decode  *PoolBoundsDoc `json:"decode,omitempty"`
}

// PoolBoundsDoc bounds the active replicas of one pool of an autoscaled disaggregated cluster.
type PoolBoundsDoc struct {
	MinReplicas int `json:"minReplicas"`
	MaxReplicas int `json:"maxReplicas"`
}

// WorkloadDoc is the resolved workload: a generated workload spec or a trace to replay.
type WorkloadDoc struct {
	// Spec is a BLIS workload spec v2 (YAML, for workload.ParseSpec); built-in scenarios and
	// BLIS files from ConfigMaps are expanded into it.
	Spec string `json:"spec,omitempty"`
	// Trace is a trace replay.
	Trace *TraceDoc `json:"trace,omitempty"`
	// Seed is the workload's own seed, used when the Evaluation gives none.
	Seed int64 `json:"seed,omitempty"`
	// SLOTargets are the goodput SLO targets by class (ms) of a trace replay; a generated
	// workload carries its targets in Spec.
	SLOTargets map[string]workload.SLOTargets `json:"sloTargets,omitempty"`
}

// TraceDoc is a trace replay. The data is inline (Data) or a path on a volume mounted into the
// engine (Path); only inline data is covered by the input hash.
type TraceDoc struct {
	// Format is azure, mooncake or blis-v2.
	Format string `json:"format"`
	// Data is the trace file's content.
	Data string `json:"data,omitempty"`
	// Path is the trace file on a mounted volume.
	Path string `json:"path,omitempty"`
	// Header is the YAML header of a blis-v2 trace.
	Header string `json:"header,omitempty"`
	// HeaderPath is the blis-v2 header on a mounted volume.
	HeaderPath string `json:"headerPath,omitempty"`
	// Speedup divides inter-arrival times (0 = 1).
	Speedup float64 `json:"speedup,omitempty"`
}

// Canonical renders v as canonical JSON: object keys sorted at every depth, no insignificant
// white space, numbers as encoding/json writes them. Equal values always give equal bytes.
func Canonical(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return canonicalJSON(raw)
}

// canonicalJSON re-encodes JSON text with sorted keys, keeping every number's text.
func canonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON value")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(generic); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Hash is the hex SHA-256 of canonical document bytes.
func Hash(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// buildVersion, when set at link time (-ldflags "-X
// github.com/inference-sim/blis-operator/internal/evaluation.buildVersion=v0.3.0"), is the
// engine version.
var buildVersion string

// EngineVersion identifies the engine build: the version set at link time, else the main
// module's version when it has one, else "devel" followed by the VCS revision the binary was
// built from (with "-dirty" for a modified tree) when the build recorded it. It is part of every
// input hash, so results of different engine builds are not mistaken for one another.
func EngineVersion() string {
	if buildVersion != "" {
		return buildVersion
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	v := "devel"
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += "+" + rev
		if dirty {
			v += "-dirty"
		}
	}
	return v
}

// Envelope is the file `blis engine` reads: a document and the hash it must have.
type Envelope struct {
	// InputHash is the expected Hash of the document's canonical form.
	InputHash string `json:"inputHash"`
	// Document is the resolved input.
	Document json.RawMessage `json:"document"`
}

// MarshalEnvelope renders the envelope of a resolved evaluation (canonical JSON).
func (r *Resolved) MarshalEnvelope() ([]byte, error) {
	return Canonical(Envelope{InputHash: r.Hash, Document: r.Canonical})
}

// ErrHashMismatch is returned by ParseEnvelope when the document does not have the expected
// hash.
var ErrHashMismatch = errors.New("input hash mismatch")

// ParseEnvelope reads an envelope, checks the document's hash and decodes the document
// strictly. It does not validate the document (Load does).
func ParseEnvelope(data []byte) (*Document, string, error) {
	var env Envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, "", fmt.Errorf("reading the input envelope: %w", err)
	}
	if len(env.Document) == 0 {
		return nil, "", errors.New("the input envelope has no document")
	}
	canon, err := canonicalJSON(env.Document)
	if err != nil {
		return nil, "", fmt.Errorf("reading the input document: %w", err)
	}
	if got := Hash(canon); got != env.InputHash {
		return nil, got, fmt.Errorf("%w: the document hashes to %s, the envelope says %q", ErrHashMismatch, got, env.InputHash)
	}
	var doc Document
	dec := json.NewDecoder(bytes.NewReader(canon))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, env.InputHash, fmt.Errorf("decoding the input document: %w", err)
	}
	return &doc, env.InputHash, nil
}

// TotalGPUs is the GPUs of the cluster's initial replicas: each replica's TP x PP x DP, with the
// prefill and decode pools' own instances where they have them.
func (c *ClusterDoc) TotalGPUs() (int, error) {
	gpus := func(s model.InstanceSpec) (int, error) {
		r, err := model.Resolve(s)
		if err != nil {
			return 0, err
		}
		return r.Engine.TotalGPUs(), nil
	}
	per, err := gpus(c.Instance)
	if err != nil {
		return 0, err
	}
	if c.PD == nil {
		return per * c.Replicas, nil
	}
	n := [2]int{c.PD.PrefillReplicas, c.Replicas - c.PD.PrefillReplicas}
	total := 0
	for k, s := range []*model.InstanceSpec{c.PD.Prefill, c.PD.Decode} {
		g := per
		if s != nil {
			if g, err = gpus(*s); err != nil {
				return 0, err
			}
		}
		total += g * n[k]
	}
	return total, nil
}
