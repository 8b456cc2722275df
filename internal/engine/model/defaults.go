package model

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// Defaults is one entry of the `defaults:` section of BLIS's defaults.yaml.
type Defaults struct {
	// GPU is the default GPU of the model.
	GPU string `json:"GPU"`
	// TensorParallelism is the default TP degree.
	TensorParallelism int `json:"tensor_parallelism"`
	// VLLMVersion is the default vLLM version (blackbox rows only).
	VLLMVersion string `json:"vllm_version,omitempty"`
	// HFRepo is the model's Hugging Face repository.
	HFRepo string `json:"hf_repo,omitempty"`
}

// Coefficients are alpha/beta latency coefficients (µs, µs per token, or dimensionless).
type Coefficients struct {
	// Alpha are the overhead coefficients.
	Alpha []float64 `json:"alpha_coeffs"`
	// Beta are the step-time coefficients.
	Beta []float64 `json:"beta_coeffs"`
}

// BlackboxRow is one fitted row of the `models:` section: coefficients for one
// (model, GPU, TP, vLLM version).
type BlackboxRow struct {
	// ID is the model id, e.g. "meta-llama/llama-3.1-8b-instruct".
	ID string `json:"id"`
	// GPU is the GPU name, e.g. "H100" or "A100-80".
	GPU string `json:"GPU"`
	// TensorParallelism is the TP degree.
	TensorParallelism int `json:"tensor_parallelism"`
	// VLLMVersion is the vLLM image the row was fitted on.
	VLLMVersion string `json:"vllm_version"`
	// Alpha are [α0, α1, α2]: queueing = α0 + α1·input tokens, output-token processing = α2.
	Alpha []float64 `json:"alpha_coeffs"`
	// Beta are [β0, β1, β2]: step = β0 + β1·prefill tokens + β2·decode tokens.
	Beta []float64 `json:"beta_coeffs"`
	// BestLoss is the fit's recorded loss.
	BestLoss float64 `json:"best_loss"`
}

// DefaultsFile is the part of a BLIS defaults.yaml the engine reads; other sections
// (workloads, lora, kv_offload_devices) are ignored.
type DefaultsFile struct {
	// Defaults maps a model id to its default GPU, TP, vLLM version and repository.
	Defaults map[string]Defaults `json:"defaults"`
	// TrainedPhysics are the global trained-physics coefficients.
	TrainedPhysics *Coefficients `json:"trained_physics_coefficients"`
	// Models are the blackbox rows (present in defaults.yaml up to b563c440).
	Models []BlackboxRow `json:"models"`
}

// ParseDefaults parses a BLIS defaults.yaml.
func ParseDefaults(data []byte) (*DefaultsFile, error) {
	var f DefaultsFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("defaults file: %w", err)
	}
	for i, r := range f.Models {
		if r.ID == "" || r.GPU == "" || r.TensorParallelism < 1 {
			return nil, fmt.Errorf("defaults file: models[%d] must have id, GPU and tensor_parallelism >= 1", i)
		}
		if len(r.Alpha) != 3 || len(r.Beta) != 3 {
			return nil, fmt.Errorf("defaults file: models[%d] (%s) must have 3 alpha_coeffs and 3 beta_coeffs, got %d and %d", i, r.ID, len(r.Alpha), len(r.Beta))
		}
	}
	return &f, nil
}

// LoadDefaults reads a BLIS defaults.yaml file.
func LoadDefaults(path string) (*DefaultsFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("defaults file: %w", err)
	}
	f, err := ParseDefaults(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}
