// Package workload generates the requests a simulation serves: arrival times, token counts,
// the content of prompts (for prefix caching), tenants, SLO classes and sessions.
//
// Generation is streaming. A Source yields requests one at a time in arrival order, so a
// workload of millions of requests never exists in memory at once. Closed-loop workloads
// (multi-turn sessions, agentic programs, concurrency-limited clients) also implement Reactive:
// the simulator reports every finished request and the source may inject follow-ups.
package workload

import "math"

// Segment is a run of prompt tokens with a known content identity. Two segments with the same
// Key and Offset hold the same tokens, so prompts built from shared segments (a system prompt,
// an earlier turn of a conversation, a Mooncake hash block) share KV-cache blocks. Token IDs are
// never materialized: a block's prefix hash is computed from the (Key, Offset, Length) runs that
// cover it.
type Segment struct {
	// Key names the content. Keys of unique (unshared) content are drawn at random.
	Key uint64
	// Offset is the position of this run's first token within the content named by Key.
	Offset int32
	// Length is the number of tokens in the run, > 0.
	Length int32
}

// Request is one inference request as the workload produces it.
type Request struct {
	// ID is unique within a run and increases with generation order.
	ID uint64
	// Arrival is the arrival time at the cluster in microseconds.
	Arrival int64
	// InputLen is the prompt length in tokens, > 0. It equals the sum of Segments' lengths
	// when Segments is not empty; an empty Segments means entirely unique content.
	InputLen int32
	// OutputLen is the number of tokens to generate (the request's max tokens), >= 0.
	OutputLen int32
	// Segments describe the prompt's content, in order.
	Segments []Segment
	// Client, Tenant and Class index the workload's Clients, Tenants and SLOClasses tables.
	Client, Tenant, Class int32
	// Session identifies a multi-turn or agentic session (0 = none); Round is the turn or step
	// index within it.
	Session uint64
	Round   int32
	// Step names the agentic workflow step this request executes ("" outside agentic
	// sessions) and Iteration is the loop iteration of that step (0 outside loops).
	Step      string
	Iteration int32
	// Timeout is the request's deadline relative to arrival in microseconds (0 = engine
	// default, NoTimeout = none).
	Timeout int64
	// Attrs are the sending client's per-request attributes (model, adapter, streaming,
	// network, SLO target); the zero value is BLIS's default for a client that sets none.
	Attrs
}

// Attrs are the attributes a workload client gives each of its requests. They do not change
// generation: the simulator and the metrics read them. Kept as one small value so that a
// source copies them with one assignment and the simulator's per-step state does not carry
// them.
type Attrs struct {
	// Model and Adapter index Tables.Models and Tables.Adapters; 0 is "" (the cluster's
	// served model, no LoRA adapter).
	Model, Adapter int32
	// Streaming marks a streaming client: llm-d's in-flight accounting releases the prompt
	// tokens at the first output token.
	Streaming bool
	// RTT is the client's network round-trip time in µs and BandwidthMbps its link bandwidth
	// (0 = not modelled); see NetworkDelays.
	RTT           int64
	BandwidthMbps float64
	// SLOTarget is the request's own TTFT target in µs (0 = none), BLIS's slo_target_us.
	SLOTarget int64
}

// NetworkDelays returns the client-side network time BLIS adds to a request's server-side
// latencies (upstream sim/workload/network.go, ComputeClientTTFT and ComputeClientE2E): TTFT
// gains the round trip plus the upload of the prompt, E2E additionally the download of the
// output, each token being 4 bytes on the wire at BandwidthMbps. Values are rounded to whole
// µs, the engine's clock unit. Both are 0 for a client without a network.
func (a *Attrs) NetworkDelays(inputTokens, outputTokens int32) (ttft, e2e int64) {
	if a.RTT == 0 && a.BandwidthMbps == 0 {
		return 0, 0
	}
	up, down := a.transfer(inputTokens), a.transfer(outputTokens)
	return a.RTT + up, a.RTT + up + down
}

// transfer is the time in µs to send tokens (4 bytes each) at the client's bandwidth.
func (a *Attrs) transfer(tokens int32) int64 {
	if a.BandwidthMbps <= 0 || tokens <= 0 {
		return 0
	}
	// bits / (Mbit/s) = µs.
	return int64(math.Round(float64(tokens) * 32 / a.BandwidthMbps))
}

// NoTimeout as a Request's Timeout means the request never times out (BLIS `timeout: 0`).
const NoTimeout int64 = -1

// Tables holds the names the request indices refer to. Index 0 of each table is the default
// ("default" client, "" tenant, "standard" class) so a zero Request is valid.
type Tables struct {
	Clients    []string
	Tenants    []string
	SLOClasses []string
	// Models and Adapters name the request's Attrs.Model and Attrs.Adapter; both are nil
	// until some client names a model or an adapter, and then hold "" at index 0.
	Models   []string
	Adapters []string
}

// Source yields requests in non-decreasing arrival order.
type Source interface {
	// Next fills r with the next request and reports whether there was one. The Segments slice
	// of r may be reused by the source on the next call; the simulator copies what it keeps.
	Next(r *Request) bool
	// Tables returns the name tables of this workload.
	Tables() *Tables
}

// Outcome says how a request left the simulation.
type Outcome int8

// Request outcomes reported to Reactive sources.
const (
	Completed Outcome = iota
	Rejected          // refused by admission
	Dropped           // unservable (too long for the model or the KV cache)
	TimedOut
)

// Reactive sources inject requests in response to finished ones (think time, the next turn of
// a session, the next step of an agentic program, a closed-loop client's next request).
type Reactive interface {
	// Finished reports that request id left the simulation at time now with the given outcome
	// and output length actually generated. The source may call inject any number of times
	// with requests whose Arrival is >= now; inject copies the request.
	Finished(id uint64, outcome Outcome, outputTokens int32, now int64, inject func(*Request))
}
