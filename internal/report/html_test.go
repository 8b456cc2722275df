package report

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// figureInfo is what a test reads of one <figure class="chart">.
type figureInfo struct {
	id, series string
	svgs       int
	texts      []string
}

// parsePage parses an HTML page strictly as XML, fails on external references (src or href
// attributes with http:// or https://) and returns its chart figures in order.
func parsePage(t *testing.T, page []byte) []figureInfo {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(page))
	dec.Strict = true
	var figs []figureInfo
	var cur *figureInfo
	depth, figDepth := 0, -1
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("page is not well-formed: %v", err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			depth++
			for _, a := range tk.Attr {
				if (a.Name.Local == "src" || a.Name.Local == "href") &&
					(strings.Contains(a.Value, "http://") || strings.Contains(a.Value, "https://")) {
					t.Errorf("external reference %s=%q", a.Name.Local, a.Value)
				}
			}
			if tk.Name.Local == "figure" {
				f := figureInfo{}
				for _, a := range tk.Attr {
					switch a.Name.Local {
					case "id":
						f.id = a.Value
					case "data-series":
						f.series = a.Value
					case "class":
						if a.Value != "chart" {
							t.Errorf("figure class %q", a.Value)
						}
					}
				}
				figs = append(figs, f)
				cur, figDepth = &figs[len(figs)-1], depth
			}
			if cur != nil && tk.Name.Local == "svg" {
				cur.svgs++
			}
			inText = cur != nil && tk.Name.Local == "text"
		case xml.CharData:
			if inText {
				cur.texts = append(cur.texts, string(tk))
			}
		case xml.EndElement:
			inText = false
			if depth == figDepth && tk.Name.Local == "figure" {
				cur, figDepth = nil, -1
			}
			depth--
		}
	}
	return figs
}

func renderHTML(t *testing.T, d *Data) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := HTML(&b, d); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func figureIDs(figs []figureInfo) string {
	ids := make([]string, len(figs))
	for i, f := range figs {
		ids[i] = f.id
	}
	return strings.Join(ids, ",")
}

func hasText(f figureInfo, s string) bool {
	for _, t := range f.texts {
		if t == s {
			return true
		}
	}
	return false
}

// TestHTMLReport checks the structure of a full report: one inline SVG per expected chart in
// page order, the series of each chart in its legend, escaped text, the tables, and identical
// bytes across renders.
func TestHTMLReport(t *testing.T) {
	d := fixture("baseline", 3, 3, 20)
	page := renderHTML(t, d)
	if again := renderHTML(t, d); !bytes.Equal(page, again) {
		t.Fatal("two renders of the same data differ")
	}
	figs := parsePage(t, page)
	want := "slo-attainment,ttft-cdf,itl-cdf,e2e-cdf,arrivals,queue-depth,batch-size,kv-utilization,cache-hit-rate,fitness"
	if got := figureIDs(figs); got != want {
		t.Fatalf("figures %s, want %s", got, want)
	}
	series := map[string]string{
		"slo-attainment": "all|batch|chat", "ttft-cdf": "all|batch|chat", "itl-cdf": "all|batch|chat", "e2e-cdf": "all|batch|chat",
		"arrivals": "arrivals|completions", "queue-depth": "instance_0|instance_1|instance_2",
		"kv-utilization": "instance_0|instance_1|instance_2", "fitness": "ttftP99Ms|goodputRps",
	}
	for _, f := range figs {
		if f.svgs != 1 {
			t.Errorf("figure %s holds %d <svg>, want 1", f.id, f.svgs)
		}
		if w, ok := series[f.id]; ok {
			if f.series != w {
				t.Errorf("figure %s series %q, want %q", f.id, f.series, w)
			}
			for _, label := range strings.Split(w, "|") {
				if !hasText(f, label) {
					t.Errorf("figure %s does not draw the label %q", f.id, label)
				}
			}
		}
	}
	s := string(page)
	for _, want := range []string{
		`<pre id="trace-summary-text">Outcome: 77% of requests met &lt;SLO&gt; targets &amp; 10 rejected.`,
		`<table id="headline-table">`, `<td>TTFT p99</td><td>200</td><td>ms</td><td>± 9</td>`,
		`<table id="classes-table">`, `<td>chat</td><td>200</td><td>10</td><td>90</td>`,
		`<table id="replicates-table">`, `<td>ttftP99Ms</td><td>200</td><td>6</td><td>± 9</td><td>[191, 209]</td>`,
		`<table id="anomalies-table">`, `<td>priority inversions</td><td>3</td>`,
		`Fitness score 0.7100 (higher is better).`,
		`3 seeds (distributions and time series of seed 42)`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(s, "What this report cannot show") {
		t.Error("a complete report lists missing parts")
	}
}

// TestHTMLManyInstances draws the top 8 instances by mean and the mean over all of them, and
// says so in the caption.
func TestHTMLManyInstances(t *testing.T) {
	d := fixture("many", 12, 1, 20)
	page := renderHTML(t, d)
	figs := parsePage(t, page)
	var q figureInfo
	for _, f := range figs {
		if f.id == "queue-depth" {
			q = f
		}
	}
	// The fixture's queue depth grows with the instance index: the top 8 are 4..11.
	want := "mean of 12|instance_4|instance_5|instance_6|instance_7|instance_8|instance_9|instance_10|instance_11"
	if q.series != want {
		t.Fatalf("queue-depth series %q, want %q", q.series, want)
	}
	if !strings.Contains(string(page), "12 instances, so only the 8 with the highest mean queue depth are drawn, with the mean over all 12 (dashed).") {
		t.Error("the caption does not say only the top 8 are drawn")
	}
	if !strings.Contains(string(page), "Single seed: no confidence intervals.") {
		t.Error("a single-seed report should say it has no confidence intervals")
	}
}

// TestHTMLStatusOnly reports a status without distributions or series: the charts the status
// can feed (SLO attainment, fitness) and the list of what is missing.
func TestHTMLStatusOnly(t *testing.T) {
	full := fixture("s", 2, 1, 20)
	d := FromStatus("ns/s", &full.Status)
	page := renderHTML(t, d)
	figs := parsePage(t, page)
	if got := figureIDs(figs); got != "slo-attainment,fitness" {
		t.Fatalf("figures %s", got)
	}
	s := string(page)
	for _, want := range []string{"What this report cannot show", "Latency distributions (the TTFT, ITL and E2E CDFs) are not kept",
		"Time series (arrivals", "No latency distributions in this data", "No time series in this data"} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestHTMLRefusesBadData refuses data of another version and series of mismatched lengths.
func TestHTMLRefusesBadData(t *testing.T) {
	d := fixture("x", 2, 1, 20)
	d.Version = "report.blis.inference-sim.io/v0"
	if err := HTML(io.Discard, d); err == nil {
		t.Error("another version was accepted")
	}
	d = fixture("x", 2, 1, 20)
	d.Series.Instances[1].BatchSize = d.Series.Instances[1].BatchSize[:3]
	if err := HTML(io.Discard, d); err == nil || !strings.Contains(err.Error(), "instance_1 batchSize has 3 values for 20 buckets") {
		t.Errorf("mismatched series: %v", err)
	}
}

// TestPNGs writes one PNG per chart, named after it, of the report size.
func TestPNGs(t *testing.T) {
	dir := t.TempDir()
	d := fixture("baseline", 3, 3, 20)
	d.Series.Cluster.ReadyInstances[5] = 2 // autoscaling: the ready-instances chart appears
	paths, err := PNGs(dir, d)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		_ = f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if b := img.Bounds(); b.Dx() != pngWidthPx || b.Dy() != pngHeightPx {
			t.Errorf("%s is %dx%d", p, b.Dx(), b.Dy())
		}
	}
	want := "slo-attainment.png,ttft-cdf.png,itl-cdf.png,e2e-cdf.png,arrivals.png,ready-instances.png,queue-depth.png,batch-size.png,kv-utilization.png,cache-hit-rate.png,fitness.png"
	if got := strings.Join(names, ","); got != want {
		t.Fatalf("PNGs %s, want %s", got, want)
	}
}

// TestInstanceMean averages a series kind over instances bucket by bucket (what a comparison
// overlays): the fixture's queue depth of instance i in bucket b is (7i+b) mod 5 + i.
func TestInstanceMean(t *testing.T) {
	d := fixture("m", 3, 1, 20)
	got := instanceMean(d.Series, func(in *InstanceSeries) []float64 { return in.QueueDepth })
	if len(got) != 20 {
		t.Fatalf("%d buckets", len(got))
	}
	for b, v := range got {
		want := 0.0
		for i := 0; i < 3; i++ {
			want += float64((i*7+b)%5 + i)
		}
		if v != want/3 {
			t.Errorf("bucket %d: %v, want %v", b, v, want/3)
		}
	}
}

// TestLogScaleCaption: a CDF spanning more than logSpread gets a log axis, which its caption
// says; a narrow one does not.
func TestLogScaleCaption(t *testing.T) {
	d := fixture("wide", 2, 1, 20)
	for i := range d.Distributions {
		if d.Distributions[i].Metric == MetricE2E && d.Distributions[i].Class == "" {
			d.Distributions[i].Points[len(d.Distributions[i].Points)-1].Ms = 1e6
		}
	}
	page := string(renderHTML(t, d))
	e2e := page[strings.Index(page, `id="e2e-cdf"`):]
	e2e = e2e[:strings.Index(e2e, "</figure>")]
	if !strings.Contains(e2e, "Log-scale latency axis") {
		t.Error("a 3000x spread does not get a log axis")
	}
	itl := page[strings.Index(page, `id="itl-cdf"`):]
	itl = itl[:strings.Index(itl, "</figure>")]
	if strings.Contains(itl, "Log-scale") {
		t.Error("a narrow ITL distribution got a log axis")
	}
}
