package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/rng"
)

// This file is the autoscaler: periodic evaluations of an autoscale policy over the cluster's
// aggregate observables, bounded by min/max replicas and cooldowns, actuated through the
// instance lifecycle (lifecycle.go).

// AutoscalerStream names the random stream of actuation delays.
const AutoscalerStream = "autoscaler"

// LoadingStream names the random stream of model load times when AutoscaleConfig.LoadingStream
// is set (a policy bundle's instance lifecycle).
const LoadingStream = "instance-loading"

// ScrapeStream names the random stream of the autoscaler's metric delays (drawn only when the
// delay is random, so other runs draw nothing from it).
const ScrapeStream = "autoscaler-scrape"

// DrainPolicy says what happens to a replica's requests when the autoscaler removes it.
type DrainPolicy string

// Drain policies.
const (
	// DrainWait stops routing to the replica and shuts it down once every request routed to it
	// has finished.
	DrainWait DrainPolicy = "wait"
	// DrainImmediate shuts the replica down at once: its queued and running requests are
	// dropped (DropScaledDown); requests still on their way to it are routed again.
	DrainImmediate DrainPolicy = "immediate"
	// DrainRedirect routes the replica's queued requests (and those on their way to it) again
	// at once, lets its running batch finish, then shuts it down.
	DrainRedirect DrainPolicy = "redirect"
)

// DropScaledDown is the drop reason of requests lost to an immediate drain.
const DropScaledDown = "instance removed by the autoscaler (immediate drain)"

// Delay is an actuation delay distribution in µs: normal with the given mean and standard
// deviation, clamped at 0 (a zero Stddev makes it constant).
type Delay struct {
	MeanUs, StddevUs int64
}

func (d Delay) validate(name string) error {
	if d.MeanUs < 0 || d.StddevUs < 0 {
		return fmt.Errorf("autoscaler %s must have mean and stddev >= 0, got %d and %d", name, d.MeanUs, d.StddevUs)
	}
	return nil
}

// draw samples the delay from r (no draw for a constant delay, so constant delays consume no
// randomness).
func (d Delay) draw(r *rand.Rand) int64 {
	if d.StddevUs == 0 {
		return d.MeanUs
	}
	v := float64(d.MeanUs) + r.NormFloat64()*float64(d.StddevUs)
	return int64(max(math.Round(v), 0))
}

// PoolBounds bound one pool's active (ready or starting) replicas: 1 <= min <= initial <= max,
// InitialReplicas 0 meaning MinReplicas. MaxReplicas is the pool's number of instance slots.
type PoolBounds struct {
	MinReplicas, MaxReplicas, InitialReplicas int32
}

func (b PoolBounds) initial() int32 {
	if b.InitialReplicas == 0 {
		return b.MinReplicas
	}
	return b.InitialReplicas
}

func (b PoolBounds) validate(pool string) error {
	init := b.initial()
	switch {
	case b.MinReplicas < 1:
		return fmt.Errorf("autoscaler%s min replicas must be >= 1, got %d", pool, b.MinReplicas)
	case b.MinReplicas > b.MaxReplicas:
		return fmt.Errorf("autoscaler%s min replicas (%d) must not exceed max replicas (%d)", pool, b.MinReplicas, b.MaxReplicas)
	case init < b.MinReplicas || init > b.MaxReplicas:
		return fmt.Errorf("autoscaler%s initial replicas (%d) must be within [%d, %d]", pool, init, b.MinReplicas, b.MaxReplicas)
	}
	return nil
}

// AutoscaleConfig turns on autoscaling. Config.Instances then lists MaxReplicas replica slots;
// InitialReplicas of them are ready at time 0 and the others off. With Config.PD each pool is
// autoscaled on its own: Prefill and Decode give the pools' bounds (their maxima are the pools'
// slot counts) and MinReplicas, MaxReplicas and InitialReplicas must be 0.
type AutoscaleConfig struct {
	// Policy is the autoscale policy template and its parameters.
	Policy policy.AutoscaleSpec
	// MinReplicas, MaxReplicas and InitialReplicas bound the active (ready or starting)
	// replicas: 1 <= min <= initial <= max = len(Config.Instances). InitialReplicas 0 means
	// MinReplicas.
	MinReplicas, MaxReplicas, InitialReplicas int32
	// IntervalUs is the period of the autoscaler's evaluations (> 0).
	IntervalUs int64
	// ScaleUpCooldownUs and ScaleDownCooldownUs are the least time since the last scaling
	// action before a scale-up, respectively a scale-down, may act.
	ScaleUpCooldownUs, ScaleDownCooldownUs int64
	// Provisioning is the time from the scale-up decision to a node and pod being available;
	// ModelLoad the time to load the weights; Warmup the time from loaded to serving. A new
	// replica is provisioning, then warming (model load plus warm-up), then ready.
	Provisioning, ModelLoad, Warmup Delay
	// LoadingStream draws ModelLoad from the stream LoadingStream instead of AutoscalerStream:
	// a policy bundle's loading delay is what an optimizer tunes, and its own stream keeps the
	// other delays' draws unchanged when it does.
	LoadingStream bool
	// ColdStart makes the initial replicas load (ModelLoad, then Warmup, from time 0) instead
	// of being ready at time 0. Requests routed while no replica is ready wait at the router
	// and are routed when the first replica becomes ready. Not with per-pool bounds.
	ColdStart bool
	// Nodes, when set, places replicas on the GPUs of node pools (nodes.go); nil: no node
	// capacity. With per-pool bounds each node pool holds the replicas of its role's pool.
	Nodes *NodesConfig
	// Drain is the drain policy of removed replicas (empty = wait).
	Drain DrainPolicy
	// CostPerReplicaHour prices replica time (from provisioning start to shutdown).
	CostPerReplicaHour float64
	// ScrapeDelay is the age of the load the policy decides on, as an HPA reads a metrics
	// pipeline: observables are sampled at every evaluation, and the evaluation at t uses the
	// latest sample taken at or before t - delay (drawn per evaluation from the stream
	// ScrapeStream when random, clamped at mean + 4 stddev). The per-replica load of the sample
	// (in-flight and queued requests per ready replica, KV utilization) meets the current
	// replica counts; until a sample is that old the autoscaler does not act. Zero = live
	// signals.
	ScrapeDelay Delay
	// OscillationWindowUs: a scaling action in the direction opposite to the previous one,
	// within this time of it, counts as an oscillation (0 = five evaluation intervals).
	OscillationWindowUs int64
	// Prefill and Decode bound the pools of a disaggregated cluster (both required with
	// Config.PD, both nil without).
	Prefill, Decode *PoolBounds
}

// FixedColdStart returns the autoscaler of a cluster of n fixed replicas that cold-start: its
// bounds are all n, so it never scales, and the replicas load (load, then warmup) from time 0
// before serving, as the initial replicas of an autoscaled cold start; requests routed before
// the first is ready wait at the router. The load is drawn from the stream LoadingStream.
// intervalUs is the period of its evaluations, which only take the autoscale summary's figures.
func FixedColdStart(n int32, load, warmup Delay, intervalUs int64) *AutoscaleConfig {
	return &AutoscaleConfig{
		MinReplicas: n, MaxReplicas: n, InitialReplicas: n, IntervalUs: intervalUs,
		ModelLoad: load, Warmup: warmup, LoadingStream: true, ColdStart: true,
	}
}

// pooled reports whether the bounds are per pool.
func (a *AutoscaleConfig) pooled() bool { return a.Prefill != nil || a.Decode != nil }

// Validate checks the autoscaler against a cluster of n replica slots (with per-pool bounds,
// the two pools' maxima must add up to n).
func (a *AutoscaleConfig) Validate(n int) error {
	if a.pooled() {
		switch {
		case a.Prefill == nil || a.Decode == nil:
			return errors.New("per-pool autoscaling needs the bounds of both the prefill and the decode pool")
		case a.MinReplicas != 0 || a.MaxReplicas != 0 || a.InitialReplicas != 0:
			return errors.New("per-pool autoscaling takes the pools' bounds; the cluster-wide min, max and initial replicas must be 0")
		}
		if err := a.Prefill.validate(" prefill pool"); err != nil {
			return err
		}
		if err := a.Decode.validate(" decode pool"); err != nil {
			return err
		}
		if int(a.Prefill.MaxReplicas+a.Decode.MaxReplicas) != n {
			return fmt.Errorf("autoscaler pools' max replicas (%d prefill + %d decode) must equal the number of instance slots (%d)",
				a.Prefill.MaxReplicas, a.Decode.MaxReplicas, n)
		}
	} else {
		b := PoolBounds{a.MinReplicas, a.MaxReplicas, a.InitialReplicas}
		if err := b.validate(""); err != nil {
			return err
		}
		if int(a.MaxReplicas) != n {
			return fmt.Errorf("autoscaler max replicas (%d) must equal the number of instance slots (%d)", a.MaxReplicas, n)
		}
	}
	if a.Nodes != nil {
		var err error
		if a.pooled() {
			err = a.Nodes.ValidatePools(a.Prefill.initial(), a.Decode.initial())
		} else {
			err = a.Nodes.Validate(PoolBounds{a.MinReplicas, a.MaxReplicas, a.InitialReplicas}.initial())
		}
		if err != nil {
			return err
		}
	}
	if a.ColdStart && a.pooled() {
		return errors.New("a cold start of the initial replicas is not simulated with per-pool bounds; the pools start ready")
	}
	switch {
	case a.IntervalUs <= 0:
		return fmt.Errorf("autoscaler interval must be > 0, got %d", a.IntervalUs)
	case a.ScaleUpCooldownUs < 0 || a.ScaleDownCooldownUs < 0:
		return errors.New("autoscaler cooldowns must be >= 0")
	case a.OscillationWindowUs < 0:
		return fmt.Errorf("autoscaler oscillation window must be >= 0, got %d", a.OscillationWindowUs)
	case math.IsNaN(a.CostPerReplicaHour) || math.IsInf(a.CostPerReplicaHour, 0) || a.CostPerReplicaHour < 0:
		return fmt.Errorf("autoscaler cost per replica hour must be a finite number >= 0, got %v", a.CostPerReplicaHour)
	}
	switch a.Drain {
	case "", DrainWait, DrainImmediate, DrainRedirect:
	default:
		return fmt.Errorf("drain policy must be %q, %q or %q, got %q", DrainWait, DrainImmediate, DrainRedirect, a.Drain)
	}
	for _, d := range []struct {
		n string
		d Delay
	}{{"provisioning delay", a.Provisioning}, {"model load time", a.ModelLoad}, {"warm-up time", a.Warmup}, {"scrape delay", a.ScrapeDelay}} {
		if err := d.d.validate(d.n); err != nil {
			return err
		}
	}
	if err := a.Policy.Validate(); err != nil {
		return err
	}
	return nil
}

// ScaleAction is one autoscaler action: the active replica count of a pool went from From to
// To.
type ScaleAction struct {
	Time     int64
	From, To int32
	// Pool is "prefill" or "decode" in a disaggregated run, empty otherwise.
	Pool string
}

// PoolAutoscaleStats summarizes the autoscaling of one pool of a disaggregated run.
type PoolAutoscaleStats struct {
	// Pool is "prefill" or "decode".
	Pool string
	// ScaleUps, ScaleDowns and Oscillations count the pool's actions and reversals.
	ScaleUps, ScaleDowns, Oscillations int64
	// ReplicaSeconds is the pool's replica time.
	ReplicaSeconds float64
	// PeakActive is the pool's largest active count, MinReady its smallest ready count seen at
	// an evaluation.
	PeakActive, MinReady int32
}

// AutoscaleStats summarizes the autoscaler of a run (nil in runs without one).
type AutoscaleStats struct {
	// Policy is the autoscale template.
	Policy string
	// Evaluations counts the autoscaler's evaluations.
	Evaluations int64
	// ScaleUps and ScaleDowns count actions; ReplicasAdded and ReplicasRemoved the replicas
	// they started (or reactivated from draining) and removed (cancelled or drained).
	ScaleUps, ScaleDowns           int64
	ReplicasAdded, ReplicasRemoved int64
	// Oscillations counts actions reversing the previous action's direction (of the same pool)
	// within the oscillation window.
	Oscillations int64
	// ReplicaSeconds is the replica time from each provisioning start to its shutdown (or the
	// end of the run); Cost prices it at the configured rate per replica hour, plus the node
	// pools' cost (Nodes.Cost) with node capacity.
	ReplicaSeconds, Cost float64
	// PeakActive is the largest active (ready or starting) replica count; MinReady the
	// smallest ready count seen at an evaluation (in a disaggregated run, sums of the pools'
	// counts at the same evaluation).
	PeakActive, MinReady int32
	// Redirected counts requests routed again because their replica was drained, and
	// DroppedScaledDown requests lost to immediate drains.
	Redirected, DroppedScaledDown int64
	// Actions lists every scaling action in time order.
	Actions []ScaleAction
	// Pools holds the prefill then the decode pool's figures in a disaggregated run (nil
	// otherwise).
	Pools []PoolAutoscaleStats
	// Nodes summarizes the node pools (nil without node capacity).
	Nodes *NodeStats
}

// scalePool is one independently autoscaled group of instance slots [lo, hi): the whole
// cluster, or one pool of a disaggregated run.
type scalePool struct {
	name   string
	lo, hi int32
	bounds PoolBounds
	pol    policy.AutoscalePolicy
	// lastAction is the time of the pool's last scaling action (-1: none) and lastDir its
	// direction.
	lastAction int64
	lastDir    int8
	// ready lists the pool's ready instances in index order (its routable set).
	ready []int32
	stats PoolAutoscaleStats
	// samples is the ring of the pool's scraped load with a scrape delay (nil without one);
	// nsamp counts the samples taken.
	samples []scrapeSample
	nsamp   int
}

// scrapeSample is a pool's load at one scrape.
type scrapeSample struct {
	at               int64
	ready            int32
	inFlight, queued int64
	kv               float64
}

// record stores the load of o as the pool's newest sample.
func (p *scalePool) record(o *policy.AutoscaleObservables) {
	p.samples[p.nsamp%len(p.samples)] = scrapeSample{at: o.Now, ready: o.Ready, inFlight: o.InFlight, queued: o.Queued, kv: o.KVUtilization}
	p.nsamp++
}

// delayed replaces the load of the live observables o by that of the latest sample taken at or
// before cutoff: per ready replica, scaled to the live ready count (an HPA multiplies a stale
// per-pod metric by the current replica count). It reports false when no sample is that old.
func (p *scalePool) delayed(o *policy.AutoscaleObservables, cutoff int64) bool {
	n := len(p.samples)
	for k := p.nsamp - 1; k >= 0 && k >= p.nsamp-n; k-- {
		sm := &p.samples[k%n]
		if sm.at > cutoff {
			continue
		}
		o.KVUtilization = sm.kv
		if sm.ready > 0 {
			f := float64(o.Ready) / float64(sm.ready)
			o.InFlight = int64(math.Round(float64(sm.inFlight) * f))
			o.Queued = int64(math.Round(float64(sm.queued) * f))
		} else {
			o.InFlight, o.Queued = sm.inFlight, sm.queued
		}
		return true
	}
	return false
}

// autoscaler is a run's autoscaling state.
type autoscaler struct {
	cfg *AutoscaleConfig
	rng *rand.Rand
	// loadRNG draws model load times (rng unless the config asks for LoadingStream).
	loadRNG *rand.Rand
	// cold is set while the initial replicas of a cold start load and none is ready yet;
	// parked holds the requests waiting for the first ready replica, in arrival order.
	cold   bool
	parked []int32
	// nodes is the node capacity (nil without).
	nodes  *nodeState
	drain  DrainPolicy
	window int64
	pools  []scalePool
	// ready lists the ready instances of the cluster (the routable set of a run without
	// disaggregation).
	ready []int32
	// pendingLife counts scheduled lifecycle transitions; idleEvals counts evaluations since
	// the workload ended and the cluster became idle; lives points at every instance's state.
	pendingLife int
	idleEvals   int64
	lives       []*lifeState
	stats       AutoscaleStats
	// scrapeRNG draws random scrape delays (nil for a constant delay); maxScrape clamps them.
	scrapeRNG *rand.Rand
	maxScrape int64
}

// scrapeDelay returns the metric delay of the current evaluation.
func (as *autoscaler) scrapeDelay() int64 {
	d := as.cfg.ScrapeDelay
	if as.scrapeRNG == nil {
		return d.MeanUs
	}
	return min(d.draw(as.scrapeRNG), as.maxScrape)
}

// newAutoscaler sets up autoscaling for s (cfg.Autoscale non-nil): each pool's initial
// replicas ready, the rest off, and the first evaluation.
func (s *simulation) newAutoscaler(streams *rng.Partitioned) error {
	a := s.cfg.Autoscale
	as := &autoscaler{
		cfg: a, rng: streams.Stream(AutoscalerStream), drain: a.Drain,
		window: a.OscillationWindowUs,
	}
	as.loadRNG = as.rng
	if a.LoadingStream {
		as.loadRNG = streams.Stream(LoadingStream)
	}
	if as.drain == "" {
		as.drain = DrainWait
	}
	if as.window == 0 {
		as.window = 5 * a.IntervalUs
	}
	if a.pooled() {
		np := a.Prefill.MaxReplicas
		as.pools = []scalePool{
			{name: RolePrefill, lo: 0, hi: np, bounds: *a.Prefill},
			{name: RoleDecode, lo: np, hi: int32(len(s.insts)), bounds: *a.Decode},
		}
	} else {
		as.pools = []scalePool{{lo: 0, hi: int32(len(s.insts)), bounds: PoolBounds{a.MinReplicas, a.MaxReplicas, a.InitialReplicas}}}
	}
	for k := range as.pools {
		p := &as.pools[k]
		pol, err := policy.NewAutoscalePolicy(a.Policy)
		if err != nil {
			return err
		}
		p.pol, p.lastAction = pol, -1
		init := p.bounds.initial()
		p.stats = PoolAutoscaleStats{Pool: p.name, PeakActive: init, MinReady: init}
		as.stats.Policy = pol.Name()
		as.stats.PeakActive += init
		as.stats.MinReady += init
		for i := p.lo; i < p.hi; i++ {
			in := &s.insts[i]
			if i-p.lo < init {
				in.life = lifeReady
				in.onSince = 0
			} else {
				in.life = lifeOff
			}
		}
	}
	s.as = as
	for i := range s.insts {
		as.lives = append(as.lives, &s.insts[i].life)
	}
	if a.Nodes != nil {
		prefill := -1
		if a.pooled() {
			prefill = int(a.Prefill.MaxReplicas)
		}
		as.nodes = newNodes(a.Nodes, streams, len(s.insts), prefill, func(i int) bool { return s.insts[i].life != lifeOff })
	}
	if a.ColdStart {
		// The initial replicas are on (replica time counts from 0) but still loading.
		as.cold = true
		for k := range as.pools {
			p := &as.pools[k]
			for i := p.lo; i < p.lo+p.bounds.initial(); i++ {
				s.setLife(&s.insts[i], lifeWarming, a.ModelLoad.draw(as.loadRNG)+a.Warmup.draw(as.rng))
			}
		}
	}
	as.rebuildReady(s.insts)
	if d := a.ScrapeDelay; d.MeanUs > 0 || d.StddevUs > 0 {
		// Samples are taken at every evaluation (and now, at time 0); the oldest one a decision
		// can need is at most the largest delay plus one interval old.
		as.maxScrape = d.MeanUs + 4*d.StddevUs
		if d.StddevUs > 0 {
			as.scrapeRNG = streams.Stream(ScrapeStream)
		}
		ring := int(as.maxScrape/a.IntervalUs) + 2
		for k := range as.pools {
			p := &as.pools[k]
			p.samples = make([]scrapeSample, ring)
			var o policy.AutoscaleObservables
			s.observePool(p, &o)
			p.record(&o)
		}
	}
	s.heap.push(a.IntervalUs, evAutoscale, -1, -1)
	return nil
}

// poolOf returns the scaling pool of instance i.
func (as *autoscaler) poolOf(i int32) *scalePool {
	if len(as.pools) > 1 && i >= as.pools[1].lo {
		return &as.pools[1]
	}
	return &as.pools[0]
}

// observePool gathers the autoscaler's observables over the instances of pool p.
func (s *simulation) observePool(p *scalePool, o *policy.AutoscaleObservables) {
	*o = policy.AutoscaleObservables{Now: s.now, SlotsPerReplica: s.insts[p.lo].cfg.MaxNumSeqs}
	var kv float64
	for i := p.lo; i < p.hi; i++ {
		in := &s.insts[i]
		switch in.life {
		case lifeReady:
			o.Ready++
			q := int64(in.waitQ.live) + int64(in.pending)
			o.Queued += q
			o.InFlight += q + int64(len(in.running))
			kv += in.kv.Utilization()
		case lifeProvisioning, lifeWarming:
			o.Starting++
		case lifeDraining:
			o.Draining++
		}
	}
	if o.Ready > 0 {
		o.KVUtilization = kv / float64(o.Ready)
	}
}

// onAutoscale is one evaluation: for each pool, observe, decide, apply the bounds and
// cooldowns, and actuate; then schedule the next evaluation (while anything can still change,
// or up to the horizon).
func (s *simulation) onAutoscale() {
	as := s.as
	a := as.cfg
	as.stats.Evaluations++
	var ready, active int32
	var delay int64
	if as.maxScrape > 0 {
		delay = as.scrapeDelay()
	}
	for k := range as.pools {
		p := &as.pools[k]
		var o policy.AutoscaleObservables
		s.observePool(p, &o)
		p.stats.MinReady = min(p.stats.MinReady, o.Ready)
		ready += o.Ready
		cur := o.Ready + o.Starting
		seen := true
		if p.samples != nil {
			p.record(&o)
			seen = p.delayed(&o, s.now-delay)
		}
		want := cur
		if seen {
			want = min(max(p.pol.Desired(&o), p.bounds.MinReplicas), p.bounds.MaxReplicas)
		}
		since := s.now - p.lastAction
		switch {
		case want > cur && (p.lastAction < 0 || since >= a.ScaleUpCooldownUs):
			// Without node capacity every wanted replica starts; with it a scale-up may be
			// capped, down to no action.
			if got := want - s.scaleUp(p, want-cur); got > cur {
				s.recordAction(p, cur, got, 1)
				cur = got
			}
		case want < cur && (p.lastAction < 0 || since >= a.ScaleDownCooldownUs):
			s.scaleDown(p, cur-want)
			s.recordAction(p, cur, want, -1)
			cur = want
		}
		active += cur
	}
	as.stats.MinReady = min(as.stats.MinReady, ready)
	as.stats.PeakActive = max(as.stats.PeakActive, active)
	if s.invariants && s.err == nil {
		s.err = s.checkScaleBounds()
		if s.err == nil && as.nodes != nil {
			s.err = as.nodes.check(s.insts)
		}
	}
	if s.slab.live > 0 || s.srcSlot >= 0 {
		as.idleEvals = 0
	} else {
		as.idleEvals++
	}
	if as.keepEvaluating() {
		s.heap.push(s.now+a.IntervalUs, evAutoscale, -1, -1)
	}
}

// keepEvaluating reports whether the autoscaler evaluates again. While requests are in flight
// or still to come it always does. Once the workload is over and the cluster idle, it goes on
// until every pool has settled at its minimum, or for as many evaluations as scaling a pool
// down from max to min can take with the scale-down cooldown (plus one oscillation window), so
// a run without a horizon ends and one with a horizon is not padded with idle evaluations.
func (as *autoscaler) keepEvaluating() bool {
	if as.idleEvals == 0 {
		return true
	}
	a := as.cfg
	settled := as.pendingLife == 0
	var limit int64
	for k := range as.pools {
		p := &as.pools[k]
		var active int32
		for _, l := range as.lives[p.lo:p.hi] {
			if *l == lifeReady || *l == lifeProvisioning || *l == lifeWarming {
				active++
			}
		}
		settled = settled && active <= p.bounds.MinReplicas
		limit = max(limit, int64(p.bounds.MaxReplicas-p.bounds.MinReplicas+1)*(a.ScaleDownCooldownUs/a.IntervalUs+1))
	}
	if settled {
		return false
	}
	return as.idleEvals <= limit+as.window/a.IntervalUs
}

// recordAction counts a scaling action of pool p from cur to want replicas in direction dir.
func (s *simulation) recordAction(p *scalePool, cur, want int32, dir int8) {
	as := s.as
	st, ps := &as.stats, &p.stats
	if dir > 0 {
		st.ScaleUps++
		ps.ScaleUps++
	} else {
		st.ScaleDowns++
		ps.ScaleDowns++
	}
	if p.lastAction >= 0 && p.lastDir == -dir && s.now-p.lastAction <= as.window {
		st.Oscillations++
		ps.Oscillations++
	}
	p.lastAction, p.lastDir = s.now, dir
	ps.PeakActive = max(ps.PeakActive, want)
	st.Actions = append(st.Actions, ScaleAction{Time: s.now, From: cur, To: want, Pool: p.name})
}

// checkScaleBounds verifies that every pool's active replicas are within its bounds, that each
// pool keeps a ready replica, and that the routable sets are the ready replicas (test mode).
func (s *simulation) checkScaleBounds() error {
	as := s.as
	var readyAll int
	for k := range as.pools {
		p := &as.pools[k]
		var active, ready int32
		for i := p.lo; i < p.hi; i++ {
			switch s.insts[i].life {
			case lifeReady:
				ready++
				active++
			case lifeProvisioning, lifeWarming:
				active++
			}
		}
		name := p.name
		if name == "" {
			name = "cluster"
		}
		b := p.bounds
		if active < b.MinReplicas || active > b.MaxReplicas {
			return fmt.Errorf("invariant scale_bounds: %s: %d active replicas outside [%d, %d]", name, active, b.MinReplicas, b.MaxReplicas)
		}
		if ready < 1 && !as.cold {
			return fmt.Errorf("invariant scale_bounds: %s: no ready replica", name)
		}
		if int(ready) != len(p.ready) {
			return fmt.Errorf("invariant scale_bounds: %s: %d ready replicas, routable set has %d", name, ready, len(p.ready))
		}
		readyAll += int(ready)
	}
	if readyAll != len(as.ready) {
		return fmt.Errorf("invariant scale_bounds: %d ready replicas, routable set has %d", readyAll, len(as.ready))
	}
	return nil
}

// finishAutoscale closes the replica-time books at the end of the run.
func (s *simulation) finishAutoscale(end int64) {
	as := s.as
	for i := range s.insts {
		in := &s.insts[i]
		if in.life != lifeOff {
			s.addReplicaTime(in, end)
		}
	}
	st := as.stats
	st.Cost = st.ReplicaSeconds / 3600 * as.cfg.CostPerReplicaHour
	st.Actions = append([]ScaleAction(nil), st.Actions...)
	if len(as.pools) > 1 {
		for k := range as.pools {
			st.Pools = append(st.Pools, as.pools[k].stats)
		}
	}
	if as.nodes != nil {
		// With node capacity the cluster pays for its nodes too: Cost is the replicas' and
		// the nodes' cost, so objectives on cost see the node pools.
		st.Nodes = as.nodes.finish(end)
		st.Cost += st.Nodes.Cost
	}
	s.res.Autoscale = &st
	if s.res.Trace != nil {
		s.res.Trace.Anomalies.ScaleOscillations = st.Oscillations
	}
}

// addReplicaTime adds in's replica time from its start to end.
func (s *simulation) addReplicaTime(in *instance, end int64) {
	if end > in.onSince {
		d := float64(end-in.onSince) / 1e6
		s.as.stats.ReplicaSeconds += d
		s.as.poolOf(in.idx).stats.ReplicaSeconds += d
	}
	in.onSince = end
}
