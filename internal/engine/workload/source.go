package workload

import (
	"container/heap"
	"math"
	"math/rand/v2"

	"github.com/inference-sim/blis-operator/internal/engine/rng"
)

// phase is one activity window of a client: its rate, arrival process, rate profile and
// length distributions. A client without lifecycle windows has a single phase [0, +Inf).
type phase struct {
	start, end float64 // µs
	rate       float64 // base rate in requests (or sessions) per second
	proc       process
	prof       profile
	in, out    *sampler
}

// clientGen generates one client's open-loop arrivals lazily: next holds the arrival time of
// the client's next request, computed one step ahead so that clients can be merged by time.
type clientGen struct {
	name               string
	index              int32 // position in the merged source (tie-break)
	client, tenant, cl int32 // table indices
	rng                *rand.Rand
	fol                *rand.Rand // follow-ups: independent of how lazily the simulator pulls
	phases             []phase
	wi                 int
	started            bool
	t                  float64
	next               int64
	done               bool
	prefix             Segment // Length 0: none
	timeout            int64
	attrs              Attrs // copied into every request of the client

	mt      *multiTurn
	reason  *sampler  // reasoning ratio of output tokens (nil = none)
	single  *session  // the client's running conversation when mt.single
	mm      *mediaMix // multimodal prompt composition (nil = the phase's input distribution)
	conc    int       // closed-loop users (0 = open loop)
	think   int64     // closed-loop think time
	agentic *workflow
}

// advance computes the client's next arrival time, moving through its phases.
func (c *clientGen) advance(horizon int64) {
	for c.wi < len(c.phases) {
		ph := &c.phases[c.wi]
		if !c.started {
			c.t, c.started = ph.start, true
		}
		if ph.rate > 0 {
			u := ph.proc.gap(c.rng) * 1e6 / ph.rate
			t := ph.prof.advance(c.t, u, math.Min(ph.end, float64(horizon)))
			if t < ph.end && t <= float64(horizon) {
				c.t = t
				c.next = int64(math.Round(t))
				return
			}
		}
		c.wi++
		c.started = false
	}
	c.done = true
}

// fill writes an independent request of this client (prefix + fresh content) into r, drawing
// lengths from ph and randomness from rr.
func (c *clientGen) fill(r *Request, in, out *sampler, rr *rand.Rand) {
	r.Client, r.Tenant, r.Class = c.client, c.tenant, c.cl
	r.Timeout = c.timeout
	r.Attrs = c.attrs
	r.Session, r.Round, r.Step, r.Iteration = 0, 0, "", 0
	r.Segments = r.Segments[:0]
	n := c.inputTokens(in, rr)
	r.InputLen = n
	if c.prefix.Length > 0 {
		r.Segments = append(r.Segments, c.prefix)
		r.InputLen += c.prefix.Length
	}
	r.Segments = append(r.Segments, Segment{Key: rr.Uint64(), Length: n})
	r.OutputLen = out.tokens(rr)
}

// inputTokens samples the fresh prompt tokens of one request.
func (c *clientGen) inputTokens(in *sampler, rr *rand.Rand) int32 {
	if c.mm != nil {
		return c.mm.tokens(rr)
	}
	return in.tokens(rr)
}

// mediaMix composes a multimodal prompt: text plus count×size tokens per modality.
type mediaMix struct {
	text         *sampler
	size, counts []*sampler // per modality; a nil count means one item
}

func (m *mediaMix) tokens(rr *rand.Rand) int32 {
	n := int64(0)
	if m.text != nil {
		n += int64(m.text.tokens(rr))
	}
	for i, sz := range m.size {
		k := int64(1)
		if m.counts[i] != nil {
			// Bounded so that a heavy-tailed count cannot stall generation.
			k = int64(math.Min(4096, math.Max(0, math.Round(m.counts[i].float(rr)))))
		}
		for range k {
			n += int64(sz.tokens(rr))
		}
	}
	return int32(min(max(n, 1), maxTokens))
}

// clientHeap orders clients by (next arrival, index).
type clientHeap []*clientGen

func (h clientHeap) Len() int { return len(h) }
func (h clientHeap) Less(i, j int) bool {
	if h[i].next != h[j].next {
		return h[i].next < h[j].next
	}
	return h[i].index < h[j].index
}
func (h clientHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *clientHeap) Push(x any)   { *h = append(*h, x.(*clientGen)) }
func (h *clientHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return x
}

// pendingReq is a request generated ahead of its arrival (pre-scheduled turns, the first
// request of each closed-loop user). Its budget has already been taken.
type pendingReq struct {
	req  Request
	seq  uint64
	hook func(id uint64) // registers the request once it has an ID
}

type pendingHeap []*pendingReq

func (h pendingHeap) Len() int { return len(h) }
func (h pendingHeap) Less(i, j int) bool {
	if h[i].req.Arrival != h[j].req.Arrival {
		return h[i].req.Arrival < h[j].req.Arrival
	}
	return h[i].seq < h[j].seq
}
func (h pendingHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pendingHeap) Push(x any)   { *h = append(*h, x.(*pendingReq)) }
func (h *pendingHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return x
}

// genSource merges its clients' lazy arrival streams and pre-scheduled requests into one
// time-ordered stream, enforces the request budget and horizon, and dispatches finished
// requests to the sessions that are waiting on them.
type genSource struct {
	tables  Tables
	clients clientHeap
	pending pendingHeap
	pseq    uint64
	nextID  uint64
	left    int64 // requests that may still be issued (budget)
	horizon int64
	// waiting maps an in-flight request to the reaction its completion triggers. It is only
	// ever indexed, never iterated, so it cannot introduce nondeterminism.
	waiting  map[uint64]waiter
	sessions uint64
	stopped  bool
	reactive bool
	// agObserver, when set, sees every agentic step instance start and finish (tests).
	agObserver func(stepEvent)
	agStats    AgenticStats
}

// waiter reacts to the completion of one request.
type waiter interface {
	finished(s *genSource, id uint64, o Outcome, out int32, now int64, inject func(*Request))
}

// newGenSource builds a source over clients. numRequests <= 0 means unlimited and
// horizon <= 0 means none.
func newGenSource(t Tables, clients []*clientGen, numRequests, horizon int64) *genSource {
	s := &genSource{tables: t, left: math.MaxInt64, horizon: math.MaxInt64, waiting: map[uint64]waiter{}}
	if numRequests > 0 {
		s.left = numRequests
	}
	if horizon > 0 {
		s.horizon = horizon
	}
	for i, c := range clients {
		c.index = int32(i)
		if c.mt != nil || c.conc > 0 || c.agentic != nil {
			s.reactive = true
		}
		if c.conc > 0 {
			s.startUsers(c)
			continue
		}
		c.advance(s.horizon)
		if !c.done {
			s.clients = append(s.clients, c)
		}
	}
	heap.Init(&s.clients)
	return s
}

// Tables implements Source.
func (s *genSource) Tables() *Tables { return &s.tables }

// Next implements Source.
func (s *genSource) Next(r *Request) bool {
	for {
		var c *clientGen
		if len(s.clients) > 0 && !s.stopped {
			c = s.clients[0]
		}
		if len(s.pending) > 0 && (c == nil || s.pending[0].req.Arrival <= c.next) {
			p := heap.Pop(&s.pending).(*pendingReq)
			segs := r.Segments[:0]
			*r = p.req
			r.Segments = append(segs, p.req.Segments...)
			r.ID = s.newID()
			if p.hook != nil {
				p.hook(r.ID)
			}
			return true
		}
		if c == nil {
			return false
		}
		if s.left <= 0 {
			s.stopped = true
			continue
		}
		ok := s.emit(c, r)
		c.advance(s.horizon)
		if c.done {
			heap.Pop(&s.clients)
		} else {
			heap.Fix(&s.clients, 0)
		}
		if ok {
			return true
		}
	}
}

// emit generates client c's request arriving at c.next into r. It reports false when the
// request was not issued (budget exhausted for a session).
func (s *genSource) emit(c *clientGen, r *Request) bool {
	ph := &c.phases[c.wi]
	switch {
	case c.agentic != nil:
		return s.startAgentic(c, ph, r)
	case c.mt != nil:
		return s.startTurns(c, ph, r)
	}
	c.fill(r, ph.in, ph.out, c.rng)
	r.Arrival = c.next
	r.ID = s.newID()
	s.left--
	return true
}

func (s *genSource) newID() uint64 {
	s.nextID++
	return s.nextID
}

func (s *genSource) newSession() uint64 {
	s.sessions++
	return s.sessions
}

// schedule queues a request generated ahead of its arrival.
func (s *genSource) schedule(r *Request, hook func(id uint64)) {
	if r.Arrival > s.horizon {
		return
	}
	s.pseq++
	p := &pendingReq{req: *r, seq: s.pseq, hook: hook}
	p.req.Segments = append([]Segment(nil), r.Segments...)
	heap.Push(&s.pending, p)
}

// Finished implements Reactive.
func (s *genSource) Finished(id uint64, o Outcome, out int32, now int64, inject func(*Request)) {
	w, ok := s.waiting[id]
	if !ok {
		return
	}
	delete(s.waiting, id)
	w.finished(s, id, o, out, now, inject)
}

// injectNew assigns an ID to r, hands it to the simulator and registers w (if any) to react
// to its completion. It reports false if r would arrive after the horizon.
func (s *genSource) injectNew(r *Request, w waiter, inject func(*Request)) bool {
	if r.Arrival > s.horizon {
		return false
	}
	r.ID = s.newID()
	if w != nil {
		s.waiting[r.ID] = w
	}
	inject(r)
	return true
}

// user is one closed-loop user of a concurrency client: it sends a request, waits for it to
// finish, thinks, and sends the next.
type user struct {
	c   *clientGen
	buf Request
}

func (s *genSource) startUsers(c *clientGen) {
	ph := &c.phases[0]
	for i := 0; i < c.conc && s.left > 0; i++ {
		u := &user{c: c}
		c.fill(&u.buf, ph.in, ph.out, c.rng)
		u.buf.Arrival = int64(ph.start) + int64(i)*c.think/int64(c.conc)
		if u.buf.Arrival > s.horizon {
			break
		}
		s.left--
		s.schedule(&u.buf, func(id uint64) { s.waiting[id] = u })
	}
}

func (u *user) finished(s *genSource, _ uint64, _ Outcome, _ int32, now int64, inject func(*Request)) {
	if s.left <= 0 {
		return
	}
	ph := &u.c.phases[0]
	u.c.fill(&u.buf, ph.in, ph.out, u.c.fol)
	u.buf.Arrival = now + u.c.think
	if float64(u.buf.Arrival) >= ph.end {
		return
	}
	if s.injectNew(&u.buf, u, inject) {
		s.left--
	}
}

// clientStream returns the independent open-loop and follow-up streams of a client: adding,
// removing or reordering other clients never changes a client's draws.
func clientStream(seed int64, id string) (*rand.Rand, *rand.Rand) {
	return rng.Derive(seed, "workload/client/"+id), rng.Derive(seed, "workload/client/"+id+"/followup")
}

// openLoop hides Finished for sources without closed-loop clients, so the simulator need not
// report completions that nothing waits for.
type openLoop struct{ g *genSource }

func (o openLoop) Next(r *Request) bool { return o.g.Next(r) }
func (o openLoop) Tables() *Tables      { return o.g.Tables() }

// source returns s as a Source that implements Reactive only when some client needs it.
func (s *genSource) source() Source {
	if s.reactive {
		return s
	}
	return openLoop{s}
}
