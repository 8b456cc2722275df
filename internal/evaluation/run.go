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
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// SeedResult is the outcome of one seed.
type SeedResult struct {
	// Seed is the simulation seed.
	Seed int64
	// values and has are the headline metrics, aligned with metricDefs.
	values []float64
	has    []bool
	// classes are the per-class metrics, sorted by class name.
	classes []classRow
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
				out[i], errs[i] = r.plan.runSeed(doc, doc.Seeds[i])
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

// runSeed simulates one seed and extracts its metrics.
func (p *plan) runSeed(doc *Document, seed int64) (SeedResult, error) {
	src, horizon, err := p.source(doc, seed)
	if err != nil {
		return SeedResult{}, err
	}
	defer closeSource(src)
	res, err := sim.Run(p.config(doc, seed, horizon), src)
	if err != nil {
		return SeedResult{}, err
	}
	if ts, ok := src.(*closingSource); ok && ts.Err() != nil {
		return SeedResult{}, fmt.Errorf("trace: %w", ts.Err())
	}
	names := src.Tables()
	rep := res.Report(names, metrics.Options{Targets: sloTargets(p.targets, names)})
	return p.extract(seed, &rep.Cluster), nil
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

// extract reads the status metrics of one seed from the cluster block.
func (p *plan) extract(seed int64, o *metrics.Output) SeedResult {
	sr := SeedResult{Seed: seed, values: make([]float64, len(metricDefs)), has: make([]bool, len(metricDefs))}
	for i, d := range metricDefs {
		sr.values[i], sr.has[i] = d.get(o, p.replicas)
	}
	names := make([]string, 0, len(o.PerClass))
	for n := range o.PerClass {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := o.PerClass[n]
		row := classRow{name: n, values: make([]float64, len(classDefs)), has: make([]bool, len(classDefs))}
		for i, d := range classDefs {
			row.values[i], row.has[i] = d.get(c)
		}
		sr.classes = append(sr.classes, row)
	}
	return sr
}
