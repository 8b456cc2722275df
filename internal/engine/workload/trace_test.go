package workload

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func openTestTrace(t *testing.T, name string, opts TraceOptions) *TraceSource {
	t.Helper()
	src, err := OpenTrace(filepath.Join("testdata", "traces", name), opts)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func TestAzureTrace(t *testing.T) {
	src := openTestTrace(t, "azure_conv_head300.csv", TraceOptions{})
	reqs := drain(t, src)
	if err := src.Err(); err != nil {
		t.Fatal(err)
	}
	checkWellFormed(t, reqs)
	if len(reqs) != 300 {
		t.Fatalf("%d requests, want 300", len(reqs))
	}
	// Rows 1 and 2: 18:15:46.6805900 (374, 44) and 18:15:50.9951690 (396, 109).
	if r := reqs[0]; r.Arrival != 0 || r.InputLen != 374 || r.OutputLen != 44 {
		t.Fatalf("first request %+v", r)
	}
	if r := reqs[1]; r.Arrival != 4_314_579 || r.InputLen != 396 || r.OutputLen != 109 {
		t.Fatalf("second request %+v", r)
	}
	fast := drain(t, openTestTrace(t, "azure_conv_head300.csv", TraceOptions{Speedup: 2}))
	for i := range reqs {
		if d := fast[i].Arrival*2 - reqs[i].Arrival; d < -1 || d > 1 {
			t.Fatalf("speedup 2: request %d at %d, unscaled %d", i, fast[i].Arrival, reqs[i].Arrival)
		}
	}
	win := drain(t, openTestTrace(t, "azure_conv_head300.csv", TraceOptions{Start: 60e6, End: 120e6, Speedup: 4}))
	want := 0
	for _, r := range reqs {
		if r.Arrival >= 60e6 && r.Arrival < 120e6 {
			want++
		}
	}
	if len(win) != want || want == 0 {
		t.Fatalf("window [60 s, 120 s) has %d requests, want %d", len(win), want)
	}
	for _, r := range win {
		if r.Arrival < 0 || r.Arrival >= 15e6 {
			t.Fatalf("windowed arrival %d outside [0, 15 s) after re-basing and speedup 4", r.Arrival)
		}
	}
	if n := len(drain(t, openTestTrace(t, "azure_conv_head300.csv", TraceOptions{MaxRequests: 7}))); n != 7 {
		t.Fatalf("MaxRequests 7 gave %d", n)
	}
}

func TestMooncakeTrace(t *testing.T) {
	src := openTestTrace(t, "mooncake_conversation_head200.jsonl", TraceOptions{})
	reqs := drain(t, src)
	if err := src.Err(); err != nil {
		t.Fatal(err)
	}
	checkWellFormed(t, reqs)
	if len(reqs) != 200 {
		t.Fatalf("%d requests, want 200", len(reqs))
	}
	// Record 1: 6758 tokens over hash ids 0..13 = 13 full blocks + 102 tokens.
	r := reqs[0]
	if len(r.Segments) != 14 || r.Segments[0].Key != MooncakeBlockKey(0) || r.Segments[13].Length != 6758-13*512 {
		t.Fatalf("first request segments %+v", r.Segments)
	}
	// Record 2 starts with hash id 0 too: the two share their first block.
	if reqs[1].Segments[0] != r.Segments[0] || reqs[1].Segments[1] == r.Segments[1] {
		t.Fatal("records sharing hash id 0 must share exactly the first block")
	}
	shared := 0
	for _, q := range reqs[1:] {
		if q.Segments[0].Key == MooncakeBlockKey(0) {
			shared++
		}
	}
	if shared == 0 {
		t.Fatal("no later request reuses block 0")
	}
}

func TestMooncakeTimestampsAndTail(t *testing.T) {
	in := `{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [7]}
{"timestamp": 1500, "input_length": 100, "output_length": 0, "hash_ids": [7, 8]}
`
	src, err := NewTraceSource(strings.NewReader(in), TraceOptions{Format: TraceMooncake})
	if err != nil {
		t.Fatal(err)
	}
	reqs := drain(t, src)
	if len(reqs) != 2 || reqs[1].Arrival != 1_500_000 {
		t.Fatalf("requests %+v", reqs)
	}
	// 600 tokens over one id: a 512-token block, then 88 unique tokens.
	if s := reqs[0].Segments; len(s) != 2 || s[0].Length != 512 || s[1].Length != 88 || s[1].Key == MooncakeBlockKey(8) {
		t.Fatalf("first segments %+v", s)
	}
	// 100 tokens: only the first block, shortened.
	if s := reqs[1].Segments; len(s) != 1 || s[0] != (Segment{Key: MooncakeBlockKey(7), Length: 100}) {
		t.Fatalf("second segments %+v", s)
	}
}

func TestTraceMalformedRowsReportLine(t *testing.T) {
	cases := []struct {
		format      TraceFormat
		in, want    string
		failsAtOpen bool
	}{
		{TraceAzure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,10,1\n2023-11-16 18:15:47,abc,1\n", "line 3: ContextTokens", false},
		{TraceAzure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,10,1\nyesterday,10,1\n", "line 3: TIMESTAMP", false},
		{TraceAzure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,10\n", "line 2: expected 3", true},
		{TraceAzure, "2023-11-16 18:15:46,10,1\n2023-11-16 18:15:45,10,1\n", "line 2: timestamp goes backwards", false},
		{TraceAzure, "2023-11-16 18:15:46,0,1\n", "line 1: ContextTokens 0", true},
		{TraceMooncake, "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": []}\n{\"timestamp\": 1, \"input_length\": 5\n", "line 2: invalid JSON", false},
		{TraceMooncake, "{\"timestamp\": 0, \"input_length\": 5, \"hash_ids\": []}\n", "line 1: output_length: missing", true},
		{TraceMooncake, "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [1, \"x\"]}\n", "line 1: invalid JSON", true},
		{TraceMooncake, "{\"timestamp\": 0, \"input_length\": -5, \"output_length\": 1, \"hash_ids\": []}\n", "line 1: input_length -5", true},
	}
	for _, tc := range cases {
		src, err := NewTraceSource(strings.NewReader(tc.in), TraceOptions{Format: tc.format})
		if tc.failsAtOpen {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%q: open error %v, want %q", tc.in, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: unexpected open error %v", tc.in, err)
			continue
		}
		drain(t, src)
		if err := src.Err(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: stream error %v, want %q", tc.in, err, tc.want)
		}
	}
	if _, err := OpenTrace("trace.parquet", TraceOptions{}); err == nil || !strings.Contains(err.Error(), "azure or mooncake") {
		t.Errorf("unknown extension: %v", err)
	}
	if _, err := NewTraceSource(strings.NewReader(""), TraceOptions{Format: "csv"}); err == nil || !strings.Contains(err.Error(), "Format") {
		t.Errorf("unknown format: %v", err)
	}
	if _, err := NewTraceSource(strings.NewReader(""), TraceOptions{Format: TraceAzure, Speedup: -1}); err == nil || !strings.Contains(err.Error(), "Speedup") {
		t.Errorf("negative speedup: %v", err)
	}
}

// mooncakeGen produces an endless synthetic Mooncake trace without holding it in memory.
type mooncakeGen struct {
	n, limit int
	buf      []byte
}

func (g *mooncakeGen) Read(p []byte) (int, error) {
	for len(g.buf) < len(p) && g.n < g.limit {
		g.buf = fmt.Appendf(g.buf, "{\"timestamp\": %d, \"input_length\": 1100, \"output_length\": 20, \"hash_ids\": [0, %d, %d]}\n", g.n, g.n+1, g.n+2)
		g.n++
	}
	if len(g.buf) == 0 {
		return 0, io.EOF
	}
	k := copy(p, g.buf)
	g.buf = g.buf[k:]
	return k, nil
}

func TestTraceStreamsWithBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 300,000 records")
	}
	src, err := NewTraceSource(&mooncakeGen{limit: 300_000}, TraceOptions{Format: TraceMooncake})
	if err != nil {
		t.Fatal(err)
	}
	var r Request
	for range 1000 {
		src.Next(&r)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n := 1000
	for src.Next(&r) {
		n++
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if src.Err() != nil || n != 300_000 {
		t.Fatalf("replayed %d records, err %v", n, src.Err())
	}
	if growth := int64(after.HeapAlloc) - int64(before.HeapAlloc); growth > 4<<20 {
		t.Fatalf("live heap grew by %d bytes while replaying", growth)
	}
}

func BenchmarkMooncakeReplay(b *testing.B) {
	src, _ := NewTraceSource(&mooncakeGen{limit: 1 << 62}, TraceOptions{Format: TraceMooncake})
	var r Request
	b.ReportAllocs()
	for b.Loop() {
		if !src.Next(&r) {
			b.Fatal(src.Err())
		}
	}
}
