package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRunAutoscaleFlags(t *testing.T) {
	out, err := runCLI(t, "--model", testModel, "--num-instances", "1", "--max-replicas", "4", "--min-replicas", "1",
		"--autoscale-policy", "oscillator", "--autoscale-interval-us", "500000", "--provisioning-delay-us", "1000000",
		"--model-load-delay-us", "500000", "--warmup-delay-us", "100000", "--drain-policy", "redirect",
		"--cost-per-replica-hour", "2", "--num-requests", "200", "--rate", "20", "--seed", "3")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(out, "=== Autoscaler ===\n")
	if len(parts) != 2 {
		t.Fatalf("want one autoscaler block, got output %q", out)
	}
	var st struct {
		Policy         string  `json:"policy"`
		ScaleUps       int64   `json:"scale_ups"`
		Oscillations   int64   `json:"scale_oscillations"`
		ReplicaSeconds float64 `json:"replica_seconds"`
		Cost           float64 `json:"cost"`
	}
	if err := json.Unmarshal([]byte(parts[1]), &st); err != nil {
		t.Fatal(err)
	}
	if st.Policy != "oscillator" || st.ScaleUps == 0 || st.Oscillations == 0 || st.ReplicaSeconds <= 0 || st.Cost <= 0 {
		t.Errorf("autoscaler summary %+v", st)
	}
	// The metrics blocks before it are still BLIS's: 4 instance slots and the cluster block.
	if blocks := splitBlocks(t, parts[0]); len(blocks) != 5 {
		t.Errorf("%d metrics blocks, want 5", len(blocks))
	}
}

func TestRunAutoscaleFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-replicas", "2", "--min-replicas", "3"}, "--min-replicas"},
		{[]string{"--max-replicas", "2", "--num-instances", "3"}, "initial replicas"},
		{[]string{"--min-replicas", "2"}, "needs --max-replicas"},
		{[]string{"--max-replicas", "2", "--drain-policy", "later"}, "drain policy"},
		{[]string{"--max-replicas", "2", "--autoscale-policy", "magic"}, "unknown"},
		{[]string{"--max-replicas", "2", "--scale-up-threshold", "0.2", "--scale-down-threshold", "0.5"}, "below scale_up_threshold"},
	} {
		_, err := runCLI(t, append([]string{"--model", testModel, "--num-requests", "5"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}

func TestRunCPUTierFlags(t *testing.T) {
	args := []string{"--model", testModel, "--num-requests", "300", "--rate", "50", "--prefix-tokens", "2048",
		"--total-kv-blocks", "600", "--prompt-tokens", "256", "--prompt-tokens-stdev", "0", "--output-tokens", "8", "--output-tokens-stdev", "0", "--seed", "3"}
	plain, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	tiered, err := runCLI(t, append(args, "--kv-cpu-blocks", "5000", "--kv-cpu-bandwidth-gbps", "50")...)
	if err != nil {
		t.Fatal(err)
	}
	// One shared prefix stays in the GPU cache, so the tier holds copies that are never needed:
	// the results are the same as without it.
	if plain != tiered {
		t.Error("a CPU tier whose blocks are never reloaded changed the results")
	}
	if _, err := runCLI(t, "--model", testModel, "--num-requests", "5", "--kv-cpu-blocks", "10", "--kv-cpu-bandwidth-gbps", "0"); err == nil || !strings.Contains(err.Error(), "bandwidth") {
		t.Errorf("zero bandwidth: %v", err)
	}
	if _, err := runCLI(t, "--model", testModel, "--num-requests", "5", "--kv-offload-threshold", "0.5"); err == nil || !strings.Contains(err.Error(), "needs --kv-cpu-blocks") {
		t.Errorf("threshold without tier: %v", err)
	}
}

func TestRunPDFlags(t *testing.T) {
	args := []string{"--model", testModel, "--num-instances", "3", "--num-requests", "60", "--rate", "10", "--seed", "3"}
	mono, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := runCLI(t, append(args, "--prefill-instances", "1", "--pd-transfer-bandwidth-gbps", "50")...)
	if err != nil {
		t.Fatal(err)
	}
	blocks := splitBlocks(t, pd)
	if len(blocks) != 4 || blocks[3].CompletedRequests != 60 {
		t.Fatalf("P/D run: %d blocks, cluster completed %d", len(blocks), blocks[len(blocks)-1].CompletedRequests)
	}
	if blocks[0].CompletedRequests != 0 || mono == pd {
		t.Errorf("the prefill instance completed %d requests (all should finish on the decode pool)", blocks[0].CompletedRequests)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--num-instances", "2", "--prefill-instances", "2"}, "at least one instance each"},
		{[]string{"--num-instances", "2", "--prefill-instances", "1", "--pd-transfer-bandwidth-gbps", "0"}, "bandwidth"},
		{[]string{"--pd-decider", "always"}, "needs --prefill-instances"},
	} {
		if _, err := runCLI(t, append([]string{"--model", testModel, "--num-requests", "5"}, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}

// --hpa-scrape-delay-us postpones the autoscaler's view of the load: the oscillator, which acts
// at every evaluation it has a sample for, starts later; the flag needs autoscaling.
func TestRunHPAScrapeDelayFlag(t *testing.T) {
	args := []string{"--model", testModel, "--num-instances", "1", "--max-replicas", "3", "--autoscale-policy", "oscillator",
		"--autoscale-interval-us", "500000", "--num-requests", "100", "--rate", "20", "--seed", "3"}
	live, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	late, err := runCLI(t, append(args, "--hpa-scrape-delay-us", "2000000")...)
	if err != nil {
		t.Fatal(err)
	}
	if live == late {
		t.Error("--hpa-scrape-delay-us did not change the autoscaled run")
	}
	if _, err := runCLI(t, "--model", testModel, "--hpa-scrape-delay-us", "1000"); err == nil || !strings.Contains(err.Error(), "needs --max-replicas") {
		t.Errorf("--hpa-scrape-delay-us without autoscaling: %v", err)
	}
}
