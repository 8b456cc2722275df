package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/metrics"
)

// poolBlock is a "=== Pool Metrics ===" block of `blis run`.
type poolBlock struct {
	Pool              string         `json:"pool"`
	Instances         int            `json:"instances"`
	PeakKVUtilization float64        `json:"peak_kv_utilization"`
	Transfers         int64          `json:"kv_transfers"`
	TransferredBytes  int64          `json:"kv_transferred_bytes"`
	Metrics           metrics.Output `json:"metrics"`
}

// poolBlocks parses the pool blocks of a run's output.
func poolBlocks(t *testing.T, out string) []poolBlock {
	t.Helper()
	var blocks []poolBlock
	for _, part := range strings.Split(out, "=== Pool Metrics ===\n")[1:] {
		var b poolBlock
		if err := json.NewDecoder(strings.NewReader(part)).Decode(&b); err != nil {
			t.Fatalf("pool block %q: %v", part, err)
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// TestRunPDPoolsWithOwnHardwareAndAutoscaling: a prefill pool on TP2 hands off to a decode pool
// on A100-80 that is autoscaled on its own; the run prints one block per pool and the
// autoscaler's per-pool summary.
func TestRunPDPoolsWithOwnHardwareAndAutoscaling(t *testing.T) {
	args := []string{"--model", testModel, "--num-instances", "3", "--prefill-instances", "1", "--num-requests", "60", "--rate", "10", "--seed", "3"}
	plain, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	tp2, err := runCLI(t, append(args, "--prefill-tp", "2", "--decode-hardware", "A100-80",
		"--decode-max-replicas", "3", "--autoscale-policy", "oscillator", "--autoscale-interval-us", "500000")...)
	if err != nil {
		t.Fatal(err)
	}
	pp, pt := poolBlocks(t, plain), poolBlocks(t, tp2)
	if len(pp) != 2 || len(pt) != 2 || pt[0].Pool != "prefill" || pt[1].Pool != "decode" || pt[1].Instances != 3 {
		t.Fatalf("pool blocks %+v", pt)
	}
	for _, b := range [][]poolBlock{pp, pt} {
		if b[0].Metrics.CompletedRequests != 60 || b[1].Metrics.CompletedRequests != 60 || b[0].Transfers != 60 || b[0].TransferredBytes <= 0 {
			t.Errorf("pools: prefill handed off %d (%d transfers), decode completed %d", b[0].Metrics.CompletedRequests, b[0].Transfers, b[1].Metrics.CompletedRequests)
		}
	}
	// Two GPUs per prefill replica make prefill faster: the prefill pool's TTFT drops.
	if !(pt[0].Metrics.TTFTMeanMs < pp[0].Metrics.TTFTMeanMs) {
		t.Errorf("prefill TTFT mean %.3f ms on TP2, %.3f ms on TP1", pt[0].Metrics.TTFTMeanMs, pp[0].Metrics.TTFTMeanMs)
	}
	parts := strings.Split(tp2, "=== Autoscaler ===\n")
	if len(parts) != 2 {
		t.Fatal("no autoscaler block")
	}
	var as struct {
		Pools []poolScaleOut `json:"pools"`
	}
	if err := json.Unmarshal([]byte(parts[1]), &as); err != nil {
		t.Fatal(err)
	}
	if len(as.Pools) != 2 || as.Pools[0].ScaleUps != 0 || as.Pools[1].ScaleUps == 0 {
		t.Errorf("per-pool autoscaling: %+v (the prefill pool has no bounds and stays fixed)", as.Pools)
	}
}

func TestRunPDPoolFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--decode-tp", "2"}, "--decode-* flags need --prefill-instances"},
		{[]string{"--num-instances", "2", "--prefill-instances", "1", "--max-replicas", "4"}, "autoscale each pool with --prefill-max-replicas"},
		{[]string{"--num-instances", "2", "--prefill-instances", "1", "--decode-max-replicas", "3", "--min-replicas", "1"}, "use --prefill-min-replicas"},
		{[]string{"--num-instances", "3", "--prefill-instances", "1", "--decode-min-replicas", "3", "--decode-max-replicas", "4"}, "the decode pool needs 1 <= --decode-min-replicas (3)"},
		{[]string{"--num-instances", "2", "--prefill-instances", "1", "--prefill-tp", "0"}, "--prefill-tp must be > 0"},
		{[]string{"--num-instances", "2", "--prefill-instances", "1", "--decode-max-num-seqs", "0"}, "--decode-max-num-seqs must be in"},
		{[]string{"--num-instances", "2", "--prefill-instances", "1", "--decode-hardware", "NOPE"}, "decode pool"},
		{[]string{"--num-instances", "2", "--prefill-instances", "1", "--autoscale-policy", "threshold"}, "needs --max-replicas"},
	} {
		if _, err := runCLI(t, append([]string{"--model", testModel, "--num-requests", "5"}, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}
