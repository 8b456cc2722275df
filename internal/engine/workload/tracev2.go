package workload

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// TraceV2Header is the YAML header of a BLIS trace v2 (a separate file next to the CSV data).
// Only the fields replay uses are named; other header keys are accepted and ignored, since
// newer BLIS versions add provenance fields.
type TraceV2Header struct {
	TraceVersion   int    `yaml:"trace_version"`
	TimeUnit       string `yaml:"time_unit"`
	Mode           string `yaml:"mode"`
	WarmUpRequests int    `yaml:"warm_up_requests"`
	WorkloadSeed   *int64 `yaml:"workload_seed"`
	WorkloadSpec   string `yaml:"workload_spec"`
}

// traceV2 holds the column positions and name interning of a trace v2 replay.
type traceV2 struct {
	rd       *csv.Reader
	col      map[string]int // lookup only
	header   TraceV2Header
	tb       *tableBuilder
	sessions map[string]uint64 // lookup only; grows with the number of distinct sessions
}

// traceV2Required are the columns replay reads.
var traceV2Required = []string{"client_id", "tenant_id", "slo_class", "session_id", "round_index",
	"prefix_group", "prefix_length", "input_tokens", "output_tokens", "deadline_us", "arrival_time_us"}

// OpenTraceV2 replays a BLIS trace v2: the YAML header file and the CSV data file. Rows keep
// their client, tenant, SLO class, session and round; a row's prompt is its prefix group's
// shared segment (prefix_length tokens) followed by input_tokens of unique content, as BLIS
// records the suffix only; deadline_us becomes the request's timeout. The optional columns
// model, adapter, streaming and slo_target_us become the request's Attrs. Rows must be in
// arrival order. opts.Format is ignored.
func OpenTraceV2(headerPath, dataPath string, opts TraceOptions) (*TraceSource, error) {
	hb, err := os.ReadFile(headerPath)
	if err != nil {
		return nil, fmt.Errorf("trace v2 header: %w", err)
	}
	var h TraceV2Header
	if err := yaml.Unmarshal(hb, &h); err != nil {
		return nil, fmt.Errorf("trace v2 header %s: %w", headerPath, err)
	}
	if h.TraceVersion < 2 || h.TraceVersion > 3 {
		return nil, fmt.Errorf("trace v2 header %s: trace_version: unsupported version %d; valid: 2, 3", headerPath, h.TraceVersion)
	}
	switch h.TimeUnit {
	case "", "us", "µs", "microseconds":
	default:
		return nil, fmt.Errorf("trace v2 header %s: time_unit: unsupported unit %q; valid: us", headerPath, h.TimeUnit)
	}
	f, err := os.Open(dataPath)
	if err != nil {
		return nil, fmt.Errorf("trace v2: %w", err)
	}
	t, err := newTraceV2(f, h, opts)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("trace v2 %s: %w", dataPath, err)
	}
	t.closer = f
	return t, nil
}

// NewTraceV2Source replays trace v2 CSV data from r with the given header.
func NewTraceV2Source(r io.Reader, h TraceV2Header, opts TraceOptions) (*TraceSource, error) {
	return newTraceV2(r, h, opts)
}

func newTraceV2(r io.Reader, h TraceV2Header, opts TraceOptions) (*TraceSource, error) {
	opts.Format = TraceBLISV2
	opts, err := checkTraceOptions(opts)
	if err != nil {
		return nil, err
	}
	v := &traceV2{rd: csv.NewReader(r), col: map[string]int{}, header: h, sessions: map[string]uint64{}}
	v.rd.FieldsPerRecord = -1
	v.rd.ReuseRecord = true
	t := &TraceSource{opts: opts, tables: defaultTables(), v2: v}
	// Names are added to the source's own tables as rows arrive, so a *Tables obtained
	// before the run sees them all.
	v.tb = newTableBuilder(&t.tables)
	head, err := v.rd.Read()
	if err != nil {
		return nil, fmt.Errorf("line 1: reading the CSV header row: %w", err)
	}
	for i, name := range head {
		v.col[strings.TrimSpace(name)] = i
	}
	for _, name := range traceV2Required {
		if _, ok := v.col[name]; !ok {
			return nil, fmt.Errorf("line 1: missing column %q", name)
		}
	}
	t.line = 1
	t.record = t.v2Record
	t.prime()
	if t.err != nil {
		return nil, t.err
	}
	return t, nil
}

// TraceBLISV2 marks a source replaying a BLIS trace v2 (see OpenTraceV2).
const TraceBLISV2 TraceFormat = "blis-v2"

// Header returns the trace v2 header (zero for other formats).
func (t *TraceSource) Header() TraceV2Header {
	if t.v2 == nil {
		return TraceV2Header{}
	}
	return t.v2.header
}

func (t *TraceSource) v2Record(r *Request) (int64, bool, error) {
	v := t.v2
	row, err := v.rd.Read()
	if err == io.EOF {
		return 0, true, nil
	}
	line, _ := v.rd.FieldPos(0)
	t.line = line
	if err != nil {
		return 0, false, err
	}
	get := func(name string) (string, error) {
		i := v.col[name]
		if i >= len(row) {
			return "", fmt.Errorf("%s: missing (row has %d fields)", name, len(row))
		}
		return strings.TrimSpace(row[i]), nil
	}
	num := func(name string, hi int64) (int64, error) {
		s, err := get(name)
		if err != nil {
			return 0, err
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s %q: not an integer", name, s)
		}
		if n < 0 || n > hi {
			return 0, fmt.Errorf("%s %d: must be in [0, %d]", name, n, hi)
		}
		return n, nil
	}
	arrival, err := num("arrival_time_us", math.MaxInt64/2)
	if err != nil {
		return 0, false, err
	}
	in, err := num("input_tokens", maxTokens)
	if err != nil {
		return 0, false, err
	}
	out, err := num("output_tokens", maxTokens)
	if err != nil {
		return 0, false, err
	}
	plen, err := num("prefix_length", maxTokens)
	if err != nil {
		return 0, false, err
	}
	round, err := num("round_index", math.MaxInt32)
	if err != nil {
		return 0, false, err
	}
	deadline, err := num("deadline_us", math.MaxInt64/2)
	if err != nil {
		return 0, false, err
	}
	if deadline > 0 && deadline < arrival {
		return 0, false, fmt.Errorf("deadline_us %d: precedes arrival_time_us %d", deadline, arrival)
	}
	group, _ := get("prefix_group")
	client, _ := get("client_id")
	tenant, _ := get("tenant_id")
	class, _ := get("slo_class")
	sess, _ := get("session_id")
	if group == "" {
		plen = 0
	}
	if in+plen < 1 || in+plen > maxTokens {
		return 0, false, fmt.Errorf("input_tokens %d + prefix_length %d: the prompt must have 1 to %d tokens", in, plen, maxTokens)
	}
	if class != "" && !oneOf(class, SLOClasses) {
		return 0, false, fmt.Errorf("slo_class %q: unknown; valid: %s", class, strings.Join(SLOClasses, ", "))
	}
	r.Segments = r.Segments[:0]
	if plen > 0 {
		r.Segments = append(r.Segments, Segment{Key: PrefixKey(group), Length: int32(plen)})
	}
	if in > 0 {
		r.Segments = append(r.Segments, Segment{Key: mix64(uint64(line) ^ traceV2Salt), Length: int32(in)})
	}
	r.InputLen, r.OutputLen = int32(in+plen), int32(out)
	if client != "" {
		r.Client = v.tb.add(&v.tb.t.Clients, "c", client)
	}
	r.Tenant = v.tb.add(&v.tb.t.Tenants, "t", tenant)
	if class == "" {
		class = classStandard
	}
	r.Class = v.tb.add(&v.tb.t.SLOClasses, "s", class)
	if sess != "" {
		id, ok := v.sessions[sess]
		if !ok {
			id = uint64(len(v.sessions) + 1)
			v.sessions[sess] = id
		}
		r.Session, r.Round = id, int32(round)
	}
	if deadline > 0 {
		r.Timeout = deadline - arrival
		if r.Timeout == 0 {
			r.Timeout = 1
		}
	}
	r.Attrs, err = v.attrs(get, num)
	if err != nil {
		return 0, false, err
	}
	return arrival, false, nil
}

// attrs reads the row's optional model, adapter, streaming and slo_target_us columns (BLIS
// writes them; a trace without them gives zero attributes).
func (v *traceV2) attrs(get func(string) (string, error), num func(string, int64) (int64, error)) (Attrs, error) {
	var a Attrs
	if _, ok := v.col["model"]; ok {
		if m, err := get("model"); err != nil {
			return a, err
		} else if m != "" {
			a.Model = v.tb.addOptional(&v.tb.t.Models, "m", m)
		}
	}
	if _, ok := v.col["adapter"]; ok {
		if ad, err := get("adapter"); err != nil {
			return a, err
		} else if ad != "" {
			a.Adapter = v.tb.addOptional(&v.tb.t.Adapters, "a", ad)
		}
	}
	if _, ok := v.col["streaming"]; ok {
		s, err := get("streaming")
		if err != nil {
			return a, err
		}
		if s != "" {
			if a.Streaming, err = strconv.ParseBool(s); err != nil {
				return a, fmt.Errorf("streaming %q: not a boolean", s)
			}
		}
	}
	if _, ok := v.col["slo_target_us"]; ok {
		if s, err := get("slo_target_us"); err != nil {
			return a, err
		} else if s != "" {
			if a.SLOTarget, err = num("slo_target_us", math.MaxInt64/2); err != nil {
				return a, err
			}
		}
	}
	return a, nil
}

const traceV2Salt = 0x626c697374726332
