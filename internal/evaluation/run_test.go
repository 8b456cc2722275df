package evaluation

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

func TestSummarizeHandComputed(t *testing.T) {
	st := Summarize([]float64{1, 2, 3})
	// mean 2, sample variance ((1)^2+0+(1)^2)/2 = 1, sd 1, ci95 = t(2) * 1/sqrt(3).
	if st.N != 3 || st.Mean != 2 || st.Stddev != 1 {
		t.Errorf("stats = %+v", st)
	}
	if want := 4.302653 / math.Sqrt(3); math.Abs(st.CI95-want) > 1e-9 {
		t.Errorf("ci95 = %v, want %v", st.CI95, want)
	}
	if one := Summarize([]float64{5}); one.Mean != 5 || one.Stddev != 0 || one.CI95 != 0 {
		t.Errorf("one value: %+v", one)
	}
	if got := StudentT975(1); got != 12.706205 {
		t.Errorf("t(1) = %v", got)
	}
	// Beyond the table the expansion is within 1e-3 of the exact 0.975 quantile (t(40) = 2.021075,
	// t(120) = 1.979930).
	for df, want := range map[int]float64{40: 2.021075, 120: 1.979930} {
		if got := StudentT975(df); math.Abs(got-want) > 1e-3 {
			t.Errorf("t(%d) = %v, want %v", df, got, want)
		}
	}
}

// smallRun resolves cache-aware-chat with the given seeds and runs it.
func smallRun(t *testing.T, seeds ...int64) (*Resolved, *Result) {
	t.Helper()
	in := baseInputs(t)
	in.Spec.Seeds = seeds
	r := mustResolve(t, in)
	res, err := Run(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return r, res
}

func TestReplicateStatisticsOverThreeSeeds(t *testing.T) {
	_, res := smallRun(t, 1, 2, 3)
	st := res.Status()
	if st.Replicates == nil || st.Replicates.Count != 3 {
		t.Fatalf("replicates = %+v", st.Replicates)
	}
	// Each seed on its own gives the per-seed values the statistics are made of.
	var singles []float64
	for _, s := range []int64{1, 2, 3} {
		_, one := smallRun(t, s)
		ost := one.Status()
		if ost.Replicates != nil {
			t.Errorf("one seed has replicate statistics")
		}
		singles = append(singles, ost.Metrics.TtftP99Ms)
	}
	if singles[0] == singles[1] && singles[1] == singles[2] {
		t.Fatalf("the three seeds give identical TTFT p99 %v; the test needs variation", singles)
	}
	want := Summarize(singles)
	var got *blisv1alpha1.ReplicateStat
	for i := range st.Replicates.Metrics {
		if st.Replicates.Metrics[i].Name == "ttftP99Ms" {
			got = &st.Replicates.Metrics[i]
		}
	}
	if got == nil {
		t.Fatalf("no ttftP99Ms replicate row in %+v", st.Replicates.Metrics)
	}
	// The per-seed status values are rounded to 6 digits, so compare with a relative tolerance.
	rel := func(a, b float64) bool { return math.Abs(a-b) <= 1e-5*math.Max(1, math.Abs(b)) }
	if !rel(got.Mean, want.Mean) || !rel(got.Stddev, want.Stddev) || !rel(got.Ci95, want.CI95) {
		t.Errorf("ttftP99Ms stats = %+v, want %+v", *got, want)
	}
	if !rel(st.Metrics.TtftP99Ms, want.Mean) {
		t.Errorf("status metric %v is not the mean %v", st.Metrics.TtftP99Ms, want.Mean)
	}
	if len(st.Replicates.Metrics) > blisv1alpha1.MaxReplicateStats {
		t.Errorf("%d replicate rows", len(st.Replicates.Metrics))
	}
	// Objectives come first in the replicate rows.
	if st.Replicates.Metrics[0].Name != "ttftP99Ms" || st.Replicates.Metrics[1].Name != "e2eP99Ms" || st.Replicates.Metrics[2].Name != "responsesPerSec" {
		t.Errorf("first replicate rows %v are not the objectives", st.Replicates.Metrics[:3])
	}
}

func TestStatusFitnessAndBounds(t *testing.T) {
	_, res := smallRun(t, 7)
	st := res.Status()
	if st.Phase != blisv1alpha1.PhaseSucceeded || len(st.InputHash) != 64 || st.EngineVersion == "" {
		t.Errorf("status header: %q %q %q", st.Phase, st.InputHash, st.EngineVersion)
	}
	m := st.Metrics
	if m.CompletedRequests == 0 || m.InjectedRequests != 100 || m.TtftP99Ms <= 0 || m.ReplicaSeconds <= 0 {
		t.Fatalf("metrics look empty: %+v", m)
	}
	// 4 replicas for the whole simulated duration.
	if rel := math.Abs(m.ReplicaSeconds-4*m.VllmEstimatedDurationS) / m.ReplicaSeconds; rel > 1e-5 {
		t.Errorf("replicaSeconds %v != 4 x %v", m.ReplicaSeconds, m.VllmEstimatedDurationS)
	}
	// The workload has goodput targets for critical and batch, so attainment is defined.
	if m.SloAttainment <= 0 {
		t.Errorf("sloAttainment = %v", m.SloAttainment)
	}
	names := map[string]bool{}
	for _, c := range m.PerClass {
		names[c.Name] = true
	}
	if !names["critical"] || !names["batch"] {
		t.Errorf("per-class rows %v", m.PerClass)
	}
	// Objectives: ttftP99Ms minimize (ref 100 ms), e2eP99Ms minimize (ref 1000 ms),
	// responsesPerSec maximize (ref 100), weights 0.5, 0.3, 0.2.
	n1 := 1 / (1 + m.TtftP99Ms/100)
	n2 := 1 / (1 + m.E2eP99Ms/1000)
	n3 := m.ResponsesPerSec / (m.ResponsesPerSec + 100)
	want := []float64{n1, n2, n3}
	if len(st.Fitness) != 3 {
		t.Fatalf("fitness = %+v", st.Fitness)
	}
	for i, f := range st.Fitness {
		if math.Abs(f.Value-want[i]) > 1e-5 {
			t.Errorf("fitness %s = %v, want %v", f.Name, f.Value, want[i])
		}
	}
	score := 0.5*n1 + 0.3*n2 + 0.2*n3
	if st.FitnessScore == nil || math.Abs(*st.FitnessScore-score) > 1e-5 {
		t.Errorf("fitnessScore = %v, want %v", st.FitnessScore, score)
	}
	// Counts are exact, not rounded to significant digits.
	for i, d := range metricDefs {
		if d.name == "totalInputTokens" && float64(m.TotalInputTokens) != res.Seeds[0].values[i] {
			t.Errorf("totalInputTokens %d, engine count %v", m.TotalInputTokens, res.Seeds[0].values[i])
		}
	}
	// Every float passed through RoundMetric.
	if m.TtftP99Ms != blisv1alpha1.RoundMetric(m.TtftP99Ms) || *st.FitnessScore != blisv1alpha1.RoundMetric(*st.FitnessScore) {
		t.Errorf("status numbers are not rounded")
	}
}

func TestBLISFitnessWeightsAlone(t *testing.T) {
	in := baseInputs(t)
	in.Spec.Seeds = []int64{3}
	in.Spec.Objectives = nil
	in.Spec.FitnessWeights = map[string]float64{"p99_ttft": 0.5, "throughput": 0.5}
	r := mustResolve(t, in)
	res, err := Run(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	st := res.Status()
	m := st.Metrics
	p99 := 1 / (1 + m.TtftP99Ms)
	thr := m.ResponsesPerSec / (m.ResponsesPerSec + 100)
	if st.FitnessScore == nil || math.Abs(*st.FitnessScore-(0.5*p99+0.5*thr)) > 1e-5 {
		t.Errorf("BLIS score = %v, want %v", st.FitnessScore, 0.5*p99+0.5*thr)
	}
	if len(st.Fitness) != 2 || st.Fitness[0].Name != "p99_ttft" || st.Fitness[1].Name != "throughput" {
		t.Errorf("BLIS components = %+v", st.Fitness)
	}
}

func TestEngineEnvelopeReproducesRun(t *testing.T) {
	r, res := smallRun(t, 1, 2)
	want := res.Status()
	want.Phase = ""
	env := mustEnvelope(t, r)
	out, err := RunEnvelope(context.Background(), env, Options{Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	if out.InputHash != r.Hash || !reflect.DeepEqual(*out.Status, want) {
		got, _ := json.Marshal(out.Status)
		exp, _ := json.Marshal(want)
		t.Errorf("engine status differs:\n%s\n%s", got, exp)
	}

	// Copying the engine's result into a status gives what ApplyTo gives in process.
	var viaJob, inProcess blisv1alpha1.EvaluationStatus
	js, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := ParseEngineResult(js)
	if err != nil || !parsed.ApplyTo(&viaJob) {
		t.Fatalf("engine result: %v", err)
	}
	res.ApplyTo(&inProcess)
	if !reflect.DeepEqual(viaJob, inProcess) {
		t.Errorf("status from the engine result differs from the in-process status")
	}

	// A changed document fails the hash check.
	tampered := strings.Replace(string(env), `"replicas":4`, `"replicas":5`, 1)
	if tampered == string(env) {
		t.Fatal("the envelope has no replicas field to tamper with")
	}
	_, err = RunEnvelope(context.Background(), []byte(tampered), Options{})
	var ee *EngineError
	if !errors.As(err, &ee) || ee.Code != ExitHashMismatch || ee.Result.Reason != ReasonHashMismatch {
		t.Errorf("tampered document: %v", err)
	}
	// Garbage is an I/O failure.
	if _, err := RunEnvelope(context.Background(), []byte("not json"), Options{}); !errors.As(err, &ee) || ee.Code != ExitIO {
		t.Errorf("garbage input: %v", err)
	}
	// A document resolved by another engine version is refused.
	doc := r.Document
	doc.EngineVersion = "v0.0.0-other"
	canon, err := Canonical(doc)
	if err != nil {
		t.Fatal(err)
	}
	other, err := Canonical(Envelope{InputHash: Hash(canon), Document: canon})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RunEnvelope(context.Background(), other, Options{}); !errors.As(err, &ee) || ee.Result.Reason != ReasonEngineVersionMismatch {
		t.Errorf("other engine version: %v", err)
	}
}

func TestRunHonoursCancellationAndOrder(t *testing.T) {
	in := baseInputs(t)
	in.Spec.Seeds = []int64{5, 1, 3}
	r := mustResolve(t, in)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, r); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: %v", err)
	}
	res, err := RunWithOptions(context.Background(), r, Options{Parallelism: 3})
	if err != nil {
		t.Fatal(err)
	}
	seq, err := RunWithOptions(context.Background(), r, Options{Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range []int64{5, 1, 3} {
		if res.Seeds[i].Seed != s {
			t.Errorf("seed %d at position %d, want %d", res.Seeds[i].Seed, i, s)
		}
	}
	a, b := res.Status(), seq.Status()
	if !reflect.DeepEqual(a, b) {
		t.Errorf("parallel and sequential runs differ")
	}
}

// TestTraceOnVolumeAndInline replays the same trace file from a path (read by the engine) and
// inline (read at resolve time): the results are the same, the hashes differ.
func TestTraceOnVolumeAndInline(t *testing.T) {
	const path = "../engine/workload/testdata/traces/azure_conv_head300.csv"
	in := baseInputs(t)
	in.Spec.Seeds = []int64{1}
	w := in.Workload.DeepCopy()
	speed := 4.0
	w.Spec = blisv1alpha1.WorkloadSpecSpec{Trace: &blisv1alpha1.TraceSource{Path: path, Speedup: &speed}}
	in.Workload = w
	in.Spec.Objectives = []blisv1alpha1.Objective{{Name: "ttftP99Ms", Direction: "minimize", Weight: 1}}
	onVolume := mustResolve(t, in)
	if tr := onVolume.Document.Workload.Trace; tr.Path != path || tr.Data != "" || tr.Format != "azure" {
		t.Fatalf("trace on a volume: %+v", tr)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	in.Files = map[string][]byte{path: data}
	inline := mustResolve(t, in)
	if inline.Document.Workload.Trace.Data != string(data) || inline.Hash == onVolume.Hash {
		t.Fatalf("inline trace: data %d bytes, hashes %s %s", len(inline.Document.Workload.Trace.Data), inline.Hash, onVolume.Hash)
	}
	a, err := Run(context.Background(), onVolume)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(context.Background(), inline)
	if err != nil {
		t.Fatal(err)
	}
	sa, sb := a.Status(), b.Status()
	if !reflect.DeepEqual(sa.Metrics, sb.Metrics) || sa.Metrics.InjectedRequests != 100 {
		t.Errorf("the two replays differ or are empty: %+v", sa.Metrics)
	}
	// A missing file on the volume fails the run, not the resolution.
	w.Spec.Trace.Path = "/nonexistent/trace.csv"
	in.Files = nil
	missing := mustResolve(t, in)
	if _, err := Run(context.Background(), missing); err == nil || !strings.Contains(err.Error(), "nonexistent") {
		t.Errorf("missing trace file: %v", err)
	}
}
