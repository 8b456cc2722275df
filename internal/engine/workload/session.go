package workload

import (
	"math"
	"math/rand/v2"
)

// multiTurn configures a client's conversations (BLIS reasoning.multi_turn).
type multiTurn struct {
	maxRounds  int32 // rounds per session; 0 with single means unbounded
	think      int64 // µs between a round's completion (or arrival, open loop) and the next
	accumulate bool  // each round's prompt repeats all earlier prompts and answers
	closed     bool  // rounds wait for the previous round to finish (Reactive)
	single     bool  // every arrival of the client continues one conversation
}

// session is one running conversation.
type session struct {
	c     *clientGen
	id    uint64
	round int32
	left  int32     // rounds still allowed after the current one
	ctx   []Segment // prompt of the current round
	buf   Request
}

// contextOutput returns how many of a round's output tokens become context of the next round:
// reasoning tokens (the sampled reason ratio) are not carried forward.
func (c *clientGen) contextOutput(out int32, rr *rand.Rand) int32 {
	if c.reason == nil || out <= 0 {
		return max(out, 0)
	}
	ratio := math.Min(1, math.Max(0, c.reason.float(rr)))
	return int32(math.Round(float64(out) * (1 - ratio)))
}

// nextPrompt builds the prompt of the round after one whose prompt is ss.ctx and whose answer
// had out context tokens: the earlier context when accumulating, then fresh content of n tokens.
func (ss *session) nextPrompt(out, n int32, rr *rand.Rand) {
	c := ss.c
	if c.mt.accumulate {
		if out > 0 {
			ss.ctx = append(ss.ctx, Segment{Key: rr.Uint64(), Length: out})
		}
	} else {
		ss.ctx = ss.ctx[:0]
		if c.prefix.Length > 0 {
			ss.ctx = append(ss.ctx, c.prefix)
		}
	}
	ss.ctx = append(ss.ctx, Segment{Key: rr.Uint64(), Length: n})
}

// load writes the current round into r.
func (ss *session) load(r *Request, arrival int64, outLen int32) {
	c := ss.c
	r.Client, r.Tenant, r.Class, r.Timeout = c.client, c.tenant, c.cl, c.timeout
	r.Attrs = c.attrs
	r.Session, r.Round, r.Step, r.Iteration = ss.id, ss.round, "", 0
	r.Arrival = arrival
	r.Segments = append(r.Segments[:0], ss.ctx...)
	r.InputLen = 0
	for _, sg := range ss.ctx {
		r.InputLen += sg.Length
	}
	r.OutputLen = outLen
}

// startTurns emits the first round of a new session (or the next round of a single-session
// client's conversation) for client c's arrival.
func (s *genSource) startTurns(c *clientGen, ph *phase, r *Request) bool {
	mt := c.mt
	if mt.single {
		ss := c.single
		if ss == nil || (mt.maxRounds > 0 && ss.round+1 >= mt.maxRounds) {
			ss = &session{c: c, id: s.newSession(), round: -1}
			if c.prefix.Length > 0 {
				ss.ctx = append(ss.ctx, c.prefix)
			}
			ss.ctx = append(ss.ctx, Segment{Key: c.rng.Uint64(), Length: c.inputTokens(ph.in, c.rng)})
			c.single = ss
		} else {
			ss.nextPrompt(c.contextOutput(ss.buf.OutputLen, c.rng), c.inputTokens(ph.in, c.rng), c.rng)
		}
		ss.round++
		ss.buf.OutputLen = ph.out.tokens(c.rng)
		ss.load(r, c.next, ss.buf.OutputLen)
		r.ID = s.newID()
		s.left--
		return true
	}
	k := int64(mt.maxRounds)
	if k > s.left {
		k = s.left
	}
	if k <= 0 {
		return false
	}
	s.left -= k
	ss := &session{c: c, id: s.newSession(), left: int32(k - 1)}
	if c.prefix.Length > 0 {
		ss.ctx = append(ss.ctx, c.prefix)
	}
	ss.ctx = append(ss.ctx, Segment{Key: c.rng.Uint64(), Length: c.inputTokens(ph.in, c.rng)})
	ss.load(r, c.next, ph.out.tokens(c.rng))
	r.ID = s.newID()
	if mt.closed {
		if ss.left > 0 {
			s.waiting[r.ID] = ss
		}
		return true
	}
	// Open loop: every round is fixed now, spaced by the think time, from the client's own
	// stream, so the rounds do not depend on how the simulator serves them.
	arrival, out := r.Arrival, r.OutputLen
	for ss.left > 0 {
		ss.left--
		ss.round++
		arrival += mt.think
		ss.nextPrompt(c.contextOutput(out, c.rng), c.inputTokens(ph.in, c.rng), c.rng)
		out = ph.out.tokens(c.rng)
		ss.load(&ss.buf, arrival, out)
		s.schedule(&ss.buf, nil)
	}
	return true
}

// finished continues a closed-loop session: the next round arrives a think time after the
// previous one finished, and carries its actual output as context. A round that did not
// complete ends the conversation.
func (ss *session) finished(s *genSource, _ uint64, o Outcome, out int32, now int64, inject func(*Request)) {
	if o != Completed || ss.left <= 0 {
		return
	}
	c := ss.c
	ph := &c.phases[min(c.wi, len(c.phases)-1)]
	ss.left--
	ss.round++
	ss.nextPrompt(c.contextOutput(out, c.fol), c.inputTokens(ph.in, c.fol), c.fol)
	ss.load(&ss.buf, now+c.mt.think, ph.out.tokens(c.fol))
	if ss.left > 0 {
		s.injectNew(&ss.buf, ss, inject)
	} else {
		s.injectNew(&ss.buf, nil, inject)
	}
}
