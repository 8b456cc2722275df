package report

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// validateAll checks every data set of a comparison.
func validateAll(ds []*Data) error {
	if len(ds) == 0 {
		return errors.New("nothing to compare")
	}
	for _, d := range ds {
		if err := d.Validate(); err != nil {
			return fmt.Errorf("%s: %w", d.Name, err)
		}
	}
	return nil
}

// compareCharts are the overlaid charts of a comparison, one line (or bar) per evaluation in a
// fixed colour: SLO attainment per class, the CDFs over every request, arrivals, completions,
// ready instances when autoscaling changed them, the per-instance series as each evaluation's
// mean over its instances, and the fitness components.
func compareCharts(ds []*Data, names []string) ([]chart, error) {
	var out []chart
	if c, ok, err := compareSLOChart(ds, names); err != nil {
		return nil, err
	} else if ok {
		out = append(out, c)
	}
	for _, m := range cdfMetrics {
		var lines []line
		for i, d := range ds {
			for _, dist := range d.Distributions {
				if dist.Metric == m.metric && dist.Class == "" {
					lines = append(lines, line{label: names[i], xy: cdfXY(dist.Points), color: i + 1})
				}
			}
		}
		c, ok, err := cdfFigure(m.id, m.title+" CDF", fmt.Sprintf("%s CDF over every request, one line per evaluation (each evaluation's first seed).", m.title), lines)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, c)
		}
	}
	type seriesKind struct {
		id, title, yLabel, caption string
		unitRange, onlyIfVaries    bool
		get                        func(s *Series) []float64
	}
	kinds := []seriesKind{
		{"arrivals", "Arrivals", "requests per second", "Request arrival rate at the cluster, one line per evaluation.", false, false,
			func(s *Series) []float64 { return s.Cluster.ArrivalsPerSec }},
		{"completions", "Completions", "requests per second", "Completed requests per second, one line per evaluation.", false, false,
			func(s *Series) []float64 { return s.Cluster.CompletionsPerSec }},
		{"ready-instances", "Ready instances", "instances", "Instances the router could send requests to, one line per evaluation (drawn when they differ).", false, true,
			func(s *Series) []float64 { return s.Cluster.ReadyInstances }},
	}
	for _, m := range instanceMetrics {
		kinds = append(kinds, seriesKind{m.id, m.title + " (mean over instances)", m.yLabel,
			fmt.Sprintf("%s averaged over each evaluation's instances, one line per evaluation.", upperFirst(m.what)), m.unitRange, false,
			func(s *Series) []float64 { return instanceMean(s, m.get) }})
	}
	for _, k := range kinds {
		var lines []line
		varies := false
		for i, d := range ds {
			s := d.Series
			if s == nil || len(s.Cluster.ArrivalsPerSec) == 0 {
				continue
			}
			v := k.get(s)
			if len(v) == 0 {
				continue
			}
			varies = varies || !constant(v) || (len(lines) > 0 && len(lines[0].xy) > 0 && v[0] != lines[0].xy[0].Y)
			lines = append(lines, line{label: names[i], xy: seriesXY(s, v), color: i + 1})
		}
		if len(lines) == 0 || (k.onlyIfVaries && !varies) {
			continue
		}
		c, err := timeFigure(k.id, k.title, k.yLabel, k.caption, lines, k.unitRange)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if c, ok, err := compareFitnessChart(ds, names); err != nil {
		return nil, err
	} else if ok {
		out = append(out, c)
	}
	return out, nil
}

// compareSLOChart draws SLO attainment overall and per class, grouped by class with one bar
// per evaluation.
func compareSLOChart(ds []*Data, names []string) (chart, bool, error) {
	some := false
	for _, d := range ds {
		some = some || hasSLO(d.Status.Metrics)
	}
	if !some {
		return chart{}, false, nil
	}
	classes := append([]string{allLabel}, classNames(ds)...)
	values := make([][]float64, len(ds))
	for i, d := range ds {
		values[i] = make([]float64, len(classes))
		if d.Status.Metrics == nil {
			continue
		}
		values[i][0] = d.Status.Metrics.SloAttainment
		for j, cl := range classes[1:] {
			if cm := classOf(d, cl); cm != nil {
				values[i][j+1] = cm.SloAttainment
			}
		}
	}
	c, err := groupedBarFigure("slo-attainment", "SLO attainment", "fraction of requests meeting the SLO",
		"Fraction of requests that met their SLO targets, over every request and per SLO class, one bar per evaluation.", classes, names, values, true)
	return c, err == nil, err
}

// compareFitnessChart draws the normalised fitness components, one bar per evaluation.
func compareFitnessChart(ds []*Data, names []string) (chart, bool, error) {
	var objectives []string
	seen := map[string]bool{}
	for _, d := range ds {
		for _, f := range d.Status.Fitness {
			if !seen[f.Name] {
				seen[f.Name] = true
				objectives = append(objectives, f.Name)
			}
		}
	}
	if len(objectives) == 0 {
		return chart{}, false, nil
	}
	values := make([][]float64, len(ds))
	for i, d := range ds {
		values[i] = make([]float64, len(objectives))
		for j, o := range objectives {
			for _, f := range d.Status.Fitness {
				if f.Name == o {
					values[i][j] = f.Value
				}
			}
		}
	}
	c, err := groupedBarFigure("fitness", "Fitness components", "normalised value (1 is best)",
		"Normalised value of each objective, one bar per evaluation (0 where an evaluation lacks the objective).", objectives, names, values, false)
	return c, err == nil, err
}

// CompareHTML writes a self-contained HTML comparison of several evaluations (the first is the
// baseline): the evaluations compared, what each lacks, the delta table of Compare (rows whose
// difference exceeds the confidence intervals highlighted) and the charts overlaid, one line or
// bar per evaluation. Equal inputs give identical bytes.
func CompareHTML(w io.Writer, ds []*Data) error {
	if err := validateAll(ds); err != nil {
		return err
	}
	cmp := Compare(ds)
	charts, err := compareCharts(ds, cmp.Names)
	if err != nil {
		return err
	}
	p := newPage("Comparison: " + strings.Join(cmp.Names, " vs "))
	p.heading(2, "evaluations", "Evaluations")
	var rows [][]string
	for i, d := range ds {
		role := ""
		if i == 0 {
			role = "baseline"
		}
		rows = append(rows, []string{cmp.Names[i], role, d.Description, fmt.Sprint(seedCount(&d.Status)), d.Status.EngineVersion})
	}
	p.table("evaluations-table", []string{"evaluation", "", "what ran", "seeds", "engine"}, rows, nil)
	var missing []string
	for i, d := range ds {
		for _, m := range d.Missing {
			missing = append(missing, cmp.Names[i]+": "+m)
		}
	}
	if len(missing) > 0 {
		p.heading(3, "missing", "What this comparison cannot show")
		p.list("missing", missing)
	}

	p.heading(2, "deltas", "Differences from the baseline")
	p.para("", "Each evaluation's value, its difference from "+cmp.Names[0]+" (and the relative difference), and whether the "+
		"difference exceeds the replicate confidence intervals (the 95% intervals of the two means do not overlap). Highlighted rows "+
		"have at least one such difference.")
	header := []string{"metric", "unit", cmp.Names[0]}
	for _, n := range cmp.Names[1:] {
		header = append(header, n, "delta", "", "beyond CI")
	}
	rows = rows[:0]
	for i := range cmp.Rows {
		r := &cmp.Rows[i]
		cells := []string{r.Label, r.Unit, valueText(r.Values[0])}
		for _, v := range r.Values[1:] {
			cells = append(cells, valueText(v), deltaText(v), verdict(r, v), v.Significance)
		}
		rows = append(rows, cells)
	}
	p.table("delta-table", header, rows, func(i int) string {
		for _, v := range cmp.Rows[i].Values {
			if v.Significance == Significant {
				return "significant"
			}
		}
		return ""
	})

	p.heading(2, "charts", "Charts")
	if len(charts) == 0 {
		p.para("", "No charts: the inputs hold neither distributions, time series, SLO attainment nor fitness.")
	}
	for _, c := range charts {
		p.figure(c)
	}
	return p.finish(w)
}

// ComparePNGs writes every chart of the comparison as a PNG in dir (created if needed), named
// after the chart as in CompareHTML, and returns the paths written.
func ComparePNGs(dir string, ds []*Data) ([]string, error) {
	if err := validateAll(ds); err != nil {
		return nil, err
	}
	charts, err := compareCharts(ds, uniqueNames(ds))
	if err != nil {
		return nil, err
	}
	return writePNGs(dir, charts)
}
