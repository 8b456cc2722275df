package evaluation

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/inference-sim/blis-operator/internal/engine/metrics"
	"github.com/inference-sim/blis-operator/internal/engine/model"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/rng"
	"github.com/inference-sim/blis-operator/internal/engine/sim"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
	"github.com/inference-sim/blis-operator/internal/report"
)

// Sentences of report.Data.Missing.
const (
	// MissingSeries explains a report without time series.
	MissingSeries = "time series were not recorded: the trace level is none; run with --trace-level decisions"
	// MissingClasses explains a report without per-class latency distributions.
	MissingClasses = "per-class latency distributions are not shown: no request of any SLO class completed, or the workload has no SLO classes"
	// MissingDistributions explains a report without any latency distribution.
	MissingDistributions = "latency distributions are not shown: no request completed"
)

// ReportData builds the data of a report on this result, named name: the status exactly as
// Status writes it, a one-line description of the run, and the first seed's latency
// distributions and time series (recorded only when the trace level is not none), with a
// sentence in Missing for each part that cannot be shown.
func (r *Result) ReportData(name string) *report.Data {
	d := &report.Data{
		Version:     report.DataVersion,
		Name:        name,
		Description: r.describe(),
		Status:      r.Status(),
	}
	if len(r.Seeds) == 0 {
		return d
	}
	first := &r.Seeds[0]
	d.Seed = first.Seed
	grid := metrics.QuantileGrid()
	classes := 0
	for _, m := range first.dists {
		dist := report.Distribution{Metric: m.Metric, Class: m.Class, Count: m.Count, Points: make([]report.QuantilePoint, len(grid))}
		for i, p := range grid {
			dist.Points[i] = report.QuantilePoint{P: p / 100, Ms: m.Ms[i]}
		}
		if m.Class != "" {
			classes++
		}
		d.Distributions = append(d.Distributions, dist)
	}
	switch {
	case len(first.dists) == 0:
		d.Missing = append(d.Missing, MissingDistributions)
	case classes == 0:
		d.Missing = append(d.Missing, MissingClasses)
	}
	if first.series == nil {
		d.Missing = append(d.Missing, MissingSeries)
	} else {
		d.Series = reportSeries(first.series)
	}
	return d
}

// reportSeries converts the engine's series: counts become rates over each bucket's own length.
func reportSeries(s *sim.Series) *report.Series {
	n := s.Buckets()
	out := &report.Series{
		BucketUs: s.BucketUs,
		EndUs:    s.End,
		Cluster: report.ClusterSeries{
			ArrivalsPerSec:    make([]float64, n),
			CompletionsPerSec: make([]float64, n),
			ReadyInstances:    append([]float64(nil), s.ReadyInstances...),
		},
		Instances: make([]report.InstanceSeries, len(s.Instances)),
	}
	for k := range n {
		if d := s.BucketDuration(k); d > 0 {
			sec := float64(d) / 1e6
			out.Cluster.ArrivalsPerSec[k] = float64(s.Arrivals[k]) / sec
			out.Cluster.CompletionsPerSec[k] = float64(s.Completions[k]) / sec
		}
	}
	for i, in := range s.Instances {
		out.Instances[i] = report.InstanceSeries{
			Name:          rng.InstanceName(i),
			QueueDepth:    in.QueueDepth,
			BatchSize:     in.BatchSize,
			KVUtilization: in.KVUtilization,
			CacheHitRate:  in.CacheHitRate,
		}
	}
	return out
}

// describe says in one line what was run: the cluster, the workload and the policies.
func (r *Result) describe() string {
	if r.doc == nil {
		return ""
	}
	parts := []string{describeCluster(&r.doc.Cluster), describeWorkload(r.doc)}
	if r.plan != nil && r.plan.bundle != nil {
		parts = append(parts, describeBundle(r.plan.bundle))
	}
	return strings.Join(parts, "; ")
}

// describeCluster names the model, the replicas and their GPU and parallelism, and the
// cluster's dynamics.
func describeCluster(c *ClusterDoc) string {
	spec := c.Instance
	name, gpu, tp := spec.Model, spec.GPU, spec.Engine.TensorParallelSize
	if m, err := model.Resolve(spec); err == nil {
		name, gpu, tp = m.ModelName, m.Hardware.Name, m.Engine.TensorParallelSize
	}
	s := fmt.Sprintf("%s on %d × %s (TP %d)", name, c.Replicas, gpu, max(tp, 1))
	if a := c.Autoscaling; a != nil {
		s += fmt.Sprintf(", autoscaled %d–%d", a.MinReplicas, a.MaxReplicas)
	}
	if pd := c.PD; pd != nil {
		s += fmt.Sprintf(", %d prefill + %d decode", pd.PrefillReplicas, c.Replicas-pd.PrefillReplicas)
	}
	if c.CPUTier != nil {
		s += ", CPU KV tier"
	}
	return s
}

// describeWorkload names the workload: a trace replay, or a generated workload's clients,
// rate and size.
func describeWorkload(doc *Document) string {
	w := &doc.Workload
	if w.Trace != nil {
		return "workload: " + w.Trace.Format + " trace replay"
	}
	spec, err := workload.ParseSpec([]byte(w.Spec))
	if err != nil {
		return "workload: generated"
	}
	var b strings.Builder
	b.WriteString("workload: ")
	if spec.Category != "" {
		b.WriteString(spec.Category + ", ")
	}
	fmt.Fprintf(&b, "%d client", len(spec.Clients))
	if len(spec.Clients) != 1 {
		b.WriteString("s")
	}
	if spec.AggregateRate > 0 {
		b.WriteString(" at " + strconv.FormatFloat(spec.AggregateRate, 'g', -1, 64) + " req/s")
	}
	n, horizon := spec.NumRequests, spec.Horizon
	if doc.NumRequests > 0 {
		n = doc.NumRequests
	}
	if doc.Horizon > 0 {
		horizon = doc.Horizon
	}
	if n > 0 {
		fmt.Fprintf(&b, ", %d requests", n)
	}
	if horizon > 0 {
		b.WriteString(", horizon " + strconv.FormatFloat(float64(horizon)/1e6, 'g', -1, 64) + " s")
	}
	return b.String()
}

// describeBundle names the bundle's policies (the defaults when a stage is empty).
func describeBundle(b *policy.Bundle) string {
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	routing := or(b.Routing.Policy, "round-robin")
	if len(b.Routing.Scorers) > 0 {
		sc := make([]string, len(b.Routing.Scorers))
		for i, s := range b.Routing.Scorers {
			sc[i] = s.Name + " " + strconv.FormatFloat(s.Weight, 'g', -1, 64)
		}
		routing += " (" + strings.Join(sc, ", ") + ")"
	}
	return fmt.Sprintf("policies: admission %s, priority %s, routing %s, scheduler %s",
		or(b.Admission.Policy, "always-admit"), or(b.Priority.Policy, "constant"), routing, or(b.Scheduler, "fcfs"))
}
