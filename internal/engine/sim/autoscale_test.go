package sim

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/metrics"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

const sec = int64(1_000_000)

// burstWorkload is a light load (1 request/s) for 20 s, a burst (40 requests/s) for 30 s, then
// a light load again until 60 s.
func burstWorkload() []workload.Request {
	var reqs []workload.Request
	add := func(from, to, gap int64) {
		for t := from; t < to; t += gap {
			reqs = append(reqs, workload.Request{ID: uint64(len(reqs)), Arrival: t, InputLen: 512, OutputLen: 128})
		}
	}
	add(0, 20*sec, sec)
	add(20*sec, 50*sec, sec/40)
	add(50*sec, 60*sec, sec)
	return reqs
}

// autoscaledCluster is 4 replica slots of a small instance (8 sequences each) with a threshold
// autoscaler: 1 replica at first, evaluations every second, 5 s provisioning, 2 s model load and
// 1 s warm-up, a 20 s scale-down cooldown.
func autoscaledCluster(spec policy.AutoscaleSpec, drain DrainPolicy) *Config {
	ic := testInstance(plainModel())
	ic.MaxNumSeqs = 8
	ic.TotalKVBlocks = 400
	insts := []InstanceConfig{ic, ic, ic, ic}
	return &Config{
		Instances: insts,
		Horizon:   200 * sec,
		Autoscale: &AutoscaleConfig{
			Policy:      spec,
			MinReplicas: 1, MaxReplicas: 4,
			IntervalUs:          sec,
			ScaleDownCooldownUs: 20 * sec,
			Provisioning:        Delay{MeanUs: 5 * sec},
			ModelLoad:           Delay{MeanUs: 2 * sec},
			Warmup:              Delay{MeanUs: sec},
			Drain:               drain,
			CostPerReplicaHour:  3.6,
		},
		Options: Options{RequestRecords: true},
	}
}

// runWatching runs cfg and returns the result and, per instance, the first time it was ready
// after time 0 (-1 if never) and whether a request ever reached it while it was not ready.
func runWatching(t *testing.T, cfg *Config, reqs []workload.Request) (*Result, []int64, bool) {
	t.Helper()
	s := mustSim(t, cfg, &sliceSource{reqs: reqs})
	readyAt := make([]int64, len(cfg.Instances))
	for i := range readyAt {
		readyAt[i] = -1
	}
	bad := false
	s.observe = func(ev event) {
		for i := range s.insts {
			if readyAt[i] < 0 && s.now > 0 && s.insts[i].life == lifeReady {
				readyAt[i] = s.now
			}
		}
		if ev.kind() == evInstanceArrival {
			if l := s.insts[ev.inst].life; l != lifeReady && l != lifeDraining {
				bad = true
			}
		}
	}
	if err := s.run(); err != nil {
		t.Fatal(err)
	}
	return s.res, readyAt, bad
}

func TestAutoscaleBurstScalesUpAndDownWithDelays(t *testing.T) {
	cfg := autoscaledCluster(policy.AutoscaleSpec{Template: policy.AutoscaleThreshold}, DrainWait)
	cfg.Options.CheckInvariants = true
	res, readyAt, bad := runWatching(t, cfg, burstWorkload())
	as := res.Autoscale
	if as == nil {
		t.Fatal("no autoscale stats")
	}
	t.Logf("%+v", *as)
	if bad {
		t.Error("a request reached a replica that was not ready")
	}
	if as.ScaleUps == 0 || as.ScaleDowns == 0 {
		t.Fatalf("want scale-ups and scale-downs, got %d and %d", as.ScaleUps, as.ScaleDowns)
	}
	first := as.Actions[0]
	if first.To <= first.From || first.Time < 20*sec || first.Time > 30*sec {
		t.Fatalf("first action %+v should be a scale-up early in the burst", first)
	}
	// Slot 1 is the first one started: ready after provisioning + load + warm-up = 8 s.
	if want := first.Time + 8*sec; readyAt[1] != want {
		t.Errorf("slot 1 ready at %d, want %d (decision + 8 s)", readyAt[1], want)
	}
	last := as.Actions[len(as.Actions)-1]
	if last.To != 1 || last.Time < 50*sec {
		t.Errorf("last action %+v should bring the cluster back to 1 replica after the burst", last)
	}
	for i := 1; i < len(as.Actions); i++ {
		a, b := as.Actions[i-1], as.Actions[i]
		if b.To < b.From && b.Time-a.Time < 20*sec {
			t.Errorf("scale-down at %d within the 20 s cooldown of the action at %d", b.Time, a.Time)
		}
	}
	if as.Oscillations != 0 {
		t.Errorf("threshold with hysteresis oscillated %d times", as.Oscillations)
	}
	if as.PeakActive < 2 || as.PeakActive > 4 {
		t.Errorf("peak active %d outside [2, 4]", as.PeakActive)
	}
	// One replica for the whole run, plus the extra replicas for part of it.
	end := float64(res.End) / 1e6
	if as.ReplicaSeconds <= end || as.ReplicaSeconds >= 4*end {
		t.Errorf("replica seconds %.1f outside (%.0f, %.0f)", as.ReplicaSeconds, end, 4*end)
	}
	if res.End >= cfg.Horizon {
		t.Errorf("the run went on idle to the horizon (end %d)", res.End)
	}
	if want := as.ReplicaSeconds / 3600 * 3.6; as.Cost != want {
		t.Errorf("cost %v, want %v", as.Cost, want)
	}
	var done int64
	for i := range res.Instances {
		done += res.Instances[i].Completed
	}
	if done != int64(len(burstWorkload())) {
		t.Errorf("completed %d of %d requests", done, len(burstWorkload()))
	}
}

func TestAutoscaleOscillatorIsDetected(t *testing.T) {
	reqs := burstWorkload()
	osc := autoscaledCluster(policy.AutoscaleSpec{Template: policy.AutoscaleOscillator}, DrainWait)
	osc.Autoscale.ScaleDownCooldownUs = 0
	res, _, bad := runWatching(t, osc, reqs)
	if bad {
		t.Error("a request reached a replica that was not ready")
	}
	thr, _, _ := runWatching(t, autoscaledCluster(policy.AutoscaleSpec{Template: policy.AutoscaleThreshold}, DrainWait), reqs)
	t.Logf("oscillations: oscillator %d, threshold %d", res.Autoscale.Oscillations, thr.Autoscale.Oscillations)
	if res.Autoscale.Oscillations < 10 {
		t.Errorf("oscillator raised only %d oscillations", res.Autoscale.Oscillations)
	}
	if thr.Autoscale.Oscillations != 0 {
		t.Errorf("threshold raised %d oscillations", thr.Autoscale.Oscillations)
	}
}

func TestAutoscaleDrainPolicies(t *testing.T) {
	reqs := burstWorkload()
	for _, d := range []DrainPolicy{DrainWait, DrainImmediate, DrainRedirect} {
		t.Run(string(d), func(t *testing.T) {
			// The oscillator drains replicas under load, so every drain policy has work to do.
			cfg := autoscaledCluster(policy.AutoscaleSpec{Template: policy.AutoscaleOscillator}, d)
			cfg.Autoscale.ScaleDownCooldownUs = 0
			cfg.Options.CheckInvariants = true
			cfg.Autoscale.Provisioning = Delay{MeanUs: 0}
			cfg.Autoscale.ModelLoad = Delay{MeanUs: 0}
			cfg.Autoscale.Warmup = Delay{MeanUs: 0}
			res, _, bad := runWatching(t, cfg, reqs)
			if bad {
				t.Error("a request reached a replica that was not ready")
			}
			as := res.Autoscale
			var completed, dropped, scaled, redirected int64
			for i := range res.Instances {
				st := &res.Instances[i]
				completed += st.Completed
				dropped += st.Dropped
				scaled += st.DroppedScaledDown
				redirected += st.Redirected
			}
			t.Logf("completed %d dropped %d redirected %d", completed, dropped, redirected)
			if completed+dropped != int64(len(reqs)) {
				t.Errorf("completed %d + dropped %d != %d requests", completed, dropped, len(reqs))
			}
			if scaled != as.DroppedScaledDown || redirected != as.Redirected {
				t.Errorf("per-instance drain counters (%d, %d) differ from the autoscaler's (%d, %d)", scaled, redirected, as.DroppedScaledDown, as.Redirected)
			}
			switch d {
			case DrainImmediate:
				if scaled == 0 {
					t.Error("immediate drains under load dropped nothing")
				}
			case DrainRedirect:
				if redirected == 0 || scaled != 0 {
					t.Errorf("redirect drains: %d redirected, %d dropped", redirected, scaled)
				}
			case DrainWait:
				if redirected != 0 || scaled != 0 {
					t.Errorf("wait drains: %d redirected, %d dropped", redirected, scaled)
				}
			}
		})
	}
}

func TestAutoscaleWithPolicyBundle(t *testing.T) {
	reqs := burstWorkload()
	for _, yaml := range []string{"routing: {policy: round-robin}", "routing: {policy: least-loaded}"} {
		cfg := autoscaledCluster(policy.AutoscaleSpec{Template: policy.AutoscaleQueueDepth, TargetQueueDepth: 2}, DrainRedirect)
		cfg.Policy = parseBundle(t, yaml)
		cfg.Options.CheckInvariants = true
		res, _, bad := runWatching(t, cfg, reqs)
		if bad {
			t.Errorf("%s: a request reached a replica that was not ready", yaml)
		}
		if res.Autoscale.ScaleUps == 0 {
			t.Errorf("%s: queue-depth never scaled up", yaml)
		}
	}
}

func TestAutoscaleTargetUtilization(t *testing.T) {
	cfg := autoscaledCluster(policy.AutoscaleSpec{Template: policy.AutoscaleTargetUtilization, TargetUtilization: 0.5}, DrainWait)
	res, _, _ := runWatching(t, cfg, burstWorkload())
	if res.Autoscale.PeakActive != 4 {
		t.Errorf("target utilization 0.5 under the burst peaked at %d replicas, want 4", res.Autoscale.PeakActive)
	}
}

func TestAutoscaleDeterministicWithRandomDelays(t *testing.T) {
	out := func() []byte {
		cfg := autoscaledCluster(policy.AutoscaleSpec{}, DrainRedirect)
		cfg.Autoscale.Provisioning = Delay{MeanUs: 5 * sec, StddevUs: 2 * sec}
		cfg.Autoscale.ModelLoad = Delay{MeanUs: 2 * sec, StddevUs: sec}
		cfg.Seed = 11
		src := &sliceSource{reqs: burstWorkload()}
		res, err := Run(cfg, src)
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal([]any{res.Report(src.Tables(), metrics.Options{}), res.Records, res.Autoscale})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	if a, b := out(), out(); !bytes.Equal(a, b) {
		t.Error("two runs of the same autoscaled input differ")
	}
}

func TestAutoscaleValidation(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*AutoscaleConfig)
		want string
	}{
		{"min>max", func(a *AutoscaleConfig) { a.MinReplicas = 5 }, "must not exceed max"},
		{"min0", func(a *AutoscaleConfig) { a.MinReplicas = 0 }, "min replicas must be >= 1"},
		{"slots", func(a *AutoscaleConfig) { a.MaxReplicas = 3 }, "number of instance slots"},
		{"initial", func(a *AutoscaleConfig) { a.InitialReplicas = 9 }, "initial replicas"},
		{"interval", func(a *AutoscaleConfig) { a.IntervalUs = 0 }, "interval"},
		{"drain", func(a *AutoscaleConfig) { a.Drain = "later" }, "drain policy"},
		{"delay", func(a *AutoscaleConfig) { a.Warmup.MeanUs = -1 }, "warm-up"},
		{"template", func(a *AutoscaleConfig) { a.Policy.Template = "magic" }, "unknown"},
		{"hysteresis", func(a *AutoscaleConfig) { a.Policy.ScaleDownThreshold = 0.9 }, "below scale_up_threshold"},
	} {
		cfg := autoscaledCluster(policy.AutoscaleSpec{}, DrainWait)
		c.mod(cfg.Autoscale)
		_, err := Run(cfg, &sliceSource{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}
