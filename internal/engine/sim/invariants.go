package sim

import "fmt"

// checkStep verifies the batch limits right after batch formation (test mode).
func (s *simulation) checkStep(in *instance) {
	if s.err != nil {
		return
	}
	c := in.cfg
	if n := int32(len(in.running)); n > c.MaxNumSeqs {
		s.err = fmt.Errorf("invariant batch_size_limit: instance %d runs %d requests, max-num-seqs %d", in.idx, n, c.MaxNumSeqs)
		return
	}
	if tok := in.shape.PrefillTokens + in.shape.DecodeRequests; tok > int64(c.MaxNumBatchedTokens) {
		s.err = fmt.Errorf("invariant token_budget: instance %d scheduled %d tokens, budget %d", in.idx, tok, c.MaxNumBatchedTokens)
		return
	}
	var sum int64
	for _, ch := range in.shape.Prefill {
		if ch.NewTokens <= 0 {
			s.err = fmt.Errorf("invariant token_budget: instance %d has an empty prefill chunk", in.idx)
			return
		}
		sum += ch.NewTokens
	}
	if sum != in.shape.PrefillTokens {
		s.err = fmt.Errorf("invariant step_shape: instance %d prefill tokens %d, chunks sum to %d", in.idx, in.shape.PrefillTokens, sum)
	}
}

// checkInvariants verifies the run-wide invariants after an event (test mode): request
// conservation, KV conservation and table consistency, causality, and the batch limit.
func (s *simulation) checkInvariants() error {
	// Request conservation: every generated request is finished or in exactly one place.
	finished := s.res.Rejected + s.res.GatewayTimedOut
	var inStats int64
	for i := range s.insts {
		st := s.insts[i].stats
		finished += st.Completed + st.TimedOut + st.Dropped
	}
	if live := int64(s.slab.live); s.res.Generated != finished+live {
		return fmt.Errorf("invariant request_conservation: generated %d != finished %d + live %d", s.res.Generated, finished, live)
	}
	perInst := make([]int64, len(s.insts))
	queued := make([]int32, len(s.insts))
	running := make([]int32, len(s.insts))
	pending := make([]int32, len(s.insts))
	for slot := range s.slab.reqs {
		r := &s.slab.reqs[slot]
		if r.state == stFree {
			continue
		}
		if r.inst >= 0 {
			perInst[r.inst]++
		}
		switch r.state {
		case stQueued:
			queued[r.inst]++
		case stRunning:
			running[r.inst]++
		case stPending:
			pending[r.inst]++
		case stArriving:
			if r.inst >= 0 {
				pending[r.inst]++
			}
		}
		// Causality: arrival <= routing <= enqueue <= admission <= first token, all <= now
		// (the first token may be stamped at the end of the step in progress).
		if r.inst >= 0 && r.routedAt < r.arrival {
			return fmt.Errorf("invariant causality: request %d routed at %d before arrival %d", r.id, r.routedAt, r.arrival)
		}
		if r.state == stQueued || r.state == stRunning {
			if r.enqueuedAt < r.routedAt || r.enqueuedAt > s.now {
				return fmt.Errorf("invariant causality: request %d enqueued at %d (routed %d, now %d)", r.id, r.enqueuedAt, r.routedAt, s.now)
			}
		}
		if r.state == stRunning {
			if r.scheduledAt < r.enqueuedAt {
				return fmt.Errorf("invariant causality: request %d admitted at %d before enqueue %d", r.id, r.scheduledAt, r.enqueuedAt)
			}
			if r.firstTokenBeforeAdmission() {
				return fmt.Errorf("invariant causality: request %d first token at %d, admitted at %d", r.id, r.firstTokenAt, r.scheduledAt)
			}
		}
	}
	for i := range s.insts {
		in := &s.insts[i]
		st := in.stats
		inStats += st.Injected
		if st.Injected != st.Completed+st.TimedOut+st.Dropped+st.Redirected+st.HandedOff+perInst[i] {
			return fmt.Errorf("invariant request_conservation: instance %d injected %d != completed %d + timed out %d + dropped %d + present %d",
				i, st.Injected, st.Completed, st.TimedOut, st.Dropped, perInst[i])
		}
		if queued[i] != in.waitQ.live || running[i] != int32(len(in.running)) || pending[i] != in.pending {
			return fmt.Errorf("invariant request_conservation: instance %d counts queue %d/%d running %d/%d pending %d/%d",
				i, queued[i], in.waitQ.live, running[i], len(in.running), pending[i], in.pending)
		}
		if len(in.cold) != len(in.running) {
			return fmt.Errorf("invariant running_state: instance %d has %d entries and %d cold parts", i, len(in.running), len(in.cold))
		}
		for j := range in.running {
			e := &in.running[j]
			r := &s.slab.reqs[e.slot]
			if r.state != stRunning {
				return fmt.Errorf("invariant request_lifecycle: running entry of request %d in state %d", r.id, r.state)
			}
			t := &in.cold[j].kv
			if err := in.kv.CheckTable(t); err != nil {
				return fmt.Errorf("invariant kv_table: request %d: %w", r.id, err)
			}
			if t.Tokens+e.lazy != e.progress {
				return fmt.Errorf("invariant kv_table: request %d holds %d+%d tokens, progress %d", r.id, t.Tokens, e.lazy, e.progress)
			}
			if e.room != int32(len(t.Blocks))*in.cfg.BlockSize-t.Tokens-e.lazy {
				return fmt.Errorf("invariant kv_table: request %d room %d inconsistent with its table", r.id, e.room)
			}
		}
		if len(in.spare.Blocks) != 0 || in.spare.Tokens != 0 {
			return fmt.Errorf("invariant kv_table: instance %d keeps blocks in its spare table", i)
		}
		if int32(len(in.running)) > in.cfg.MaxNumSeqs {
			return fmt.Errorf("invariant batch_size_limit: instance %d runs %d > %d", i, len(in.running), in.cfg.MaxNumSeqs)
		}
		if in.kv.UsedBlocks()+in.kv.FreeBlocks() != in.kv.TotalBlocks() {
			return fmt.Errorf("invariant kv_conservation: instance %d used %d + free %d != total %d", i, in.kv.UsedBlocks(), in.kv.FreeBlocks(), in.kv.TotalBlocks())
		}
		if err := in.kv.CheckInvariants(); err != nil {
			return fmt.Errorf("invariant kv_conservation: instance %d: %w", i, err)
		}
		if len(in.running) == 0 && in.waitQ.live > 0 && !in.stepPending {
			return fmt.Errorf("invariant work_conserving: instance %d has %d queued requests and no step scheduled", i, in.waitQ.live)
		}
	}
	_ = inStats
	return s.checkLifecycle()
}

// checkLifecycle verifies that no off instance holds requests and that the autoscaler's bounds
// hold (autoscaled runs, test mode).
func (s *simulation) checkLifecycle() error {
	for i := range s.insts {
		if t := s.insts[i].tier; t != nil {
			if err := t.CheckInvariants(); err != nil {
				return fmt.Errorf("invariant kv_conservation: instance %d CPU tier: %w", i, err)
			}
		}
	}
	if s.pd != nil {
		if err := s.checkOwnership(); err != nil {
			return err
		}
	}
	if s.as == nil {
		return nil
	}
	for i := range s.insts {
		if in := &s.insts[i]; in.life == lifeOff && (in.waitQ.live > 0 || len(in.running) > 0) {
			return fmt.Errorf("invariant lifecycle: instance %d is off with requests", i)
		}
	}
	return s.checkScaleBounds()
}

// firstTokenBeforeAdmission reports a first token stamped before the request's last admission
// into a batch, which only a request decoding after a KV transfer may show.
func (r *reqState) firstTokenBeforeAdmission() bool {
	return r.ttftSet && r.firstTokenAt <= r.scheduledAt && r.pd != pdDecode
}

// checkOwnership verifies single ownership of KV under disaggregation (test mode): every
// running request is in exactly one instance's batch, the one it is routed to, and a request
// in transfer (or in a queue) is in no batch.
func (s *simulation) checkOwnership() error {
	owners := make([]int32, len(s.slab.reqs))
	for i := range s.insts {
		for _, e := range s.insts[i].running {
			owners[e.slot]++
			if r := &s.slab.reqs[e.slot]; r.inst != int32(i) {
				return fmt.Errorf("invariant kv_ownership: request %d runs on instance %d, routed to %d", r.id, i, r.inst)
			}
		}
	}
	for slot := range s.slab.reqs {
		r := &s.slab.reqs[slot]
		if owners[slot] > 1 {
			return fmt.Errorf("invariant kv_ownership: request %d holds KV on %d instances", r.id, owners[slot])
		}
		if r.state != stRunning && owners[slot] != 0 {
			return fmt.Errorf("invariant kv_ownership: request %d (in transfer or waiting) holds a batch entry", r.id)
		}
	}
	return nil
}
