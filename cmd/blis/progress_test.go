package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inference-sim/blis-operator/internal/engine/sim"
	"github.com/inference-sim/blis-operator/internal/evaluation"
	"github.com/inference-sim/blis-operator/internal/study"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock               { return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }
func fixedWidth(n int) func() int            { return func() int { return n } }
func lastLine(out string) string             { return out[strings.LastIndex(out, "\r")+1:] }
func drawsIn(out string) int                 { return strings.Count(out, "\r") }
func progressAt(now, gen, fin, horizon int64) sim.Progress {
	return sim.Progress{Now: now, Generated: gen, Finished: fin, Horizon: horizon}
}

func TestProgressBarPacing(t *testing.T) {
	var out bytes.Buffer
	clk := newFakeClock()
	b := newProgressBar(&out, clk.now, fixedWidth(200))
	b.setSeeds(2)

	// Nothing before two seconds of wall time.
	clk.advance(1999 * time.Millisecond)
	b.simulation(1, progressAt(10_000_000, 500, 400, 60_000_000))
	if out.Len() != 0 {
		t.Fatalf("drawn before the delay: %q", out.String())
	}
	// At two seconds the line appears: slowest seed's time, the horizon, totals over seeds,
	// requests per wall second.
	clk.advance(time.Millisecond)
	b.simulation(2, progressAt(6_000_000, 300, 200, 60_000_000))
	want := "\r[==                  ]  10% sim 6.0s/60.0s | 600/800 requests finished | 300 req/s | seeds 2/2 | 2s"
	if out.String() != want {
		t.Fatalf("first draw:\n%q\nwant\n%q", out.String(), want)
	}
	// Within 100 ms: no redraw, but the numbers are kept.
	clk.advance(99 * time.Millisecond)
	b.simulation(2, progressAt(30_000_000, 1000, 900, 60_000_000))
	if drawsIn(out.String()) != 1 {
		t.Fatalf("redrawn within the interval: %q", out.String())
	}
	clk.advance(time.Millisecond)
	b.simulation(1, progressAt(45_000_000, 1500, 1500, 60_000_000))
	if got := lastLine(out.String()); got != "[==========          ]  50% sim 30.0s/60.0s | 2,400/2,500 requests finished | 1,142 req/s | seeds 2/2 | 2s" {
		t.Fatalf("second draw %q", got)
	}
	// Ten reports in one second of wall time draw at most ten times.
	before := drawsIn(out.String())
	for range 100 {
		clk.advance(10 * time.Millisecond)
		b.simulation(1, progressAt(50_000_000, 1600, 1600, 60_000_000))
	}
	if n := drawsIn(out.String()) - before; n != 10 {
		t.Errorf("%d draws in one second, want 10", n)
	}
	// stop blanks the line and returns to its start; later reports draw nothing.
	drawn := len(lastLine(out.String()))
	out.Reset()
	b.stop()
	if want := "\r" + strings.Repeat(" ", drawn) + "\r"; out.String() != want {
		t.Fatalf("stop wrote %q, want %q", out.String(), want)
	}
	out.Reset()
	clk.advance(time.Second)
	b.simulation(1, progressAt(60_000_000, 1600, 1600, 60_000_000))
	b.stop()
	if out.Len() != 0 {
		t.Fatalf("drawn after stop: %q", out.String())
	}
}

func TestProgressBarWithoutHorizonAndShorterLines(t *testing.T) {
	var out bytes.Buffer
	clk := newFakeClock()
	b := newProgressBar(&out, clk.now, fixedWidth(0))
	clk.advance(3 * time.Second)
	b.simulation(42, progressAt(123_456_789, 1234567, 1234560, 0))
	if got := lastLine(out.String()); got != "sim 123.5s | 1,234,560/1,234,567 requests finished | 411,520 req/s | 3s" {
		t.Fatalf("line %q", got)
	}
	// A shorter line overwrites the longer one completely.
	clk.advance(time.Second)
	long := len(lastLine(out.String()))
	b.simulation(42, progressAt(200_000_000, 9, 9, 0))
	if got := lastLine(out.String()); len(got) != long || !strings.HasPrefix(got, "sim 200.0s | 9/9 requests finished | 2 req/s | 4s ") {
		t.Fatalf("shorter line %q (len %d, want %d)", got, len(got), long)
	}
}

func TestProgressBarTrialsAndWidth(t *testing.T) {
	var out bytes.Buffer
	clk := newFakeClock()
	b := newProgressBar(&out, clk.now, fixedWidth(30))
	b.setTrials(8)
	b.trialFunc()(study.Trial{})
	clk.advance(2500 * time.Millisecond)
	b.trialDone()
	// The line is cut to the terminal's width less one column, so it never wraps.
	if got := lastLine(out.String()); got != "[=====               ] trials" {
		t.Fatalf("line %q", got)
	}
	b2 := newProgressBar(&out, clk.now, fixedWidth(200))
	b2.setTrials(8)
	clk.advance(2 * time.Second)
	for range 3 {
		b2.trialDone()
		clk.advance(time.Second)
	}
	if got := lastLine(out.String()); got != "[=======             ] trials 3/8 | 4s" {
		t.Fatalf("line %q", got)
	}
}

// TestProgressBarConcurrentSeeds: seeds report from their own goroutines at once (run with
// -race); the totals add up.
func TestProgressBarConcurrentSeeds(t *testing.T) {
	var out bytes.Buffer
	clk := newFakeClock()
	clk.advance(5 * time.Second)
	start := clk.t.Add(-5 * time.Second)
	b := newProgressBar(&out, func() time.Time { return clk.t }, fixedWidth(200))
	b.start = start
	var wg sync.WaitGroup
	for seed := range int64(8) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range int64(100) {
				b.simulation(seed, progressAt(i*1000, i+1, i, 0))
			}
		}()
	}
	wg.Wait()
	b.mu.Lock()
	line := b.line(clk.t)
	b.mu.Unlock()
	if !strings.Contains(line, "792/800 requests finished") {
		t.Fatalf("line %q", line)
	}
}

func TestNilProgressBar(t *testing.T) {
	var b *progressBar
	b.setSeeds(3)
	b.setTrials(3)
	b.simulation(1, sim.Progress{})
	b.trialDone()
	b.stop()
	if b.simFunc(1) != nil || b.evalFunc() != nil || b.trialFunc() != nil {
		t.Fatal("a nil bar hands the engine a callback")
	}
}

// TestNoProgressBarWhenPiped: a pipe or a buffer is not a terminal, and --quiet turns the bar
// off, so piped output never has one.
func TestNoProgressBarWhenPiped(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close(); _ = w.Close() }()
	if startProgress(w) != nil {
		t.Error("a bar on a pipe")
	}
	if startProgress(&bytes.Buffer{}) != nil {
		t.Error("a bar on a buffer")
	}
	// A long-enough evaluation through the command writes no control characters.
	out, errOut, err := evaluateCLI(t, "--num-requests", "200", "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "\r") || strings.Contains(errOut, "\r") {
		t.Errorf("carriage returns in piped output: %q", errOut)
	}
}

// TestProgressBarDoesNotChangeResults runs the quick start with and without a bar (on a fake
// terminal whose clock jumps a second per reading, so it draws on every report): the statuses
// are identical and the bar did draw.
func TestProgressBarDoesNotChangeResults(t *testing.T) {
	var m evaluation.Manifests
	if err := m.Add(evaluation.DefaultManifestName, evaluation.DefaultManifests()); err != nil {
		t.Fatal(err)
	}
	ev, err := m.Select("", false)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(400)
	ev.Spec.NumRequests = &n
	in, err := m.Inputs(ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := evaluation.Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := evaluation.RunWithOptions(context.Background(), r, evaluation.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var mu sync.Mutex
	clk := newFakeClock()
	b := newProgressBar(&out, func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clk.advance(time.Second)
		return clk.t
	}, fixedWidth(200))
	b.setSeeds(len(r.Document.Seeds))
	withBar, err := evaluation.RunWithOptions(context.Background(), r, evaluation.Options{Progress: b.evalFunc()})
	if err != nil {
		t.Fatal(err)
	}
	b.stop()
	a, _ := json.Marshal(plain.Status())
	c, _ := json.Marshal(withBar.Status())
	if !bytes.Equal(a, c) {
		t.Fatalf("the bar changed the result:\n%s\n%s", a, c)
	}
	if drawsIn(out.String()) == 0 || !strings.Contains(out.String(), "requests finished") {
		t.Fatalf("the bar did not draw: %q", out.String())
	}
}
