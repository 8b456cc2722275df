package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// keepZeroRows are the headline metrics shown even when zero (a zero count is news). Other
// metrics are left out when zero: the status omits what the run did not measure (no SLO
// targets, no prefix cache, no tenants), and a zero latency means exactly that.
var keepZeroRows = map[string]bool{"injectedRequests": true, "completedRequests": true,
	"rejectedRequests": true, "preemptionCount": true}

// HTML writes d's report as one self-contained HTML page: headline metrics, SLO classes with
// their attainment bars, TTFT/ITL/E2E CDFs, time series, replicate confidence intervals,
// fitness, anomalies and the trace summary, with every chart inlined as SVG (no network needed
// to view it) in a <figure class="chart"> whose id is the chart's PNG name. Sections the data
// cannot fill are listed at the top from d.Missing. Equal Data give identical bytes.
func HTML(w io.Writer, d *Data) error {
	if err := d.Validate(); err != nil {
		return err
	}
	charts, err := reportCharts(d)
	if err != nil {
		return err
	}
	byID := map[string]chart{}
	for _, c := range charts {
		byID[c.id] = c
	}
	fig := func(p *page, id string) {
		if c, ok := byID[id]; ok {
			p.figure(c)
		}
	}
	st := &d.Status
	p := newPage("Evaluation report: " + d.Name)
	p.para("meta", metaLine(d))
	if len(d.Missing) > 0 {
		p.heading(2, "missing", "What this report cannot show")
		p.list("missing", d.Missing)
	}

	p.heading(2, "headline", "Headline metrics")
	if st.Metrics == nil {
		p.para("", "No metrics: the evaluation has not produced results.")
	} else {
		rows := [][]string{}
		for _, m := range headlineMetrics {
			v := m.get(st.Metrics)
			if v == 0 && !keepZeroRows[m.key] {
				continue
			}
			ci := ""
			if rs, n, ok := replicateStat(st, m.key); ok && n >= 2 {
				ci = "± " + num(rs.Ci95)
			}
			rows = append(rows, []string{m.label, num(v), m.unit, ci})
		}
		p.table("headline-table", []string{"metric", "value", "unit", "95% CI"}, rows, nil)
		if seedCount(st) > 1 {
			p.para("note", fmt.Sprintf("Values are means over %d seeds; the CI column is the half-width of the 95%% confidence interval of the mean.", seedCount(st)))
		}
	}

	if st.Metrics != nil && len(st.Metrics.PerClass) > 0 {
		p.heading(2, "classes", "SLO classes")
		header := []string{"class"}
		for _, c := range classMetrics {
			h := c.label
			if c.unit != "" && c.unit != "fraction" {
				h += " (" + c.unit + ")"
			}
			header = append(header, h)
		}
		var rows [][]string
		for i := range st.Metrics.PerClass {
			c := &st.Metrics.PerClass[i]
			row := []string{c.Name}
			for _, m := range classMetrics {
				row = append(row, num(m.get(c)))
			}
			rows = append(rows, row)
		}
		p.table("classes-table", header, rows, nil)
	}
	fig(p, "slo-attainment")

	p.heading(2, "latency", "Latency distributions")
	if len(d.Distributions) == 0 {
		p.para("", "No latency distributions in this data (see above).")
	}
	for _, m := range cdfMetrics {
		fig(p, m.id)
	}

	p.heading(2, "time-series", "Over time")
	if d.Series == nil || len(d.Series.Cluster.ArrivalsPerSec) == 0 {
		p.para("", "No time series in this data (see above).")
	} else {
		for _, id := range []string{"arrivals", "ready-instances"} {
			fig(p, id)
		}
		for _, m := range instanceMetrics {
			fig(p, m.id)
		}
	}

	p.heading(2, "replicates", "Replicates")
	writeReplicates(p, st)

	if st.FitnessScore != nil || len(st.Fitness) > 0 {
		p.heading(2, "fitness-values", "Fitness")
		if st.FitnessScore != nil {
			p.para("", fmt.Sprintf("Fitness score %s (higher is better).", num(*st.FitnessScore)))
		}
		var rows [][]string
		for _, f := range st.Fitness {
			rows = append(rows, []string{f.Name, num(f.Value)})
		}
		if len(rows) > 0 {
			p.table("fitness-table", []string{"objective", "normalised value"}, rows, nil)
		}
		fig(p, "fitness")
	}

	p.heading(2, "anomalies", "Anomalies")
	if st.Anomalies == nil {
		p.para("", "No anomaly counters in this data.")
	} else {
		var rows [][]string
		for _, a := range anomalyRows(st.Anomalies) {
			rows = append(rows, []string{a.label, fmt.Sprint(a.count)})
		}
		p.table("anomalies-table", []string{"anomaly", "count"}, rows, nil)
	}

	p.heading(2, "trace-summary", "Trace summary")
	if st.TraceSummary == "" {
		p.para("", "No trace summary.")
	} else {
		p.pre("trace-summary-text", st.TraceSummary)
	}
	return p.finish(w)
}

// metaLine says what was run and where the numbers come from.
func metaLine(d *Data) string {
	var parts []string
	if d.Description != "" {
		parts = append(parts, d.Description)
	}
	st := &d.Status
	if st.EngineVersion != "" {
		parts = append(parts, "engine "+st.EngineVersion)
	}
	if st.InputHash != "" {
		h := st.InputHash
		if len(h) > 12 {
			h = h[:12]
		}
		parts = append(parts, "input "+h)
	}
	n := seedCount(st)
	s := fmt.Sprintf("%d seed", n)
	if n > 1 {
		s += "s"
	}
	if len(d.Distributions) > 0 || d.Series != nil {
		s += fmt.Sprintf(" (distributions and time series of seed %d)", d.Seed)
	}
	parts = append(parts, s)
	return strings.Join(parts, " · ")
}

// writeReplicates writes the replicate confidence-interval table, or says there is none.
func writeReplicates(p *page, st *blisv1alpha1.EvaluationStatus) {
	if st.Replicates == nil || st.Replicates.Count < 2 || len(st.Replicates.Metrics) == 0 {
		p.para("", "Single seed: no confidence intervals. Give the evaluation several seeds to get them.")
		return
	}
	var rows [][]string
	for _, r := range st.Replicates.Metrics {
		rows = append(rows, []string{r.Name, num(r.Mean), num(r.Stddev), "± " + num(r.Ci95),
			"[" + num(r.Mean-r.Ci95) + ", " + num(r.Mean+r.Ci95) + "]"})
	}
	p.para("", fmt.Sprintf("Across %d seeds (95%% confidence intervals of the mean, Student's t):", st.Replicates.Count))
	p.table("replicates-table", []string{"metric", "mean", "stddev", "95% CI", "interval"}, rows, nil)
}

// anomalyRow is one anomaly counter.
type anomalyRow struct {
	label string
	count int64
}

// anomalyRows lists the anomaly counters in a fixed order.
func anomalyRows(a *blisv1alpha1.AnomalyCounters) []anomalyRow {
	return []anomalyRow{
		{"priority inversions", a.PriorityInversions},
		{"head-of-line blocking events", a.HolBlockingEvents},
		{"scale oscillations", a.ScaleOscillations},
		{"KV thrashing events", a.KvThrashingEvents},
		{"admission rejections", a.RejectedRequests},
		{"dropped as unservable", a.DroppedUnservable},
		{"timed out", a.TimedOutRequests},
	}
}

// PNGs writes every chart of d's report as a PNG file in dir (created if needed), named after
// the chart (ttft-cdf.png, queue-depth.png, ...), and returns the paths written, in page
// order. Each PNG is pngWidthPx × pngHeightPx.
func PNGs(dir string, d *Data) ([]string, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	charts, err := reportCharts(d)
	if err != nil {
		return nil, err
	}
	return writePNGs(dir, charts)
}

// writePNGs renders charts into dir as <id>.png.
func writePNGs(dir string, charts []chart) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(charts))
	for _, c := range charts {
		b, err := chartPNG(c.plot, chartWidth, chartHeight)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", c.id, err)
		}
		path := filepath.Join(dir, c.id+".png")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}
