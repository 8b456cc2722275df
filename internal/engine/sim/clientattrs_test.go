package sim

import (
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/metrics"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// runSingle runs one request on an idle single-instance cluster and returns its record.
func runSingle(t *testing.T, r workload.Request) RequestRecord {
	t.Helper()
	cfg := &Config{Seed: 1, Instances: []InstanceConfig{testInstance(defaultModel())}}
	cfg.Options.RequestRecords = true
	res, err := Run(cfg, &sliceSource{reqs: []workload.Request{r}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 1 || res.Records[0].Outcome != OutcomeCompleted {
		t.Fatalf("records %+v", res.Records)
	}
	return res.Records[0]
}

// A client's network adds exactly its round trip and transfer times to the request's TTFT and
// E2E (BLIS's client-side latencies), and nothing else changes.
func TestNetworkDelaysAddToTTFTAndE2E(t *testing.T) {
	base := workload.Request{ID: 1, Arrival: 1000, InputLen: 300, OutputLen: 50}
	plain := runSingle(t, base)

	rtt := base
	rtt.RTT = 20_000 // 20 ms
	got := runSingle(t, rtt)
	if got.TTFT-plain.TTFT != 20_000 || got.E2E-plain.E2E != 20_000 {
		t.Errorf("20 ms RTT: TTFT +%d µs, E2E +%d µs, want +20000 both", got.TTFT-plain.TTFT, got.E2E-plain.E2E)
	}
	if got.Done != plain.Done || got.ITLSum != plain.ITLSum || got.OutputTokens != plain.OutputTokens {
		t.Errorf("the network changed the server side: %+v vs %+v", got, plain)
	}

	bw := rtt
	bw.BandwidthMbps = 8 // 32 bits per token at 8 Mbit/s: 4 µs per token
	got = runSingle(t, bw)
	up, down := int64(300*4), int64(plain.OutputTokens)*4
	if got.TTFT-plain.TTFT != 20_000+up || got.E2E-plain.E2E != 20_000+up+down {
		t.Errorf("8 Mbit/s: TTFT +%d, E2E +%d, want +%d and +%d", got.TTFT-plain.TTFT, got.E2E-plain.E2E, 20_000+up, 20_000+up+down)
	}
}

// Requests of a streaming client release their prompt tokens from the router's in-flight load
// at their first token; others hold them to the end.
func TestStreamingClientReleasesPromptTokensAtFirstToken(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		reqs := []workload.Request{{ID: 1, Arrival: 0, InputLen: 300, OutputLen: 50, Attrs: workload.Attrs{Streaming: streaming}}}
		s := mustSim(t, withPolicy(contendedCluster(), &policy.Bundle{}), &sliceSource{reqs: reqs})
		var afterFirst, beforeFirst int
		s.observe = func(ev event) {
			if ev.kind() != evStep || len(s.insts[0].running) != 1 {
				return
			}
			load := s.ctl.p.State().Loads[0].InFlightTokens
			r := &s.slab.reqs[s.insts[0].running[0].slot]
			want := int64(300)
			if r.ttftSet {
				afterFirst++
				if streaming {
					want = 0
				}
			} else {
				beforeFirst++
			}
			if load != want {
				t.Errorf("streaming %v, first token %v: %d tokens charged, want %d", streaming, r.ttftSet, load, want)
			}
		}
		if err := s.run(); err != nil {
			t.Fatal(err)
		}
		if afterFirst == 0 || s.ctl.streaming != streaming || s.ctl.p.State().Loads[0].InFlightTokens != 0 {
			t.Errorf("streaming %v: %d steps after the first token, flag %v, load %+v", streaming, afterFirst, s.ctl.streaming, s.ctl.p.State().Loads[0])
		}
	}
}

// modelSource is a sliceSource whose tables name models and adapters.
type modelSource struct {
	sliceSource
	models, adapters []string
}

func (s *modelSource) Tables() *workload.Tables {
	t := s.sliceSource.Tables()
	t.Models, t.Adapters = s.models, s.adapters
	return t
}

// A workload naming a model the cluster does not serve is refused before the run; the served
// model (in any case) and requests naming none run, and rows and the adapters block name them.
func TestWorkloadModelsAndAdapters(t *testing.T) {
	cfg := &Config{Seed: 1, Instances: []InstanceConfig{testInstance(defaultModel())}}
	cfg.Options.RequestRecords = true
	reqs := []workload.Request{
		{ID: 1, Arrival: 0, InputLen: 100, OutputLen: 10, Attrs: workload.Attrs{Model: 1, Adapter: 1}},
		{ID: 2, Arrival: 500_000, InputLen: 100, OutputLen: 20, Attrs: workload.Attrs{Model: 1}},
	}
	other := &modelSource{sliceSource: sliceSource{reqs: reqs}, models: []string{"", "other-model"}}
	if _, err := Run(cfg, other); err == nil || !strings.Contains(err.Error(), `"other-model" is not served`) {
		t.Errorf("foreign model: %v", err)
	}
	src := &modelSource{sliceSource: sliceSource{reqs: reqs}, models: []string{"", "TEST"}, adapters: []string{"", "lora-a"}}
	res, err := Run(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	rep := res.Report(src.Tables(), metrics.Options{})
	rows := rep.Cluster.Requests
	if len(rows) != 2 || rows[0].Model != "TEST" || rows[0].Adapter != "lora-a" || rows[1].Model != "TEST" || rows[1].Adapter != "" {
		t.Fatalf("rows %+v", rows)
	}
	a := rep.Cluster.Adapters["lora-a"]
	if len(rep.Cluster.Adapters) != 1 || a == nil {
		t.Fatalf("adapters %+v", rep.Cluster.Adapters)
	}
	ttftUs := rows[0].TTFTMs * 1000
	if a.TTFTP50Us != ttftUs || a.TTFTP99Us != ttftUs || a.ThroughputTokPerS != 10/rep.Cluster.VllmDurationSec {
		t.Errorf("adapter %+v, want TTFT %v µs and %v tok/s", a, ttftUs, 10/rep.Cluster.VllmDurationSec)
	}
}

// growingSource names a new model with its second request, as a trace's table grows.
type growingSource struct {
	sliceSource
	t workload.Tables
}

func (s *growingSource) Next(r *workload.Request) bool {
	if s.i == 1 {
		s.t.Models = append(s.t.Models, "other-model")
	}
	return s.sliceSource.Next(r)
}

func (s *growingSource) Tables() *workload.Tables { return &s.t }

// A model that appears during the run (trace rows) is checked when its first request arrives.
func TestWorkloadModelAppearingDuringTheRun(t *testing.T) {
	reqs := []workload.Request{
		{ID: 1, Arrival: 0, InputLen: 100, OutputLen: 10, Attrs: workload.Attrs{Model: 1}},
		{ID: 2, Arrival: 1000, InputLen: 100, OutputLen: 10, Attrs: workload.Attrs{Model: 2}},
	}
	src := &growingSource{sliceSource: sliceSource{reqs: reqs}, t: *(&sliceSource{}).Tables()}
	src.t.Models = []string{"", "test"}
	cfg := &Config{Seed: 1, Instances: []InstanceConfig{testInstance(defaultModel())}}
	if _, err := Run(cfg, src); err == nil || !strings.Contains(err.Error(), `"other-model" is not served`) {
		t.Errorf("model named by the second request: %v", err)
	}
}
