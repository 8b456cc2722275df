package sim

import (
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// A cold start: the initial replica loads for ModelLoad + Warmup (2 s + 1 s) before it serves,
// so a request arriving at 0 waits at the router and its first token comes after 3 s; every
// request is still served, and the replica time counts from 0.
func TestColdStartInitialReplicas(t *testing.T) {
	reqs := []workload.Request{{ID: 0, Arrival: 0, InputLen: 64, OutputLen: 4}, {ID: 1, Arrival: sec, InputLen: 64, OutputLen: 4}}
	run := func(cold bool) (*Result, []int64) {
		cfg := autoscaledCluster(policy.AutoscaleSpec{Template: policy.AutoscaleThreshold}, DrainWait)
		cfg.Autoscale.ColdStart = cold
		cfg.Options.CheckInvariants = true
		res, readyAt, bad := runWatching(t, cfg, reqs)
		if bad {
			t.Fatal("a request reached a replica that was not ready")
		}
		return res, readyAt
	}
	warm, _ := run(false)
	cold, readyAt := run(true)
	if readyAt[0] != 3*sec {
		t.Fatalf("cold initial replica ready at %d, want %d", readyAt[0], 3*sec)
	}
	for i, r := range cold.Records {
		if r.Outcome != OutcomeCompleted {
			t.Fatalf("request %d: %v", i, r.Outcome)
		}
		// Both waited for the replica: their first token comes after it is ready.
		if r.Arrival+r.TTFT <= 3*sec {
			t.Errorf("request %d first token at %d, before the replica was ready", i, r.Arrival+r.TTFT)
		}
		if w := warm.Records[i]; r.TTFT < w.TTFT+3*sec-r.Arrival-sec/2 {
			t.Errorf("request %d TTFT %d cold vs %d warm: the load time is missing", i, r.TTFT, w.TTFT)
		}
	}
	if cold.Autoscale.ReplicaSeconds < warm.Autoscale.ReplicaSeconds {
		t.Errorf("cold replica seconds %v below warm %v", cold.Autoscale.ReplicaSeconds, warm.Autoscale.ReplicaSeconds)
	}
}

// The loading delay on its own stream: a random load time changes when the replica of a burst
// is ready, deterministically per seed, and the provisioning draws (on the autoscaler stream)
// do not move when the load time's mean does.
func TestLoadingStream(t *testing.T) {
	run := func(load Delay, own bool) []int64 {
		cfg := autoscaledCluster(policy.AutoscaleSpec{Template: policy.AutoscaleThreshold}, DrainWait)
		cfg.Autoscale.ModelLoad, cfg.Autoscale.LoadingStream = load, own
		cfg.Autoscale.Provisioning = Delay{MeanUs: 5 * sec, StddevUs: sec}
		res, readyAt, _ := runWatching(t, cfg, burstWorkload())
		return append([]int64{res.Autoscale.Actions[0].Time}, readyAt...)
	}
	a := run(Delay{MeanUs: 2 * sec, StddevUs: sec / 2}, true)
	b := run(Delay{MeanUs: 2 * sec, StddevUs: sec / 2}, true)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, different ready times: %v vs %v", a, b)
		}
	}
	// A constant load time 10 s longer on its own stream: the first scale-up's replica is
	// ready exactly 10 s later than with the same constant load time on the shared stream
	// (a constant draws nothing, so the provisioning draw is the same).
	short := run(Delay{MeanUs: 2 * sec}, false)
	long := run(Delay{MeanUs: 12 * sec}, true)
	if short[0] != long[0] {
		t.Fatalf("first decision at %d vs %d", short[0], long[0])
	}
	if long[2]-short[2] != 10*sec {
		t.Errorf("slot 1 ready at %d with a 12 s load, %d with 2 s: want 10 s apart", long[2], short[2])
	}
}

// A cluster of two fixed replicas that cold-start (FixedColdStart, 2.5 s load): both are ready
// at exactly 2.5 s, a request arriving at 0 gets its first token 2.5 s plus its warm TTFT
// later, the autoscaler never acts, and a replica's time counts from 0.
func TestFixedColdStart(t *testing.T) {
	reqs := []workload.Request{{ID: 0, Arrival: 0, InputLen: 64, OutputLen: 4}, {ID: 1, Arrival: 4 * sec, InputLen: 64, OutputLen: 4}}
	ic := testInstance(plainModel())
	warmCfg := &Config{Instances: []InstanceConfig{ic, ic}, Options: Options{RequestRecords: true}}
	warm, _, _ := runWatching(t, warmCfg, reqs)
	cfg := &Config{Instances: []InstanceConfig{ic, ic}, Options: Options{RequestRecords: true, CheckInvariants: true},
		Autoscale: FixedColdStart(2, Delay{MeanUs: 2500_000}, Delay{}, sec)}
	cold, readyAt, bad := runWatching(t, cfg, reqs)
	if bad {
		t.Fatal("a request reached a replica that was not ready")
	}
	if readyAt[0] != 2500_000 || readyAt[1] != 2500_000 {
		t.Fatalf("replicas ready at %v, want both at 2.5 s", readyAt)
	}
	if got, want := cold.Records[0].TTFT, warm.Records[0].TTFT+2500_000; got != want {
		t.Errorf("first request TTFT %d, want the load (2.5 s) plus its warm TTFT: %d", got, want)
	}
	if cold.Records[1].TTFT != warm.Records[1].TTFT {
		t.Errorf("a request after the load: TTFT %d, warm %d", cold.Records[1].TTFT, warm.Records[1].TTFT)
	}
	as := cold.Autoscale
	if as.ScaleUps+as.ScaleDowns != 0 || as.PeakActive != 2 {
		t.Errorf("a fixed cluster scaled: %+v", as)
	}
	if end := float64(cold.End) / 1e6; as.ReplicaSeconds != 2*end {
		t.Errorf("replica seconds %v, want 2 x %v", as.ReplicaSeconds, end)
	}
}
