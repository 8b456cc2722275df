package policy

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Autoscale policy templates. Each turns the cluster's aggregate observables at an evaluation
// into a desired replica count; the simulator clamps it to the bounds and applies cooldowns.
const (
	// AutoscaleThreshold adds Step replicas when utilization exceeds ScaleUpThreshold and removes
	// Step when it falls below ScaleDownThreshold; the band between them is the hysteresis.
	AutoscaleThreshold = "threshold"
	// AutoscaleTargetUtilization sizes the cluster so that the in-flight requests fill
	// TargetUtilization of the batch slots (HPA's proportional rule).
	AutoscaleTargetUtilization = "target-utilization"
	// AutoscaleQueueDepth adds Step replicas while the queued requests per ready replica exceed
	// TargetQueueDepth and removes Step when nothing is queued and utilization is below
	// ScaleDownThreshold.
	AutoscaleQueueDepth = "queue-depth"
	// AutoscaleOscillator is a deliberately pathological policy for testing oscillation
	// detection: it alternates between adding and removing Step replicas at every evaluation,
	// whatever the load.
	AutoscaleOscillator = "oscillator"
)

var autoscaleTemplates = map[string]bool{
	AutoscaleThreshold: true, AutoscaleTargetUtilization: true, AutoscaleQueueDepth: true, AutoscaleOscillator: true,
}

// AutoscaleTemplateNames lists the autoscale policy templates, sorted.
func AutoscaleTemplateNames() []string {
	names := make([]string, 0, len(autoscaleTemplates))
	for n := range autoscaleTemplates {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// AutoscaleSpec selects an autoscale policy template and its parameters. Zero parameters take
// the defaults of Defaulted.
type AutoscaleSpec struct {
	// Template is one of AutoscaleTemplateNames (empty = threshold).
	Template string `yaml:"template,omitempty" json:"template,omitempty"`
	// ScaleUpThreshold and ScaleDownThreshold bound the utilization band of the threshold
	// template (defaults 0.8 and 0.3); ScaleDownThreshold is also the queue-depth template's
	// scale-down utilization.
	ScaleUpThreshold   float64 `yaml:"scale_up_threshold,omitempty" json:"scale_up_threshold,omitempty"`
	ScaleDownThreshold float64 `yaml:"scale_down_threshold,omitempty" json:"scale_down_threshold,omitempty"`
	// TargetUtilization is the target-utilization template's set point in (0, 1] (default 0.7).
	TargetUtilization float64 `yaml:"target_utilization,omitempty" json:"target_utilization,omitempty"`
	// TargetQueueDepth is the queue-depth template's queued requests per ready replica
	// (default 4).
	TargetQueueDepth float64 `yaml:"target_queue_depth,omitempty" json:"target_queue_depth,omitempty"`
	// Step is the number of replicas one threshold, queue-depth or oscillator action adds or
	// removes (default 1).
	Step int32 `yaml:"step,omitempty" json:"step,omitempty"`
}

// Defaulted returns s with every zero field set to its default.
func (s AutoscaleSpec) Defaulted() AutoscaleSpec {
	if s.Template == "" {
		s.Template = AutoscaleThreshold
	}
	if s.ScaleUpThreshold == 0 {
		s.ScaleUpThreshold = 0.8
	}
	if s.ScaleDownThreshold == 0 {
		s.ScaleDownThreshold = 0.3
	}
	if s.TargetUtilization == 0 {
		s.TargetUtilization = 0.7
	}
	if s.TargetQueueDepth == 0 {
		s.TargetQueueDepth = 4
	}
	if s.Step == 0 {
		s.Step = 1
	}
	return s
}

// Validate reports the first invalid field of the defaulted spec.
func (s AutoscaleSpec) Validate() error {
	d := s.Defaulted()
	if !autoscaleTemplates[d.Template] {
		return fmt.Errorf("autoscale policy %q is unknown (known: %s)", d.Template, strings.Join(AutoscaleTemplateNames(), ", "))
	}
	for _, c := range []struct {
		n string
		v float64
	}{
		{"scale_up_threshold", d.ScaleUpThreshold}, {"scale_down_threshold", d.ScaleDownThreshold},
		{"target_utilization", d.TargetUtilization}, {"target_queue_depth", d.TargetQueueDepth},
	} {
		if math.IsNaN(c.v) || math.IsInf(c.v, 0) || c.v < 0 {
			return fmt.Errorf("autoscale %s must be a finite number >= 0, got %v", c.n, c.v)
		}
	}
	switch {
	case d.Step < 0:
		return fmt.Errorf("autoscale step must be >= 1, got %d", d.Step)
	case d.TargetUtilization > 1:
		return fmt.Errorf("autoscale target_utilization must be in (0, 1], got %v", d.TargetUtilization)
	case d.Template == AutoscaleThreshold && d.ScaleDownThreshold >= d.ScaleUpThreshold:
		return fmt.Errorf("autoscale scale_down_threshold (%v) must be below scale_up_threshold (%v)", d.ScaleDownThreshold, d.ScaleUpThreshold)
	}
	return nil
}

// AutoscaleObservables are the aggregate cluster signals an autoscale policy reads at an
// evaluation. Load fields cover the ready replicas only.
type AutoscaleObservables struct {
	// Now is the evaluation time (µs).
	Now int64
	// Ready, Starting (provisioning or warming) and Draining count replicas by state.
	Ready, Starting, Draining int32
	// InFlight is the requests routed to ready replicas and not finished; Queued those of them
	// waiting (in a wait queue or the queueing delay).
	InFlight, Queued int64
	// SlotsPerReplica is a replica's batch capacity (max-num-seqs).
	SlotsPerReplica int32
	// KVUtilization is the mean KV-cache utilization of the ready replicas.
	KVUtilization float64
}

// Utilization is the fraction of the ready replicas' batch slots the in-flight requests would
// fill (it exceeds 1 when requests queue), or the KV utilization when that is higher.
func (o *AutoscaleObservables) Utilization() float64 {
	u := 0.0
	if o.Ready > 0 && o.SlotsPerReplica > 0 {
		u = float64(o.InFlight) / (float64(o.Ready) * float64(o.SlotsPerReplica))
	}
	return max(u, o.KVUtilization)
}

// AutoscalePolicy decides the desired number of active (ready or starting) replicas.
type AutoscalePolicy interface {
	// Name is the template name.
	Name() string
	// Desired returns the desired active replica count; the caller clamps it to the bounds.
	Desired(o *AutoscaleObservables) int32
}

// NewAutoscalePolicy builds a fresh policy instance from spec (validated first). Policies may
// keep state across evaluations, so every run builds its own.
func NewAutoscalePolicy(spec AutoscaleSpec) (AutoscalePolicy, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	d := spec.Defaulted()
	switch d.Template {
	case AutoscaleTargetUtilization:
		return targetUtilization{d}, nil
	case AutoscaleQueueDepth:
		return queueDepth{d}, nil
	case AutoscaleOscillator:
		return &oscillator{spec: d}, nil
	default:
		return thresholdScaler{d}, nil
	}
}

type thresholdScaler struct{ spec AutoscaleSpec }

func (thresholdScaler) Name() string { return AutoscaleThreshold }

func (t thresholdScaler) Desired(o *AutoscaleObservables) int32 {
	cur := o.Ready + o.Starting
	switch u := o.Utilization(); {
	case u > t.spec.ScaleUpThreshold:
		return cur + t.spec.Step
	case u < t.spec.ScaleDownThreshold:
		return cur - t.spec.Step
	}
	return cur
}

type targetUtilization struct{ spec AutoscaleSpec }

func (targetUtilization) Name() string { return AutoscaleTargetUtilization }

func (t targetUtilization) Desired(o *AutoscaleObservables) int32 {
	if o.SlotsPerReplica <= 0 {
		return o.Ready + o.Starting
	}
	want := float64(o.InFlight) / (float64(o.SlotsPerReplica) * t.spec.TargetUtilization)
	if k := o.KVUtilization / t.spec.TargetUtilization * float64(o.Ready); k > want {
		want = k
	}
	return int32(min(math.Ceil(want-1e-9), math.MaxInt32/2))
}

type queueDepth struct{ spec AutoscaleSpec }

func (queueDepth) Name() string { return AutoscaleQueueDepth }

func (q queueDepth) Desired(o *AutoscaleObservables) int32 {
	cur := o.Ready + o.Starting
	if o.Ready > 0 && float64(o.Queued)/float64(o.Ready) > q.spec.TargetQueueDepth {
		return cur + q.spec.Step
	}
	if o.Queued == 0 && o.Utilization() < q.spec.ScaleDownThreshold {
		return cur - q.spec.Step
	}
	return cur
}

type oscillator struct {
	spec AutoscaleSpec
	down bool
}

func (*oscillator) Name() string { return AutoscaleOscillator }

func (p *oscillator) Desired(o *AutoscaleObservables) int32 {
	cur := o.Ready + o.Starting
	p.down = !p.down
	if p.down {
		return cur + p.spec.Step
	}
	return cur - p.spec.Step
}

// Withdraw releases what a dispatched request holds in the router's books without counting a
// completion: the request left its instance unserved and is routed again (its instance was
// drained). Safe to call more than once.
func (p *Pipeline) Withdraw(t *Ticket) {
	if t.Instance < 0 || t.Released {
		return
	}
	st := p.state
	if !t.TokensReleased {
		st.Loads[t.Instance].InFlightTokens -= t.Tokens
		t.TokensReleased = true
	}
	st.Loads[t.Instance].ActiveRequests--
	st.Tenant(t.Tenant).ActiveRequests--
	st.Global.InFlight--
	t.Released = true
}

// Retarget moves a routing decision to instance to, for a cluster whose routing policy chose an
// instance that cannot take requests (not ready): the in-flight books move with the ticket and
// the shadow prefix index learns the prompt's blocks on to. hashes are the request's prefix
// hashes as given to Route.
func (p *Pipeline) Retarget(d *RoutingDecision, to int, hashes []uint64) {
	from := d.Ticket.Instance
	if from < 0 || int(from) == to || to < 0 || to >= p.n {
		return
	}
	st := p.state
	t := &d.Ticket
	tokens := int64(0)
	if !t.TokensReleased {
		tokens = t.Tokens
	}
	st.Loads[from].ActiveRequests--
	st.Loads[from].InFlightTokens -= tokens
	st.Loads[to].ActiveRequests++
	st.Loads[to].InFlightTokens += tokens
	if st.Prefix != nil {
		if p.maxBlocks >= 0 && len(hashes) > p.maxBlocks {
			hashes = hashes[:p.maxBlocks]
		}
		st.Prefix.Add(to, hashes)
	}
	t.Instance = int32(to)
	d.Target = int32(to)
}

// Autoscale template parameters of a bundle's autoscaler.params.
var autoscaleParams = map[string]func(*AutoscaleSpec, float64){
	"scale_up_threshold":   func(s *AutoscaleSpec, v float64) { s.ScaleUpThreshold = v },
	"scale_down_threshold": func(s *AutoscaleSpec, v float64) { s.ScaleDownThreshold = v },
	"target_utilization":   func(s *AutoscaleSpec, v float64) { s.TargetUtilization = v },
	"target_queue_depth":   func(s *AutoscaleSpec, v float64) { s.TargetQueueDepth = v },
	"step": func(s *AutoscaleSpec, v float64) {
		s.Step = int32(min(max(v, -1), math.MaxInt32))
		if float64(s.Step) != v {
			s.Step = -1 // not a whole number: Validate rejects it
		}
	},
}

// Spec returns the autoscale policy of the block: Policy with Params, where the analyzer's
// scale_up_threshold and scale_down_boundary are the threshold template's defaults.
func (a *Autoscaler) Spec() (AutoscaleSpec, error) {
	s := AutoscaleSpec{
		Template:           a.Policy,
		ScaleUpThreshold:   a.Analyzer.ScaleUpThreshold,
		ScaleDownThreshold: a.Analyzer.ScaleDownBoundary,
	}
	keys := make([]string, 0, len(a.Params))
	for k := range a.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		set, ok := autoscaleParams[k]
		if !ok {
			return s, fmt.Errorf("autoscaler.params: unknown parameter %q (known: scale_up_threshold, scale_down_threshold, step, target_queue_depth, target_utilization)", k)
		}
		set(&s, a.Params[k])
	}
	if err := s.Validate(); err != nil {
		return s, fmt.Errorf("autoscaler: %w", err)
	}
	return s, nil
}
