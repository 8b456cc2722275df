package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/inference-sim/blis-operator/internal/engine/export"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

// blisCLI executes `blis args...` and returns standard error and the error.
func blisCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	return errOut.String(), err
}

func TestExportImportCommands(t *testing.T) {
	dir := t.TempDir()
	bundle := filepath.Join(dir, "bundle.yaml")
	if err := os.WriteFile(bundle, []byte("routing: {policy: round-robin}\npriority: {policy: slo-based}\nadmission: {policy: gaie-legacy}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	stderr, err := blisCLI(t, "export", "--bundle", bundle, "--model", testModel, "--num-instances", "3",
		"--block-size", "32", "--slo-classes", "critical,batch", "--inference-pool", "-o", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "warning: routing (approximation): round-robin") {
		t.Fatalf("warning not printed: %q", stderr)
	}
	for _, f := range []string{export.FileEPPConfig, export.FileObjectives, export.FilePool, export.FileModelServers, export.FileWarnings} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Fatalf("%s not written: %v", f, err)
		}
	}
	servers, _ := os.ReadFile(filepath.Join(out, export.FileModelServers))
	if !strings.Contains(string(servers), "--block-size=32") || !strings.Contains(string(servers), "replicas: 3") {
		t.Fatalf("engine flags not applied:\n%s", servers)
	}

	imported := filepath.Join(dir, "imported.yaml")
	clusterOut := filepath.Join(dir, "cluster.yaml")
	if _, err := blisCLI(t, "import", "--epp", filepath.Join(out, export.FileEPPConfig), "--objectives", filepath.Join(out, export.FileObjectives),
		"-o", imported, "--cluster-out", clusterOut); err != nil {
		t.Fatal(err)
	}
	b, err := policy.Load(imported)
	if err != nil {
		t.Fatal(err)
	}
	if b.Admission.Policy != "gaie-legacy" || b.Admission.SLOPriorities["batch"] != -1 || b.Routing.Params["picker"] != "random" {
		t.Fatalf("imported bundle: %+v", b)
	}
	c, err := export.LoadCluster(clusterOut)
	if err != nil || strings.Join(c.SLOClasses, ",") != "batch,critical" {
		t.Fatalf("cluster: %+v %v", c, err)
	}

	// A second export without objectives removes the stale file.
	if _, err := blisCLI(t, "export", "--bundle", imported, "--cluster", clusterOut, "-o", out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, export.FilePool)); !os.IsNotExist(err) {
		t.Fatalf("stale %s kept: %v", export.FilePool, err)
	}

	if _, err := blisCLI(t, "export", "--target", "llm-d-v0.5", "-o", out); err == nil || !strings.Contains(err.Error(), "llm-d-v0.10") {
		t.Fatalf("unsupported target: %v", err)
	}
	if _, err := blisCLI(t, "export", "--bundle", bundle, "--strict", "-o", out); err == nil || !strings.Contains(err.Error(), "strict") {
		t.Fatalf("strict: %v", err)
	}
}

// readDir returns the files of dir by name.
func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(data)
	}
	return out
}

// sameExport fails unless directories a and b hold the same files with the same content.
func sameExport(t *testing.T, what string, a, b string) {
	t.Helper()
	fa, fb := readDir(t, a), readDir(t, b)
	if len(fa) != len(fb) {
		t.Fatalf("%s: files %v and %v differ", what, keys(fa), keys(fb))
	}
	for name, content := range fa {
		if fb[name] != content {
			t.Fatalf("%s: %s differs:\n%s\n--- versus ---\n%s", what, name, content, fb[name])
		}
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExportFromManifests(t *testing.T) {
	samples := filepath.Join("..", "..", "config", "samples")
	quickstart := filepath.Join(samples, "quickstart.yaml")
	dir := t.TempDir()

	// The quick start's only Evaluation, and the same bundle and cluster as files.
	fromManifests := filepath.Join(dir, "manifests")
	if _, err := blisCLI(t, "export", "-f", quickstart, "-o", fromManifests); err != nil {
		t.Fatal(err)
	}
	bundle := writeFile(t, filepath.Join(dir, "bundle.yaml"), `admission: {policy: always-admit}
priority: {policy: slo-based}
routing:
  policy: weighted
  scorers:
  - {name: prefix-cache-scorer, weight: 3}
  - {name: queue-scorer, weight: 2}
  - {name: kv-cache-utilization-scorer, weight: 2}
scheduler: priority-fcfs
`)
	cluster := writeFile(t, filepath.Join(dir, "cluster.yaml"), `model: meta-llama/llama-3.1-8b-instruct
gpu: H100
engine: {tensorParallelSize: 1, maxNumSeqs: 256, maxNumBatchedTokens: 8192}
pools: [{name: serving, replicas: 4}]
sloClasses: [batch, critical]
`)
	fromFiles := filepath.Join(dir, "files")
	if _, err := blisCLI(t, "export", "--bundle", bundle, "--cluster", cluster, "-o", fromFiles); err != nil {
		t.Fatal(err)
	}
	sameExport(t, "quickstart", fromManifests, fromFiles)
	objectives := readDir(t, fromManifests)[export.FileObjectives]
	if !strings.Contains(objectives, "name: critical") || strings.Contains(objectives, "name: sheddable") {
		t.Fatalf("objectives are not the workload's classes:\n%s", objectives)
	}

	// The PolicyBundle on the SimulatedCluster with the workload's classes is the same export.
	byName := filepath.Join(dir, "by-name")
	if _, err := blisCLI(t, "export", "-f", quickstart, "--bundle-name", "quickstart-llm-d-default",
		"--cluster-name", "quickstart-llama8b-h100", "--workload-name", "quickstart-two-tenants", "-o", byName); err != nil {
		t.Fatal(err)
	}
	sameExport(t, "bundle by name", fromManifests, byName)
	// Without the workload, objectives are written for every class of the priority table.
	if _, err := blisCLI(t, "export", "-f", quickstart, "--bundle-name", "quickstart-llm-d-default",
		"--cluster-name", "quickstart-llama8b-h100", "-o", byName); err != nil {
		t.Fatal(err)
	}
	if o := readDir(t, byName)[export.FileObjectives]; !strings.Contains(o, "name: sheddable") {
		t.Fatalf("objectives without a workload:\n%s", o)
	}

	// policy-comparison.yaml with the cluster and workload samples it names: the baseline's
	// least-loaded routing is an approximation, the candidate's decision tree is refused.
	files := []string{"-f", filepath.Join(samples, "blis_v1alpha1_simulatedcluster.yaml"),
		"-f", filepath.Join(samples, "blis_v1alpha1_workloadspec.yaml"), "-f", filepath.Join(samples, "policy-comparison.yaml")}
	baseline := filepath.Join(dir, "baseline")
	stderr, err := blisCLI(t, append([]string{"export", "--evaluation", "compare-baseline-run", "-o", baseline}, files...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "warning: routing (approximation): least-loaded") {
		t.Fatalf("warning not printed: %q", stderr)
	}
	bundle = writeFile(t, filepath.Join(dir, "baseline-bundle.yaml"), "admission: {policy: always-admit}\nrouting: {policy: least-loaded}\nscheduler: fcfs\n")
	cluster = writeFile(t, filepath.Join(dir, "baseline-cluster.yaml"), `model: meta-llama/llama-3.1-8b-instruct
gpu: H100
engine: {vllmVersion: v0.11.0, tensorParallelSize: 1, maxNumSeqs: 256, maxNumBatchedTokens: 8192, blockSize: 16,
  gpuMemoryUtilization: 0.9, enableChunkedPrefill: true, enablePrefixCaching: true}
pools: [{name: main, role: monolithic, replicas: 4}]
sloClasses: [batch, critical]
`)
	baselineFiles := filepath.Join(dir, "baseline-files")
	if _, err := blisCLI(t, "export", "--bundle", bundle, "--cluster", cluster, "-o", baselineFiles); err != nil {
		t.Fatal(err)
	}
	sameExport(t, "policy-comparison baseline", baseline, baselineFiles)
	if !strings.Contains(readDir(t, baseline)[export.FileWarnings], "least-loaded") {
		t.Fatalf("%s lacks the approximation", export.FileWarnings)
	}
	if _, err := blisCLI(t, append([]string{"export", "--evaluation", "compare-candidate-run", "-o", filepath.Join(dir, "candidate")}, files...)...); err == nil ||
		!strings.Contains(err.Error(), "no llm-d equivalent") {
		t.Fatalf("decision-tree admission: %v", err)
	}

	// Mixing the modes, or naming half a bundle source, is an error.
	for _, args := range [][]string{
		{"export", "-f", quickstart, "--model", testModel, "-o", dir},
		{"export", "-f", quickstart, "--bundle", bundle, "-o", dir},
		{"export", "-f", quickstart, "--bundle-name", "quickstart-llm-d-default", "-o", dir},
		{"export", "-f", quickstart, "--bundle-name", "nope", "--cluster-name", "quickstart-llama8b-h100", "-o", dir},
		{"export", "-f", quickstart, "--evaluation", "quickstart", "--bundle-name", "quickstart-llm-d-default", "-o", dir},
		{"export", "--evaluation", "quickstart", "-o", dir},
	} {
		if _, err := blisCLI(t, args...); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}

// modelServerArgs returns each pool's vLLM arguments of an exported model-servers.yaml.
func modelServerArgs(t *testing.T, dir string) map[string]string {
	t.Helper()
	var doc struct {
		ModelServers []export.ModelServer `json:"modelServers"`
	}
	if err := yaml.Unmarshal([]byte(readDir(t, dir)[export.FileModelServers]), &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range doc.ModelServers {
		out[s.Name] = strings.Join(s.Args, " ") + " "
	}
	return out
}

// P/D pools with their own hardware: each pool's vLLM arguments follow its overrides, from a
// cluster file and from a SimulatedCluster manifest; what vLLM cannot express is a warning.
func TestExportPoolHardware(t *testing.T) {
	dir := t.TempDir()
	cluster := writeFile(t, filepath.Join(dir, "cluster.yaml"), `model: llama-3.1-70b-instruct
gpu: H100
engine: {tensorParallelSize: 4, maxNumSeqs: 128}
pools:
- {name: prefill, role: prefill, replicas: 2, engine: {tensorParallelSize: 8, maxNumBatchedTokens: 32768}, latencyModel: roofline}
- {name: decode, role: decode, replicas: 4, gpu: A100-80, engine: {maxNumSeqs: 256}}
disaggregation: {decider: always}
`)
	out := filepath.Join(dir, "files")
	stderr, err := blisCLI(t, "export", "--cluster", cluster, "-o", out)
	if err != nil {
		t.Fatal(err)
	}
	args := modelServerArgs(t, out)
	for pool, want := range map[string][]string{
		"prefill": {"--tensor-parallel-size=8 ", "--max-num-seqs=128 ", "--max-num-batched-tokens=32768 "},
		"decode":  {"--tensor-parallel-size=4 ", "--max-num-seqs=256 ", "--max-num-batched-tokens=2048 "},
	} {
		for _, w := range want {
			if !strings.Contains(args[pool], w) {
				t.Errorf("%s lacks %s: %s", pool, w, args[pool])
			}
		}
	}
	for _, w := range []string{"warning: pools (note): prefill: latencyModel roofline", "warning: pools (note): decode: runs on A100-80 GPUs"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q: %s", w, stderr)
		}
	}
	// --tp sets the cluster's engine; a pool's own tensor parallelism stays.
	if _, err := blisCLI(t, "export", "--cluster", cluster, "--tp", "2", "--model", "llama-3.1-8b-instruct", "-o", out); err != nil {
		t.Fatal(err)
	}
	if args := modelServerArgs(t, out); !strings.Contains(args["prefill"], "--tensor-parallel-size=8 ") || !strings.Contains(args["decode"], "--tensor-parallel-size=2 ") {
		t.Fatalf("--tp: %v", args)
	}

	// The llama70b-pd sample (an inline model) with a PolicyBundle manifest.
	bundle := writeFile(t, filepath.Join(dir, "bundle.yaml"), `apiVersion: blis.inference-sim.io/v1alpha1
kind: PolicyBundle
metadata: {name: pd-winner}
spec:
  routing: {policy: weighted, scorers: [{name: queue-scorer, weight: 1}]}
`)
	sample := filepath.Join("..", "..", "config", "samples", "blis_v1alpha1_simulatedcluster_pd.yaml")
	out = filepath.Join(dir, "manifests")
	if _, err := blisCLI(t, "export", "-f", sample, "-f", bundle, "--bundle-name", "pd-winner", "--cluster-name", "llama70b-pd", "-o", out); err != nil {
		t.Fatal(err)
	}
	args = modelServerArgs(t, out)
	if !strings.Contains(args["prefill"], "--tensor-parallel-size=8 --max-num-seqs=128 --max-num-batched-tokens=32768 ") ||
		!strings.Contains(args["decode"], "--tensor-parallel-size=4 --max-num-seqs=128 --max-num-batched-tokens=16384 ") {
		t.Fatalf("sample pools: %v", args)
	}
}
