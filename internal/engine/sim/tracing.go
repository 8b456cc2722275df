package sim

import (
	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/rng"
	"github.com/inference-sim/blis-operator/internal/engine/trace"
)

// TraceStream is the name of the random stream that samples decision records.
const TraceStream = "trace"

// tracer is the decision observer of a traced run: it hands every decision point to a
// trace.Recorder with the request's context read from the slab.
type tracer struct {
	s   *simulation
	rec *trace.Recorder
	in  trace.RoutingInput
	// live holds the instances' live state for decisions whose policies read no snapshots.
	live []policy.InstanceSnapshot
}

// newTracer builds the observer of a run with Options.Trace set; streams gives the "trace"
// random stream. The caller's configuration is copied, never modified.
func newTracer(s *simulation, streams *rng.Partitioned) *tracer {
	cfg := *s.cfg.Options.Trace
	cfg.Instances = len(s.insts)
	cfg.ClassPriority = make([]int32, len(s.classPrio))
	for i, p := range s.classPrio {
		cfg.ClassPriority[i] = -p
	}
	t := &tracer{s: s, rec: trace.NewRecorder(cfg, streams.Stream(TraceStream))}
	t.in.Prefix = t.prefix
	return t
}

func (t *tracer) admission(now int64, req *policy.RequestView, d *policy.AdmissionDecision) {
	a := trace.Rejected
	switch d.Action {
	case policy.Admit:
		a = trace.Admitted
	case policy.Delay:
		a = trace.Delayed
	}
	t.rec.Admission(now, req.ID, req.Class, req.Tenant, a, d.Reason)
}

func (t *tracer) routing(now int64, req *policy.RequestView, pd *policy.PriorityDecision, rd *policy.RoutingDecision, snaps []policy.InstanceSnapshot) {
	c := t.s.ctl
	in := &t.in
	in.Slot, in.Time, in.ID, in.Class, in.Tenant = c.cur, now, req.ID, req.Class, req.Tenant
	in.InputTokens, in.Priority = req.InputTokens, pd.Score
	in.Target, in.Reason, in.Scores, in.Candidates = rd.Target, rd.Reason, rd.Scores, rd.Candidates
	in.Snaps, in.Live = snaps, false
	if !c.prioSnaps && !c.routeSnaps && t.rec.Decisions() {
		// The policies saw no replica state; record the live state instead, marked as such.
		if t.live == nil {
			t.live = make([]policy.InstanceSnapshot, len(t.s.insts))
		}
		src := liveInstances(t.s.insts)
		for i := range t.live {
			src.Observe(i, now, &t.live[i])
		}
		in.Snaps, in.Live = t.live, true
	}
	in.PromptBlocks = 0
	if bs := t.s.insts[0].cfg.BlockSize; bs > 0 {
		in.PromptBlocks = req.InputTokens / bs
	}
	t.rec.Routing(in)
	c.preciseSlot = -1 // the prefix lookups above must not leak into the next decision
}

// prefix returns the routed request's cached leading blocks on instance i (a pure lookup).
func (t *tracer) prefix(i int32) int32 {
	m, _, _ := t.s.ctl.CachedPrefix(int(i), nil)
	return m
}

func (t *tracer) queued(inst, slot int32) {
	t.rec.Queued(inst, t.s.slab.reqs[slot].class)
}

func (t *tracer) leftQueue(inst, slot int32) {
	t.rec.LeftQueue(inst, t.s.slab.reqs[slot].class)
}

func (t *tracer) scheduled(inst, slot, cached int32) {
	t.rec.Scheduled(inst, slot, t.s.slab.reqs[slot].class, cached)
}

func (t *tracer) holBlocked(inst, slot int32, waiting int32) {
	t.rec.HOLBlocked(inst, t.s.slab.reqs[slot].id, waiting)
}

func (t *tracer) preempted(now int64, inst, slot int32, id uint64) {
	class := t.s.slab.reqs[slot].class
	t.rec.Queued(inst, class) // back at the front of the wait queue
	t.rec.Preempted(now, inst, id, class)
}

func (t *tracer) batch(in *instance, now int64, preempted bool) {
	t.rec.Step(in.kv.Utilization())
	if t.rec.Level() < trace.LevelFull {
		return
	}
	t.rec.Batch(trace.BatchRecord{
		Time: now, Instance: in.idx, Running: int32(len(in.running)), Waiting: in.waitQ.live,
		PrefillTokens: in.shape.PrefillTokens, DecodeRequests: int32(in.shape.DecodeRequests), Preempted: preempted,
	})
}

var traceOutcome = [...]trace.Outcome{
	OutcomeCompleted: trace.OutcomeCompleted,
	OutcomeTimedOut:  trace.OutcomeTimedOut,
	OutcomeDropped:   trace.OutcomeDropped,
	OutcomeQueued:    trace.OutcomeUnfinished,
	OutcomeRunning:   trace.OutcomeUnfinished,
	OutcomeUnrouted:  trace.OutcomeUnfinished,
	OutcomeRejected:  trace.OutcomeRejected,
}

func (t *tracer) finished(slot int32, rec *RequestRecord) {
	t.rec.Finished(slot, traceOutcome[rec.Outcome], rec.TTFT, rec.E2E, rec.Done-rec.Arrival, rec.Preemptions)
}
