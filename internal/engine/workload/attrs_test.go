package workload

import (
	"reflect"
	"strings"
	"testing"
)

// Every request of a client, including its later turns, carries the client's model, adapter,
// streaming flag, network and SLO target; a cohort's members carry the cohort's.
func TestClientAttrsReachRequests(t *testing.T) {
	s, err := ParseSpec([]byte(`
version: "2"
aggregate_rate: 100
num_requests: 60
clients:
  - id: chat
    rate_fraction: 0.5
    model: meta-llama/llama-3.1-8b-instruct
    adapter: lora-chat
    streaming: true
    network: {rtt_ms: 20, bandwidth_mbps: 100}
    slo_target_us: 150000
    arrival: {process: poisson}
    input_distribution: {type: constant, params: {value: 64}}
    output_distribution: {type: constant, params: {value: 8}}
    reasoning: {multi_turn: {max_rounds: 2, think_time_us: 1000, context_growth: accumulate}}
    closed_loop: false
  - id: plain
    rate_fraction: 0.25
    arrival: {process: poisson}
    input_distribution: {type: constant, params: {value: 64}}
    output_distribution: {type: constant, params: {value: 8}}
cohorts:
  - id: fleet
    population: 2
    rate_fraction: 0.25
    adapter: lora-fleet
    arrival: {process: poisson}
    input_distribution: {type: constant, params: {value: 64}}
    output_distribution: {type: constant, params: {value: 8}}
`))
	if err != nil {
		t.Fatal(err)
	}
	src, err := s.Source(1)
	if err != nil {
		t.Fatal(err)
	}
	tb := src.Tables()
	if !reflect.DeepEqual(tb.Models, []string{"", "meta-llama/llama-3.1-8b-instruct"}) || !reflect.DeepEqual(tb.Adapters, []string{"", "lora-chat", "lora-fleet"}) {
		t.Fatalf("models %q adapters %q", tb.Models, tb.Adapters)
	}
	want := map[string]Attrs{
		"chat":    {Model: 1, Adapter: 1, Streaming: true, RTT: 20_000, BandwidthMbps: 100, SLOTarget: 150_000},
		"plain":   {},
		"fleet-0": {Adapter: 2},
		"fleet-1": {Adapter: 2},
	}
	seen := map[string]int{}
	var r Request
	for src.Next(&r) {
		name := tb.Clients[r.Client]
		seen[name]++
		if r.Attrs != want[name] {
			t.Fatalf("request %d of %s (round %d): %+v, want %+v", r.ID, name, r.Round, r.Attrs, want[name])
		}
	}
	if len(seen) != 4 {
		t.Errorf("clients seen: %v", seen)
	}
}

// A spec without the fields leaves the tables and the requests as before: no model or adapter
// table and zero attributes.
func TestNoClientAttrs(t *testing.T) {
	s := loadExample(t, "inference-perf-shared-prefix.yaml")
	src, err := s.Source(1)
	if err != nil {
		t.Fatal(err)
	}
	if tb := src.Tables(); tb.Models != nil || tb.Adapters != nil {
		t.Errorf("tables %+v", tb)
	}
	var r Request
	for i := 0; i < 100 && src.Next(&r); i++ {
		if r.Attrs != (Attrs{}) {
			t.Fatalf("request %d: %+v", r.ID, r.Attrs)
		}
	}
}

// NetworkDelays follows BLIS's client-side formulas: RTT plus 32 bits per prompt token at the
// bandwidth for TTFT, plus 32 bits per output token for E2E.
func TestNetworkDelays(t *testing.T) {
	for _, tc := range []struct {
		a         Attrs
		in, out   int32
		ttft, e2e int64
	}{
		{Attrs{}, 1000, 100, 0, 0},
		{Attrs{RTT: 20_000}, 1000, 100, 20_000, 20_000},
		{Attrs{RTT: 20_000, BandwidthMbps: 100}, 1000, 100, 20_320, 20_352},
		{Attrs{BandwidthMbps: 3}, 1, 2, 11, 32}, // upload 32/3 µs → 11, download 64/3 µs → 21
	} {
		ttft, e2e := tc.a.NetworkDelays(tc.in, tc.out)
		if ttft != tc.ttft || e2e != tc.e2e {
			t.Errorf("%+v (%d, %d): %d, %d, want %d, %d", tc.a, tc.in, tc.out, ttft, e2e, tc.ttft, tc.e2e)
		}
	}
}

// A BLIS trace v2's model, adapter, streaming and slo_target_us columns become the rows' Attrs;
// a bad value is an error naming the column.
func TestTraceV2Attrs(t *testing.T) {
	cols := "client_id,tenant_id,slo_class,session_id,round_index,prefix_group,prefix_length,input_tokens,output_tokens,deadline_us,arrival_time_us,model,adapter,streaming,slo_target_us\n"
	h, d := writeV2(t, "trace_version: 2\ntime_unit: us\n", cols+
		"a,,,,0,,0,10,5,0,0,llama,lora-1,true,150000\n"+
		"b,,,,0,,0,10,5,0,10,,,false,\n"+
		"a,,,,0,,0,10,5,0,20,LLAMA,lora-1,,0\n")
	src, err := OpenTraceV2(h, d, TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reqs := drain(t, src)
	if err := src.Err(); err != nil {
		t.Fatal(err)
	}
	tb := src.Tables()
	want := []Attrs{{Model: 1, Adapter: 1, Streaming: true, SLOTarget: 150_000}, {}, {Model: 2, Adapter: 1}}
	if len(reqs) != 3 || !reflect.DeepEqual(tb.Models, []string{"", "llama", "LLAMA"}) || !reflect.DeepEqual(tb.Adapters, []string{"", "lora-1"}) {
		t.Fatalf("%d requests, models %q, adapters %q", len(reqs), tb.Models, tb.Adapters)
	}
	for i, r := range reqs {
		if r.Attrs != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, r.Attrs, want[i])
		}
	}
	h, d = writeV2(t, "trace_version: 2\ntime_unit: us\n", cols+"a,,,,0,,0,10,5,0,0,,,yes,\n")
	if _, err := OpenTraceV2(h, d, TraceOptions{}); err == nil || !strings.Contains(err.Error(), `streaming "yes"`) {
		t.Errorf("bad streaming: %v", err)
	}
}
