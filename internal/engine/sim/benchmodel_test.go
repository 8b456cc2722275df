package sim

import (
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/model"
)

// benchInstance resolves the benchmark instance: llama-3.1-8b on H100, TP1, trained-physics.
func benchInstance(tb testing.TB) InstanceConfig {
	tb.Helper()
	r, err := model.Resolve(model.InstanceSpec{Model: "meta-llama/llama-3.1-8b-instruct", GPU: "H100", Engine: model.EngineSettings{TensorParallelSize: 1}})
	if err != nil {
		tb.Fatal(err)
	}
	ic, err := InstanceFromResolved(r)
	if err != nil {
		tb.Fatal(err)
	}
	return ic
}
