package sim

import (
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

func TestSingleRequestTiming(t *testing.T) {
	m := &linearModel{base: 1000, perPrefill: 10, perDecode: 100, queueing: 500, outTok: 40, post: 700}
	cfg := &Config{Instances: []InstanceConfig{testInstance(m)}, Options: Options{CheckInvariants: true, RequestRecords: true}}
	src := &sliceSource{reqs: []workload.Request{{ID: 7, Arrival: 100, InputLen: 100, OutputLen: 4}}}
	res, err := Run(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	// Queued at 600; prefill step 1000+10*100 = 2000 -> first token at 2600 (+40 processing).
	// Three decode steps of 1100 each; ITL = 1140 each.
	if len(res.Records) != 1 || res.Records[0].Outcome != OutcomeCompleted {
		t.Fatalf("records %+v", res.Records)
	}
	r := res.Records[0]
	if r.TTFT != 2600+40-100 {
		t.Errorf("TTFT %d, want %d", r.TTFT, 2540)
	}
	if r.ITLCount != 3 || r.ITLSum != 3*1140 {
		t.Errorf("ITL %d over %d, want %d over 3", r.ITLSum, r.ITLCount, 3*1140)
	}
	if r.E2E != r.TTFT+3*1140+700 {
		t.Errorf("E2E %d", r.E2E)
	}
	if r.OutputTokens != 4 || r.SchedulingDelay != 500 {
		t.Errorf("output tokens %d, scheduling delay %d", r.OutputTokens, r.SchedulingDelay)
	}
	if res.End != 2600+3*1100 {
		t.Errorf("end %d, want %d", res.End, 2600+3*1100)
	}
	st := res.Instances[0]
	if st.Completed != 1 || st.TotalInputTokens != 100 || st.TotalOutputTokens != 4 || st.Steps != 4 {
		t.Errorf("stats %+v", st)
	}
}

func TestSmokeInvariants(t *testing.T) {
	m := defaultModel()
	cfg := &Config{Instances: []InstanceConfig{testInstance(m), testInstance(m)}, Options: Options{CheckInvariants: true}}
	reqs := gen(genSpec{n: 300, gapUs: 20000, inMean: 300, inStd: 100, outMean: 100, outSd: 50, prefixLen: 64, prefixGroups: 3, seed: 1})
	res, err := Run(cfg, &sliceSource{reqs: reqs})
	if err != nil {
		t.Fatal(err)
	}
	if n := res.Instances[0].Completed + res.Instances[1].Completed; n != 300 {
		t.Fatalf("completed %d of 300", n)
	}
	t.Logf("end %d events %d hits %d/%d", res.End, res.Events, res.Instances[0].PrefixHitTokens, res.Instances[0].PrefixLookupTokens)
}
