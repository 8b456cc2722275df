package report

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Bounds of a study report.
const (
	// StudyMaxScatters is the number of objective pairs drawn at most (all pairs of the first
	// four objectives).
	StudyMaxScatters = 6
	// StudyTopBundles is the number of best candidates whose parameters are compared.
	StudyTopBundles = 5
	// studyMaxScatterObjectives is the number of objectives whose pairs are drawn.
	studyMaxScatterObjectives = 4
)

// Colours of study charts: strong for the front and the best candidate, light for dominated
// candidates, so the front stands out.
var (
	studyFrontColor     = color.NRGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	studyDominatedColor = color.NRGBA{R: 0x88, G: 0x88, B: 0x88, A: 0x70}
	studyBestColor      = color.NRGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	studyMeanColor      = color.NRGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	studySoFarColor     = color.NRGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
)

// StudyChartIDs lists the ids of the charts a study report draws for sd, in order: a Pareto
// scatter per pair of objectives ("pareto-<x>-vs-<y>"), then "convergence".
func StudyChartIDs(sd *StudyData) []string {
	var ids []string
	for _, p := range studyPairs(sd) {
		ids = append(ids, studyScatterID(sd, p[0], p[1]))
	}
	if studyHasConvergence(sd) {
		ids = append(ids, "convergence")
	}
	return ids
}

// studyPairs are the objective pairs drawn: (i, j) with i < j among the first four objectives.
func studyPairs(sd *StudyData) [][2]int {
	if len(sd.Candidates) == 0 {
		return nil
	}
	// Every pair of the first four objectives is exactly StudyMaxScatters charts.
	n := min(len(sd.Objectives), studyMaxScatterObjectives)
	var out [][2]int
	for i := range n {
		for j := i + 1; j < n; j++ {
			out = append(out, [2]int{i, j})
		}
	}
	return out
}

func studyHasConvergence(sd *StudyData) bool {
	for _, g := range sd.Convergence {
		if g.Best != nil {
			return true
		}
	}
	return false
}

// studySlug turns an objective name into an id part: lower case letters and digits, other
// runs of characters as one dash.
func studySlug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		} else {
			dash = true
		}
	}
	return b.String()
}

func studyScatterID(sd *StudyData, i, j int) string {
	return "pareto-" + studySlug(sd.Objectives[i].Name) + "-vs-" + studySlug(sd.Objectives[j].Name)
}

// studyUsesRaw reports whether the scatter axes are metric values (every candidate carries
// them) rather than normalised fitness.
func studyUsesRaw(sd *StudyData) bool {
	if len(sd.Candidates) == 0 {
		return false
	}
	for _, c := range sd.Candidates {
		if len(c.Raw) != len(sd.Objectives) {
			return false
		}
	}
	return true
}

// studyAxisLabel names an objective axis: the metric with its direction, or its fitness.
func studyAxisLabel(o StudyObjective, raw bool) string {
	if !raw {
		return o.Name + " fitness (1 = best)"
	}
	switch o.Direction {
	case "minimize":
		return o.Name + " (lower is better)"
	case "maximize":
		return o.Name + " (higher is better)"
	}
	return o.Name
}

// studyCharts builds every chart of sd.
func studyCharts(sd *StudyData) ([]chart, error) {
	var out []chart
	raw := studyUsesRaw(sd)
	for _, p := range studyPairs(sd) {
		c, err := studyScatter(sd, p[0], p[1], raw)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if studyHasConvergence(sd) {
		c, err := studyConvergence(sd)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// studyValue is candidate c's value of objective k on the chart's axes.
func studyValue(c *StudyCandidate, k int, raw bool) float64 {
	if raw {
		return c.Raw[k]
	}
	if k < len(c.Fitness) {
		return c.Fitness[k]
	}
	return 0
}

// studyScatter draws objectives i (x) and j (y) of every candidate: dominated candidates light,
// front candidates strong and joined in x order, the best candidate ringed.
func studyScatter(sd *StudyData, i, j int, raw bool) (chart, error) {
	oi, oj := sd.Objectives[i], sd.Objectives[j]
	p := newPlot(oi.Name+" vs "+oj.Name, studyAxisLabel(oi, raw), studyAxisLabel(oj, raw))
	var labels []string
	all := make(plotter.XYs, 0, len(sd.Candidates))
	var front, dominated, best plotter.XYs
	for k := range sd.Candidates {
		c := &sd.Candidates[k]
		pt := plotter.XY{X: studyValue(c, i, raw), Y: studyValue(c, j, raw)}
		all = append(all, pt)
		if c.OnFront {
			front = append(front, pt)
		} else {
			dominated = append(dominated, pt)
		}
		if c.Evaluation == sd.Best {
			best = append(best, pt)
		}
	}
	if len(dominated) > 0 {
		s, err := plotter.NewScatter(dominated)
		if err != nil {
			return chart{}, err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: studyDominatedColor, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
		p.Add(s)
		p.Legend.Add("dominated", s)
		labels = append(labels, "dominated")
	}
	if len(front) > 0 {
		slices.SortStableFunc(front, func(a, b plotter.XY) int {
			if a.X != b.X {
				return cmpFloat(a.X, b.X)
			}
			return cmpFloat(a.Y, b.Y)
		})
		l, s, err := plotter.NewLinePoints(front)
		if err != nil {
			return chart{}, err
		}
		l.Color, l.Width = studyFrontColor, vg.Points(1.2)
		s.GlyphStyle = draw.GlyphStyle{Color: studyFrontColor, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
		p.Add(l, s)
		p.Legend.Add("Pareto front", l, s)
		labels = append(labels, "Pareto front")
	}
	if len(best) > 0 {
		s, err := plotter.NewScatter(best)
		if err != nil {
			return chart{}, err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: studyBestColor, Radius: vg.Points(6), Shape: draw.RingGlyph{}}
		p.Add(s)
		p.Legend.Add("best score", s)
		labels = append(labels, "best score")
	}
	logX := raw && studyUseLog(&p.X, all, func(pt plotter.XY) float64 { return pt.X })
	logY := raw && studyUseLog(&p.Y, all, func(pt plotter.XY) float64 { return pt.Y })
	studyPadAxis(&p.X, logX)
	studyPadAxis(&p.Y, logY)
	caption := fmt.Sprintf("%s against %s for %d candidates: front points (no other candidate is better in every objective) are joined in order of %s; the best fitness score is ringed.",
		oj.Name, oi.Name, len(sd.Candidates), oi.Name)
	if !sd.AllCandidates {
		caption += " Only the listed front points are known."
	}
	return chart{id: studyScatterID(sd, i, j), caption: caption, labels: labels, plot: p}, nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// studyUseLog switches ax to a log scale when every value of the points on it is positive
// and they span more than logSpread (a factor), so one far outlier does not squash the front
// into a corner. It reports whether it did.
func studyUseLog(ax *plot.Axis, pts plotter.XYs, val func(plotter.XY) float64) bool {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, pt := range pts {
		v := val(pt)
		if !(v > 0) {
			return false
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if len(pts) == 0 || hi/lo <= logSpread {
		return false
	}
	ax.Scale = plot.LogScale{}
	ax.Tick.Marker = plot.LogTicks{Prec: -1}
	return true
}

// studyPadAxis widens an axis range by 5% on each side (by a factor on a log axis) so points
// do not sit on the frame; a degenerate range gets a width around its value.
func studyPadAxis(ax *plot.Axis, log bool) {
	lo, hi := ax.Min, ax.Max
	if log {
		ax.Min, ax.Max = lo/1.15, hi*1.15
		return
	}
	span := hi - lo
	if span <= 0 || math.IsNaN(span) || math.IsInf(span, 0) {
		span = math.Max(math.Abs(lo), 1)
	}
	ax.Min, ax.Max = lo-0.05*span, hi+0.05*span
}

// studyConvergence draws each generation's best and mean score and the best so far.
func studyConvergence(sd *StudyData) (chart, error) {
	p := newPlot("Convergence", "generation", "fitness score (higher is better)")
	var labels []string
	series := []struct {
		name  string
		col   color.Color
		dash  bool
		value func(g *StudyGeneration) *float64
	}{
		// Best so far first and wide, so the generation's best stays visible on top of it.
		{"best so far", studySoFarColor, false, func(g *StudyGeneration) *float64 { return g.BestSoFar }},
		{"mean of generation", studyMeanColor, true, func(g *StudyGeneration) *float64 { return g.Mean }},
		{"best of generation", studyFrontColor, false, func(g *StudyGeneration) *float64 { return g.Best }},
	}
	for _, s := range series {
		var xys plotter.XYs
		for k := range sd.Convergence {
			g := &sd.Convergence[k]
			if v := s.value(g); v != nil {
				xys = append(xys, plotter.XY{X: float64(g.Generation), Y: *v})
			}
		}
		if len(xys) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return chart{}, err
		}
		l.Color, l.Width = s.col, vg.Points(1.5)
		if s.col == studySoFarColor {
			l.Width = vg.Points(4)
		}
		if s.dash {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		pts.GlyphStyle = draw.GlyphStyle{Color: s.col, Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
		p.Add(l, pts)
		p.Legend.Add(s.name, l)
		labels = append(labels, s.name)
	}
	studyPadAxis(&p.X, false)
	studyPadAxis(&p.Y, false)
	p.X.Tick.Marker = studyIntTicks{}
	caption := fmt.Sprintf("Fitness score per generation over %d generations: the generation's best and mean, and the best of every generation up to it.", len(sd.Convergence))
	return chart{id: "convergence", caption: caption, labels: labels, plot: p}, nil
}

// studyIntTicks marks whole generations only.
type studyIntTicks struct{}

// Ticks returns at most about ten whole-number ticks in [lo, hi].
func (studyIntTicks) Ticks(lo, hi float64) []plot.Tick {
	first, last := math.Ceil(lo), math.Floor(hi)
	if last < first {
		return nil
	}
	step := math.Max(1, math.Ceil((last-first)/10))
	var out []plot.Tick
	for v := first; v <= last; v += step {
		out = append(out, plot.Tick{Value: v, Label: strconv.Itoa(int(v))})
	}
	return out
}

// StudyPNGs writes each chart of sd as <id>.png into dir (created when missing) and returns
// the files' paths in chart order.
func StudyPNGs(dir string, sd *StudyData) ([]string, error) {
	if sd == nil {
		return nil, errors.New("no study data")
	}
	charts, err := studyCharts(sd)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, c := range charts {
		png, err := chartPNG(c.plot, chartWidth, chartHeight)
		if err != nil {
			return paths, fmt.Errorf("chart %s: %w", c.id, err)
		}
		path := filepath.Join(dir, c.id+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// studyTopRow is one row of the top-bundles table.
type studyTopRow struct {
	// Label names the row (a parameter path, the score or an objective).
	Label string
	// Cells are the values, one per candidate.
	Cells []string
	// Differs is true when the candidates' values are not all equal.
	Differs bool
}

// studyTopTable is the top bundles side by side: one column per candidate, one row per
// parameter, then the score and the objectives.
type studyTopTable struct {
	Candidates []StudyCandidate
	Parameters []studyTopRow
	Results    []studyTopRow
}

// studyTop builds the top-bundles table of sd.
func studyTop(sd *StudyData) studyTopTable {
	n := min(StudyTopBundles, len(sd.Candidates))
	t := studyTopTable{Candidates: sd.Candidates[:n]}
	if n == 0 {
		return t
	}
	info := []studyTopRow{{Label: "policy bundle"}, {Label: "generation"}, {Label: "on the front"}}
	for _, c := range t.Candidates {
		bundle := c.PolicyBundle
		if bundle == "" {
			bundle = "inline"
		}
		front := "no"
		if c.OnFront {
			front = "yes"
		}
		if c.ParetoRank != nil {
			front += " (rank " + strconv.Itoa(*c.ParetoRank) + ")"
		}
		info[0].Cells = append(info[0].Cells, bundle)
		info[1].Cells = append(info[1].Cells, studyGeneration(c.Generation))
		info[2].Cells = append(info[2].Cells, front)
	}
	t.Parameters = append(t.Parameters, info...)
	for _, path := range sd.Parameters {
		row := studyTopRow{Label: path}
		for _, c := range t.Candidates {
			v := "(not set)"
			for _, p := range c.Parameters {
				if p.Path == path {
					v = p.Value
				}
			}
			row.Cells = append(row.Cells, v)
		}
		row.Differs = studyDiffers(row.Cells)
		t.Parameters = append(t.Parameters, row)
	}
	score := studyTopRow{Label: "fitness score"}
	for _, c := range t.Candidates {
		score.Cells = append(score.Cells, studyNum(c.Score))
	}
	score.Differs = studyDiffers(score.Cells)
	t.Results = append(t.Results, score)
	for k, o := range sd.Objectives {
		row := studyTopRow{Label: o.Name + " fitness"}
		rawRow := studyTopRow{Label: o.Name}
		haveRaw := true
		for _, c := range t.Candidates {
			f := 0.0
			if k < len(c.Fitness) {
				f = c.Fitness[k]
			}
			row.Cells = append(row.Cells, studyNum(f))
			if len(c.Raw) == len(sd.Objectives) {
				rawRow.Cells = append(rawRow.Cells, studyNum(c.Raw[k]))
			} else {
				haveRaw = false
			}
		}
		if haveRaw {
			rawRow.Differs = studyDiffers(rawRow.Cells)
			t.Results = append(t.Results, rawRow)
		}
		row.Differs = studyDiffers(row.Cells)
		t.Results = append(t.Results, row)
	}
	return t
}

func studyDiffers(cells []string) bool {
	for _, c := range cells[1:] {
		if c != cells[0] {
			return true
		}
	}
	return false
}

// studyNum formats a number in at most 6 significant digits.
func studyNum(v float64) string {
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// StudyHTML writes a self-contained HTML report of sd: summary, missing-data notes, a Pareto
// scatter per pair of objectives, the convergence chart and the top bundles' parameters side
// by side. Charts are inline SVG, each in <figure class="chart" id="...">; the page loads
// nothing from the network and the same data always gives the same bytes.
func StudyHTML(w io.Writer, sd *StudyData) error {
	if sd == nil {
		return errors.New("no study data")
	}
	charts, err := studyCharts(sd)
	if err != nil {
		return err
	}
	pg := newPage("Study " + sd.Name)
	if sd.Description != "" {
		pg.para("meta", sd.Description)
	}
	pg.heading(2, "summary", "Summary")
	pg.table("study-summary", []string{"study", sd.Name}, studySummaryRows(sd), nil)
	if len(sd.Missing) > 0 {
		pg.heading(2, "missing", "Not shown")
		pg.list("missing", sd.Missing)
	}
	var scatters, conv []chart
	for _, c := range charts {
		if c.id == "convergence" {
			conv = append(conv, c)
		} else {
			scatters = append(scatters, c)
		}
	}
	if len(scatters) > 0 {
		pg.heading(2, "pareto", "Pareto front")
		pg.para("", studyScatterIntro(sd))
		for _, c := range scatters {
			pg.figure(c)
		}
	}
	if len(conv) > 0 {
		pg.heading(2, "study-convergence", "Convergence")
		pg.figure(conv[0])
	}
	if top := studyTop(sd); len(top.Candidates) > 0 {
		pg.heading(2, "top", "Top bundles")
		pg.para("", fmt.Sprintf("The %d best candidates by fitness score, one column each; highlighted rows differ between them.", len(top.Candidates)))
		header := []string{"candidate"}
		for _, c := range top.Candidates {
			header = append(header, c.Evaluation)
		}
		var rows [][]string
		var differs []bool
		for _, r := range append(top.Parameters, top.Results...) {
			rows = append(rows, append([]string{r.Label}, r.Cells...))
			differs = append(differs, r.Differs)
		}
		pg.table("top-bundles", header, rows, func(i int) string {
			if differs[i] {
				return "significant"
			}
			return ""
		})
	}
	return pg.finish(w)
}

// studySummaryRows are the summary table's rows: objectives, evaluations, best, front.
func studySummaryRows(sd *StudyData) [][]string {
	objs := make([]string, 0, len(sd.Objectives))
	for _, o := range sd.Objectives {
		s := o.Name
		if o.Direction != "" {
			s += " (" + o.Direction
			if o.Weight != 0 {
				s += ", weight " + num(o.Weight)
			}
			s += ")"
		}
		objs = append(objs, s)
	}
	ev := sd.Evaluations
	evals := fmt.Sprintf("%d created, %d succeeded, %d failed", ev.Created, ev.Succeeded, ev.Failed)
	if ev.External > 0 {
		evals += fmt.Sprintf(", %d external", ev.External)
	}
	best := "none"
	for i := range sd.Candidates {
		if c := &sd.Candidates[i]; c.Evaluation == sd.Best {
			best = fmt.Sprintf("%s (generation %s), score %s", c.Evaluation, studyGeneration(c.Generation), studyNum(c.Score))
		}
	}
	front := fmt.Sprintf("%d distinct points", sd.FrontSize)
	if !sd.AllCandidates {
		front += fmt.Sprintf(" (%d known)", len(sd.Candidates))
	}
	return [][]string{
		{"objectives", strings.Join(objs, ", ")},
		{"evaluations", evals},
		{"best", best},
		{"Pareto front", front},
	}
}

// studyScatterIntro explains the scatter plots' axes.
func studyScatterIntro(sd *StudyData) string {
	s := "Each chart shows two objectives at a time. "
	if studyUsesRaw(sd) {
		s += "Axes are the metrics themselves; a point is on the front when no other candidate is at least as good in every objective and better in one (over all objectives, not only the two drawn)."
	} else {
		s += "Axes are normalised fitness (1 is best in every objective); a point is on the front when no other candidate is at least as good in every objective and better in one (over all objectives, not only the two drawn)."
	}
	return s
}

// studyGeneration names a candidate's generation.
func studyGeneration(g *int) string {
	if g == nil {
		return "external"
	}
	return strconv.Itoa(*g)
}
