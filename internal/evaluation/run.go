package evaluation

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"

	"github.com/inference-sim/blis-operator/internal/engine/metrics"
	"github.com/inference-sim/blis-operator/internal/engine/sim"
	"github.com/inference-sim/blis-operator/internal/engine/trace"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// SeedResult is the outcome of one seed.
type SeedResult struct {
	// Seed is the simulation seed.
	Seed int64
	// values and has are the headline metrics, aligned with metricDefs.
	values []float64
	has    []bool
	// classes are the per-class metrics, sorted by class name, then the per-tenant rows
	// (named tenant:<name>), sorted by tenant name.
	classes []classRow
	// trace is the seed's trace (anomaly counters, decision records).
	trace *trace.Trace
	// headline and groups are the outcome numbers for the trace summary.
	headline trace.Headline
	groups   []trace.Group
	tenants  []trace.Group
	names    *workload.Tables
	// dists and series are the first seed's latency distributions and time series (series
	// only when the trace level is not none), for ReportData; nil for the other seeds.
	dists  []metrics.Distribution
	series *sim.Series
	// pools are the prefill and decode pools' metrics (disaggregated clusters only).
	pools []poolRow
}

// classRow is one class's metrics, aligned with classDefs.
type classRow struct {
	name   string
	values []float64
	has    []bool
}

// Result is the outcome of every seed of a resolved evaluation, in seed order.
type Result struct {
	// Hash is the input hash of the document that was run; EngineVersion the engine's.
	Hash, EngineVersion string
	// Seeds are the per-seed outcomes in Document.Seeds order.
	Seeds []SeedResult

	doc  *Document
	plan *plan
}

// Options tune Run.
type Options struct {
	// Parallelism bounds the seeds simulated at once (0 = GOMAXPROCS). Each simulation is
	// single-threaded and deterministic, so the result does not depend on it.
	Parallelism int
	// Progress, when set, receives each seed's simulation progress (sim.Options.Progress).
	// Seeds run in parallel call it concurrently, each from its own goroutine. It does not
	// change the result.
	Progress func(seed int64, p sim.Progress)
}

// Run simulates every seed of r with default options. See RunWithOptions.
func Run(ctx context.Context, r *Resolved) (*Result, error) {
	return RunWithOptions(ctx, r, Options{})
}

// RunWithOptions simulates every seed of r, several at once, and assembles the results in seed
// order. ctx is checked before each seed starts; a simulation that has started runs to its end
// (the simulator cannot be interrupted), so cancellation takes effect at the next seed.
func RunWithOptions(ctx context.Context, r *Resolved, opts Options) (*Result, error) {
	if r == nil || r.plan == nil {
		return nil, errors.New("evaluation: run of an unresolved evaluation")
	}
	doc := &r.Document
	par := opts.Parallelism
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	par = min(par, len(doc.Seeds))
	out := make([]SeedResult, len(doc.Seeds))
	errs := make([]error, len(doc.Seeds))
	next := make(chan int)
	var wg sync.WaitGroup
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := ctx.Err(); err != nil {
					errs[i] = err
					continue
				}
				out[i], errs[i] = r.plan.runSeed(doc, doc.Seeds[i], i == 0, opts.Progress)
			}
		}()
	}
	for i := range doc.Seeds {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return nil, err
			}
			return nil, fmt.Errorf("seed %d: %w", doc.Seeds[i], err)
		}
	}
	return &Result{Hash: r.Hash, EngineVersion: doc.EngineVersion, Seeds: out, doc: doc, plan: r.plan}, nil
}

// runSeed simulates one seed and extracts its metrics. The first seed also keeps its latency
// distributions and, when the trace level is not none, its time series, which a report shows.
func (p *plan) runSeed(doc *Document, seed int64, first bool, progress func(int64, sim.Progress)) (SeedResult, error) {
	src, horizon, err := p.source(doc, seed)
	if err != nil {
		return SeedResult{}, err
	}
	defer closeSource(src)
	names := src.Tables()
	targets := sloTargets(p.targets, names)
	cfg := p.config(doc, seed, horizon)
	tc := &trace.Config{Level: p.level, TTFTTargets: make([]int64, len(targets))}
	for i, t := range targets {
		tc.TTFTTargets[i] = t.TTFT
	}
	cfg.Options.Trace = tc
	cfg.Options.Series = first && p.level != trace.LevelNone
	if progress != nil {
		cfg.Options.Progress = func(sp sim.Progress) { progress(seed, sp) }
	}
	res, err := sim.Run(cfg, src)
	if err != nil {
		return SeedResult{}, err
	}
	if ts, ok := src.(*closingSource); ok && ts.Err() != nil {
		return SeedResult{}, fmt.Errorf("trace: %w", ts.Err())
	}
	rep := res.Report(names, metrics.Options{Targets: targets})
	x := &seedData{o: &rep.Cluster, replicas: p.replicas, autoscale: res.Autoscale}
	if res.Trace != nil {
		x.an = &res.Trace.Anomalies
	}
	for i := range res.Instances {
		if total := p.instance.TotalKVBlocks; total > 0 {
			x.kvPeak = max(x.kvPeak, float64(res.Instances[i].PeakKVBlocks)/float64(total))
		}
	}
	if pd := res.PD; pd != nil {
		// Pools may have their own KV capacity: the engine's per-pool peaks.
		x.kvPeak = max(pd.PrefillPeakKVUtilization, pd.DecodePeakKVUtilization)
	}
	sr := p.extract(seed, x)
	sr.trace, sr.names = res.Trace, names
	sr.pools = poolRows(res, names, targets)
	if first {
		sr.dists = metrics.Distributions(res.Collectors, res.Gateway, names)
		sr.series = res.Series
	}
	p.outcome(&sr, &rep.Cluster)
	return sr, nil
}

// sloTargets maps per-class goodput targets (ms) onto the report's per-class-index targets
// (µs).
func sloTargets(targets map[string]workload.SLOTargets, names *workload.Tables) []metrics.SLOTarget {
	if len(targets) == 0 || names == nil {
		return nil
	}
	out := make([]metrics.SLOTarget, len(names.SLOClasses))
	for i, class := range names.SLOClasses {
		if t, ok := targets[class]; ok {
			out[i] = metrics.SLOTarget{TTFT: int64(t.TTFT * 1000), ITL: int64(t.ITL * 1000), E2E: int64(t.E2E * 1000)}
		}
	}
	return out
}

// extract reads the status metrics of one seed from the cluster block: the headline metrics,
// the per-class rows, then the per-tenant rows (as tenant:<name>).
func (p *plan) extract(seed int64, x *seedData) SeedResult {
	o := x.o
	sr := SeedResult{Seed: seed, values: make([]float64, len(metricDefs)), has: make([]bool, len(metricDefs))}
	for i, d := range metricDefs {
		sr.values[i], sr.has[i] = d.get(x)
	}
	sr.classes = append(groupRows(o.PerClass, ""), groupRows(o.PerTenant, tenantPrefix)...)
	return sr
}

// tenantPrefix names the per-tenant rows of status.metrics.perClass.
const tenantPrefix = "tenant:"

// groupRows turns per-class (or per-tenant) outputs into rows sorted by name.
func groupRows(groups map[string]*metrics.ClassOutput, prefix string) []classRow {
	names := make([]string, 0, len(groups))
	for n := range groups {
		names = append(names, n)
	}
	sort.Strings(names)
	rows := make([]classRow, 0, len(names))
	for _, n := range names {
		c := groups[n]
		row := classRow{name: prefix + n, values: make([]float64, len(classDefs)), has: make([]bool, len(classDefs))}
		for i, d := range classDefs {
			row.values[i], row.has[i] = d.get(c)
		}
		rows = append(rows, row)
	}
	return rows
}

// outcome keeps the numbers the trace summary reports.
func (p *plan) outcome(sr *SeedResult, o *metrics.Output) {
	h := &sr.headline
	h.Injected, h.Completed, h.Rejected = float64(o.InjectedRequests), float64(o.CompletedRequests), float64(o.RejectedRequests)
	h.TimedOut, h.Dropped, h.Preemptions = float64(o.TimedOutRequests), float64(o.DroppedUnservable), float64(o.PreemptionCount)
	h.ResponsesPerSec, h.TokensPerSec = o.ResponsesPerSec, o.TokensPerSec
	h.TTFTP50Ms, h.TTFTP99Ms, h.E2EP50Ms, h.E2EP99Ms, h.ITLP99Ms = o.TTFTP50Ms, o.TTFTP99Ms, o.E2EP50Ms, o.E2EP99Ms, o.ITLP99Ms
	h.SLOAttainment, h.CacheHitRate, h.Jain = o.SLOAttainment, o.CacheHitRate, o.JainFairnessIndex
	group := func(name string, c *metrics.ClassOutput) trace.Group {
		g := trace.Group{Name: name, Count: float64(c.Count), Completed: float64(c.Completed), Rejected: float64(c.Rejected),
			TTFTP99Ms: c.TTFTP99Ms, E2EP99Ms: c.E2EP99Ms, Attainment: c.SLOAttainment}
		if t, ok := p.targets[name]; ok {
			g.TargetTTFTMs, g.TargetE2EMs = t.TTFT, t.E2E
		}
		return g
	}
	for _, n := range sortedKeys(o.PerClass) {
		sr.groups = append(sr.groups, group(n, o.PerClass[n]))
	}
	for _, n := range sortedKeys(o.PerTenant) {
		g := group(n, o.PerTenant[n])
		g.TargetTTFTMs, g.TargetE2EMs = 0, 0
		sr.tenants = append(sr.tenants, g)
	}
}

func sortedKeys(m map[string]*metrics.ClassOutput) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
