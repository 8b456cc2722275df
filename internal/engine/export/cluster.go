package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/inference-sim/blis-operator/internal/engine/export/llmd"
	"github.com/inference-sim/blis-operator/internal/engine/model"
	"go.yaml.in/yaml/v3"
)

// Pool roles.
const (
	RoleMonolithic = "monolithic"
	RolePrefill    = "prefill"
	RoleDecode     = "decode"
)

// Disaggregation deciders.
const (
	// DeciderAlways disaggregates every request.
	DeciderAlways = "always"
	// DeciderNever sends every request straight to a decode replica.
	DeciderNever = "never"
	// DeciderPrefixThreshold disaggregates when the prompt tokens not cached on the chosen
	// decode replica exceed Threshold (llm-d's prefix-based-pd-decider).
	DeciderPrefixThreshold = "prefix-threshold"
	// DeciderPromptLength disaggregates prompts longer than Threshold tokens.
	DeciderPromptLength = "prompt-length"
)

// Cluster is the deployment side of an export: the model and vLLM engine settings of the
// replicas, the replica pools (monolithic, or prefill and decode, each of these optionally with
// its own GPU and engine settings), disaggregation, CPU KV offload, autoscaling bounds and the
// SLO classes of the workload. It mirrors the parts of a
// SimulatedCluster that reach llm-d configuration; keys are camelCase.
type Cluster struct {
	// Model is the catalog model served by every replica (also the `vllm serve` argument).
	// Empty exports no model-server arguments.
	Model string `json:"model,omitempty"`
	// GPU is the accelerator (catalog name; default: the model's).
	GPU string `json:"gpu,omitempty"`
	// Engine are the vLLM settings; zero values take the simulator's defaults.
	Engine model.EngineSettings `json:"engine,omitzero"`
	// Pools are the replica pools; none means one monolithic pool of one replica.
	Pools []Pool `json:"pools,omitempty"`
	// Disaggregation configures prefill/decode disaggregation (needs prefill and decode pools).
	Disaggregation *Disaggregation `json:"disaggregation,omitempty"`
	// KVOffload is a CPU tier below GPU KV memory.
	KVOffload *KVOffload `json:"kvOffload,omitempty"`
	// LowerKVTiers are the kinds of the simulated KV tiers below the CPU one (filesystem,
	// object-store): the configuration exported has no counterpart, so each is a warning.
	LowerKVTiers []string `json:"lowerKVTiers,omitempty"`
	// Autoscaling bounds the replica count of pools that do not set their own bounds.
	Autoscaling *Bounds `json:"autoscaling,omitempty"`
	// SLOClasses are the workload's SLO class names; objectives are written for these (else for
	// every class the bundle names).
	SLOClasses []string `json:"sloClasses,omitempty"`
}

// Pool is a group of identical replicas.
type Pool struct {
	// Name is the pool (and model-server Deployment) name.
	Name string `json:"name"`
	// Role is monolithic (default), prefill or decode.
	Role string `json:"role,omitempty"`
	// Replicas is the initial replica count.
	Replicas int32 `json:"replicas"`
	// MinReplicas and MaxReplicas bound autoscaling of this pool.
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// GPU is this pool's accelerator (prefill and decode pools only; default: the cluster's).
	GPU string `json:"gpu,omitempty"`
	// Engine overrides engine settings for this pool (prefill and decode pools only); fields
	// left at zero are the cluster's.
	Engine *PoolEngine `json:"engine,omitempty"`
	// LatencyModel is this pool's simulated step-time model (prefill and decode pools only).
	// llm-d has no counterpart: it is reported as a note, never exported.
	LatencyModel string `json:"latencyModel,omitempty"`
}

// PoolEngine are the engine settings a prefill or decode pool may set differently from the
// cluster (as a SimulatedCluster's pools[].engine). The KV block size stays the cluster's: a
// transferred prompt keeps its block layout.
type PoolEngine struct {
	// TensorParallelSize is the pool's --tensor-parallel-size.
	TensorParallelSize int `json:"tensorParallelSize,omitempty"`
	// MaxNumSeqs is the pool's --max-num-seqs.
	MaxNumSeqs int64 `json:"maxNumSeqs,omitempty"`
	// MaxNumBatchedTokens is the pool's --max-num-batched-tokens.
	MaxNumBatchedTokens int64 `json:"maxNumBatchedTokens,omitempty"`
	// GPUMemoryUtilization is the pool's --gpu-memory-utilization; it replaces the cluster's
	// fixed KV block count.
	GPUMemoryUtilization float64 `json:"gpuMemoryUtilization,omitempty"`
	// TotalKVBlocks fixes the pool's KV cache (--num-gpu-blocks-override).
	TotalKVBlocks int64 `json:"totalKVBlocks,omitempty"`
}

// hasOverrides reports whether the pool runs other hardware or settings than the cluster's.
func (p *Pool) hasOverrides() bool {
	return p.GPU != "" || p.Engine != nil || p.LatencyModel != ""
}

// engineSettings is the cluster's engine with the pool's overrides applied, as the evaluation
// applies them to a prefill or decode pool.
func (p *Pool) engineSettings(base model.EngineSettings) model.EngineSettings {
	e := p.Engine
	if e == nil {
		return base
	}
	if e.TensorParallelSize != 0 {
		base.TensorParallelSize = e.TensorParallelSize
	}
	if e.MaxNumSeqs != 0 {
		base.MaxNumSeqs = e.MaxNumSeqs
	}
	if e.MaxNumBatchedTokens != 0 {
		base.MaxNumBatchedTokens = e.MaxNumBatchedTokens
	}
	if e.GPUMemoryUtilization != 0 {
		base.GPUMemoryUtilization, base.TotalKVBlocks = e.GPUMemoryUtilization, 0
	}
	if e.TotalKVBlocks != 0 {
		base.TotalKVBlocks = e.TotalKVBlocks
	}
	return base
}

// Bounds are autoscaling replica bounds.
type Bounds struct {
	MinReplicas int32 `json:"minReplicas"`
	MaxReplicas int32 `json:"maxReplicas"`
}

// Disaggregation is how requests are split between prefill and decode pools.
type Disaggregation struct {
	// Decider is always, never, prefix-threshold or prompt-length.
	Decider string `json:"decider"`
	// Threshold is the token count at or below which a request is not disaggregated
	// (prefix-threshold: uncached prompt tokens; prompt-length: prompt tokens).
	Threshold int64 `json:"threshold,omitempty"`
	// TransferBandwidthGBps and TransferBaseLatencyUs model the KV transfer in the simulator.
	TransferBandwidthGBps float64 `json:"transferBandwidthGBps,omitempty"`
	TransferBaseLatencyUs int64   `json:"transferBaseLatencyUs,omitempty"`
}

// KVOffload is a CPU KV tier per replica.
type KVOffload struct {
	// CPUBlocks is the tier's capacity in KV blocks per replica.
	CPUBlocks int64 `json:"cpuBlocks"`
	// BandwidthGBps, BaseLatencyUs and OffloadThreshold model transfers in the simulator.
	BandwidthGBps    float64  `json:"bandwidthGBps,omitempty"`
	BaseLatencyUs    int64    `json:"baseLatencyUs,omitempty"`
	OffloadThreshold *float64 `json:"offloadThreshold,omitempty"`
}

// ParseCluster decodes a cluster input strictly (unknown keys are errors) and validates it.
func ParseCluster(data []byte) (*Cluster, error) {
	var c Cluster
	if err := llmd.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// LoadCluster reads and decodes a cluster input file.
func LoadCluster(path string) (*Cluster, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading cluster: %w", err)
	}
	c, err := ParseCluster(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Validate checks the pools, roles, bounds, decider and offload.
func (c *Cluster) Validate() error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf("cluster: "+format, a...)) }
	names := map[string]bool{}
	var mono, prefill, decode int
	for i, p := range c.effectivePools() {
		if !validName(p.Name) {
			fail("pools[%d]: name %q must be a DNS label (lower-case letters, digits, '-')", i, p.Name)
		}
		if names[p.Name] {
			fail("pools[%d]: duplicate name %q", i, p.Name)
		}
		names[p.Name] = true
		switch p.Role {
		case RoleMonolithic:
			mono++
		case RolePrefill:
			prefill++
		case RoleDecode:
			decode++
		default:
			fail("pools[%d]: role %q (known: monolithic, prefill, decode)", i, p.Role)
		}
		if p.Replicas < 0 {
			fail("pools[%d]: replicas must be >= 0", i)
		}
		if p.MinReplicas != nil && (*p.MinReplicas < 0 || *p.MinReplicas > p.Replicas) {
			fail("pools[%d]: need 0 <= minReplicas <= replicas", i)
		}
		if p.MaxReplicas != nil && *p.MaxReplicas < max(p.Replicas, 1) {
			fail("pools[%d]: need maxReplicas >= replicas and >= 1", i)
		}
		p.validateOverrides(i, fail)
	}
	if mono > 0 && prefill+decode > 0 {
		fail("pools must be all monolithic, or prefill and decode pools")
	}
	if (prefill > 0) != (decode > 0) {
		fail("a disaggregated cluster needs at least one prefill pool and one decode pool")
	}
	if d := c.Disaggregation; d != nil {
		if prefill == 0 {
			fail("disaggregation needs prefill and decode pools")
		}
		switch d.Decider {
		case DeciderAlways, DeciderNever, DeciderPrefixThreshold, DeciderPromptLength:
		default:
			fail("disaggregation.decider %q (known: always, never, prefix-threshold, prompt-length)", d.Decider)
		}
		if d.Threshold < 0 || d.Threshold >= math.MaxInt32 {
			fail("disaggregation.threshold must be in [0, %d)", math.MaxInt32)
		}
	}
	if o := c.KVOffload; o != nil {
		if o.CPUBlocks <= 0 {
			fail("kvOffload.cpuBlocks must be > 0")
		}
		if o.OffloadThreshold != nil && (*o.OffloadThreshold <= 0 || *o.OffloadThreshold > 1) {
			fail("kvOffload.offloadThreshold must be in (0, 1]")
		}
	}
	for _, k := range c.LowerKVTiers {
		if k != "filesystem" && k != "object-store" {
			fail("lowerKVTiers: %q is not filesystem or object-store", k)
		}
	}
	if a := c.Autoscaling; a != nil && (a.MinReplicas < 0 || a.MaxReplicas < 1 || a.MinReplicas > a.MaxReplicas) {
		fail("autoscaling: need 0 <= minReplicas <= maxReplicas and maxReplicas >= 1")
	}
	for i, s := range c.SLOClasses {
		if s == "" {
			fail("sloClasses[%d] is empty", i)
		}
	}
	return errors.Join(errs...)
}

// validateOverrides checks a pool's own GPU, engine settings and latency model.
func (p *Pool) validateOverrides(i int, fail func(format string, a ...any)) {
	if p.hasOverrides() && p.Role != RolePrefill && p.Role != RoleDecode {
		fail("pools[%d]: gpu, engine and latencyModel apply only to prefill and decode pools", i)
	}
	if e := p.Engine; e != nil {
		if e.TensorParallelSize < 0 || e.MaxNumSeqs < 0 || e.MaxNumBatchedTokens < 0 || e.TotalKVBlocks < 0 {
			fail("pools[%d].engine: sizes must be >= 0 (0 = the cluster's)", i)
		}
		if e.GPUMemoryUtilization < 0 || e.GPUMemoryUtilization > 1 {
			fail("pools[%d].engine.gpuMemoryUtilization must be in (0, 1]", i)
		}
		if e.GPUMemoryUtilization != 0 && e.TotalKVBlocks != 0 {
			fail("pools[%d].engine: set gpuMemoryUtilization or totalKVBlocks, not both", i)
		}
	}
	if p.LatencyModel != "" && !slices.Contains(model.LatencyKinds(), p.LatencyModel) {
		fail("pools[%d].latencyModel %q (known: %s)", i, p.LatencyModel, strings.Join(model.LatencyKinds(), ", "))
	}
}

// DefaultPoolName names the single pool of a cluster that lists none.
const DefaultPoolName = "model-server"

// effectivePools returns the pools with roles defaulted (one monolithic pool when none).
func (c *Cluster) effectivePools() []Pool {
	if len(c.Pools) == 0 {
		return []Pool{{Name: DefaultPoolName, Role: RoleMonolithic, Replicas: 1}}
	}
	out := append([]Pool(nil), c.Pools...)
	for i := range out {
		if out[i].Role == "" {
			out[i].Role = RoleMonolithic
		}
	}
	return out
}

// disaggregated reports whether the cluster has prefill and decode pools.
func (c *Cluster) disaggregated() bool {
	for _, p := range c.effectivePools() {
		if p.Role == RolePrefill {
			return true
		}
	}
	return false
}

func validName(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// ClusterYAML writes a cluster input as YAML that ParseCluster reads back.
func ClusterYAML(c *Cluster) ([]byte, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	// JSON is YAML: decoding it into a node keeps the struct's key order.
	var n yaml.Node
	if err := yaml.Unmarshal(raw, &n); err != nil {
		return nil, err
	}
	setBlockStyle(&n)
	out, err := llmd.Marshal(&n)
	if err != nil {
		return nil, err
	}
	if _, err := ParseCluster(out); err != nil {
		return nil, fmt.Errorf("cluster YAML does not read back: %w", err)
	}
	return out, nil
}

// setBlockStyle turns JSON's flow style into block style.
func setBlockStyle(n *yaml.Node) {
	n.Style &^= yaml.FlowStyle
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		n.Style = 0
	}
	for _, c := range n.Content {
		setBlockStyle(c)
	}
}
