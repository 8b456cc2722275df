package sim

import (
	"fmt"
	"math"

	"github.com/inference-sim/blis-operator/internal/engine/latency"
	"github.com/inference-sim/blis-operator/internal/engine/model"
)

// InstanceFromResolved builds the InstanceConfig of an instance resolved by the model package
// (model, GPU, engine settings with the derived KV size and max-model-len, latency model and
// coefficients), constructing its latency model.
func InstanceFromResolved(r *model.Resolved) (InstanceConfig, error) {
	if r == nil {
		return InstanceConfig{}, fmt.Errorf("sim: nil resolved instance")
	}
	lat, err := latency.New(latency.FromResolved(r))
	if err != nil {
		return InstanceConfig{}, err
	}
	e := &r.Engine
	var ic InstanceConfig
	for _, f := range []struct {
		name string
		v    int64
		dst  *int32
	}{
		{"total-kv-blocks", e.TotalKVBlocks, &ic.TotalKVBlocks},
		{"block-size-in-tokens", e.BlockSize, &ic.BlockSize},
		{"max-num-seqs", e.MaxNumSeqs, &ic.MaxNumSeqs},
		{"max-num-batched-tokens", e.MaxNumBatchedTokens, &ic.MaxNumBatchedTokens},
		{"long-prefill-token-threshold", e.LongPrefillTokenThreshold, &ic.LongPrefillTokenThreshold},
		{"max-model-len", e.MaxModelLen, &ic.MaxModelLen},
	} {
		if f.v < 0 || f.v > math.MaxInt32 {
			return InstanceConfig{}, fmt.Errorf("%s must be in [0, %d], got %d", f.name, math.MaxInt32, f.v)
		}
		*f.dst = int32(f.v)
	}
	ic.Model = r.ModelName
	ic.Latency = lat
	ic.DisablePrefixCaching = !e.EnablePrefixCaching
	ic.DisableChunkedPrefill = !e.EnableChunkedPrefill
	return ic, ic.Validate()
}
