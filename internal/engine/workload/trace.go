package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// TraceFormat names a trace file format.
type TraceFormat string

// Supported trace formats.
const (
	// TraceAzure is the Azure LLM inference trace CSV: TIMESTAMP (wall clock,
	// "2006-01-02 15:04:05.9999999"), ContextTokens, GeneratedTokens.
	TraceAzure TraceFormat = "azure"
	// TraceMooncake is Mooncake's JSONL: timestamp (ms from the start), input_length,
	// output_length, hash_ids (each names a MooncakeBlockTokens-token prefix block).
	TraceMooncake TraceFormat = "mooncake"
)

// MooncakeBlockTokens is the number of tokens a Mooncake hash id stands for.
const MooncakeBlockTokens = 512

// TraceOptions controls trace replay.
type TraceOptions struct {
	// Format is the file format; empty selects it from the file extension (.csv: azure,
	// .jsonl or .json: mooncake).
	Format TraceFormat
	// Speedup divides inter-arrival times: 2 replays the trace twice as fast (0 means 1).
	Speedup float64
	// Start and End select the window [Start, End) of trace time, in µs since the first
	// record (End 0 = to the end). Arrivals are re-based so the window starts at time 0.
	Start, End int64
	// MaxRequests stops after this many requests (0 = all).
	MaxRequests int64
}

// TraceSource replays a trace file as a Source, streaming: memory does not depend on the
// trace's length. A malformed record ends the stream; Err reports it with its line number.
type TraceSource struct {
	opts   TraceOptions
	sc     *bufio.Scanner
	closer io.Closer
	line   int
	origin int64 // trace time of the first record, µs
	have   bool  // origin is set
	last   int64 // previous record's trace time
	issued int64
	nextID uint64
	err    error
	done   bool
	tables Tables
	parse  func(line []byte, r *Request) (int64, error)
	// record reads the next record into r: its trace time, or done at the end of input.
	// It sets t.line to the record's line for error messages.
	record func(r *Request) (ts int64, done bool, err error)
	v2     *traceV2
	hashes []int64 // reused by the Mooncake parser
	primed bool
	first  Request
}

// OpenTrace opens a trace file for replay. It reads the first record, so an unreadable or
// malformed file fails here rather than in the middle of a run.
func OpenTrace(path string, opts TraceOptions) (*TraceSource, error) {
	if opts.Format == "" {
		switch strings.ToLower(filepath.Ext(path)) {
		case ".csv":
			opts.Format = TraceAzure
		case ".jsonl", ".json":
			opts.Format = TraceMooncake
		default:
			return nil, fmt.Errorf("trace %s: cannot tell the format from the extension; set the format (azure or mooncake)", path)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	t, err := NewTraceSource(f, opts)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("trace %s: %w", path, err)
	}
	t.closer = f
	return t, nil
}

// NewTraceSource replays a trace from r (opts.Format is required). Like OpenTrace it reads
// the first record eagerly.
func NewTraceSource(r io.Reader, opts TraceOptions) (*TraceSource, error) {
	opts, err := checkTraceOptions(opts)
	if err != nil {
		return nil, err
	}
	t := &TraceSource{opts: opts, tables: defaultTables()}
	switch opts.Format {
	case TraceAzure:
		t.parse = t.parseAzure
	case TraceMooncake:
		t.parse = t.parseMooncake
	default:
		return nil, fmt.Errorf("option Format: unknown trace format %q; valid: azure, mooncake", opts.Format)
	}
	t.sc = bufio.NewScanner(r)
	t.sc.Buffer(make([]byte, 64<<10), 64<<20)
	t.record = t.lineRecord
	t.prime()
	if t.err != nil {
		return nil, t.err
	}
	return t, nil
}

// checkTraceOptions validates opts, naming the field, and fills in the default speed-up.
func checkTraceOptions(opts TraceOptions) (TraceOptions, error) {
	if opts.Speedup == 0 {
		opts.Speedup = 1
	}
	switch {
	case !(opts.Speedup > 0) || math.IsInf(opts.Speedup, 0):
		return opts, fmt.Errorf("option Speedup: must be a finite number > 0, got %g", opts.Speedup)
	case opts.Start < 0:
		return opts, fmt.Errorf("option Start: must be >= 0, got %d", opts.Start)
	case opts.End != 0 && opts.End <= opts.Start:
		return opts, fmt.Errorf("option End: must be greater than Start (%d), got %d", opts.Start, opts.End)
	case opts.MaxRequests < 0:
		return opts, fmt.Errorf("option MaxRequests: must be >= 0, got %d", opts.MaxRequests)
	}
	return opts, nil
}

// prime reads the first record ahead so that a bad file fails when it is opened.
func (t *TraceSource) prime() {
	t.primed = t.read(&t.first)
}

// lineRecord reads one non-empty line and parses it (line-oriented formats).
func (t *TraceSource) lineRecord(r *Request) (int64, bool, error) {
	for {
		if !t.sc.Scan() {
			if err := t.sc.Err(); err != nil {
				t.line++
				return 0, false, err
			}
			return 0, true, nil
		}
		t.line++
		line := bytes.TrimSpace(t.sc.Bytes())
		if len(line) == 0 {
			continue
		}
		ts, err := t.parse(line, r)
		return ts, false, err
	}
}

// Tables implements Source.
func (t *TraceSource) Tables() *Tables { return &t.tables }

// Err returns the error that ended the stream early, if any.
func (t *TraceSource) Err() error { return t.err }

// Close releases the file opened by OpenTrace.
func (t *TraceSource) Close() error {
	if t.closer == nil {
		return nil
	}
	c := t.closer
	t.closer = nil
	return c.Close()
}

// Next implements Source.
func (t *TraceSource) Next(r *Request) bool {
	if t.primed {
		t.primed = false
		segs := r.Segments[:0]
		*r = t.first
		r.Segments = append(segs, t.first.Segments...)
		return true
	}
	return t.read(r)
}

func (t *TraceSource) read(r *Request) bool {
	for !t.done {
		if t.opts.MaxRequests > 0 && t.issued >= t.opts.MaxRequests {
			break
		}
		r.Client, r.Tenant, r.Class, r.Session, r.Round, r.Step, r.Iteration, r.Timeout = 0, 0, 0, 0, 0, "", 0, 0
		ts, done, err := t.record(r)
		if done {
			break
		}
		if err != nil {
			t.fail(fmt.Errorf("line %d: %w", t.line, err))
			break
		}
		if ts == math.MinInt64 {
			continue // header
		}
		if !t.have {
			t.origin, t.last, t.have = ts, ts, true
		}
		if ts < t.last {
			t.fail(fmt.Errorf("line %d: timestamp goes backwards (records must be in time order)", t.line))
			break
		}
		t.last = ts
		rel := ts - t.origin
		if rel < t.opts.Start {
			continue
		}
		if t.opts.End > 0 && rel >= t.opts.End {
			break
		}
		r.Arrival = int64(math.Round(float64(rel-t.opts.Start) / t.opts.Speedup))
		t.nextID++
		r.ID = t.nextID
		t.issued++
		return true
	}
	t.done = true
	t.Close()
	return false
}

func (t *TraceSource) fail(err error) {
	t.err = err
	t.done = true
	t.Close()
}

// azureLayout parses Azure's timestamps; the 9s accept any number of fractional digits.
const azureLayout = "2006-01-02 15:04:05.999999999"

// parseAzure parses one CSV row; it returns math.MinInt64 for the header.
func (t *TraceSource) parseAzure(line []byte, r *Request) (int64, error) {
	f1 := bytes.IndexByte(line, ',')
	if f1 < 0 {
		return 0, fmt.Errorf("expected 3 comma-separated fields TIMESTAMP,ContextTokens,GeneratedTokens")
	}
	f2 := bytes.IndexByte(line[f1+1:], ',')
	if f2 < 0 || bytes.IndexByte(line[f1+1+f2+1:], ',') >= 0 {
		return 0, fmt.Errorf("expected 3 comma-separated fields TIMESTAMP,ContextTokens,GeneratedTokens")
	}
	f2 += f1 + 1
	ts := string(bytes.TrimSpace(line[:f1]))
	if t.line == 1 && strings.EqualFold(ts, "TIMESTAMP") {
		return math.MinInt64, nil
	}
	tm, err := time.Parse(azureLayout, ts)
	if err != nil {
		return 0, fmt.Errorf("TIMESTAMP %q: not a \"YYYY-MM-DD hh:mm:ss.fffffff\" time", ts)
	}
	in, err := parseTokens(line[f1+1:f2], "ContextTokens", 1)
	if err != nil {
		return 0, err
	}
	out, err := parseTokens(line[f2+1:], "GeneratedTokens", 0)
	if err != nil {
		return 0, err
	}
	r.InputLen, r.OutputLen = in, out
	r.Segments = append(r.Segments[:0], Segment{Key: mix64(uint64(t.line) ^ azureSalt), Length: in})
	return tm.UnixMicro(), nil
}

func parseTokens(b []byte, name string, lo int64) (int32, error) {
	v, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q: not an integer", name, bytes.TrimSpace(b))
	}
	if v < lo || v > maxTokens {
		return 0, fmt.Errorf("%s %d: must be in [%d, %d]", name, v, lo, maxTokens)
	}
	return int32(v), nil
}

type mooncakeRecord struct {
	Timestamp    *float64 `json:"timestamp"`
	InputLength  *int64   `json:"input_length"`
	OutputLength *int64   `json:"output_length"`
	HashIDs      []int64  `json:"hash_ids"`
}

// parseMooncake parses one JSONL record. Each hash id becomes a 512-token segment keyed by the
// id (the last block holds the remainder); input beyond the blocks is unique content.
func (t *TraceSource) parseMooncake(line []byte, r *Request) (int64, error) {
	// Other fields (some Mooncake traces carry more) are ignored.
	rec := mooncakeRecord{HashIDs: t.hashes[:0]}
	if err := json.Unmarshal(line, &rec); err != nil {
		return 0, fmt.Errorf("invalid JSON record: %v", err)
	}
	t.hashes = rec.HashIDs
	switch {
	case rec.Timestamp == nil:
		return 0, errors.New("timestamp: missing")
	case rec.InputLength == nil:
		return 0, errors.New("input_length: missing")
	case rec.OutputLength == nil:
		return 0, errors.New("output_length: missing")
	case *rec.Timestamp < 0 || math.IsNaN(*rec.Timestamp) || *rec.Timestamp > 1e15:
		return 0, fmt.Errorf("timestamp %g: must be milliseconds >= 0", *rec.Timestamp)
	case *rec.InputLength < 1 || *rec.InputLength > maxTokens:
		return 0, fmt.Errorf("input_length %d: must be in [1, %d]", *rec.InputLength, maxTokens)
	case *rec.OutputLength < 0 || *rec.OutputLength > maxTokens:
		return 0, fmt.Errorf("output_length %d: must be in [0, %d]", *rec.OutputLength, maxTokens)
	}
	in := int32(*rec.InputLength)
	r.InputLen, r.OutputLen = in, int32(*rec.OutputLength)
	r.Segments = r.Segments[:0]
	left := in
	for _, h := range rec.HashIDs {
		if left == 0 {
			break
		}
		n := min(left, MooncakeBlockTokens)
		r.Segments = append(r.Segments, Segment{Key: MooncakeBlockKey(h), Length: n})
		left -= n
	}
	if left > 0 {
		r.Segments = append(r.Segments, Segment{Key: mix64(uint64(t.line) ^ mooncakeSalt), Length: left})
	}
	return int64(math.Round(*rec.Timestamp * 1000)), nil
}

const (
	azureSalt    = 0x6a7a75726574726b // distinguishes unique trace content from other keys
	mooncakeSalt = 0x6d6f6f6e63616b65
	blockSalt    = 0x6d6f6f6e626c6f63
)

// MooncakeBlockKey is the segment key of Mooncake hash id h: equal ids share KV blocks.
func MooncakeBlockKey(h int64) uint64 { return mix64(uint64(h) ^ blockSalt) }

// mix64 is the SplitMix64 finalizer: a bijection that spreads nearby inputs over all keys.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
