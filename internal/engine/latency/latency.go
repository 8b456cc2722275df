// Package latency holds the step-time models of a simulated vLLM instance.
//
// A model turns the shape of one engine step (the prefill chunks and the decode requests the
// batch holds) into its duration, plus the fixed per-request overheads vLLM adds around steps.
// All models are linear in the per-request context sums they need, so a step is described by
// aggregates (StepShape) rather than by a list of requests: the simulator maintains those sums
// incrementally and a step costs O(prefill chunks), not O(batch).
package latency

// PrefillChunk is one request's prefill work in a step.
type PrefillChunk struct {
	// NewTokens is the number of prompt tokens computed in this step (the chunk), > 0.
	NewTokens int64
	// Context is the number of the request's tokens already in the KV cache before this step
	// (vLLM's progress index: cached prefix plus earlier chunks).
	Context int64
	// PromptLen is the request's full prompt length.
	PromptLen int64
}

// StepShape describes one engine step. Decode requests each compute exactly one token.
type StepShape struct {
	// Prefill lists the prefill chunks in the step, in batch order.
	Prefill []PrefillChunk
	// PrefillTokens is the sum of Prefill[i].NewTokens.
	PrefillTokens int64
	// DecodeRequests is the number of requests decoding one token in this step.
	DecodeRequests int64
	// DecodeContext is the sum over decode requests of their context before the step
	// (tokens already in the KV cache: prompt plus generated tokens so far).
	DecodeContext int64
}

// Requests returns the batch size of the step.
func (s *StepShape) Requests() int64 { return int64(len(s.Prefill)) + s.DecodeRequests }

// Model is a step-time model. Durations are in microseconds.
type Model interface {
	// Name identifies the model ("trained-physics", "roofline", "blackbox").
	Name() string
	// StepTime returns the duration of a step with the given shape; it is at least 1.
	StepTime(s *StepShape) int64
	// QueueingTime is the API-server delay between a request's arrival at an instance and its
	// entry into the wait queue; it blocks the request.
	QueueingTime(inputLen int64) int64
	// OutputTokenProcessingTime is added to TTFT and to every inter-token latency but not to
	// the engine clock.
	OutputTokenProcessingTime() int64
	// PostDecodeFixedOverhead is added to a request's E2E latency once, when it has output.
	PostDecodeFixedOverhead() int64
}
