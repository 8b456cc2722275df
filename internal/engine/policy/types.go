package policy

// Kind names the stage of the control plane a policy belongs to.
type Kind string

// Policy kinds. Admission, priority and routing run in the router at arrival; the scheduler
// and preemption policies run inside each instance.
const (
	KindAdmission  Kind = "admission"
	KindPriority   Kind = "priority"
	KindRouting    Kind = "routing"
	KindScheduler  Kind = "scheduler"
	KindPreemption Kind = "preemption"
)

// RequestView is the read-only view of a request that router policies observe. The simulator
// fills one per request from its own request record; policies never see simulator internals.
type RequestView struct {
	// ID is the request's unique id within the run.
	ID uint64
	// Arrival is the cluster arrival time in microseconds.
	Arrival int64
	// InputTokens is the prompt length; MaxTokens the requested output bound (max_tokens).
	InputTokens, MaxTokens int32
	// Tenant and Class index the workload's tenant and SLO-class tables (index 0 is the
	// default entry); TenantName and ClassName are the names at those indices.
	Tenant, Class         int32
	TenantName, ClassName string
	// Session identifies a multi-turn session (0 = none).
	Session uint64
	// PrefixHashes are the chained hashes of the prompt's full blocks of PrefixBlockSize()
	// tokens, in prompt order. The pipeline only reads them and never keeps the slice.
	PrefixHashes []uint64
	// Streaming says whether the client streams the response (in-flight token accounting
	// releases the prompt tokens at the first output token for streaming requests).
	Streaming bool
	// Attempt counts the admission decisions that answered DELAY for this request so far.
	Attempt int32
	// Priority is the score the priority stage assigned (0 until it ran).
	Priority float64
}

// InstanceSnapshot is what the router knows about one instance at decision time. It is a plain
// value; a SnapshotProvider decides how fresh each field is.
type InstanceSnapshot struct {
	// Index is the instance's position in the cluster (the routing target id).
	Index int32
	// Timestamp is the clock time (µs) of the most recent refresh of any field.
	Timestamp int64
	// QueueDepth is the number of requests waiting in the instance's queue.
	QueueDepth int32
	// BatchSize is the number of requests in the running batch.
	BatchSize int32
	// KVUtilization is the fraction of GPU KV blocks in use, in [0, 1].
	KVUtilization float64
	// FreeKVBlocks is the number of free GPU KV blocks.
	FreeKVBlocks int64
	// InFlightRequests counts requests routed to the instance and not finished.
	InFlightRequests int32
	// CacheHitRate is the recent prefix-cache hit rate, in [0, 1].
	CacheHitRate float64
	// RecentTTFT and RecentTPOT are recent mean latencies in microseconds.
	RecentTTFT, RecentTPOT float64
	// EstimatedWait is the estimated queueing delay of a new request in microseconds.
	EstimatedWait float64
	// Extended carries optional signals (for example "CPUKVUtilization"); policies treat
	// missing keys as absent. It is never iterated by the pipeline.
	Extended map[string]float64
}

// EffectiveLoad is BLIS's load signal: QueueDepth + BatchSize + InFlightRequests. It is kept
// exactly as BLIS defines it (the terms overlap) so that BLIS policy files behave the same.
func (s *InstanceSnapshot) EffectiveLoad() int64 {
	return int64(s.QueueDepth) + int64(s.BatchSize) + int64(s.InFlightRequests)
}

// AdmissionAction is the verdict of an admission policy.
type AdmissionAction string

// Admission verdicts.
const (
	Admit  AdmissionAction = "admit"
	Reject AdmissionAction = "reject"
	Delay  AdmissionAction = "delay"
)

// AdmissionDecision is the result of the admission stage.
type AdmissionDecision struct {
	Action AdmissionAction
	// Delay is how long to hold the request before asking again (µs), when Action is Delay.
	Delay int64
	// Reason explains the decision for traces; built-in policies use constant strings.
	Reason string
}

// PriorityDecision is the result of the priority stage. Higher scores are more urgent.
type PriorityDecision struct {
	Score float64
	// Deadline is an absolute deadline in µs when the policy derives one (0 = none).
	Deadline int64
	// Hints carries optional scheduling hints; built-in policies leave it nil.
	Hints map[string]float64
}

// CandidateScore is one instance's score with its per-scorer breakdown.
type CandidateScore struct {
	Instance int32
	Score    float64
	// Breakdown holds the unweighted scorer values in the order of Pipeline.ScorerNames();
	// empty for policies without scorers.
	Breakdown []float64
}

// RoutingDecision is the result of the routing stage.
type RoutingDecision struct {
	// Target is the chosen instance index.
	Target int32
	// Reason names the policy (and picker) that decided.
	Reason string
	// Scores holds the final score of every instance, indexed by instance; nil for policies
	// that do not score. The slice is reused by the next routing decision.
	Scores []float64
	// Candidates are the best-scored instances, best first (at most TopK of the pipeline).
	// Reused by the next routing decision.
	Candidates []CandidateScore
	// Ticket must be kept with the request and handed back to FirstToken and Finished.
	Ticket Ticket
}

// Ticket records what the router charged to an instance when it dispatched a request, so the
// charge can be released exactly once. It is a small value the simulator stores per request.
type Ticket struct {
	// Instance is the target, or -1 for a request that was never dispatched.
	Instance int32
	// Tenant is the request's tenant index.
	Tenant int32
	// Tokens is the uncached prompt-token load charged to the instance.
	Tokens int64
	// TokensReleased and Released guard against double release.
	TokensReleased, Released bool
	// Cold says the request matched no cached prefix anywhere (for no-hit-lru).
	Cold bool
}

// AdmissionPolicy decides whether a request enters the cluster. Policies live for one run
// and may keep state; they must depend only on their inputs.
type AdmissionPolicy interface {
	Decide(req *RequestView, st *RouterState, snaps []InstanceSnapshot, now int64) AdmissionDecision
}

// PriorityPolicy scores the urgency of an admitted request.
type PriorityPolicy interface {
	Compute(req *RequestView, st *RouterState, snaps []InstanceSnapshot, now int64) PriorityDecision
}

// RoutingPolicy chooses the instance that serves a request. snaps is never empty and is
// indexed by instance. The returned decision's Ticket is filled by the pipeline.
type RoutingPolicy interface {
	Route(req *RequestView, st *RouterState, snaps []InstanceSnapshot, now int64) RoutingDecision
}
