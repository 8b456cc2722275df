// Package engine is the root of blis-operator's simulator: a deterministic, discrete-event model
// of many vLLM-like replicas behind an llm-d-like router.
//
// The engine is plain Go. It never imports Kubernetes packages, the API types or the controllers,
// so that the `blis` CLI and the operator feed it the same resolved input and get identical
// results. Subpackages are split by concern:
//
//   - rng: partitioned random streams, one per subsystem, derived from the master seed
//   - model: model architectures (Hugging Face config.json), GPUs, vLLM engine settings, KV sizing
//   - latency: step-time models (trained-physics, roofline, blackbox)
//   - workload: request generation (streaming), prefix content, sessions
//   - sim: the event core, instances (batching, KV cache, preemption) and the cluster
//
// Time is an int64 count of microseconds ("ticks") everywhere.
package engine
