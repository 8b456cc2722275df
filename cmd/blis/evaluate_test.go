package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation"
)

// evaluateCLI executes `blis evaluate args...` and returns stdout, stderr and the error.
func evaluateCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"evaluate"}, args...))
	err := root.Execute()
	return out.String(), errOut.String(), err
}

// sampleFiles are -f flags for every manifest in config/samples.
func sampleFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../config/samples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	var args []string
	for _, f := range files {
		if filepath.Base(f) != "kustomization.yaml" {
			args = append(args, "-f", f)
		}
	}
	return args
}

func mustStatus(t *testing.T, out string) blisv1alpha1.EvaluationStatus {
	t.Helper()
	var st blisv1alpha1.EvaluationStatus
	if err := yaml.UnmarshalStrict([]byte(out), &st); err != nil {
		t.Fatalf("output is not an EvaluationStatus: %v\n%s", err, out)
	}
	return st
}

// TestEvaluateEverySample runs every Evaluation of config/samples, and every sample workload
// under every sample policy bundle on the sample cluster, twice each: both runs must succeed and
// print byte-identical status.
func TestEvaluateEverySample(t *testing.T) {
	files := sampleFiles(t)
	small := []string{"--num-requests", "60"}
	for _, ev := range []string{"cache-aware-chat", "inline-candidate-0001", "capacity-plan-qwen7b", "compare-baseline-run", "compare-candidate-run"} {
		t.Run(ev, func(t *testing.T) {
			args := append(append(append([]string{}, files...), small...), "--evaluation", ev)
			first, _, err := evaluateCLI(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			second, _, err := evaluateCLI(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			if first != second {
				t.Fatalf("two runs differ:\n%s\n---\n%s", first, second)
			}
			st := mustStatus(t, first)
			if st.Phase != blisv1alpha1.PhaseSucceeded || st.Metrics == nil || st.Metrics.CompletedRequests == 0 || st.FitnessScore == nil {
				t.Errorf("incomplete status:\n%s", first)
			}
		})
	}

	workloads := []string{"chat-and-batch", "react-agents", "scenario-bursty", "spiky-and-periodic", "azure-code-replay"}
	policies := []string{"cache-aware", "weighted-routing-from-file", "capacity-baseline", "compare-baseline", "compare-candidate"}
	dir := t.TempDir()
	for _, w := range workloads {
		for _, p := range policies {
			name := w + "--" + p
			t.Run(name, func(t *testing.T) {
				manifest := fmt.Sprintf(`apiVersion: blis.inference-sim.io/v1alpha1
kind: Evaluation
metadata: {name: %s}
spec:
  clusterRef: {name: llama8b-h100}
  policyRef: {name: %s}
  workloadRef: {name: %s}
  seeds: [1, 2]
  objectives:
  - {name: e2eP99Ms, direction: minimize}
`, name, p, w)
				path := filepath.Join(dir, name+".yaml")
				if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
					t.Fatal(err)
				}
				args := append(append(append([]string{}, files...), small...), "-f", path, "--evaluation", name, "-o", "json")
				first, _, err := evaluateCLI(t, args...)
				if err != nil {
					t.Fatal(err)
				}
				second, _, err := evaluateCLI(t, args...)
				if err != nil {
					t.Fatal(err)
				}
				if first != second {
					t.Fatalf("two runs differ")
				}
				var st blisv1alpha1.EvaluationStatus
				if err := json.Unmarshal([]byte(first), &st); err != nil {
					t.Fatal(err)
				}
				if st.Metrics == nil || st.Metrics.InjectedRequests == 0 || st.Replicates == nil || st.Replicates.Count != 2 {
					t.Errorf("incomplete status:\n%s", first)
				}
			})
		}
	}
}

// TestEvaluateDisaggregatedAutoscaledSample: the llama70b-pd sample (a TP8 prefill pool and a
// TP4 decode pool autoscaled within its own bounds, a CPU KV tier) evaluates, with replica time
// from the autoscaler and both pools' metrics.
func TestEvaluateDisaggregatedAutoscaledSample(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pd.yaml")
	manifest := `apiVersion: blis.inference-sim.io/v1alpha1
kind: Evaluation
metadata: {name: pd}
spec:
  clusterRef: {name: llama70b-pd}
  policyRef: {name: cache-aware}
  workloadRef: {name: chat-and-batch}
`
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(sampleFiles(t), "-f", path, "--evaluation", "pd", "--num-requests", "60", "-o", "json")
	out, _, err := evaluateCLI(t, args...)
	if err != nil {
		t.Fatalf("P/D cluster: %v", err)
	}
	var st blisv1alpha1.EvaluationStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.Metrics == nil || st.Metrics.CompletedRequests == 0 || st.Metrics.ReplicaSeconds <= 0 {
		t.Fatalf("metrics %+v", st.Metrics)
	}
	if p := st.Metrics.Pools; len(p) != 2 || p[0].Name != "prefill" || p[0].Replicas != 2 || p[1].Name != "decode" || p[1].Replicas != 8 ||
		p[1].CompletedRequests != st.Metrics.CompletedRequests || p[1].ReplicaSeconds <= 0 {
		t.Errorf("pool metrics %+v", p)
	}
}

// TestEngineReproducesEvaluate writes the resolved input with evaluate, runs the engine
// entrypoint on that file alone and compares the numbers.
func TestEngineReproducesEvaluate(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "input.json")
	output := filepath.Join(dir, "result.json")
	args := append(sampleFiles(t), "--evaluation", "compare-candidate-run", "--num-requests", "80", "--write-input", input, "-o", "json")
	out, _, err := evaluateCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	var want blisv1alpha1.EvaluationStatus
	if err := json.Unmarshal([]byte(out), &want); err != nil {
		t.Fatal(err)
	}
	code, err := runEngine(t.Context(), input, output, 1)
	if err != nil || code != evaluation.ExitOK {
		t.Fatalf("engine: code %d, %v", code, err)
	}
	data, err := os.ReadFile(output)
	if err != nil {
		t.Fatal(err)
	}
	res, err := evaluation.ParseEngineResult(data)
	if err != nil {
		t.Fatal(err)
	}
	want.Phase = ""
	gotJS, _ := json.Marshal(res.Status)
	wantJS, _ := json.Marshal(want)
	if string(gotJS) != string(wantJS) || res.InputHash != want.InputHash {
		t.Errorf("engine result differs from evaluate:\n%s\n%s", gotJS, wantJS)
	}

	// A corrupted input is refused with the hash-mismatch exit code and a result saying so.
	env, err := os.ReadFile(input)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(env, []byte(`"seeds":[1,2,3]`), []byte(`"seeds":[1,2,4]`), 1)
	if bytes.Equal(bad, env) {
		t.Fatal("the input has no seeds to corrupt")
	}
	if err := os.WriteFile(input, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	code, err = runEngine(t.Context(), input, output, 1)
	if code != evaluation.ExitHashMismatch || err == nil {
		t.Errorf("corrupted input: code %d, %v", code, err)
	}
	data, _ = os.ReadFile(output)
	if res, err := evaluation.ParseEngineResult(data); err != nil || res.Reason != evaluation.ReasonHashMismatch || res.Status != nil {
		t.Errorf("corrupted input result: %+v, %v", res, err)
	}
	if code, _ := runEngine(t.Context(), filepath.Join(dir, "missing.json"), output, 1); code != evaluation.ExitIO {
		t.Errorf("missing input: code %d", code)
	}
}

func TestEvaluateBLISFilesAndClusterFlags(t *testing.T) {
	wl := "../../internal/blisfile/testdata/examples/multiturn-chat-demo.yaml"
	pol := "../../internal/blisfile/testdata/examples/weighted-routing.yaml"
	args := []string{"-f", wl, "-f", pol, "--model", "meta-llama/llama-3.1-8b-instruct", "--hardware", "H100", "--tp", "1",
		"--num-instances", "2", "--num-requests", "50", "--seeds", "4,5"}
	out, _, err := evaluateCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	st := mustStatus(t, out)
	if st.Metrics == nil || st.Metrics.CompletedRequests == 0 || st.Replicates == nil || st.Replicates.Count != 2 {
		t.Errorf("status:\n%s", out)
	}
	if st.FitnessScore != nil {
		t.Errorf("a synthesized Evaluation without objectives has a fitness score")
	}
	if _, _, err := evaluateCLI(t, "-f", wl, "--num-requests", "50"); err == nil || !strings.Contains(err.Error(), "--model") {
		t.Errorf("no cluster: %v", err)
	}
	if _, _, err := evaluateCLI(t, "-f", wl, "--tp", "2"); err == nil || !strings.Contains(err.Error(), "give --model too") {
		t.Errorf("--tp without --model: %v", err)
	}
}

func TestEvaluateFormats(t *testing.T) {
	base := append(sampleFiles(t), "--evaluation", "cache-aware-chat", "--num-requests", "60", "-o", "json")
	out, _, err := evaluateCLI(t, append(base, "--format", "gepa")...)
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Score      float64 `json:"score"`
		Reflection string  `json:"reflection"`
	}
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		t.Fatal(err)
	}
	if g.Score <= 0 || g.Score > 1 || !strings.Contains(g.Reflection, "Evaluation cache-aware-chat") ||
		!strings.Contains(g.Reflection, "Class critical") || !strings.Contains(g.Reflection, "Across seeds, ttftP99Ms") {
		t.Errorf("gepa output: %+v", g)
	}
	out, _, err = evaluateCLI(t, append(base, "--format", "openevolve")...)
	if err != nil {
		t.Fatal(err)
	}
	var flat map[string]float64
	if err := json.Unmarshal([]byte(out), &flat); err != nil {
		t.Fatal(err)
	}
	if flat["combined_score"] != g.Score || flat["ttftP99Ms"] <= 0 || flat["ttftP99Ms/critical"] <= 0 || flat["fitness/ttftP99Ms"] <= 0 {
		t.Errorf("openevolve output: %v", flat)
	}
	if _, _, err := evaluateCLI(t, append(base, "--format", "csv")...); err == nil {
		t.Error("an unknown format was accepted")
	}
	if _, _, err := evaluateCLI(t, sampleFiles(t)...); err == nil || !strings.Contains(err.Error(), "choose one with --evaluation") {
		t.Errorf("several Evaluations without --evaluation: %v", err)
	}
}

func TestEvaluateEmbeddedDefault(t *testing.T) {
	out, stderr, err := evaluateCLI(t, "--num-requests", "40", "--seeds", "11")
	if err != nil {
		t.Fatal(err)
	}
	st := mustStatus(t, out)
	if st.Metrics == nil || st.Metrics.CompletedRequests != 40 {
		t.Errorf("the embedded quick start did not complete its 40 requests:\n%s", out)
	}
	var names []string
	for _, f := range st.Fitness {
		names = append(names, f.Name)
	}
	if got, want := strings.Join(names, ","), "ttftP99Ms,sloAttainment/critical,responsesPerSec"; got != want {
		t.Errorf("fitness objectives = %s, want the quick start's %s", got, want)
	}
	// Everything the quick start configures is simulated, so nothing is reported as ignored.
	if stderr != "" {
		t.Errorf("unexpected notes on stderr: %q", stderr)
	}
}

// The trace flags reach status: the reflection of --format gepa is the trace summary with the
// chosen strategy, --format openevolve carries the anomaly counters, and bad settings are
// refused with the field named.
func TestEvaluateTraceFlags(t *testing.T) {
	base := append(sampleFiles(t), "--evaluation", "cache-aware-chat", "--num-requests", "80", "--seeds", "3", "-o", "json")
	out, _, err := evaluateCLI(t, append(base, "--trace-level", "decisions", "--summary-strategy", "decision_audit", "--format", "gepa")...)
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Score      float64 `json:"score"`
		Reflection string  `json:"reflection"`
	}
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		t.Fatal(err)
	}
	out, _, err = evaluateCLI(t, append(base, "--trace-level", "decisions", "--summary-strategy", "decision_audit")...)
	if err != nil {
		t.Fatal(err)
	}
	st := mustStatus(t, out)
	if st.TraceSummary == "" || !strings.Contains(g.Reflection, st.TraceSummary) ||
		!strings.Contains(st.TraceSummary, "## Decision Audit (") || st.Anomalies == nil {
		t.Errorf("reflection:\n%s\nstatus summary:\n%s", g.Reflection, st.TraceSummary)
	}
	out, _, err = evaluateCLI(t, append(base, "--format", "openevolve")...)
	if err != nil {
		t.Fatal(err)
	}
	var flat map[string]float64
	if err := json.Unmarshal([]byte(out), &flat); err != nil {
		t.Fatal(err)
	}
	if _, ok := flat["anomalies/priorityInversions"]; !ok {
		t.Errorf("openevolve output without anomalies: %v", flat)
	}
	path := filepath.Join(t.TempDir(), "trace.json")
	if _, _, err := evaluateCLI(t, append(base, "--trace-level", "full", "--trace-output", path)...); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var traces struct {
		Seeds []struct {
			Seed    int64    `json:"seed"`
			Classes []string `json:"classes"`
			Trace   struct {
				Level   string
				Samples []struct {
					ID      uint64
					Outcome string
				}
				Batches   []struct{ Running int32 }
				Anomalies struct{ Routed int64 }
			} `json:"trace"`
		} `json:"seeds"`
	}
	if err := json.Unmarshal(data, &traces); err != nil {
		t.Fatal(err)
	}
	if s := traces.Seeds; len(s) != 1 || s[0].Seed != 3 || s[0].Trace.Anomalies.Routed != 80 || len(s[0].Trace.Samples) != 80 ||
		s[0].Trace.Level != "full" || s[0].Trace.Samples[0].Outcome != "completed" ||
		len(s[0].Trace.Batches) == 0 || len(s[0].Classes) == 0 {
		t.Errorf("trace output: %s", data[:min(len(data), 400)])
	}
	if _, _, err := evaluateCLI(t, append(base, "--trace-level", "loud")...); err == nil ||
		!strings.Contains(err.Error(), `Evaluation cache-aware-chat: spec.trace.level: unknown trace level "loud"`) {
		t.Errorf("bad level: %v", err)
	}
	if _, _, err := evaluateCLI(t, append(base, "--summary-max-tokens", "5")...); err == nil ||
		!strings.Contains(err.Error(), "spec.trace.summaryMaxTokens: must be in [100, 4000], got 5") {
		t.Errorf("bad budget: %v", err)
	}
}
