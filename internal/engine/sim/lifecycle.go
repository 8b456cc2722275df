package sim

import (
	"github.com/inference-sim/blis-operator/internal/engine/kvcache"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

// This file is the instance lifecycle of autoscaled runs: off -> provisioning -> warming ->
// ready -> draining -> off. Only ready instances are routed to. Transitions after a delay are
// evLifecycle events carrying the instance's lifecycle generation, so a transition scheduled
// before the instance was cancelled is ignored.

// lifeState is an instance's lifecycle state. The zero value is ready: runs without an
// autoscaler never look at it.
type lifeState uint8

const (
	lifeReady lifeState = iota
	lifeOff
	lifeProvisioning
	lifeWarming
	lifeDraining
)

var lifeNames = [...]string{"ready", "off", "provisioning", "warming", "draining"}

func (l lifeState) String() string { return lifeNames[l] }

// rebuildReady recomputes the routable sets: the cluster's and each pool's.
func (as *autoscaler) rebuildReady(insts []instance) {
	as.ready = as.ready[:0]
	for k := range as.pools {
		p := &as.pools[k]
		p.ready = p.ready[:0]
		for i := p.lo; i < p.hi; i++ {
			if insts[i].life == lifeReady {
				p.ready = append(p.ready, i)
				as.ready = append(as.ready, i)
			}
		}
	}
}

// setLife moves in to state l and schedules its next transition after delay (delay < 0: none).
func (s *simulation) setLife(in *instance, l lifeState, delay int64) {
	as := s.as
	wasReady := in.life == lifeReady
	in.life = l
	in.lifeGen++
	if delay >= 0 {
		as.pendingLife++
		s.heap.push(s.now+delay, evLifecycle, in.idx, int32(in.lifeGen))
	}
	if wasReady != (l == lifeReady) {
		as.rebuildReady(s.insts)
	}
}

// scaleUp adds k replicas to pool p: draining replicas are reactivated first (they are warm),
// then off replica slots start provisioning, lowest index first (with node capacity, once a
// node has room for them). It returns how many of the k could not start.
func (s *simulation) scaleUp(p *scalePool, k int32) int32 {
	as := s.as
	for i := p.lo; i < p.hi && k > 0; i++ {
		in := &s.insts[i]
		if in.life == lifeDraining {
			s.setLife(in, lifeReady, -1)
			as.stats.ReplicasAdded++
			k--
		}
	}
	for i := p.lo; i < p.hi && k > 0; i++ {
		in := &s.insts[i]
		if in.life == lifeOff {
			var wait int64
			if as.nodes != nil {
				if wait = as.nodes.place(i, s.now); wait < 0 {
					// Every node pool is full: the remaining replicas are capped.
					as.nodes.stats.Capped += int64(k - 1)
					break
				}
			}
			in.onSince = s.now
			s.setLife(in, lifeProvisioning, wait+as.cfg.Provisioning.draw(as.rng))
			as.stats.ReplicasAdded++
			k--
		}
	}
	return k
}

// scaleDown removes k replicas from pool p: starting replicas are cancelled first (latest slot
// first), then ready replicas with the fewest requests in flight (ties: the highest index) are
// drained. The pool's last ready replica is never drained, so a disaggregated request always
// finds a ready instance of the pool it is routed to (handoffs always land).
func (s *simulation) scaleDown(p *scalePool, k int32) {
	as := s.as
	for i := p.hi - 1; i >= p.lo && k > 0; i-- {
		in := &s.insts[i]
		if in.life == lifeProvisioning || in.life == lifeWarming {
			s.shutdown(in)
			as.stats.ReplicasRemoved++
			k--
		}
	}
	for ; k > 0 && len(p.ready) > 1; k-- {
		best := int32(-1)
		var bestLoad int32
		for _, i := range p.ready {
			in := &s.insts[i]
			load := in.pending + in.waitQ.live + int32(len(in.running))
			if best < 0 || load <= bestLoad {
				best, bestLoad = i, load
			}
		}
		s.drainInstance(&s.insts[best])
		as.stats.ReplicasRemoved++
	}
}

// onLifecycle applies a scheduled transition of instance i (gen is the lifecycle generation it
// was scheduled in).
func (s *simulation) onLifecycle(i int32, gen int32) {
	as := s.as
	as.pendingLife--
	in := &s.insts[i]
	if int32(in.lifeGen) != gen {
		return // cancelled since
	}
	switch in.life {
	case lifeProvisioning:
		c := as.cfg
		s.setLife(in, lifeWarming, c.ModelLoad.draw(as.loadRNG)+c.Warmup.draw(as.rng))
	case lifeWarming:
		// A fresh replica: an empty cache, and the router forgets what it knew of the slot.
		s.resetCache(in)
		if s.ctl != nil {
			s.ctl.p.ResetInstance(int(in.idx))
			s.ctl.prov.RequestRefresh(int(in.idx))
		}
		s.setLife(in, lifeReady, -1)
		if as.cold {
			// The first ready replica of a cold start: the requests that waited are routed.
			as.cold = false
			for _, slot := range as.parked {
				s.heap.push(s.now, evRouting, -1, slot)
			}
			as.parked = nil
		}
	case lifeDraining:
		in.shutdownQueued = false
		if in.idle() {
			s.shutdown(in)
		}
	}
}

// idle reports whether no request is routed to in.
func (in *instance) idle() bool {
	return in.pending == 0 && in.waitQ.live == 0 && len(in.running) == 0
}

// resetCache gives in an empty KV cache, keeping the old cache's counters.
func (s *simulation) resetCache(in *instance) {
	ks := in.kv.Stats()
	in.kvPrior.LookupBlocks += ks.LookupBlocks
	in.kvPrior.HitBlocks += ks.HitBlocks
	in.kvPrior.LookupTokens += ks.LookupTokens
	in.kvPrior.HitTokens += ks.HitTokens
	in.kv = kvcache.New(in.cfg.TotalKVBlocks, in.cfg.BlockSize)
	in.newTier()
}

// shutdown turns in off and closes its replica time.
func (s *simulation) shutdown(in *instance) {
	s.addReplicaTime(in, s.now)
	s.setLife(in, lifeOff, -1)
	if s.as.nodes != nil {
		s.as.nodes.free(in.idx, s.now)
	}
}

// drainInstance stops routing to in and applies the drain policy.
func (s *simulation) drainInstance(in *instance) {
	as := s.as
	s.setLife(in, lifeDraining, -1)
	switch as.drain {
	case DrainImmediate:
		for len(in.running) > 0 {
			slot := in.running[len(in.running)-1].slot
			in.removeRunning(slot, s.slab.reqs)
			as.stats.DroppedScaledDown++
			s.finishRequest(in, slot, OutcomeDropped, s.now, DropScaledDown)
		}
		s.forEachQueued(in, func(slot int32) {
			s.unqueue(in, slot)
			as.stats.DroppedScaledDown++
			s.finishRequest(in, slot, OutcomeDropped, s.now, DropScaledDown)
		})
		s.shutdown(in)
		return
	case DrainRedirect:
		s.forEachQueued(in, func(slot int32) {
			s.unqueue(in, slot)
			s.dead.cancel(slot)
			s.reroute(in, slot)
		})
	}
	s.maybeShutdown(in)
}

// forEachQueued calls f for every request in in's wait queue, in slot order.
func (s *simulation) forEachQueued(in *instance, f func(slot int32)) {
	for slot := range s.slab.reqs {
		r := &s.slab.reqs[slot]
		if r.state == stQueued && r.inst == in.idx {
			f(int32(slot))
		}
	}
}

// unqueue takes slot out of in's wait queue (its entry goes stale).
func (s *simulation) unqueue(in *instance, slot int32) {
	r := &s.slab.reqs[slot]
	in.waitQ.live--
	// A new generation makes the queue entry stale even if the request is queued again.
	r.gen++
	if in.track {
		in.sig.queuedTokens -= int64(r.input)
		if s.ctl.obs != nil {
			s.ctl.obs.leftQueue(in.idx, slot)
		}
	}
}

// maybeShutdown schedules the shutdown check of a draining instance that became idle.
func (s *simulation) maybeShutdown(in *instance) {
	if in.life != lifeDraining || in.shutdownQueued || !in.idle() {
		return
	}
	in.shutdownQueued = true
	s.as.pendingLife++
	s.heap.push(s.now, evLifecycle, in.idx, int32(in.lifeGen))
}

// accepting reports whether in takes a request reaching its wait queue (draining with wait
// still serves what was routed to it).
func (s *simulation) accepting(in *instance) bool {
	return in.life == lifeReady || (in.life == lifeDraining && s.as.drain == DrainWait)
}

// reroute sends a request that left in unserved back to routing.
func (s *simulation) reroute(in *instance, slot int32) {
	r := &s.slab.reqs[slot]
	in.stats.Redirected++
	s.as.stats.Redirected++
	if s.ctl != nil {
		s.ctl.p.Withdraw(&s.ctl.st[slot].ticket)
	}
	r.inst = -1
	r.state = stArriving
	s.heap.push(s.now+s.routeLat, evRouting, -1, slot)
}

// restriction is the routing restriction of autoscaled or disaggregated runs: the instances a
// request may be routed to, with scratch space for the restricted routing.
type restriction struct {
	snaps  []Snapshot
	masked []policy.InstanceSnapshot
	member []bool
}

// routable returns the instances the request in slot may be routed to, or nil when any
// instance may take it (runs without autoscaling or disaggregation).
func (s *simulation) routable(slot int32) []int32 {
	switch {
	case s.pd != nil:
		return s.pd.routable(s, slot)
	case s.as != nil:
		return s.as.ready
	}
	return nil
}

// routeAmong routes over the instances of list only (runs without a bundle); the router's
// answer indexes list.
func (s *simulation) routeAmong(list []int32) (int, bool) {
	rs := &s.restrict
	if cap(rs.snaps) < len(s.insts) {
		rs.snaps = make([]Snapshot, len(s.insts))
	}
	snaps := rs.snaps[:len(list)]
	for j, i := range list {
		s.insts[i].snapshot(&snaps[j])
	}
	t := s.router.Route(&s.routeRq, snaps)
	if t < 0 || t >= len(snaps) {
		return t, false
	}
	return int(list[t]), true
}

// maskSnapshots returns snaps with every instance outside list made maximally unattractive to
// load- and cache-aware policies (runs with a bundle, whose pipeline sees every slot).
func (s *simulation) maskSnapshots(snaps []policy.InstanceSnapshot, list []int32) []policy.InstanceSnapshot {
	if len(list) == len(s.insts) {
		return snaps
	}
	rs := &s.restrict
	rs.setMembers(list, len(s.insts))
	rs.masked = append(rs.masked[:0], snaps...)
	for i := range rs.masked {
		if rs.member[i] {
			continue
		}
		m := &rs.masked[i]
		const busy = 1 << 20
		m.QueueDepth, m.BatchSize, m.InFlightRequests = busy, s.insts[i].cfg.MaxNumSeqs, busy
		m.KVUtilization, m.FreeKVBlocks = 1, 0
		m.CacheHitRate = 0
		m.EstimatedWait = float64(busy)
	}
	return rs.masked
}

func (rs *restriction) setMembers(list []int32, n int) {
	if len(rs.member) != n {
		rs.member = make([]bool, n)
	}
	clear(rs.member)
	for _, i := range list {
		rs.member[i] = true
	}
}

// fixTarget moves a routing decision that chose an instance outside list to the instance of
// list with the fewest requests in flight (ties: the lowest index).
func (s *simulation) fixTarget(d *policy.RoutingDecision, hashes []uint64, list []int32) {
	rs := &s.restrict
	rs.setMembers(list, len(s.insts))
	if rs.member[d.Target] {
		return
	}
	best := int32(-1)
	var bestLoad int32
	for _, i := range list {
		in := &s.insts[i]
		load := in.pending + in.waitQ.live + int32(len(in.running))
		if best < 0 || load < bestLoad {
			best, bestLoad = i, load
		}
	}
	s.ctl.p.Retarget(d, int(best), hashes)
}
