// Package trace records a run's control-plane decisions and pathologies with bounded memory,
// and turns them into a short text summary for people and LLM-driven optimizers.
//
// A Recorder is fed by the simulator at its decision points (admission, priority and routing,
// wait-queue scheduling, preemption, batch formation) and when a request leaves. It keeps:
//
//   - Anomaly counters (O(1) memory): priority inversions, head-of-line blocking events,
//     admission decisions by action, preemptions, per-instance routed requests (one counter per
//     instance) for the load imbalance.
//   - With level decisions or full: a reservoir sample of at most Config.Samples finished
//     routing records (Algorithm R drawing from the run's "trace" random stream), a heap of the
//     Config.Worst records with the worst outcome relative to the request's class target, the
//     first Config.Examples rejections and the last Config.Ring preemptions.
//   - With level full: additionally the last Config.Ring batch formations.
//   - While a request is in flight, one fixed-size pending record per request slot (the
//     simulator's slab index), so memory follows the requests in flight, never the workload.
//
// Nothing here reads the clock, iterates a map or allocates per decision once warm.
package trace

import (
	"fmt"
	"math/rand/v2"

	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

// Level is how much of a run is recorded.
type Level uint8

// The trace levels.
const (
	// LevelNone keeps the anomaly counters only.
	LevelNone Level = iota
	// LevelDecisions also keeps sampled and worst decision records with their outcomes.
	LevelDecisions
	// LevelFull also keeps the most recent batch formations.
	LevelFull
)

// String returns the level's name as written in an Evaluation.
func (l Level) String() string {
	switch l {
	case LevelDecisions:
		return "decisions"
	case LevelFull:
		return "full"
	}
	return "none"
}

// MarshalText writes the level's name (in JSON trace output).
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// ParseLevel reads a level name: none (or empty), decisions or full.
func ParseLevel(s string) (Level, error) {
	switch s {
	case "", "none":
		return LevelNone, nil
	case "decisions":
		return LevelDecisions, nil
	case "full":
		return LevelFull, nil
	}
	return LevelNone, fmt.Errorf("unknown trace level %q; valid: none, decisions, full", s)
}

// Default caps of a Config.
const (
	DefaultSamples  = 256
	DefaultWorst    = 16
	DefaultRing     = 64
	DefaultExamples = 8
	// Alternatives is the number of best-scored alternatives kept per routing record.
	Alternatives = 3
	// maxReasons bounds the distinct admission reasons counted; later ones count as "other".
	maxReasons = 16
)

// Config sets what a Recorder keeps. Zero caps take the defaults.
type Config struct {
	// Level is none, decisions or full.
	Level Level
	// Samples caps the reservoir of routing records; Worst the worst-outcome heap; Ring the
	// preemption and batch rings; Examples the rejection examples.
	Samples, Worst, Ring, Examples int
	// ClassPriority is each SLO class's importance (higher = more important), indexed by class;
	// priority inversions compare it. Classes beyond its end count as 0.
	ClassPriority []int32
	// TTFTTargets are the classes' TTFT targets in µs (0 = none), indexed by class; the worst
	// decisions are ranked by TTFT relative to them.
	TTFTTargets []int64
	// Instances is the number of instances.
	Instances int
}

// Action is an admission decision.
type Action uint8

// Admission actions.
const (
	Admitted Action = iota
	Rejected
	Delayed
)

// String names the action.
func (a Action) String() string {
	switch a {
	case Admitted:
		return "admitted"
	case Rejected:
		return "rejected"
	case Delayed:
		return "delayed"
	}
	return "unknown"
}

// MarshalText writes the action's name (in JSON trace output).
func (a Action) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// Outcome is how a traced request ended.
type Outcome uint8

// Request outcomes as traced.
const (
	OutcomeCompleted Outcome = iota
	OutcomeTimedOut
	OutcomeDropped
	OutcomeRejected
	OutcomeUnfinished
)

var outcomeNames = [...]string{"completed", "timed out", "dropped", "rejected", "unfinished"}

// String names the outcome.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// MarshalText writes the outcome's name (in JSON trace output).
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// ReplicaView is what the router saw of one instance when it decided, and what the request
// would have found in that instance's prefix cache.
type ReplicaView struct {
	// Instance is the instance index.
	Instance int32
	// Score is the routing score (0 for policies that do not score).
	Score float64
	// QueueDepth, BatchSize and InFlight are the snapshot's load fields.
	QueueDepth, BatchSize, InFlight int32
	// KVUtilization is the snapshot's KV utilization.
	KVUtilization float64
	// PrefixBlocks is the number of the request's leading prompt blocks cached there at the
	// decision (-1 when not measured).
	PrefixBlocks int32
}

// RoutingRecord is one request's priority and routing decision with its outcome.
type RoutingRecord struct {
	// Time is the decision time (µs); ID the request.
	Time int64
	ID   uint64
	// Class and Tenant index the workload's name tables.
	Class, Tenant int32
	// InputTokens is the prompt length; PromptBlocks its full blocks at the router's block
	// size (0 when no policy hashes prompts).
	InputTokens, PromptBlocks int32
	// Priority is the priority stage's score.
	Priority float64
	// Reason is the routing policy's reason.
	Reason string
	// Live says the replica views are the instances' live state, because the policies read no
	// snapshots (round-robin, for example); otherwise they are what the router saw.
	Live bool
	// Chosen is the instance the request went to, as the router saw it.
	Chosen ReplicaView
	// Alternatives are the best-scored other instances (at most Alternatives; by score, or by
	// lowest in-flight load for policies without scores), NumAlternatives of them set.
	Alternatives    [Alternatives]ReplicaView
	NumAlternatives int32
	// ScoreRegret is the best alternative's score minus the chosen score when positive (exact:
	// both are the policy's own scores at the decision).
	ScoreRegret float64
	// PrefixRegret is the most prompt blocks an alternative had cached minus the chosen
	// instance's, when positive (exact at the decision time; what it would have saved in TTFT
	// is not simulated).
	PrefixRegret int32
	// Outcome, TTFT, E2E (µs), CachedTokens (the prompt tokens found in the chosen instance's
	// prefix cache at admission into the batch) and Preemptions are filled in when the
	// request leaves.
	Outcome      Outcome
	TTFT, E2E    int64
	CachedTokens int32
	Preemptions  int32
	// Severity is TTFT over the class's TTFT target (or, without a target, TTFT in ms / 1000);
	// requests without a first token use their time in the system.
	Severity float64
}

// AdmissionRecord is one admission decision.
type AdmissionRecord struct {
	// Time (µs), request ID, class and tenant.
	Time          int64
	ID            uint64
	Class, Tenant int32
	// Action and the policy's reason.
	Action Action
	Reason string
}

// PreemptionRecord is one preemption.
type PreemptionRecord struct {
	// Time (µs), instance and the preempted request.
	Time     int64
	Instance int32
	ID       uint64
	Class    int32
}

// BatchRecord is one batch formation (level full).
type BatchRecord struct {
	// Time (µs) the step started and the instance.
	Time     int64
	Instance int32
	// Running is the batch size; Waiting the live wait queue after formation.
	Running, Waiting int32
	// PrefillTokens and DecodeRequests are the step's work.
	PrefillTokens  int64
	DecodeRequests int32
	// Preempted says whether the step preempted.
	Preempted bool
}

// ReasonCount counts one admission reason.
type ReasonCount struct {
	// Reason is the policy's reason ("other" once maxReasons distinct ones were seen).
	Reason string
	// Rejected and Delayed count decisions with that reason.
	Rejected, Delayed int64
}

// Anomalies are the run's pathology counters.
type Anomalies struct {
	// PriorityInversions counts admissions into a running batch of a request while a request of
	// a more important SLO class waited in the same instance's queue.
	PriorityInversions int64
	// HOLBlockingEvents counts head-of-line blocking episodes: a request at the head of an
	// instance's wait queue could not get its KV blocks while at least one other request waited
	// behind it. Consecutive steps blocked by the same head count once.
	HOLBlockingEvents int64
	// Admitted and Rejected count requests by final admission decision; Delayed counts DELAY
	// answers (a delayed request asks again).
	Admitted, Rejected, Delayed int64
	// Scheduled counts admissions from wait queues into running batches (a preempted request
	// counts again when it returns).
	Scheduled int64
	// Preemptions counts preemptions.
	Preemptions int64
	// Routed counts routing decisions; RoutedTo the requests routed to each instance.
	Routed   int64
	RoutedTo []int64
	// InversionsAt and HOLAt split PriorityInversions and HOLBlockingEvents by instance.
	InversionsAt, HOLAt []int64
	// ScoreRegretDecisions and PrefixRegretDecisions count routing decisions (at level
	// decisions or full) with a positive score or prefix regret.
	ScoreRegretDecisions, PrefixRegretDecisions int64
	// Reasons count rejections and delays by reason, in first-seen order.
	Reasons []ReasonCount
	// Steps counts engine steps of every instance; KVUtilizationSum sums the fraction of the
	// stepping instance's KV blocks in use after each step's batch formation.
	Steps            int64
	KVUtilizationSum float64
	// ScaleOscillations counts autoscaler actions that reversed the previous action's
	// direction within the oscillation window (autoscaled runs; set by the simulator).
	ScaleOscillations int64
	// KVThrashingEvents counts CPU-tier reloads of blocks that had moved between the tiers
	// within the thrashing window (runs with a CPU KV tier; set by the simulator).
	KVThrashingEvents int64
}

// KVMeanUtilization is the mean KV utilization over engine steps (0 without steps): a per-step
// average, so idle time does not count.
func (a *Anomalies) KVMeanUtilization() float64 {
	if a.Steps == 0 {
		return 0
	}
	return a.KVUtilizationSum / float64(a.Steps)
}

// LoadImbalance is the most routed requests of one instance over the mean per instance (1 =
// perfectly even; 0 when nothing was routed).
func (a *Anomalies) LoadImbalance() float64 {
	if a.Routed == 0 || len(a.RoutedTo) == 0 {
		return 0
	}
	var top int64
	for _, n := range a.RoutedTo {
		top = max(top, n)
	}
	return float64(top) * float64(len(a.RoutedTo)) / float64(a.Routed)
}

// RejectionRate is rejections over first admission decisions (requests), 0 without decisions.
func (a *Anomalies) RejectionRate() float64 {
	if n := a.Admitted + a.Rejected; n > 0 {
		return float64(a.Rejected) / float64(n)
	}
	return 0
}

// Trace is what a Recorder kept.
type Trace struct {
	// Level is the level the run recorded at.
	Level Level
	// Anomalies are the counters.
	Anomalies Anomalies
	// Samples is the reservoir of finished routing records, in request ID order.
	Samples []RoutingRecord
	// Worst are the worst-outcome routing records, worst first.
	Worst []RoutingRecord
	// SampledFrom counts the finished routing records the reservoir drew from.
	SampledFrom int64
	// Rejections are the first rejections.
	Rejections []AdmissionRecord
	// Preemptions are the most recent preemptions, oldest first.
	Preemptions []PreemptionRecord
	// Batches are the most recent batch formations, oldest first (level full).
	Batches []BatchRecord
}

// pending is the record of a request in flight, by slot.
type pending struct {
	rec   RoutingRecord
	live  bool
	sched bool
}

// Recorder collects a run's trace. It is fed by one simulation and is not safe for concurrent
// use.
type Recorder struct {
	cfg Config
	rng *rand.Rand
	an  Anomalies

	// waiting[inst*classes+class] counts live waiting requests by class.
	waiting []int32
	classes int
	// holHead is, per instance, 1 + the ID of the last head found blocked (0 = none).
	holHead []uint64

	pend    []pending
	samples []RoutingRecord
	seen    int64
	worst   []RoutingRecord // min-heap by (Severity, -ID): the root is the least bad kept

	rejections []AdmissionRecord
	preempt    ring[PreemptionRecord]
	batches    ring[BatchRecord]
}

// NewRecorder returns a recorder for a run with cfg; rng is the run's "trace" stream (used
// only for sampling at level decisions or full).
func NewRecorder(cfg Config, rng *rand.Rand) *Recorder {
	if cfg.Samples <= 0 {
		cfg.Samples = DefaultSamples
	}
	if cfg.Worst <= 0 {
		cfg.Worst = DefaultWorst
	}
	if cfg.Ring <= 0 {
		cfg.Ring = DefaultRing
	}
	if cfg.Examples <= 0 {
		cfg.Examples = DefaultExamples
	}
	r := &Recorder{cfg: cfg, rng: rng, classes: max(len(cfg.ClassPriority), 1)}
	r.an.RoutedTo = make([]int64, cfg.Instances)
	r.an.InversionsAt = make([]int64, cfg.Instances)
	r.an.HOLAt = make([]int64, cfg.Instances)
	r.waiting = make([]int32, cfg.Instances*r.classes)
	r.holHead = make([]uint64, cfg.Instances)
	r.preempt.init(cfg.Ring)
	if cfg.Level >= LevelFull {
		r.batches.init(cfg.Ring)
	}
	return r
}

// Level returns the recording level.
func (r *Recorder) Level() Level { return r.cfg.Level }

// Decisions reports whether decision records are kept (level decisions or full).
func (r *Recorder) Decisions() bool { return r.cfg.Level >= LevelDecisions }

func (r *Recorder) classIndex(class int32) int {
	if class < 0 || int(class) >= r.classes {
		return -1
	}
	return int(class)
}

func (r *Recorder) prio(class int) int32 {
	if class >= 0 && class < len(r.cfg.ClassPriority) {
		return r.cfg.ClassPriority[class]
	}
	return 0
}

// Admission records an admission decision.
func (r *Recorder) Admission(now int64, id uint64, class, tenant int32, a Action, reason string) {
	switch a {
	case Admitted:
		r.an.Admitted++
		return
	case Rejected:
		r.an.Rejected++
	default:
		r.an.Delayed++
	}
	r.countReason(a, reason)
	if a == Rejected && r.Decisions() && len(r.rejections) < r.cfg.Examples {
		r.rejections = append(r.rejections, AdmissionRecord{Time: now, ID: id, Class: class, Tenant: tenant, Action: a, Reason: reason})
	}
}

func (r *Recorder) countReason(a Action, reason string) {
	i := 0
	for ; i < len(r.an.Reasons); i++ {
		if r.an.Reasons[i].Reason == reason {
			break
		}
	}
	if i == len(r.an.Reasons) {
		if i >= maxReasons {
			reason = "other"
			for i = 0; i < len(r.an.Reasons) && r.an.Reasons[i].Reason != reason; i++ {
			}
		}
		if i == len(r.an.Reasons) {
			r.an.Reasons = append(r.an.Reasons, ReasonCount{Reason: reason})
		}
	}
	if a == Rejected {
		r.an.Reasons[i].Rejected++
	} else {
		r.an.Reasons[i].Delayed++
	}
}

// RoutingInput is a routing decision as the simulator hands it over.
type RoutingInput struct {
	// Slot is the request's slot; the outcome is reported with the same slot.
	Slot int32
	// Time, request ID, class, tenant and prompt length.
	Time          int64
	ID            uint64
	Class, Tenant int32
	InputTokens   int32
	// PromptBlocks is the prompt's full blocks at the router's block size (0 = unknown).
	PromptBlocks int32
	// Priority is the priority score; Target, Reason, Scores and Candidates the routing
	// decision; Snaps the snapshots the router read (nil when it read none).
	Priority   float64
	Target     int32
	Reason     string
	Scores     []float64
	Candidates []policy.CandidateScore
	Snaps      []policy.InstanceSnapshot
	// Live says Snaps are the instances' live state at the decision, not snapshots the
	// policies read (they read none).
	Live bool
	// Prefix, when not nil, returns the request's cached leading prompt blocks on an instance
	// (measured only for the chosen instance and the kept alternatives).
	Prefix func(inst int32) int32
}

// Routing records a routing decision.
func (r *Recorder) Routing(in *RoutingInput) {
	r.an.Routed++
	if int(in.Target) < len(r.an.RoutedTo) && in.Target >= 0 {
		r.an.RoutedTo[in.Target]++
	}
	if !r.Decisions() {
		return
	}
	for int(in.Slot) >= len(r.pend) {
		r.pend = append(r.pend, pending{})
	}
	p := &r.pend[in.Slot]
	*p = pending{live: true}
	rec := &p.rec
	rec.Time, rec.ID, rec.Class, rec.Tenant = in.Time, in.ID, in.Class, in.Tenant
	rec.InputTokens, rec.PromptBlocks, rec.Priority, rec.Reason, rec.Live = in.InputTokens, in.PromptBlocks, in.Priority, in.Reason, in.Live
	rec.Chosen = view(in, in.Target)
	// Alternatives: the best scores other than the target, or the least loaded.
	for k := range Alternatives {
		best := int32(-1)
		for i := range int32(len(r.an.RoutedTo)) {
			if i == in.Target || taken(rec, k, i) {
				continue
			}
			if best < 0 || better(in, i, best) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		rec.Alternatives[k] = view(in, best)
		rec.NumAlternatives++
	}
	if in.Prefix != nil {
		rec.Chosen.PrefixBlocks = in.Prefix(in.Target)
		for k := range rec.NumAlternatives {
			a := &rec.Alternatives[k]
			a.PrefixBlocks = in.Prefix(a.Instance)
			rec.PrefixRegret = max(rec.PrefixRegret, a.PrefixBlocks-rec.Chosen.PrefixBlocks)
		}
	}
	if in.Scores != nil && rec.NumAlternatives > 0 {
		rec.ScoreRegret = max(0, rec.Alternatives[0].Score-rec.Chosen.Score)
	}
	if rec.ScoreRegret > 0 {
		r.an.ScoreRegretDecisions++
	}
	if rec.PrefixRegret > 0 {
		r.an.PrefixRegretDecisions++
	}
}

func taken(rec *RoutingRecord, k int, i int32) bool {
	for j := range k {
		if rec.Alternatives[j].Instance == i {
			return true
		}
	}
	return false
}

// better reports whether instance a is a better alternative than b: a higher score, else
// (no scores) a lower in-flight load, ties to the lower index.
func better(in *RoutingInput, a, b int32) bool {
	if in.Scores != nil && int(max(a, b)) < len(in.Scores) {
		return in.Scores[a] > in.Scores[b]
	}
	if int(max(a, b)) < len(in.Snaps) {
		return in.Snaps[a].InFlightRequests < in.Snaps[b].InFlightRequests
	}
	return false
}

func view(in *RoutingInput, i int32) ReplicaView {
	v := ReplicaView{Instance: i, PrefixBlocks: -1}
	if int(i) < len(in.Scores) {
		v.Score = in.Scores[i]
	}
	if int(i) < len(in.Snaps) {
		s := &in.Snaps[i]
		v.QueueDepth, v.BatchSize, v.InFlight, v.KVUtilization = s.QueueDepth, s.BatchSize, s.InFlightRequests, s.KVUtilization
	}
	return v
}

// Queued records a request of class entering instance inst's wait queue (also after a
// preemption).
func (r *Recorder) Queued(inst, class int32) {
	if c := r.classIndex(class); c >= 0 {
		r.waiting[int(inst)*r.classes+c]++
	}
}

// LeftQueue records a waiting request leaving the queue without being scheduled (timeout).
func (r *Recorder) LeftQueue(inst, class int32) {
	if c := r.classIndex(class); c >= 0 {
		r.waiting[int(inst)*r.classes+c]--
	}
}

// Scheduled records a waiting request of class admitted into instance inst's running batch
// with cached of its prompt tokens found in the prefix cache, and counts a priority inversion
// when a request of a more important class is still waiting there.
func (r *Recorder) Scheduled(inst, slot, class int32, cached int32) {
	r.an.Scheduled++
	c := r.classIndex(class)
	base := int(inst) * r.classes
	if c >= 0 {
		r.waiting[base+c]--
	}
	p := r.prio(c)
	for k := range r.classes {
		if r.waiting[base+k] > 0 && r.prio(k) > p {
			r.an.PriorityInversions++
			r.an.InversionsAt[inst]++
			break
		}
	}
	if int(slot) < len(r.pend) {
		if pd := &r.pend[slot]; pd.live && !pd.sched {
			pd.sched = true
			pd.rec.CachedTokens = cached
		}
	}
}

// HOLBlocked records a step of instance inst whose admission stopped at the head request id
// that could not get its KV blocks; waiting is the live queue length including the head. An
// episode is counted when the head differs from the last blocked head of the instance.
func (r *Recorder) HOLBlocked(inst int32, id uint64, waiting int32) {
	if waiting <= 1 || inst < 0 || int(inst) >= len(r.holHead) {
		return
	}
	if h := &r.holHead[inst]; *h != id+1 {
		*h = id + 1
		r.an.HOLBlockingEvents++
		r.an.HOLAt[inst]++
	}
}

// Preempted records a preemption.
func (r *Recorder) Preempted(now int64, inst int32, id uint64, class int32) {
	r.an.Preemptions++
	if r.Decisions() {
		r.preempt.put(PreemptionRecord{Time: now, Instance: inst, ID: id, Class: class})
	}
}

// Step records an engine step's KV utilization after batch formation.
func (r *Recorder) Step(kvUtilization float64) {
	r.an.Steps++
	r.an.KVUtilizationSum += kvUtilization
}

// Batch records a batch formation (kept at level full).
func (r *Recorder) Batch(b BatchRecord) {
	if r.cfg.Level >= LevelFull {
		r.batches.put(b)
	}
}

// Finished records how the request in slot ended: its outcome, TTFT (0 = no first token), E2E
// and time in the system (µs) and preemptions.
func (r *Recorder) Finished(slot int32, out Outcome, ttft, e2e, inSystem int64, preemptions int32) {
	if int(slot) >= len(r.pend) || !r.pend[slot].live {
		return
	}
	p := &r.pend[slot]
	p.live = false
	rec := p.rec
	rec.Outcome, rec.TTFT, rec.E2E, rec.Preemptions = out, ttft, e2e, preemptions
	lat := ttft
	if lat <= 0 || out != OutcomeCompleted {
		lat = max(lat, inSystem)
	}
	var target int64
	if c := r.classIndex(rec.Class); c >= 0 && c < len(r.cfg.TTFTTargets) {
		target = r.cfg.TTFTTargets[c]
	}
	if target > 0 {
		rec.Severity = float64(lat) / float64(target)
	} else {
		rec.Severity = float64(lat) / 1e6
	}
	r.sample(&rec)
	r.pushWorst(&rec)
}

// sample is Algorithm R over finished records.
func (r *Recorder) sample(rec *RoutingRecord) {
	r.seen++
	if len(r.samples) < r.cfg.Samples {
		r.samples = append(r.samples, *rec)
		return
	}
	if j := r.rng.Int64N(r.seen); j < int64(r.cfg.Samples) {
		r.samples[j] = *rec
	}
}

// less orders the worst heap: a is less bad than b.
func less(a, b *RoutingRecord) bool {
	if a.Severity != b.Severity {
		return a.Severity < b.Severity
	}
	return a.ID > b.ID
}

func (r *Recorder) pushWorst(rec *RoutingRecord) {
	h := r.worst
	if len(h) < r.cfg.Worst {
		h = append(h, *rec)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if !less(&h[i], &h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		r.worst = h
		return
	}
	if !less(&h[0], rec) {
		return
	}
	h[0] = *rec
	for i := 0; ; {
		m, a, b := i, 2*i+1, 2*i+2
		if a < len(h) && less(&h[a], &h[m]) {
			m = a
		}
		if b < len(h) && less(&h[b], &h[m]) {
			m = b
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// Trace returns what was kept: the sample sorted by request ID, the worst records worst
// first, the rings oldest first. Requests still in flight are added as unfinished with
// their time in the system up to end.
func (r *Recorder) Trace(end int64) *Trace {
	for slot := range r.pend {
		if p := &r.pend[slot]; p.live {
			r.Finished(int32(slot), OutcomeUnfinished, 0, 0, end-p.rec.Time, 0)
		}
	}
	t := &Trace{Level: r.cfg.Level, Anomalies: r.an, SampledFrom: r.seen,
		Rejections: r.rejections, Preemptions: r.preempt.items(), Batches: r.batches.items()}
	t.Samples = append([]RoutingRecord(nil), r.samples...)
	sortRecords(t.Samples, func(a, b *RoutingRecord) bool { return a.ID < b.ID })
	t.Worst = append([]RoutingRecord(nil), r.worst...)
	sortRecords(t.Worst, func(a, b *RoutingRecord) bool { return less(b, a) })
	return t
}

// sortRecords is an insertion sort (the slices are small and bounded).
func sortRecords(xs []RoutingRecord, lessFn func(a, b *RoutingRecord) bool) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && lessFn(&xs[j], &xs[j-1]); j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}

// ring keeps the last n items.
type ring[T any] struct {
	buf  []T
	next int
}

func (g *ring[T]) init(n int) { g.buf = make([]T, 0, n) }

func (g *ring[T]) put(x T) {
	if cap(g.buf) == 0 {
		return
	}
	if len(g.buf) < cap(g.buf) {
		g.buf = append(g.buf, x)
		return
	}
	g.buf[g.next] = x
	g.next = (g.next + 1) % len(g.buf)
}

func (g *ring[T]) items() []T {
	if len(g.buf) == 0 {
		return nil
	}
	out := make([]T, 0, len(g.buf))
	out = append(out, g.buf[g.next:]...)
	return append(out, g.buf[:g.next]...)
}
