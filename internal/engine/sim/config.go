package sim

import (
	"errors"
	"fmt"

	"github.com/inference-sim/blis-operator/internal/engine/latency"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/trace"
)

// PreemptionPolicy selects the victim when a running request cannot get KV blocks.
type PreemptionPolicy string

// Preemption policies (vLLM v1 semantics, recompute mode).
const (
	// PreemptFCFS evicts the tail of the running batch (the most recently admitted request).
	PreemptFCFS PreemptionPolicy = "fcfs"
	// PreemptPriority evicts the running request with the largest (priority, arrival), where
	// a larger priority value means less urgent (vLLM's convention).
	PreemptPriority PreemptionPolicy = "priority"
)

// DefaultTimeout is the per-request deadline used when neither the request nor the
// configuration sets one: 300 s, as in BLIS.
const DefaultTimeout int64 = 300_000_000

// InstanceConfig is one vLLM replica with its model, engine settings and latency model already
// resolved (the model package turns model names, GPUs and flags into these numbers).
type InstanceConfig struct {
	// Model names the served model; it is copied into per-request rows.
	Model string
	// Latency is the step-time model. Required.
	Latency latency.Model
	// TotalKVBlocks is the KV cache capacity in blocks (> 0).
	TotalKVBlocks int32
	// BlockSize is the number of tokens per KV block (> 0).
	BlockSize int32
	// MaxNumSeqs bounds the running batch (vLLM max-num-seqs, > 0).
	MaxNumSeqs int32
	// MaxNumBatchedTokens is the per-step token budget (vLLM max-num-batched-tokens, > 0).
	MaxNumBatchedTokens int32
	// LongPrefillTokenThreshold caps one request's prefill chunk per step (0 = no cap).
	LongPrefillTokenThreshold int32
	// MaxModelLen bounds prompt plus output length (0 = unlimited).
	MaxModelLen int32
	// DisablePrefixCaching turns off prompt-block reuse across requests.
	DisablePrefixCaching bool
	// DisableChunkedPrefill admits a waiting request only when its whole remaining prompt (after
	// the long-prefill cap) fits in the step's token budget, as vLLM does with chunked prefill
	// off.
	DisableChunkedPrefill bool
	// Preemption is the victim policy of a run without a policy bundle (the requests' priorities
	// are then their SLO classes' GAIE priorities); empty means fcfs. With Config.Policy set it
	// must be empty: the bundle's preemption policy applies to every instance.
	Preemption PreemptionPolicy
	// CPUTier, when set, adds a CPU KV tier (offload and reload, see tier.go); nil = GPU only.
	CPUTier *KVTierConfig
	// MaxNumPartialPrefills is vLLM's --max-num-partial-prefills: above 1, at most this many
	// requests are in prefill at once and each step's prefill chunks are capped at the token
	// budget divided by the prefills that may run (0 or 1 = the classic behaviour). A prompt is
	// long above LongPrefillTokenThreshold, or above 4% of MaxModelLen when that is 0.
	MaxNumPartialPrefills int32
	// MaxLongPartialPrefills is vLLM's --max-long-partial-prefills: how many of those prefills
	// may be long; a long waiting prompt over the limit lets shorter ones behind it go first
	// (0 = 1, the default). Only used when MaxNumPartialPrefills is above 1.
	MaxLongPartialPrefills int32
}

// Validate reports the first invalid field of c.
func (c *InstanceConfig) Validate() error {
	switch {
	case c.Latency == nil:
		return errors.New("latency model is required")
	case c.TotalKVBlocks <= 0:
		return fmt.Errorf("total-kv-blocks must be > 0, got %d", c.TotalKVBlocks)
	case c.BlockSize <= 0:
		return fmt.Errorf("block-size-in-tokens must be > 0, got %d", c.BlockSize)
	case c.MaxNumSeqs <= 0:
		return fmt.Errorf("max-num-seqs must be > 0, got %d", c.MaxNumSeqs)
	case c.MaxNumBatchedTokens <= 0:
		return fmt.Errorf("max-num-batched-tokens must be > 0, got %d", c.MaxNumBatchedTokens)
	case c.LongPrefillTokenThreshold < 0:
		return fmt.Errorf("long-prefill-token-threshold must be >= 0, got %d", c.LongPrefillTokenThreshold)
	case c.MaxModelLen < 0:
		return fmt.Errorf("max-model-len must be >= 0, got %d", c.MaxModelLen)
	case c.MaxNumPartialPrefills < 0:
		return fmt.Errorf("max-num-partial-prefills must be >= 1, got %d", c.MaxNumPartialPrefills)
	case c.MaxLongPartialPrefills < 0 || c.MaxLongPartialPrefills > max(c.MaxNumPartialPrefills, 1):
		return fmt.Errorf("max-long-partial-prefills must be between 1 and max-num-partial-prefills (%d), got %d", max(c.MaxNumPartialPrefills, 1), c.MaxLongPartialPrefills)
	case c.MaxNumPartialPrefills > 1 && c.DisableChunkedPrefill:
		return errors.New("max-num-partial-prefills above 1 needs chunked prefill")
	}
	if c.CPUTier != nil {
		if err := c.CPUTier.Validate(); err != nil {
			return err
		}
	}
	switch c.Preemption {
	case "", PreemptFCFS, PreemptPriority:
	default:
		return fmt.Errorf("preemption policy must be %q or %q, got %q", PreemptFCFS, PreemptPriority, c.Preemption)
	}
	if c.MaxModelLen > 0 {
		// A sequence of max-model-len tokens must fit in the cache, or a request the length
		// guard accepts could never be served (the rule BLIS applies at start-up).
		need := (int64(c.MaxModelLen) + int64(c.BlockSize) - 1) / int64(c.BlockSize)
		if need > int64(c.TotalKVBlocks) {
			return fmt.Errorf("KV cache too small for max-model-len %d: needs %d blocks of %d tokens, total-kv-blocks is %d",
				c.MaxModelLen, need, c.BlockSize, c.TotalKVBlocks)
		}
	}
	return nil
}

// Options are switches that do not change simulated behaviour.
type Options struct {
	// RequestRecords keeps one row per request in the result (for --metrics-path).
	RequestRecords bool
	// CheckInvariants verifies request and KV conservation, causality, clock monotonicity and
	// the batch limits after every event, failing the run on the first violation. It makes a
	// run several times slower and is meant for tests.
	CheckInvariants bool
	// Trace, when set, records anomaly counters and (by its level) decision records into
	// Result.Trace. It needs a policy bundle (runs without one have no decisions to record).
	// Tracing never changes the simulated behaviour.
	Trace *trace.Config
	// Series records bounded time series (arrivals, completions, ready instances, and per
	// instance queue depth, batch size, KV utilization and prefix-cache hit rate) into
	// Result.Series, in at most MaxSeriesBuckets buckets (series.go).
	Series bool
	// Progress, when set, is called with the run's progress at most once every 65,536
	// processed events and once when the run ends (on the run's goroutine; it must not block
	// for long).
	Progress func(Progress)
}

// Config is a complete, resolved simulation input (apart from the workload).
type Config struct {
	// Instances are the replicas, indexed from 0.
	Instances []InstanceConfig
	// Policy is the control plane: admission, priority and routing at arrival, and every
	// instance's scheduler and preemption orderings, with decision latencies and snapshot
	// staleness. nil means BLIS's defaults (always-admit, constant priority, round-robin, fcfs
	// scheduler, fcfs preemption) through a fast path that gives the same results as an empty
	// bundle. The bundle is only read; a run builds fresh policy instances from it.
	Policy *policy.Bundle
	// Router is a lower-level routing override for runs without Policy: it builds the policy
	// that picks each request's instance at arrival (nil means round-robin). It cannot be
	// combined with Policy.
	Router RouterFactory
	// Seed is the master seed of the partitioned random streams.
	Seed int64
	// Horizon stops the simulation: events after it are not processed (0 = run to drain).
	Horizon int64
	// Timeout is the per-request deadline after cluster arrival used when a request sets
	// none (0 = DefaultTimeout, < 0 = no deadline).
	Timeout int64
	// AdmissionLatency and RoutingLatency delay the admission and routing decisions (µs). A
	// bundle's admission.latency_us and routing.latency_us, when set (> 0), replace them.
	AdmissionLatency, RoutingLatency int64
	// Autoscale, when set, turns on autoscaling over the instance slots (nil = a fixed cluster
	// of every instance, the default).
	Autoscale *AutoscaleConfig
	// PD, when set, splits the instances into a prefill and a decode pool (nil = every
	// instance monolithic, the default).
	PD *PDConfig
	// Options do not change results.
	Options Options
}

// Validate checks the configuration before a run starts, including the policy bundle (its
// names, parameters, trees and CEL programs).
func (c *Config) Validate() error {
	if err := c.validate(); err != nil {
		return err
	}
	if c.Policy != nil {
		return c.Policy.Validate()
	}
	return nil
}

// validatePD checks disaggregation against the instances and the autoscaler: the pools' KV
// block sizes must match (a transferred prompt keeps its block layout), and with autoscaling
// each pool is scaled on its own within bounds whose maxima are the pools' sizes.
func (c *Config) validatePD() error {
	p := c.PD
	if err := p.Validate(len(c.Instances)); err != nil {
		return err
	}
	pb, db := c.Instances[0].BlockSize, c.Instances[p.PrefillInstances].BlockSize
	for i := range c.Instances {
		want, pool := pb, "prefill"
		if i >= p.PrefillInstances {
			want, pool = db, "decode"
		}
		if c.Instances[i].BlockSize != want {
			return fmt.Errorf("instance %d: the %s pool's instances must share one KV block size (%d and %d tokens)", i, pool, want, c.Instances[i].BlockSize)
		}
	}
	if pb != db {
		return fmt.Errorf("the prefill pool's KV block size (%d tokens) differs from the decode pool's (%d): KV transfer between pools needs equal block sizes", pb, db)
	}
	a := c.Autoscale
	switch {
	case a == nil:
	case !a.pooled():
		return errors.New("an autoscaled disaggregated cluster scales each pool on its own: give the prefill and decode pools' bounds (Autoscale.Prefill, Autoscale.Decode) instead of cluster-wide ones")
	case int(a.Prefill.MaxReplicas) != p.PrefillInstances:
		return fmt.Errorf("the prefill pool's max replicas (%d) must equal its instance slots (%d)", a.Prefill.MaxReplicas, p.PrefillInstances)
	}
	return nil
}

// validate checks everything but the bundle's contents, which building the run's pipeline
// checks anyway (so a run compiles its CEL programs once).
func (c *Config) validate() error {
	if len(c.Instances) == 0 {
		return errors.New("at least one instance is required")
	}
	for i := range c.Instances {
		if err := c.Instances[i].Validate(); err != nil {
			return fmt.Errorf("instance %d: %w", i, err)
		}
	}
	switch {
	case c.Horizon < 0:
		return fmt.Errorf("horizon must be >= 0, got %d", c.Horizon)
	case c.AdmissionLatency < 0:
		return fmt.Errorf("admission latency must be >= 0, got %d", c.AdmissionLatency)
	case c.RoutingLatency < 0:
		return fmt.Errorf("routing latency must be >= 0, got %d", c.RoutingLatency)
	}
	if c.Autoscale != nil {
		if err := c.Autoscale.Validate(len(c.Instances)); err != nil {
			return err
		}
	}
	if c.PD != nil {
		if err := c.validatePD(); err != nil {
			return err
		}
	} else if c.Autoscale != nil && c.Autoscale.pooled() {
		return errors.New("per-pool autoscaling bounds need prefill/decode disaggregation")
	}
	if c.Policy == nil {
		return nil
	}
	if c.Router != nil {
		return errors.New("set either a policy bundle or a router, not both")
	}
	for i := range c.Instances {
		if c.Instances[i].Preemption != "" {
			return fmt.Errorf("instance %d: the preemption policy comes from the policy bundle (preemption.policy), not the instance", i)
		}
	}
	return nil
}
