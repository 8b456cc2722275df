package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/inference-sim/blis-operator/internal/engine/sim"
	"github.com/inference-sim/blis-operator/internal/study"
)

// The progress bar's pacing: nothing is drawn for work shorter than progressDelay (so quick
// commands print exactly what they always printed), and the line is redrawn at most once every
// progressInterval.
const (
	progressDelay    = 2 * time.Second
	progressInterval = 100 * time.Millisecond
)

// progressQuiet is the --quiet flag of the command being run (addClusterFlags binds it).
var progressQuiet bool

// progressBar is a one-line status on a terminal for long CLI work: simulated time (and the
// horizon when there is one), requests finished and generated, requests finished per second of
// wall time, seeds started, and for studies the candidates done. The engine reports from its
// simulation goroutines (several seeds run at once), so every method locks; the callbacks only
// copy a few numbers and read the clock, and they never change what is simulated. A nil
// *progressBar is valid and draws nothing, which is what callers get when the output is not
// a terminal or --quiet is set.
type progressBar struct {
	mu    sync.Mutex
	w     io.Writer
	now   func() time.Time
	width func() int

	start, last time.Time
	// drawn is the length of the line on screen (0 = nothing to clear).
	drawn   int
	stopped bool

	seeds       map[int64]sim.Progress
	seedsTotal  int
	trialsDone  int
	trialsTotal int
}

// newProgressBar draws on w with clock now; width reports the terminal's columns (0 when
// unknown). The bar's clock starts now.
func newProgressBar(w io.Writer, now func() time.Time, width func() int) *progressBar {
	return &progressBar{w: w, now: now, width: width, start: now(), seeds: map[int64]sim.Progress{}}
}

// startProgress returns a bar on w when w is a terminal and --quiet is not set, else nil (no
// bar: piped and redirected output stays free of control characters).
func startProgress(w io.Writer) *progressBar {
	if progressQuiet {
		return nil
	}
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	fd := int(f.Fd())
	return newProgressBar(w, time.Now, func() int {
		cols, _, err := term.GetSize(fd)
		if err != nil {
			return 0
		}
		return cols
	})
}

// setSeeds sets the number of seeds of the run.
func (b *progressBar) setSeeds(n int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seedsTotal = n
}

// setTrials sets the number of candidates a study may evaluate.
func (b *progressBar) setTrials(n int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.trialsTotal = n
}

// simulation records the progress of one seed's run (the signature of
// evaluation.Options.Progress).
func (b *progressBar) simulation(seed int64, p sim.Progress) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seeds[seed] = p
	b.maybeDraw()
}

// simFunc is a sim.Options.Progress for the single run of seed; nil without a bar, so the
// engine skips the calls altogether.
func (b *progressBar) simFunc(seed int64) func(sim.Progress) {
	if b == nil {
		return nil
	}
	return func(p sim.Progress) { b.simulation(seed, p) }
}

// evalFunc is an evaluation.Options.Progress; nil without a bar.
func (b *progressBar) evalFunc() func(int64, sim.Progress) {
	if b == nil {
		return nil
	}
	return b.simulation
}

// trialDone counts one finished study candidate.
func (b *progressBar) trialDone() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.trialsDone++
	b.maybeDraw()
}

// trialFunc is a binding.Local.Progress counting finished candidates; nil without a bar.
func (b *progressBar) trialFunc() func(study.Trial) {
	if b == nil {
		return nil
	}
	return func(study.Trial) { b.trialDone() }
}

// stop clears the line, so that the command's output starts on a clean line, and ends the
// bar (later reports are ignored).
func (b *progressBar) stop() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clear()
	b.stopped = true
}

// maybeDraw redraws the line when the work has lasted progressDelay and the last draw is
// progressInterval old. Called with mu held.
func (b *progressBar) maybeDraw() {
	if b.stopped {
		return
	}
	now := b.now()
	if now.Sub(b.start) < progressDelay || (!b.last.IsZero() && now.Sub(b.last) < progressInterval) {
		return
	}
	b.last = now
	line := b.line(now)
	if w := b.width(); w > 1 && len(line) > w-1 {
		// A line wider than the terminal would wrap, and \r only returns to the last row.
		line = line[:w-1]
	}
	pad := ""
	if b.drawn > len(line) {
		pad = strings.Repeat(" ", b.drawn-len(line))
	}
	fmt.Fprint(b.w, "\r"+line+pad)
	b.drawn = len(line)
}

// clear blanks the drawn line. Called with mu held.
func (b *progressBar) clear() {
	if b.drawn > 0 {
		fmt.Fprint(b.w, "\r"+strings.Repeat(" ", b.drawn)+"\r")
		b.drawn = 0
	}
}

// line is the status text (ASCII, so its length is its width on screen).
func (b *progressBar) line(now time.Time) string {
	var parts []string
	if len(b.seeds) > 0 {
		seeds := make([]int64, 0, len(b.seeds))
		for s := range b.seeds {
			seeds = append(seeds, s)
		}
		sort.Slice(seeds, func(i, j int) bool { return seeds[i] < seeds[j] })
		// Simulated time is the least advanced seed's: the run is done when the slowest is.
		var simNow, horizon, generated, finished int64
		for i, s := range seeds {
			p := b.seeds[s]
			if i == 0 || p.Now < simNow {
				simNow = p.Now
			}
			horizon = max(horizon, p.Horizon)
			generated += p.Generated
			finished += p.Finished
		}
		if horizon > 0 {
			frac := min(1, float64(simNow)/float64(horizon))
			parts = append(parts, fmt.Sprintf("%s %3.0f%% sim %s/%s", progressCells(frac, 20), 100*frac, simSeconds(simNow), simSeconds(horizon)))
		} else {
			parts = append(parts, "sim "+simSeconds(simNow))
		}
		parts = append(parts, fmt.Sprintf("%s/%s requests finished", groupDigits(finished), groupDigits(generated)))
		if secs := now.Sub(b.start).Seconds(); secs > 0 {
			parts = append(parts, groupDigits(int64(float64(finished)/secs))+" req/s")
		}
		if b.seedsTotal > 1 {
			parts = append(parts, fmt.Sprintf("seeds %d/%d", len(seeds), b.seedsTotal))
		}
	}
	if b.trialsTotal > 0 {
		frac := min(1, float64(b.trialsDone)/float64(b.trialsTotal))
		parts = append(parts, fmt.Sprintf("%s trials %d/%d", progressCells(frac, 20), b.trialsDone, b.trialsTotal))
	}
	parts = append(parts, now.Sub(b.start).Truncate(time.Second).String())
	return strings.Join(parts, " | ")
}

// progressCells draws frac of width cells.
func progressCells(frac float64, width int) string {
	n := int(frac * float64(width))
	return "[" + strings.Repeat("=", n) + strings.Repeat(" ", width-n) + "]"
}

// simSeconds formats simulated µs as seconds.
func simSeconds(us int64) string {
	return strconv.FormatFloat(float64(us)/1e6, 'f', 1, 64) + "s"
}

// groupDigits writes n with thousands separators.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
