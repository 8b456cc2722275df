package report

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// cdfMetrics are the latency metrics drawn as CDFs, in display order, with their chart ids.
// The per-class ITL distributions are over each request's mean gap (TPOT, as BLIS's per-class
// ITL), not over every gap, which the ITL caption says.
var cdfMetrics = []struct{ metric, id, title, samples, classNote string }{
	{MetricTTFT, "ttft-cdf", "Time to first token (TTFT)", "requests", ""},
	{MetricITL, "itl-cdf", "Inter-token latency (ITL)", "decode gaps",
		" The dashed line is over every decode gap; a class line is over its requests' mean gap (TPOT)."},
	{MetricE2E, "e2e-cdf", "End-to-end latency (E2E)", "requests", ""},
}

// allLabel is the legend entry of the line over every request.
const allLabel = "all"

// cdfXY turns quantile points into CDF points (x = latency in ms, y = probability).
func cdfXY(pts []QuantilePoint) plotter.XYs {
	xy := make(plotter.XYs, 0, len(pts))
	for _, p := range pts {
		if math.IsNaN(p.Ms) || math.IsInf(p.Ms, 0) {
			continue
		}
		xy = append(xy, plotter.XY{X: p.Ms, Y: p.P})
	}
	return xy
}

// cdfFigure draws the CDFs of one metric: lines[0] is usually the emphasised "all" line.
// It returns false when there is nothing to draw.
func cdfFigure(id, title, caption string, lines []line) (chart, bool, error) {
	n := 0
	for _, l := range lines {
		n += len(l.xy)
	}
	if n == 0 {
		return chart{}, false, nil
	}
	p := newPlot(title, "latency (ms)", "fraction at or below")
	if useLogX(p, lines) {
		caption += fmt.Sprintf(" Log-scale latency axis: the values span more than %d×.", logSpread)
	}
	labels, err := addLines(p, lines)
	if err != nil {
		return chart{}, false, fmt.Errorf("%s: %w", id, err)
	}
	p.Y.Min, p.Y.Max = 0, 1
	return chart{id: id, caption: caption, labels: labels, plot: p}, true, nil
}

// reportCDF is the CDF chart of one metric of d: the line over every request, then one per SLO
// class.
func reportCDF(d *Data, i int) (chart, bool, error) {
	m := cdfMetrics[i]
	var lines []line
	var total int64
	for _, dist := range d.Distributions {
		if dist.Metric != m.metric {
			continue
		}
		if dist.Class == "" {
			total = dist.Count
			lines = append([]line{{label: allLabel, xy: cdfXY(dist.Points), emphasis: true}}, lines...)
		} else {
			lines = append(lines, line{label: dist.Class, xy: cdfXY(dist.Points)})
		}
	}
	caption := fmt.Sprintf("%s CDF of seed %d over %d %s: the dashed line is every request, the others one SLO class each.%s",
		m.title, d.Seed, total, m.samples, m.classNote)
	return cdfFigure(m.id, m.title+" CDF", caption, lines)
}

// bucketSeconds is the time in seconds of the middle of bucket i (the last bucket ends at
// EndUs when it is set, so it may be shorter).
func bucketSeconds(s *Series, i int) float64 {
	start := float64(i) * float64(s.BucketUs)
	end := start + float64(s.BucketUs)
	if s.EndUs > 0 && float64(s.EndUs) > start && float64(s.EndUs) < end {
		end = float64(s.EndUs)
	}
	return (start + end) / 2 / 1e6
}

// seriesXY pairs the values with their buckets' times.
func seriesXY(s *Series, v []float64) plotter.XYs {
	xy := make(plotter.XYs, 0, len(v))
	for i, y := range v {
		if math.IsNaN(y) || math.IsInf(y, 0) {
			continue
		}
		xy = append(xy, plotter.XY{X: bucketSeconds(s, i), Y: y})
	}
	return xy
}

// timeFigure draws lines over simulated time.
func timeFigure(id, title, yLabel, caption string, lines []line, unitRange bool) (chart, error) {
	p := newPlot(title, "simulated time (s)", yLabel)
	p.Legend.Left = false
	labels, err := addLines(p, lines)
	if err != nil {
		return chart{}, fmt.Errorf("%s: %w", id, err)
	}
	p.Y.Min = 0
	if unitRange {
		p.Y.Max = math.Max(p.Y.Max, 1)
	}
	return chart{id: id, caption: caption, labels: labels, plot: p}, nil
}

// instanceMetric is one per-instance time series kind.
type instanceMetric struct {
	id, title, yLabel, what string
	unitRange               bool
	get                     func(in *InstanceSeries) []float64
}

// instanceMetrics are the per-instance charts, in display order.
var instanceMetrics = []instanceMetric{
	{"queue-depth", "Queue depth", "requests waiting", "queue depth", false, func(in *InstanceSeries) []float64 { return in.QueueDepth }},
	{"batch-size", "Batch size", "requests per step", "batch size", false, func(in *InstanceSeries) []float64 { return in.BatchSize }},
	{"kv-utilization", "KV cache utilization", "fraction of KV blocks in use", "KV utilization", true, func(in *InstanceSeries) []float64 { return in.KVUtilization }},
	{"cache-hit-rate", "Prefix cache hit rate", "fraction of prompt tokens cached", "cache hit rate", true, func(in *InstanceSeries) []float64 { return in.CacheHitRate }},
}

// maxInstanceLines bounds the per-instance lines of a chart; beyond it the top instances by
// mean are drawn with the mean over all instances.
const maxInstanceLines = 8

// mean is the arithmetic mean (0 for no values).
func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// instanceMean is the per-bucket mean over instances of one series kind.
func instanceMean(s *Series, get func(in *InstanceSeries) []float64) []float64 {
	n := len(s.Cluster.ArrivalsPerSec)
	if n == 0 && len(s.Instances) > 0 {
		n = len(get(&s.Instances[0]))
	}
	if len(s.Instances) == 0 {
		return nil
	}
	out := make([]float64, n)
	for i := range s.Instances {
		v := get(&s.Instances[i])
		for b := 0; b < n && b < len(v); b++ {
			out[b] += v[b]
		}
	}
	for b := range out {
		out[b] /= float64(len(s.Instances))
	}
	return out
}

// reportInstanceChart draws one per-instance series kind: a line per instance, or with more
// than maxInstanceLines instances the top ones by mean and the mean over all of them.
func reportInstanceChart(d *Data, m instanceMetric) (chart, error) {
	s := d.Series
	caption := fmt.Sprintf("%s of each instance over simulated time (seed %d), time-averaged over %s buckets.", upperFirst(m.what), d.Seed, bucketText(s.BucketUs))
	idx := make([]int, len(s.Instances))
	for i := range idx {
		idx[i] = i
	}
	many := len(s.Instances) > maxInstanceLines
	if many {
		means := make([]float64, len(s.Instances))
		for i := range s.Instances {
			means[i] = mean(m.get(&s.Instances[i]))
		}
		sort.SliceStable(idx, func(a, b int) bool { return means[idx[a]] > means[idx[b]] })
		idx = idx[:maxInstanceLines]
		sort.Ints(idx)
		caption = fmt.Sprintf("%s over simulated time (seed %d), time-averaged over %s buckets: %d instances, so only the %d with the highest mean %s are drawn, with the mean over all %d (dashed).",
			upperFirst(m.what), d.Seed, bucketText(s.BucketUs), len(s.Instances), maxInstanceLines, m.what, len(s.Instances))
	}
	var lines []line
	if many {
		lines = append(lines, line{label: fmt.Sprintf("mean of %d", len(s.Instances)), xy: seriesXY(s, instanceMean(s, m.get)), emphasis: true})
	}
	for _, i := range idx {
		lines = append(lines, line{label: s.Instances[i].Name, xy: seriesXY(s, m.get(&s.Instances[i]))})
	}
	return timeFigure(m.id, m.title, m.yLabel, caption, lines, m.unitRange)
}

// bucketText says a bucket width in words ("500 ms", "2 s").
func bucketText(us int64) string {
	switch {
	case us >= 1_000_000 && us%1_000_000 == 0:
		return fmt.Sprintf("%d s", us/1_000_000)
	case us >= 1000:
		return num(float64(us)/1000) + " ms"
	default:
		return fmt.Sprintf("%d µs", us)
	}
}

// upperFirst capitalises the first letter of an ASCII phrase.
func upperFirst(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// constant reports whether every value equals the first.
func constant(v []float64) bool {
	for _, x := range v {
		if x != v[0] {
			return false
		}
	}
	return true
}

// reportSeriesCharts are the time-series charts of d: cluster arrivals and completions, ready
// instances when autoscaling changed them, and the per-instance charts.
func reportSeriesCharts(d *Data) ([]chart, error) {
	s := d.Series
	if s == nil || len(s.Cluster.ArrivalsPerSec) == 0 {
		return nil, nil
	}
	var out []chart
	c, err := timeFigure("arrivals", "Arrivals and completions", "requests per second",
		fmt.Sprintf("Requests arriving at the cluster and requests completing, per second of simulated time (seed %d, %s buckets).", d.Seed, bucketText(s.BucketUs)),
		[]line{{label: "arrivals", xy: seriesXY(s, s.Cluster.ArrivalsPerSec)}, {label: "completions", xy: seriesXY(s, s.Cluster.CompletionsPerSec)}}, false)
	if err != nil {
		return nil, err
	}
	out = append(out, c)
	if r := s.Cluster.ReadyInstances; len(r) > 0 && !constant(r) {
		c, err := timeFigure("ready-instances", "Ready instances", "instances",
			fmt.Sprintf("Instances the router could send requests to, time-averaged per bucket (seed %d): autoscaling changed them.", d.Seed),
			[]line{{label: "ready instances", xy: seriesXY(s, r)}}, false)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(s.Instances) == 0 {
		return out, nil
	}
	for _, m := range instanceMetrics {
		c, err := reportInstanceChart(d, m)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// barFigure draws one bar per value with nominal x labels.
func barFigure(id, title, yLabel, caption string, names []string, values []float64, unitRange bool) (chart, error) {
	p := newPlot(title, "", yLabel)
	bars, err := plotter.NewBarChart(plotter.Values(values), vg.Points(40))
	if err != nil {
		return chart{}, fmt.Errorf("%s: %w", id, err)
	}
	bars.Color = lineColor(0)
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	p.Y.Min = 0
	if unitRange {
		p.Y.Max = 1
	}
	return chart{id: id, caption: caption, labels: names, plot: p}, nil
}

// groupedBarFigure draws, for every name, one bar per group side by side (a legend entry per
// group).
func groupedBarFigure(id, title, yLabel, caption string, names, groups []string, values [][]float64, unitRange bool) (chart, error) {
	p := newPlot(title, "", yLabel)
	p.Legend.Left = false
	width := vg.Points(math.Max(6, math.Min(28, 160/float64(len(groups)))))
	for g, vs := range values {
		bars, err := plotter.NewBarChart(plotter.Values(vs), width)
		if err != nil {
			return chart{}, fmt.Errorf("%s: %w", id, err)
		}
		bars.Color = lineColor(g)
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(float64(g)-float64(len(groups)-1)/2) * width
		p.Add(bars)
		p.Legend.Add(groups[g], bars)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	p.Y.Min = 0
	if unitRange {
		p.Y.Max = 1
	}
	return chart{id: id, caption: caption, labels: groups, plot: p}, nil
}

// reportSLOChart draws SLO attainment overall and per class, when the workload has SLO targets.
func reportSLOChart(d *Data) (chart, bool, error) {
	m := d.Status.Metrics
	if !hasSLO(m) {
		return chart{}, false, nil
	}
	names := []string{allLabel}
	values := []float64{m.SloAttainment}
	for _, c := range m.PerClass {
		names = append(names, c.Name)
		values = append(values, c.SloAttainment)
	}
	c, err := barFigure("slo-attainment", "SLO attainment", "fraction of requests meeting the SLO",
		"Fraction of requests that met their SLO targets, over every request and per SLO class (mean over seeds).", names, values, true)
	return c, err == nil, err
}

// reportFitnessChart draws the normalised fitness values (1 is best).
func reportFitnessChart(d *Data) (chart, bool, error) {
	if len(d.Status.Fitness) == 0 {
		return chart{}, false, nil
	}
	names := make([]string, 0, len(d.Status.Fitness))
	values := make([]float64, 0, len(d.Status.Fitness))
	for _, f := range d.Status.Fitness {
		names = append(names, f.Name)
		values = append(values, f.Value)
	}
	c, err := barFigure("fitness", "Fitness components", "normalised value (1 is best)",
		"Normalised value of each objective; the fitness score weighs them.", names, values, false)
	return c, err == nil, err
}

// reportCharts are every chart of d's report, in page order: SLO attainment, the CDFs, the
// time series and fitness.
func reportCharts(d *Data) ([]chart, error) {
	var out []chart
	add := func(c chart, ok bool, err error) error {
		if ok {
			out = append(out, c)
		}
		return err
	}
	if err := add(reportSLOChart(d)); err != nil {
		return nil, err
	}
	for i := range cdfMetrics {
		if err := add(reportCDF(d, i)); err != nil {
			return nil, err
		}
	}
	series, err := reportSeriesCharts(d)
	if err != nil {
		return nil, err
	}
	out = append(out, series...)
	if err := add(reportFitnessChart(d)); err != nil {
		return nil, err
	}
	return out, nil
}
