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

// AutoscaleConfig turns on autoscaling. Config.Instances then lists MaxReplicas identical
// replica slots; InitialReplicas of them are ready at time 0 and the others off.
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
	// Drain is the drain policy of removed replicas (empty = wait).
	Drain DrainPolicy
	// CostPerReplicaHour prices replica time (from provisioning start to shutdown).
	CostPerReplicaHour float64
	// OscillationWindowUs: a scaling action in the direction opposite to the previous one,
	// within this time of it, counts as an oscillation (0 = five evaluation intervals).
	OscillationWindowUs int64
}

// Validate checks the autoscaler against a cluster of n replica slots.
func (a *AutoscaleConfig) Validate(n int) error {
	init := a.InitialReplicas
	if init == 0 {
		init = a.MinReplicas
	}
	switch {
	case a.MinReplicas < 1:
		return fmt.Errorf("autoscaler min replicas must be >= 1, got %d", a.MinReplicas)
	case a.MinReplicas > a.MaxReplicas:
		return fmt.Errorf("autoscaler min replicas (%d) must not exceed max replicas (%d)", a.MinReplicas, a.MaxReplicas)
	case int(a.MaxReplicas) != n:
		return fmt.Errorf("autoscaler max replicas (%d) must equal the number of instance slots (%d)", a.MaxReplicas, n)
	case init < a.MinReplicas || init > a.MaxReplicas:
		return fmt.Errorf("autoscaler initial replicas (%d) must be within [%d, %d]", init, a.MinReplicas, a.MaxReplicas)
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
	}{{"provisioning delay", a.Provisioning}, {"model load time", a.ModelLoad}, {"warm-up time", a.Warmup}} {
		if err := d.d.validate(d.n); err != nil {
			return err
		}
	}
	if err := a.Policy.Validate(); err != nil {
		return err
	}
	return nil
}

// ScaleAction is one autoscaler action: the active replica count went from From to To.
type ScaleAction struct {
	Time     int64
	From, To int32
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
	// Oscillations counts actions reversing the previous action's direction within the
	// oscillation window.
	Oscillations int64
	// ReplicaSeconds is the replica time from each provisioning start to its shutdown (or the
	// end of the run); Cost prices it at the configured rate per replica hour.
	ReplicaSeconds, Cost float64
	// PeakActive is the largest active (ready or starting) replica count; MinReady the
	// smallest ready count seen at an evaluation.
	PeakActive, MinReady int32
	// Redirected counts requests routed again because their replica was drained, and
	// DroppedScaledDown requests lost to immediate drains.
	Redirected, DroppedScaledDown int64
	// Actions lists every scaling action in time order.
	Actions []ScaleAction
}

// autoscaler is a run's autoscaling state.
type autoscaler struct {
	cfg    *AutoscaleConfig
	pol    policy.AutoscalePolicy
	rng    *rand.Rand
	drain  DrainPolicy
	window int64
	// lastAction is the time of the last scaling action (-1: none) and lastDir its direction.
	lastAction int64
	lastDir    int8
	// ready lists the ready instances in index order (the routable set).
	ready []int32
	// pendingLife counts scheduled lifecycle transitions; idleEvals counts evaluations since
	// the workload ended and the cluster became idle; lives points at every instance's state.
	pendingLife int
	idleEvals   int64
	lives       []*lifeState
	stats       AutoscaleStats
}

// newAutoscaler sets up autoscaling for s (cfg.Autoscale non-nil): initial replicas ready, the
// rest off, and the first evaluation.
func (s *simulation) newAutoscaler(streams *rng.Partitioned) error {
	a := s.cfg.Autoscale
	pol, err := policy.NewAutoscalePolicy(a.Policy)
	if err != nil {
		return err
	}
	as := &autoscaler{
		cfg: a, pol: pol, rng: streams.Stream(AutoscalerStream), drain: a.Drain,
		window: a.OscillationWindowUs, lastAction: -1,
	}
	if as.drain == "" {
		as.drain = DrainWait
	}
	if as.window == 0 {
		as.window = 5 * a.IntervalUs
	}
	init := a.InitialReplicas
	if init == 0 {
		init = a.MinReplicas
	}
	as.stats.Policy = pol.Name()
	as.stats.PeakActive = init
	as.stats.MinReady = init
	for i := range s.insts {
		in := &s.insts[i]
		if int32(i) < init {
			in.life = lifeReady
			in.onSince = 0
		} else {
			in.life = lifeOff
		}
	}
	s.as = as
	for i := range s.insts {
		as.lives = append(as.lives, &s.insts[i].life)
	}
	as.rebuildReady(s.insts)
	s.heap.push(a.IntervalUs, evAutoscale, -1, -1)
	return nil
}

// observe gathers the autoscaler's observables.
func (s *simulation) observeCluster(o *policy.AutoscaleObservables) {
	*o = policy.AutoscaleObservables{Now: s.now, SlotsPerReplica: s.insts[0].cfg.MaxNumSeqs}
	var kv float64
	for i := range s.insts {
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

// onAutoscale is one evaluation: observe, decide, apply the bounds and cooldowns, actuate, and
// schedule the next evaluation (while anything can still change, or up to the horizon).
func (s *simulation) onAutoscale() {
	as := s.as
	a := as.cfg
	as.stats.Evaluations++
	var o policy.AutoscaleObservables
	s.observeCluster(&o)
	as.stats.MinReady = min(as.stats.MinReady, o.Ready)
	cur := o.Ready + o.Starting
	want := min(max(as.pol.Desired(&o), a.MinReplicas), a.MaxReplicas)
	since := s.now - as.lastAction
	switch {
	case want > cur && (as.lastAction < 0 || since >= a.ScaleUpCooldownUs):
		s.scaleUp(want - cur)
		s.recordAction(cur, want, 1)
	case want < cur && (as.lastAction < 0 || since >= a.ScaleDownCooldownUs):
		s.scaleDown(cur - want)
		s.recordAction(cur, want, -1)
	}
	if s.invariants && s.err == nil {
		s.err = s.checkScaleBounds()
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
// until the cluster has settled at its minimum, or for as many evaluations as scaling down
// from max to min can take with the scale-down cooldown (plus one oscillation window), so a
// run without a horizon ends and one with a horizon is not padded with idle evaluations.
func (as *autoscaler) keepEvaluating() bool {
	if as.idleEvals == 0 {
		return true
	}
	a := as.cfg
	var active int32
	for _, l := range as.lives {
		if *l == lifeReady || *l == lifeProvisioning || *l == lifeWarming {
			active++
		}
	}
	if active <= a.MinReplicas && as.pendingLife == 0 {
		return false
	}
	limit := int64(a.MaxReplicas-a.MinReplicas+1)*(a.ScaleDownCooldownUs/a.IntervalUs+1) + as.window/a.IntervalUs
	return as.idleEvals <= limit
}

// recordAction counts a scaling action from cur to want replicas in direction dir.
func (s *simulation) recordAction(cur, want int32, dir int8) {
	as := s.as
	st := &as.stats
	if dir > 0 {
		st.ScaleUps++
	} else {
		st.ScaleDowns++
	}
	if as.lastAction >= 0 && as.lastDir == -dir && s.now-as.lastAction <= as.window {
		st.Oscillations++
	}
	as.lastAction, as.lastDir = s.now, dir
	st.PeakActive = max(st.PeakActive, want)
	st.Actions = append(st.Actions, ScaleAction{Time: s.now, From: cur, To: want})
}

// checkScaleBounds verifies that the active replicas are within the bounds and at least one
// replica is ready (test mode).
func (s *simulation) checkScaleBounds() error {
	var active, ready int32
	for i := range s.insts {
		switch s.insts[i].life {
		case lifeReady:
			ready++
			active++
		case lifeProvisioning, lifeWarming:
			active++
		}
	}
	a := s.as.cfg
	if active < a.MinReplicas || active > a.MaxReplicas {
		return fmt.Errorf("invariant scale_bounds: %d active replicas outside [%d, %d]", active, a.MinReplicas, a.MaxReplicas)
	}
	if ready < 1 {
		return errors.New("invariant scale_bounds: no ready replica")
	}
	if int(ready) != len(s.as.ready) {
		return fmt.Errorf("invariant scale_bounds: %d ready replicas, routable set has %d", ready, len(s.as.ready))
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
	s.res.Autoscale = &st
	if s.res.Trace != nil {
		s.res.Trace.Anomalies.ScaleOscillations = st.Oscillations
	}
}

// addReplicaTime adds in's replica time from its start to end.
func (s *simulation) addReplicaTime(in *instance, end int64) {
	if end > in.onSince {
		s.as.stats.ReplicaSeconds += float64(end-in.onSince) / 1e6
	}
	in.onSince = end
}
