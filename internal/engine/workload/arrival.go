package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// ArrivalSpec configures a client's arrival process with BLIS's keys (process, cv, shape,
// scale) plus the parameters of the pattern processes (bursty, diurnal, periodic, adversarial).
type ArrivalSpec struct {
	// Process is one of ArrivalProcesses.
	Process string `yaml:"process" json:"process"`
	// CV is the coefficient of variation of inter-arrival gaps (gamma, weibull).
	CV *float64 `yaml:"cv,omitempty" json:"cv,omitempty"`
	// Shape is the gamma or Weibull shape parameter, an alternative to CV.
	Shape *float64 `yaml:"shape,omitempty" json:"shape,omitempty"`
	// Scale is accepted for BLIS compatibility but must be omitted: the client's rate
	// determines the scale of the gaps.
	Scale *float64 `yaml:"scale,omitempty" json:"scale,omitempty"`

	// SpikeIntervalUs, SpikeDurationUs and SpikeMultiplier shape bursty arrivals: Poisson at
	// the base rate, multiplied by SpikeMultiplier during the first SpikeDurationUs of every
	// SpikeIntervalUs. Defaults 60 s, 5 s, 10.
	SpikeIntervalUs int64   `yaml:"spike_interval_us,omitempty" json:"spike_interval_us,omitempty"`
	SpikeDurationUs int64   `yaml:"spike_duration_us,omitempty" json:"spike_duration_us,omitempty"`
	SpikeMultiplier float64 `yaml:"spike_multiplier,omitempty" json:"spike_multiplier,omitempty"`
	// PeriodUs, PeakToTroughRatio and PeakUs shape diurnal arrivals: Poisson whose rate follows
	// a sinusoid with the given period (default 24 h) and peak/trough ratio (default 10), peaking
	// PeakUs into each period (default half a period). The rate averages to the client's rate.
	PeriodUs          int64   `yaml:"period_us,omitempty" json:"period_us,omitempty"`
	PeakToTroughRatio float64 `yaml:"peak_to_trough_ratio,omitempty" json:"peak_to_trough_ratio,omitempty"`
	PeakUs            *int64  `yaml:"peak_us,omitempty" json:"peak_us,omitempty"`
	// Jitter is the periodic process's jitter as a fraction of the period, in [0, 0.5]
	// (default 0.1): arrival k is at (k + U(-Jitter, Jitter)) periods.
	Jitter *float64 `yaml:"jitter,omitempty" json:"jitter,omitempty"`
	// BurstSize is the adversarial process's number of simultaneous arrivals per burst
	// (default 50); bursts are spaced so that the mean rate is the client's rate.
	BurstSize int `yaml:"burst_size,omitempty" json:"burst_size,omitempty"`
}

// ArrivalProcesses lists the valid arrival process names.
var ArrivalProcesses = []string{processPoisson, "gamma", "weibull", processConstant, "bursty", "diurnal", "periodic", "adversarial"}

// process yields successive inter-arrival gaps in operational time, in units of the mean gap
// (so every process has mean gap 1; the client's rate and rate profile scale it to time).
type process interface {
	gap(r *rand.Rand) float64
}

type poissonProc struct{}

func (poissonProc) gap(r *rand.Rand) float64 { return r.ExpFloat64() }

type constantProc struct{}

func (constantProc) gap(*rand.Rand) float64 { return 1 }

// gammaProc has shape k and scale 1/k (mean 1, cv 1/sqrt(k)).
type gammaProc struct{ k float64 }

func (g gammaProc) gap(r *rand.Rand) float64 { return gammaSample(r, g.k) / g.k }

// gammaSample draws Gamma(k, 1) by Marsaglia and Tsang's method, boosted for k < 1.
func gammaSample(r *rand.Rand, k float64) float64 {
	if k < 1 {
		u := 1 - r.Float64()
		return gammaSample(r, k+1) * math.Pow(u, 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := 1 - r.Float64()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}

// weibullProc has shape k and the scale that makes the mean 1.
type weibullProc struct{ k, scale float64 }

func newWeibull(k float64) weibullProc {
	return weibullProc{k: k, scale: 1 / math.Gamma(1+1/k)}
}

func (w weibullProc) gap(r *rand.Rand) float64 {
	return w.scale * math.Pow(-math.Log(1-r.Float64()), 1/w.k)
}

// weibullShapeForCV inverts cv(k)^2 = Γ(1+2/k)/Γ(1+1/k)^2 - 1, which decreases in k.
func weibullShapeForCV(cv float64) float64 {
	f := func(k float64) float64 {
		a, _ := math.Lgamma(1 + 2/k)
		b, _ := math.Lgamma(1 + 1/k)
		return math.Sqrt(math.Exp(a-2*b)-1) - cv
	}
	lo, hi := 0.05, 200.0
	for range 100 {
		mid := math.Sqrt(lo * hi)
		if f(mid) > 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Sqrt(lo * hi)
}

// periodicProc places arrival k at k + U(-j, j) (a jittered lattice, so jitter never
// accumulates); j <= 0.5 keeps arrivals ordered.
type periodicProc struct {
	j    float64
	last float64 // offset of the previous arrival from its lattice point
	init bool
}

func (p *periodicProc) gap(r *rand.Rand) float64 {
	off := p.j * (2*r.Float64() - 1)
	var g float64
	if !p.init {
		p.init = true
		g = 1 + off
	} else {
		g = 1 + off - p.last
	}
	p.last = off
	return g
}

// burstProc emits bursts of n simultaneous arrivals every n mean gaps.
type burstProc struct {
	n, i int
}

func (b *burstProc) gap(*rand.Rand) float64 {
	b.i++
	if b.i == 1 {
		return float64(b.n)
	}
	if b.i == b.n {
		b.i = 0
	}
	return 0
}

// Names used in several places.
const (
	processPoisson  = "poisson"
	processConstant = "constant"
)

// newProcess validates a and returns its process and any rate factor the pattern implies
// (bursty spikes, diurnal sinusoid). field names the spec location for errors.
func newProcess(field string, a *ArrivalSpec) (process, factor, error) {
	if err := checkArrivalKeys(field, a); err != nil {
		return nil, nil, err
	}
	switch a.Process {
	case processPoisson:
		return poissonProc{}, nil, nil
	case processConstant:
		return constantProc{}, nil, nil
	case "gamma":
		k, err := shapeFrom(field, a, func(cv float64) float64 { return 1 / (cv * cv) }, 0, math.Inf(1))
		return gammaProc{k: k}, nil, err
	case "weibull":
		k, err := shapeFrom(field, a, weibullShapeForCV, 0.05, 200)
		return newWeibull(k), nil, err
	case "bursty":
		f, err := burstyFrom(field, a)
		return poissonProc{}, f, err
	case "diurnal":
		f, err := diurnalFrom(field, a)
		return poissonProc{}, f, err
	case "periodic":
		j := 0.1
		if a.Jitter != nil {
			j = *a.Jitter
		}
		if !(j >= 0 && j <= 0.5) {
			return nil, nil, fmt.Errorf("%s.jitter: must be in [0, 0.5], got %g", field, j)
		}
		return &periodicProc{j: j}, nil, nil
	case "adversarial":
		n := 50
		if a.BurstSize != 0 {
			n = a.BurstSize
		}
		if n < 1 {
			return nil, nil, fmt.Errorf("%s.burst_size: must be >= 1, got %d", field, n)
		}
		return &burstProc{n: n}, nil, nil
	}
	return nil, nil, fmt.Errorf("%s.process: unknown arrival process %q; valid: %s", field, a.Process, strings.Join(ArrivalProcesses, ", "))
}

// checkArrivalKeys rejects keys that do not apply to the chosen process.
func checkArrivalKeys(field string, a *ArrivalSpec) error {
	name := a.Process
	switch {
	case name == "":
		return fmt.Errorf("%s.process: required; valid: %s", field, strings.Join(ArrivalProcesses, ", "))
	case a.Scale != nil:
		return fmt.Errorf("%s.scale: not supported: the client's rate sets the scale of the gaps; use cv or shape", field)
	case name != "gamma" && name != "weibull" && (a.CV != nil || a.Shape != nil):
		return fmt.Errorf("%s: cv and shape only apply to gamma and weibull processes, not %s", field, name)
	case a.CV != nil && a.Shape != nil:
		return fmt.Errorf("%s: give cv or shape, not both", field)
	case name != "bursty" && (a.SpikeIntervalUs != 0 || a.SpikeDurationUs != 0 || a.SpikeMultiplier != 0):
		return fmt.Errorf("%s: spike_* keys only apply to the bursty process", field)
	case name != "diurnal" && (a.PeriodUs != 0 || a.PeakToTroughRatio != 0 || a.PeakUs != nil):
		return fmt.Errorf("%s: period_us, peak_to_trough_ratio and peak_us only apply to the diurnal process", field)
	case name != "periodic" && a.Jitter != nil:
		return fmt.Errorf("%s.jitter: only applies to the periodic process", field)
	case name != "adversarial" && a.BurstSize != 0:
		return fmt.Errorf("%s.burst_size: only applies to the adversarial process", field)
	}
	return nil
}

// shapeFrom returns the shape given directly (within [lo, hi]) or derived from cv; 1 (the
// exponential case) when neither is set.
func shapeFrom(field string, a *ArrivalSpec, fromCV func(float64) float64, lo, hi float64) (float64, error) {
	switch {
	case a.CV != nil:
		cv := *a.CV
		if a.Process == "weibull" && (cv < 0.01 || cv > 10.4 || math.IsNaN(cv)) {
			return 0, fmt.Errorf("%s.cv: must be in [0.01, 10.4] for weibull, got %g", field, cv)
		}
		if !(cv > 0) || math.IsInf(cv, 0) {
			return 0, fmt.Errorf("%s.cv: must be a finite number > 0, got %g", field, cv)
		}
		return fromCV(cv), nil
	case a.Shape != nil:
		k := *a.Shape
		if !(k > lo) || k > hi || math.IsInf(k, 0) {
			return 0, fmt.Errorf("%s.shape: must be a finite number in (%g, %g], got %g", field, lo, hi, k)
		}
		return k, nil
	}
	return 1, nil
}

func burstyFrom(field string, a *ArrivalSpec) (factor, error) {
	f := &spikeFactor{period: 60e6, dur: 5e6, mult: 10}
	if a.SpikeIntervalUs != 0 {
		f.period = float64(a.SpikeIntervalUs)
	}
	if a.SpikeDurationUs != 0 {
		f.dur = float64(a.SpikeDurationUs)
	}
	if a.SpikeMultiplier != 0 {
		f.mult = a.SpikeMultiplier
	}
	switch {
	case f.period <= 0:
		return nil, fmt.Errorf("%s.spike_interval_us: must be > 0", field)
	case f.dur <= 0 || f.dur > f.period:
		return nil, fmt.Errorf("%s.spike_duration_us: must be in (0, spike_interval_us]", field)
	case !(f.mult > 0) || math.IsInf(f.mult, 0):
		return nil, fmt.Errorf("%s.spike_multiplier: must be a finite number > 0", field)
	}
	return f, nil
}

func diurnalFrom(field string, a *ArrivalSpec) (factor, error) {
	period := float64(86_400e6)
	if a.PeriodUs != 0 {
		period = float64(a.PeriodUs)
	}
	ratio := 10.0
	if a.PeakToTroughRatio != 0 {
		ratio = a.PeakToTroughRatio
	}
	peak := period / 2
	if a.PeakUs != nil {
		peak = float64(*a.PeakUs)
	}
	switch {
	case period <= 0:
		return nil, fmt.Errorf("%s.period_us: must be > 0", field)
	case !(ratio >= 1) || math.IsInf(ratio, 0):
		return nil, fmt.Errorf("%s.peak_to_trough_ratio: must be a finite number >= 1, got %g", field, ratio)
	}
	return newDiurnal(period, ratio, peak), nil
}

// factor is a rate multiplier m(t) >= 0 that is constant on [t, until). Smooth shapes are
// evaluated on a fine grid, which keeps inversion of the cumulative rate exact and cheap.
type factor interface {
	at(t float64) (m, until float64)
}

// spikeFactor multiplies the rate by mult during [k·period, k·period+dur) for every k >= 0.
type spikeFactor struct{ period, dur, mult float64 }

func (f *spikeFactor) at(t float64) (float64, float64) {
	k := math.Floor(t / f.period)
	start := k * f.period
	if t < start+f.dur {
		return f.mult, start + f.dur
	}
	return 1, start + f.period
}

// diurnalFactor is 1 + A·cos(2π(t-peak)/period), A = (R-1)/(R+1): it averages to 1 and its
// peak/trough ratio is R. It is piecewise constant on 1/1440 of the period (one minute of a day).
type diurnalFactor struct{ period, amp, peak, step float64 }

func newDiurnal(period, ratio, peak float64) *diurnalFactor {
	return &diurnalFactor{period: period, amp: (ratio - 1) / (ratio + 1), peak: peak, step: period / 1440}
}

func (f *diurnalFactor) at(t float64) (float64, float64) {
	i := math.Floor(t / f.step)
	mid := (i + 0.5) * f.step
	return 1 + f.amp*math.Cos(2*math.Pi*(mid-f.peak)/f.period), (i + 1) * f.step
}

// windowFactor sets the rate multiplier to mult during [start, end) and leaves it at 1
// elsewhere, or at 0 elsewhere when exclusive.
type windowFactor struct {
	start, end, mult float64
	exclusive        bool
}

func (f *windowFactor) at(t float64) (float64, float64) {
	out := 1.0
	if f.exclusive {
		out = 0
	}
	switch {
	case t < f.start:
		return out, f.start
	case t < f.end:
		return f.mult, f.end
	default:
		return out, math.Inf(1)
	}
}

// drainFactor ramps the rate linearly from 1 to 0 over [start, start+ramp) (on a grid of 200
// steps) and holds it at 0 afterwards.
type drainFactor struct{ start, ramp float64 }

func (f *drainFactor) at(t float64) (float64, float64) {
	if t < f.start {
		return 1, f.start
	}
	if f.ramp <= 0 || t >= f.start+f.ramp {
		return 0, math.Inf(1)
	}
	step := f.ramp / 200
	i := math.Floor((t - f.start) / step)
	mid := (i + 0.5) * step
	return 1 - mid/f.ramp, f.start + (i+1)*step
}

// profile is a product of factors: the intensity relative to the client's base rate.
type profile []factor

func (p profile) at(t float64) (float64, float64) {
	m, until := 1.0, math.Inf(1)
	for _, f := range p {
		fm, fu := f.at(t)
		if fm == 0 && math.IsInf(fu, 1) {
			return 0, fu // silent forever, whatever the other factors do
		}
		m *= fm
		if fu < until {
			until = fu
		}
	}
	return m, until
}

// advance returns the time t' >= t at which the integral of the profile from t reaches du
// (operational time), or +Inf if it does not before limit. An empty profile is the identity.
func (p profile) advance(t, du, limit float64) float64 {
	if len(p) == 0 {
		return t + du
	}
	for t < limit {
		m, until := p.at(t)
		if m > 0 {
			end := t + du/m
			if end < until {
				return end
			}
			du -= m * (until - t)
		}
		if math.IsInf(until, 1) {
			return math.Inf(1)
		}
		// Guard against a factor reporting a boundary at t itself (floating-point rounding).
		if until <= t {
			until = math.Nextafter(t, math.Inf(1))
		}
		t = until
	}
	return math.Inf(1)
}
