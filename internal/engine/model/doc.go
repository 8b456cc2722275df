// Package model is the configuration catalog of the simulation engine: model architectures
// (Hugging Face config.json), GPU specifications, vLLM engine settings, the latency
// coefficients shipped with upstream BLIS, and the resolution of all of these into what one
// simulated vLLM instance needs (Resolve).
//
// The BLIS data files are embedded (see data/NOTICE.md); every one of them can be replaced
// by a path, as BLIS's --model-config-folder, --hardware-config and --defaults-filepath do.
// Nothing here is used on the simulation hot path: resolution happens once per instance.
package model
