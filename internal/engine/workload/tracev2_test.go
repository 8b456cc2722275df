package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const v2Columns = "request_id,client_id,tenant_id,slo_class,session_id,round_index,prefix_group,prefix_length,streaming,input_tokens,output_tokens,text_tokens,image_tokens,audio_tokens,video_tokens,reason_ratio,model,deadline_us,server_input_tokens,arrival_time_us,send_time_us,first_chunk_time_us,last_chunk_time_us,num_chunks,status,error_message,finish_reason\n"

func writeV2(t *testing.T, header, data string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	h, d := filepath.Join(dir, "trace.yaml"), filepath.Join(dir, "trace.csv")
	if err := os.WriteFile(h, []byte(header), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return h, d
}

func TestTraceV2Replay(t *testing.T) {
	h, d := writeV2(t, "trace_version: 2\ntime_unit: us\nmode: generated\nwarm_up_requests: 1\nworkload_seed: 42\nserver: {model: m}\n", v2Columns+
		`0,chat,tenant-a,critical,s1,0,sys,100,true,50,20,0,0,0,0,0,,0,0,1000,1000,0,0,0,ok,,
1,chat,tenant-a,critical,s1,1,sys,100,true,80,10,0,0,0,0,0,,900000,0,5000,5000,0,0,0,error,"upstream reset, retry",
2,batch,tenant-b,,,0,,0,false,300,5,0,0,0,0,0,,0,0,5000,5000,0,0,0,ok,,
`)
	src, err := OpenTraceV2(h, d, TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tb := src.Tables()
	reqs := drain(t, src)
	if err := src.Err(); err != nil {
		t.Fatal(err)
	}
	checkWellFormed(t, reqs)
	if src.Header().WarmUpRequests != 1 || *src.Header().WorkloadSeed != 42 {
		t.Fatalf("header %+v", src.Header())
	}
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	a, b, c := reqs[0], reqs[1], reqs[2]
	// input_tokens is the suffix after the prefix group's shared segment.
	if a.InputLen != 150 || a.Segments[0] != (Segment{Key: PrefixKey("sys"), Length: 100}) || b.Segments[0] != a.Segments[0] {
		t.Fatalf("prefix segments: %+v / %+v", a.Segments, b.Segments)
	}
	if a.Session == 0 || b.Session != a.Session || b.Round != 1 || c.Session != 0 {
		t.Fatalf("sessions: %d/%d round %d, %d", a.Session, b.Session, b.Round, c.Session)
	}
	if b.Timeout != 895000 || a.Timeout != 0 {
		t.Fatalf("timeouts %d %d, want deadline - arrival", b.Timeout, a.Timeout)
	}
	if a.Arrival != 0 || b.Arrival != 4000 {
		t.Fatalf("arrivals %d %d, want re-based to the first row", a.Arrival, b.Arrival)
	}
	// The *Tables taken before the run sees names added while streaming.
	if tb.Clients[a.Client] != "chat" || tb.Clients[c.Client] != "batch" || tb.Tenants[c.Tenant] != "tenant-b" ||
		tb.SLOClasses[a.Class] != "critical" || tb.SLOClasses[c.Class] != "standard" {
		t.Fatalf("tables %+v", tb)
	}
}

func TestTraceV2Errors(t *testing.T) {
	good := "trace_version: 2\ntime_unit: us\n"
	cases := []struct{ header, data, want string }{
		{"trace_version: 9\n", v2Columns, "trace_version"},
		{"trace_version: 2\ntime_unit: ms\n", v2Columns, "time_unit"},
		{good, "request_id,client_id\n", `line 1: missing column "tenant_id"`},
		{good, v2Columns + "0,c,t,standard,,0,,0,true,10,1,0,0,0,0,0,,0,0,100,0,0,0,0,ok,,\n1,c,t,standard,,0,,0,true,ten,1,0,0,0,0,0,,0,0,200,0,0,0,0,ok,,\n", `line 3: input_tokens "ten"`},
		{good, v2Columns + "0,c,t,standard,,0,,0,true,10,1,0,0,0,0,0,,0,0,100,0,0,0,0,ok,,\n1,c,t,standard,,0,,0,true,10,1,0,0,0,0,0,,0,0,50,0,0,0,0,ok,,\n", "line 3: timestamp goes backwards"},
		{good, v2Columns + "0,c,t,urgent,,0,,0,true,10,1,0,0,0,0,0,,0,0,100,0,0,0,0,ok,,\n", `line 2: slo_class "urgent"`},
		{good, v2Columns + "0,c,t,standard,,0,,0,true,10,1,0,0,0,0,0,,50,0,100,0,0,0,0,ok,,\n", "line 2: deadline_us 50"},
	}
	for _, tc := range cases {
		h, d := writeV2(t, tc.header, tc.data)
		src, err := OpenTraceV2(h, d, TraceOptions{})
		if err == nil {
			drain(t, src)
			err = src.Err()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error containing %q, got %v", tc.want, err)
		}
	}
}
