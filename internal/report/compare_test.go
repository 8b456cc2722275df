package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// row returns the comparison row of metric key.
func row(t *testing.T, c *Comparison, key string) ComparisonRow {
	t.Helper()
	for _, r := range c.Rows {
		if r.Metric == key {
			return r
		}
	}
	t.Fatalf("no row %s", key)
	return ComparisonRow{}
}

// TestCompareSignificance checks deltas and the confidence-interval rule on hand-made
// intervals: the fixture's ttftP99Ms has mean 120 + 4·scale and a 95% half-width of 9, and
// goodputRps mean 30 ± 1.5 everywhere.
func TestCompareSignificance(t *testing.T) {
	base := fixture("base", 2, 3, 20)   // ttftP99Ms 200 ± 9
	faster := fixture("fast", 2, 5, 10) // 160 ± 9: |40| > 18, beyond the intervals
	close := fixture("close", 2, 3, 17) // 188 ± 9: |12| <= 18, inside
	single := fixture("one", 2, 1, 10)  // no replicates
	failed := FromStatus("failed", nil) // no metrics at all
	c := Compare([]*Data{base, faster, close, single, failed})
	if got := strings.Join(c.Names, ","); got != "base,fast,close,one,failed" {
		t.Fatalf("names %s", got)
	}
	r := row(t, c, "ttftP99Ms")
	if r.Better != "lower" || r.Unit != "ms" {
		t.Errorf("row %+v", r)
	}
	want := []struct {
		value, delta, rel float64
		sig               string
	}{
		{200, 0, 0, SignificanceBaseline},
		{160, -40, -0.2, Significant},
		{188, -12, -0.06, NotSignificant},
		{160, -40, -0.2, SignificanceSingleSeed},
		{0, 0, 0, SignificanceMissing},
	}
	for i, w := range want {
		v := r.Values[i]
		if v.Value != w.value || math.Abs(v.Delta-w.delta) > 1e-9 || math.Abs(v.RelDelta-w.rel) > 1e-9 || v.Significance != w.sig {
			t.Errorf("%s ttftP99Ms = %+v, want %+v", c.Names[i], v, w)
		}
	}
	if v := r.Values[4]; v.Present || v.HasRel {
		t.Errorf("a missing value is present: %+v", v)
	}
	if g := row(t, c, "goodputRps"); g.Values[1].Significance != NotSignificant || g.Values[1].Delta != 0 {
		t.Errorf("equal goodput: %+v", g.Values[1])
	}
	if m := row(t, c, "ttftMeanMs"); m.Values[1].Significance != SignificanceNoCI {
		t.Errorf("a metric without replicate statistics: %+v", m.Values[1])
	}
	if cl := row(t, c, "sloAttainment/chat"); cl.Label != "SLO attainment (chat)" || cl.Values[1].Value != 0.93 || cl.Values[1].Significance != SignificanceNoCI {
		t.Errorf("class row %+v", cl)
	}
	for _, r := range c.Rows {
		if r.Metric == "cacheHitRate" || r.Metric == "replicaSeconds" {
			t.Errorf("row %s is zero everywhere and should be left out", r.Metric)
		}
	}
	var b bytes.Buffer
	if err := c.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	lines := strings.Split(text, "\n")
	if !strings.HasPrefix(lines[0], "metric") || !strings.Contains(lines[0], "base (baseline)") {
		t.Errorf("header %q", lines[0])
	}
	var ttft string
	for _, l := range lines {
		if strings.HasPrefix(l, "TTFT p99 ") && ttft == "" {
			ttft = strings.Join(strings.Fields(l), " ")
		}
	}
	if wantLine := "TTFT p99 ms 200 160 -40 (-20.0%) better yes 188 -12 (-6.0%) better no 160 -40 (-20.0%) better n/a (single seed) - - n/a (missing)"; ttft != wantLine {
		t.Errorf("text row\n%q, want\n%q", ttft, wantLine)
	}
}

// TestCompareUniqueNames suffixes repeated names.
func TestCompareUniqueNames(t *testing.T) {
	c := Compare([]*Data{fixture("x", 1, 1, 20), fixture("x", 1, 1, 20), fixture("", 1, 1, 20)})
	if got := strings.Join(c.Names, ","); got != "x,x #2,evaluation 3" {
		t.Fatalf("names %s", got)
	}
}

// TestCompareHTML overlays one line per evaluation on each chart, highlights rows beyond the
// intervals and renders identically twice.
func TestCompareHTML(t *testing.T) {
	ds := []*Data{fixture("base", 3, 3, 20), fixture("fast", 12, 5, 10)}
	var b1, b2 bytes.Buffer
	if err := CompareHTML(&b1, ds); err != nil {
		t.Fatal(err)
	}
	if err := CompareHTML(&b2, ds); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b1.Bytes(), b2.Bytes()) {
		t.Fatal("two renders differ")
	}
	figs := parsePage(t, b1.Bytes())
	want := "slo-attainment,ttft-cdf,itl-cdf,e2e-cdf,arrivals,completions,ready-instances,queue-depth,batch-size,kv-utilization,cache-hit-rate,fitness"
	if got := figureIDs(figs); got != want {
		t.Fatalf("figures %s, want %s", got, want)
	}
	for _, f := range figs {
		if f.series != "base|fast" || f.svgs != 1 {
			t.Errorf("figure %s: series %q, %d svg", f.id, f.series, f.svgs)
		}
		if !hasText(f, "base") || !hasText(f, "fast") {
			t.Errorf("figure %s lacks a legend entry", f.id)
		}
	}
	s := b1.String()
	if !strings.Contains(s, `<tr class="significant"><td>TTFT p99</td><td>ms</td><td>200</td><td>160</td><td>-40 (-20.0%)</td><td>better</td><td>yes</td></tr>`) {
		t.Error("the TTFT p99 row is not highlighted as beyond the intervals")
	}
	if _, err := ComparePNGs(t.TempDir(), ds); err != nil {
		t.Fatal(err)
	}
	if err := CompareHTML(&b1, nil); err == nil {
		t.Error("an empty comparison was accepted")
	}
}

// updateCompareGolden rewrites testdata/compare.golden.txt and testdata/compare.golden.json.
var updateCompareGolden = flag.Bool("update-compare-golden", false, "rewrite the comparison golden files")

// TestCompareGolden keeps the comparison of the hand-made fixtures (a baseline, a faster run
// beyond the intervals, a single-seed run) as text and as JSON: a change of rows, labels,
// formats or significance shows up as a diff.
func TestCompareGolden(t *testing.T) {
	c := Compare([]*Data{fixture("base", 2, 3, 20), fixture("fast", 2, 5, 10), fixture("one", 2, 1, 17)})
	var text bytes.Buffer
	if err := c.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	js, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]byte{"compare.golden.txt": text.Bytes(), "compare.golden.json": append(js, '\n')} {
		path := filepath.Join("testdata", name)
		if *updateCompareGolden {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the golden file (rerun with -update-compare-golden to accept):\n%s", name, got)
		}
	}
}
