package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/metrics"
)

// clusterBlock runs `blis run` and returns the cluster block.
func clusterBlock(t *testing.T, args ...string) (string, int64, int64) {
	t.Helper()
	out, err := runCLI(t, append([]string{"--model", testModel, "--num-instances", "2", "--num-requests", "40", "--rate", "20"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	blocks := splitBlocks(t, out)
	c := blocks[len(blocks)-1]
	return out, c.CompletedRequests, c.RejectedRequests
}

// The admission flag reaches the simulator: reject-all refuses every request.
func TestRunAdmissionPolicyFlag(t *testing.T) {
	if _, done, rejected := clusterBlock(t, "--admission-policy", "reject-all"); done != 0 || rejected != 40 {
		t.Fatalf("reject-all: completed %d, rejected %d", done, rejected)
	}
	// A token bucket with room for about ten 512-token prompts rejects the rest.
	_, done, rejected := clusterBlock(t, "--admission-policy", "token-bucket", "--token-bucket-capacity", "5000", "--token-bucket-refill-rate", "1")
	if rejected == 0 || done == 0 || done+rejected != 40 {
		t.Fatalf("token bucket: completed %d, rejected %d", done, rejected)
	}
}

// A policy-config file is loaded, and flags given on the command line override it (as in
// BLIS); without any policy flag the defaults give the same output as an explicit default
// bundle.
func TestRunPolicyConfigAndOverrides(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte("admission:\n  policy: reject-all\nrouting:\n  policy: weighted\n  scorers:\n    - {name: queue-depth, weight: 2}\n    - {name: prefix-affinity, weight: 3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, done, rejected := clusterBlock(t, "--policy-config", path); done != 0 || rejected != 40 {
		t.Fatalf("file: completed %d, rejected %d", done, rejected)
	}
	if _, done, rejected := clusterBlock(t, "--policy-config", path, "--admission-policy", "always-admit"); done != 40 || rejected != 0 {
		t.Fatalf("file + flag: completed %d, rejected %d", done, rejected)
	}
	plain, _, _ := clusterBlock(t)
	explicit, _, _ := clusterBlock(t, "--routing-policy", "round-robin", "--scheduler", "fcfs", "--preemption-policy", "fcfs", "--admission-policy", "always-admit")
	if plain != explicit {
		t.Error("explicit default policies differ from the default run")
	}
}

// Every control-plane flag is accepted together, and the run is deterministic.
func TestRunAllPolicyFlags(t *testing.T) {
	args := []string{"--routing-policy", "weighted", "--routing-scorers", "prefix-cache-scorer:3,queue-scorer:2,kv-cache-utilization-scorer:2",
		"--priority-policy", "slo-based", "--scheduler", "priority-fcfs", "--preemption-policy", "priority",
		"--admission-latency", "30", "--routing-latency", "120", "--prefix-tokens", "256", "--total-kv-blocks", "200"}
	a, done, _ := clusterBlock(t, args...)
	if done != 40 {
		t.Fatalf("completed %d of 40", done)
	}
	b, _, _ := clusterBlock(t, args...)
	if a != b {
		t.Fatal("repeated runs differ")
	}
	path := filepath.Join(t.TempDir(), "m.json")
	clusterBlock(t, append(args, "--metrics-path", path)...)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var o metrics.Output
	if err := json.Unmarshal(data, &o); err != nil {
		t.Fatal(err)
	}
	if o.CacheHitRate == nil || *o.CacheHitRate <= 0 {
		t.Errorf("a shared 256-token prefix should hit the cache: %v", o.CacheHitRate)
	}
}

// The staleness flags reach the router: least-loaded over queue depth decides differently on
// 100 ms old snapshots; round-robin reads no snapshots, so the default bundle the flags bring
// gives the plain run's output; a negative value is refused.
func TestRunStalenessFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte("routing:\n  policy: least-loaded\n  params: {signal: queue-depth}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	qLive, _, _ := clusterBlock(t, "--policy-config", path, "--num-instances", "4", "--num-requests", "200", "--rate", "200")
	qStale, _, _ := clusterBlock(t, "--policy-config", path, "--num-instances", "4", "--num-requests", "200", "--rate", "200", "--snapshot-refresh-interval", "100000")
	if qLive == qStale {
		t.Error("--snapshot-refresh-interval did not change least-loaded routing over queue depth")
	}
	plain, _, _ := clusterBlock(t)
	withFlags, _, _ := clusterBlock(t, "--snapshot-refresh-interval", "50000", "--cache-signal-delay", "50000")
	if plain != withFlags {
		t.Error("round-robin with stale snapshots differs from the plain run")
	}
	if _, err := runCLI(t, "--model", testModel, "--cache-signal-delay", "-1"); err == nil {
		t.Error("a negative --cache-signal-delay was accepted")
	}
}
