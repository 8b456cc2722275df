package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/metrics"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// runCLI executes `blis run args...` and returns stdout and the error.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"run"}, args...))
	err := root.Execute()
	return out.String(), err
}

// splitBlocks parses the BLIS stdout layout: a header line before each JSON block.
func splitBlocks(t *testing.T, stdout string) []metrics.Output {
	t.Helper()
	parts := strings.Split(stdout, "=== Simulation Metrics ===\n")
	if parts[0] != "" {
		t.Fatalf("output does not start with the header: %q", parts[0])
	}
	var blocks []metrics.Output
	for _, p := range parts[1:] {
		var o metrics.Output
		dec := json.NewDecoder(strings.NewReader(p))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&o); err != nil {
			t.Fatalf("block %q: %v", p, err)
		}
		blocks = append(blocks, o)
	}
	return blocks
}

const testModel = "meta-llama/llama-3.1-8b-instruct"

func TestRunPrintsInstanceAndClusterBlocks(t *testing.T) {
	out, err := runCLI(t, "--model", testModel, "--num-instances", "2", "--num-requests", "40", "--rate", "10", "--seed", "7")
	if err != nil {
		t.Fatal(err)
	}
	blocks := splitBlocks(t, out)
	if len(blocks) != 3 {
		t.Fatalf("%d blocks, want 2 instances + cluster", len(blocks))
	}
	if blocks[0].InstanceID != "instance_0" || blocks[1].InstanceID != "instance_1" || blocks[2].InstanceID != "cluster" {
		t.Fatalf("block ids %q %q %q", blocks[0].InstanceID, blocks[1].InstanceID, blocks[2].InstanceID)
	}
	c := blocks[2]
	if c.CompletedRequests != 40 || c.InjectedRequests != 40 || blocks[0].CompletedRequests+blocks[1].CompletedRequests != 40 {
		t.Fatalf("counts: cluster %+v", c)
	}
	if !(c.TTFTMeanMs > 0 && c.E2EP99Ms >= c.E2EP90Ms && c.ITLMeanMs > 0 && c.ResponsesPerSec > 0) {
		t.Fatalf("implausible latencies: %+v", c)
	}
	if c.Requests != nil || c.CacheHitRate != nil {
		t.Fatal("stdout must not carry the file-only fields")
	}
}

func TestRunMetricsPathWritesRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.json")
	if _, err := runCLI(t, "--model", testModel, "--num-requests", "25", "--rate", "5", "--prefix-tokens", "64", "--metrics-path", path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var o metrics.Output
	if err := json.Unmarshal(data, &o); err != nil {
		t.Fatal(err)
	}
	if len(o.Requests) != 25 || o.CompletedRequests != 25 {
		t.Fatalf("%d rows, %d completed", len(o.Requests), o.CompletedRequests)
	}
	if o.CacheHitRate == nil || *o.CacheHitRate <= 0 {
		t.Fatalf("a shared 64-token prefix should hit the cache: %v", o.CacheHitRate)
	}
}

// The same flags give byte-identical output (BC-9 at the command level).
func TestRunDeterministic(t *testing.T) {
	args := []string{"--model", testModel, "--num-instances", "3", "--num-requests", "60", "--rate", "30", "--arrival", "poisson", "--routing-policy", "least-loaded"}
	a, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		b, err := runCLI(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		if a != b {
			t.Fatal("repeated runs differ")
		}
	}
}

// BLIS's alternative flag names are accepted.
func TestRunAcceptsBLISAliases(t *testing.T) {
	a, err := runCLI(t, "--model", testModel, "--max-prompts", "10", "--max-num-running-reqs", "8", "--max-num-scheduled-tokens", "512")
	if err != nil {
		t.Fatal(err)
	}
	b, err := runCLI(t, "--model", testModel, "--num-requests", "10", "--max-num-seqs", "8", "--max-num-batched-tokens", "512")
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("aliases give a different result")
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{nil, "known:"},
		{[]string{"--model", "no-such-model"}, "known:"},
		{[]string{"--model", testModel, "--hardware", "Z80"}, "known:"},
		{[]string{"--model", testModel, "--tp", "3"}, "supported"},
		{[]string{"--model", testModel, "--tp", "0"}, "--tp"},
		{[]string{"--model", testModel, "--max-num-seqs", "0"}, "--max-num-seqs"},
		{[]string{"--model", testModel, "--max-num-batched-tokens", "-4"}, "--max-num-batched-tokens"},
		{[]string{"--model", testModel, "--block-size-in-tokens", "0"}, "--block-size-in-tokens"},
		{[]string{"--model", testModel, "--gpu-memory-utilization", "0"}, "--gpu-memory-utilization"},
		{[]string{"--model", testModel, "--gpu-memory-utilization", "NaN"}, "--gpu-memory-utilization"},
		{[]string{"--model", testModel, "--num-instances", "0"}, "--num-instances"},
		{[]string{"--model", testModel, "--num-instances", "1000000"}, "--num-instances"},
		{[]string{"--model", testModel, "--num-requests", "0"}, "--num-requests"},
		{[]string{"--model", testModel, "--rate", "-1"}, "Rate"},
		{[]string{"--model", testModel, "--rate", "+Inf"}, "Rate"},
		{[]string{"--model", testModel, "--prompt-tokens-min", "5", "--prompt-tokens-max", "4"}, "Max"},
		{[]string{"--model", testModel, "--routing-policy", "random-walk"}, "known:"},
		{[]string{"--model", testModel, "--latency-model", "oracle"}, "known:"},
		{[]string{"--model", testModel, "--preemption-policy", "lifo"}, "known:"},
		{[]string{"--model", testModel, "--scheduler", "lottery"}, "unknown scheduler"},
		{[]string{"--model", testModel, "--admission-policy", "maybe"}, "known:"},
		{[]string{"--model", testModel, "--routing-policy", "weighted", "--routing-scorers", "gravity:1"}, "unknown scorer"},
		{[]string{"--model", testModel, "--policy-config", "/nonexistent/policy.yaml"}, "policy.yaml"},
		{[]string{"--model", testModel, "--beta-coeffs", "1,2"}, "beta"},
		{[]string{"--model", testModel, "--alpha-coeffs", "-1,0,0"}, "coefficients"},
		{[]string{"--model", testModel, "--latency-model", "roofline", "--alpha-coeffs", "1,2,3"}, "roofline"},
		{[]string{"--model", testModel, "--max-model-len", "99999999999"}, "--max-model-len"},
		{[]string{"--model", testModel, "--horizon", "-1"}, "--horizon"},
		{[]string{"--model", testModel, "--workload", "chat"}, "known: distribution"},
		{[]string{"--model", testModel, "--workload-spec", "/nonexistent/spec.yaml"}, "spec.yaml"},
		{[]string{"--model", testModel, "--arrival", "gamma"}, "arrival"},
		{[]string{"--model", testModel, "--log", "loud"}, "--log"},
		{[]string{"--model", testModel, "stray-argument"}, "unknown command"},
	}
	for _, tc := range cases {
		_, err := runCLI(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// Odd but legal combinations run to completion without panicking.
func TestRunEdgeCombinations(t *testing.T) {
	cases := [][]string{
		{"--total-kv-blocks", "1"},                  // every request unservable
		{"--max-model-len", "300"},                  // most requests too long
		{"--total-kv-blocks", "40", "--rate", "50"}, // heavy preemption
		{"--max-num-seqs", "1", "--max-num-batched-tokens", "1"},
		{"--long-prefill-token-threshold", "7", "--enable-chunked-prefill=false", "--max-model-len", "2048"},
		{"--enable-prefix-caching=false", "--prefix-tokens", "100"},
		{"--horizon", "1"},
		{"--admission-latency", "5000", "--routing-latency", "7000", "--horizon", "20000"},
		{"--latency-model", "roofline"},
		{"--latency-model", "blackbox", "--hardware", "H100", "--tp", "1"},
		{"--preemption-policy", "priority", "--total-kv-blocks", "60", "--rate", "40"},
		{"--prompt-tokens-stdev", "0", "--output-tokens", "1", "--output-tokens-min", "1"},
	}
	for _, extra := range cases {
		args := append([]string{"--model", testModel, "--num-requests", "30"}, extra...)
		out, err := runCLI(t, args...)
		if err != nil {
			if strings.Contains(strings.Join(extra, " "), "blackbox") {
				continue // the catalog may lack the row; the error is the point
			}
			t.Errorf("%v: %v", extra, err)
			continue
		}
		blocks := splitBlocks(t, out)
		c := blocks[len(blocks)-1]
		if c.InjectedRequests > 30 {
			t.Errorf("%v: injected %d of 30", extra, c.InjectedRequests)
		}
	}
}

// A BLIS preset replaces the default lengths; explicit length flags still win.
func TestRunWorkloadPreset(t *testing.T) {
	total := func(args ...string) int64 {
		out, err := runCLI(t, append([]string{"--model", testModel, "--num-requests", "20", "--rate", "2"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		blocks := splitBlocks(t, out)
		return blocks[len(blocks)-1].TotalInputTokens
	}
	def, sum := total(), total("--workload", "summarization")
	if sum <= 2*def {
		t.Fatalf("summarization prompts (%d tokens in all) should be much longer than the default (%d)", sum, def)
	}
	if fixed := total("--workload", "summarization", "--prompt-tokens", "100", "--prompt-tokens-stdev", "0", "--prompt-tokens-min", "100", "--prompt-tokens-max", "100"); fixed != 20*(100+mustPrefix(t, "summarization")) {
		t.Fatalf("explicit prompt flags should override the preset: %d input tokens", fixed)
	}
}

func mustPrefix(t *testing.T, preset string) int64 {
	t.Helper()
	dc, err := workload.Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	return int64(dc.PrefixTokens)
}

// A BLIS workload spec file runs unchanged; --num-requests overrides its request count.
func TestRunWorkloadSpec(t *testing.T) {
	spec := "../../internal/engine/workload/testdata/blis/prefix-affinity-demo.yaml" // BLIS's example, unchanged
	if _, err := os.Stat(spec); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "--model", testModel, "--num-instances", "2", "--routing-policy", "least-loaded", "--workload-spec", spec, "--num-requests", "50")
	if err != nil {
		t.Fatal(err)
	}
	blocks := splitBlocks(t, out)
	c := blocks[len(blocks)-1]
	if c.InjectedRequests != 50 || c.CompletedRequests != 50 {
		t.Fatalf("cluster %+v", c)
	}
	// Run twice: the spec's own seed makes it reproducible.
	again, err := runCLI(t, "--model", testModel, "--num-instances", "2", "--routing-policy", "least-loaded", "--workload-spec", spec, "--num-requests", "50")
	if err != nil || again != out {
		t.Fatalf("repeated spec run differs (%v)", err)
	}
}

// A built-in scenario runs by name through --workload, from the same generator as the
// WorkloadSpec resource's scenario field; shared prefixes make the prefix cache hit.
func TestRunWorkloadScenario(t *testing.T) {
	out, err := runCLI(t, "--model", testModel, "--num-instances", "2", "--workload", "prefix-heavy", "--num-requests", "60")
	if err != nil {
		t.Fatal(err)
	}
	blocks := splitBlocks(t, out)
	c := blocks[len(blocks)-1]
	if c.InjectedRequests != 60 || c.CompletedRequests != 60 {
		t.Fatalf("cluster %+v", c)
	}
	spec, err := workload.Scenario("prefix-heavy")
	if err != nil {
		t.Fatal(err)
	}
	if spec.NumRequests == 60 {
		t.Fatal("the scenario's own request count should differ from the override used here")
	}
	if _, err := runCLI(t, "--model", testModel, "--workload", "no-such-scenario"); err == nil || !strings.Contains(err.Error(), "prefix-heavy") {
		t.Fatalf("an unknown --workload should list the scenarios: %v", err)
	}
}

func TestSLOTargetsByClassIndex(t *testing.T) {
	names := &workload.Tables{SLOClasses: []string{"standard", "critical"}}
	got := sloTargets(map[string]workload.SLOTargets{"critical": {TTFT: 100, E2E: 2500.5}}, names)
	if len(got) != 2 || got[0] != (metrics.SLOTarget{}) || got[1] != (metrics.SLOTarget{TTFT: 100_000, E2E: 2_500_500}) {
		t.Fatalf("targets %+v", got)
	}
	if sloTargets(nil, names) != nil {
		t.Fatal("no targets must give no gating")
	}
}
