package report

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// Significance of a difference from the baseline.
const (
	// SignificanceBaseline marks the baseline's own column.
	SignificanceBaseline = "baseline"
	// Significant: the two 95% confidence intervals of the mean do not overlap.
	Significant = "yes"
	// NotSignificant: the intervals overlap, so the replicates do not separate the two.
	NotSignificant = "no"
	// SignificanceSingleSeed: one of the two ran a single seed, so there are no intervals.
	SignificanceSingleSeed = "n/a (single seed)"
	// SignificanceNoCI: both ran several seeds, but the metric has no replicate statistics
	// (status.replicates holds a bounded set of metrics).
	SignificanceNoCI = "n/a (no CI for this metric)"
	// SignificanceMissing: one of the two has no value for the metric.
	SignificanceMissing = "n/a (missing)"
)

// Comparison is a table of metrics side by side for several evaluations, the first being the
// baseline every other is compared with.
type Comparison struct {
	// Names are the evaluations' names, in input order (made unique with a #n suffix).
	Names []string `json:"names"`
	// Rows are the headline metrics, then the per-class metrics.
	Rows []ComparisonRow `json:"rows"`
}

// ComparisonRow is one metric across the evaluations.
type ComparisonRow struct {
	// Metric is the status name: ttftP99Ms, or ttftP99Ms/chat for SLO class chat (the names of
	// replicate statistics and objectives).
	Metric string `json:"metric"`
	// Label is the metric for people ("TTFT p99", "TTFT p99 (chat)").
	Label string `json:"label"`
	// Unit of the values ("" for counts and plain numbers).
	Unit string `json:"unit,omitempty"`
	// Better is "lower", "higher" or "" (neither).
	Better string `json:"better,omitempty"`
	// Values has one entry per evaluation, in Names order.
	Values []ComparedValue `json:"values"`
}

// ComparedValue is one evaluation's value of a row and its difference from the baseline.
type ComparedValue struct {
	// Present is false when the evaluation has no value for the metric.
	Present bool `json:"present"`
	// Value is the metric's value (the mean over seeds).
	Value float64 `json:"value"`
	// Delta is Value minus the baseline's value.
	Delta float64 `json:"delta"`
	// RelDelta is Delta over the baseline's absolute value; HasRel is false when the baseline
	// is 0 (or either value is missing).
	RelDelta float64 `json:"relDelta"`
	// HasRel says whether RelDelta is defined.
	HasRel bool `json:"hasRel"`
	// Significance says whether the difference exceeds the replicate confidence intervals:
	// one of the Significance constants.
	Significance string `json:"significance"`
}

// uniqueNames names the data, suffixing repeated names with #2, #3, ...
func uniqueNames(ds []*Data) []string {
	seen := map[string]int{}
	out := make([]string, len(ds))
	for i, d := range ds {
		n := d.Name
		if n == "" {
			n = fmt.Sprintf("evaluation %d", i+1)
		}
		seen[n]++
		if seen[n] > 1 {
			n = fmt.Sprintf("%s #%d", n, seen[n])
		}
		out[i] = n
	}
	return out
}

// betterText names a direction.
func betterText(b int) string {
	switch b {
	case lowerIsBetter:
		return "lower"
	case higherIsBetter:
		return "higher"
	}
	return ""
}

// Compare puts the headline metrics (and the fitness score), then the per-class metrics, of
// several evaluations side by side, with each one's delta and relative delta from the first
// (the baseline) and whether the difference exceeds the replicate confidence intervals
// (non-overlapping 95% intervals of the mean from status.replicates). Rows that are zero or
// absent everywhere (no SLO targets, no prefix cache) are left out, except request counts.
func Compare(ds []*Data) *Comparison {
	c := &Comparison{Names: uniqueNames(ds)}
	type getter func(d *Data) (float64, bool)
	add := func(key, label, unit string, better int, get getter) {
		row := ComparisonRow{Metric: key, Label: label, Unit: unit, Better: betterText(better)}
		nonzero := false
		for _, d := range ds {
			v, ok := get(d)
			row.Values = append(row.Values, ComparedValue{Present: ok, Value: v})
			nonzero = nonzero || (ok && v != 0)
		}
		if !nonzero && !keepZeroRows[key] {
			return
		}
		for i := range row.Values {
			row.Values[i] = compareValue(ds[0], ds[i], key, row.Values[0], row.Values[i], i == 0)
		}
		c.Rows = append(c.Rows, row)
	}
	if len(ds) == 0 {
		return c
	}
	for _, m := range headlineMetrics {
		add(m.key, m.label, m.unit, m.better, func(d *Data) (float64, bool) {
			if d.Status.Metrics == nil {
				return 0, false
			}
			return m.get(d.Status.Metrics), true
		})
	}
	add("fitnessScore", "fitness score", "", higherIsBetter, func(d *Data) (float64, bool) {
		if d.Status.FitnessScore == nil {
			return 0, false
		}
		return *d.Status.FitnessScore, true
	})
	for _, class := range classNames(ds) {
		for _, m := range classMetrics {
			add(m.key+"/"+class, m.label+" ("+class+")", m.unit, m.better, func(d *Data) (float64, bool) {
				if cm := classOf(d, class); cm != nil {
					return m.get(cm), true
				}
				return 0, false
			})
		}
	}
	return c
}

// classNames are the SLO classes of the data, in order of first appearance.
func classNames(ds []*Data) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range ds {
		if d.Status.Metrics == nil {
			continue
		}
		for _, c := range d.Status.Metrics.PerClass {
			if !seen[c.Name] {
				seen[c.Name] = true
				out = append(out, c.Name)
			}
		}
	}
	return out
}

// classOf returns d's metrics of class name, or nil.
func classOf(d *Data, name string) *blisv1alpha1.ClassMetrics {
	if d.Status.Metrics == nil {
		return nil
	}
	for i := range d.Status.Metrics.PerClass {
		if d.Status.Metrics.PerClass[i].Name == name {
			return &d.Status.Metrics.PerClass[i]
		}
	}
	return nil
}

// compareValue fills in the delta and significance of value v of data d against base.
func compareValue(baseData, d *Data, key string, base, v ComparedValue, isBase bool) ComparedValue {
	if isBase {
		v.Significance = SignificanceBaseline
		return v
	}
	if !v.Present || !base.Present {
		v.Significance = SignificanceMissing
		return v
	}
	v.Delta = v.Value - base.Value
	if base.Value != 0 {
		v.RelDelta, v.HasRel = v.Delta/math.Abs(base.Value), true
	}
	v.Significance = significance(&baseData.Status, &d.Status, key)
	return v
}

// significance decides whether metric key differs beyond the replicate confidence intervals
// of a and b: the difference of the means must exceed the sum of the 95% half-widths (the
// intervals do not overlap).
func significance(a, b *blisv1alpha1.EvaluationStatus, key string) string {
	ra, na, oka := replicateStat(a, key)
	rb, nb, okb := replicateStat(b, key)
	switch {
	case na < 2 || nb < 2:
		return SignificanceSingleSeed
	case !oka || !okb:
		return SignificanceNoCI
	case math.Abs(ra.Mean-rb.Mean) > ra.Ci95+rb.Ci95:
		return Significant
	default:
		return NotSignificant
	}
}

// deltaText formats a delta with its sign and relative change ("+12.5 (+8.3%)").
func deltaText(v ComparedValue) string {
	if !v.Present {
		return "-"
	}
	s := num(v.Delta)
	if v.Delta > 0 {
		s = "+" + s
	}
	if v.HasRel {
		s += fmt.Sprintf(" (%+.1f%%)", 100*v.RelDelta)
	}
	return s
}

// valueText formats a value ("-" when missing).
func valueText(v ComparedValue) string {
	if !v.Present {
		return "-"
	}
	return num(v.Value)
}

// verdict says whether a delta is better or worse than the baseline, given the direction.
func verdict(r *ComparisonRow, v ComparedValue) string {
	if !v.Present || v.Delta == 0 || r.Better == "" || v.Significance == SignificanceBaseline || v.Significance == SignificanceMissing {
		return ""
	}
	if (v.Delta < 0) == (r.Better == "lower") {
		return "better"
	}
	return "worse"
}

// WriteText writes the comparison as an aligned plain-text table for a terminal: for the
// baseline its value, for every other evaluation its value, the delta (and relative delta),
// better or worse, and whether the difference exceeds the confidence intervals.
func (c *Comparison) WriteText(w io.Writer) error {
	if len(c.Names) == 0 {
		return errors.New("nothing to compare")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := []string{"metric", "unit", c.Names[0] + " (baseline)"}
	for _, n := range c.Names[1:] {
		header = append(header, n, "delta", "", "beyond CI")
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for i := range c.Rows {
		r := &c.Rows[i]
		cells := []string{r.Label, r.Unit, valueText(r.Values[0])}
		for _, v := range r.Values[1:] {
			cells = append(cells, valueText(v), deltaText(v), verdict(r, v), v.Significance)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}
