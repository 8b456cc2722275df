package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/study"
)

var updateStudyGolden = flag.Bool("update-study-golden", false, "rewrite the study report golden files")

// readStudyFile reads a testdata file with ReadStudy.
func readStudyFile(t *testing.T, name string) *StudyData {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sd, err := ReadStudy(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return sd
}

// checkStudyGolden compares sd's JSON with testdata/<name> (rewritten with
// -update-study-golden).
func checkStudyGolden(t *testing.T, sd *StudyData, name string) {
	t.Helper()
	got, err := json.MarshalIndent(sd, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", name)
	if *updateStudyGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n%s", name, got)
	}
}

func candidateByName(t *testing.T, sd *StudyData, name string) *StudyCandidate {
	t.Helper()
	for i := range sd.Candidates {
		if sd.Candidates[i].Evaluation == name {
			return &sd.Candidates[i]
		}
	}
	t.Fatalf("no candidate %s in %+v", name, sd.Candidates)
	return nil
}

func missingHas(sd *StudyData, part string) bool {
	for _, m := range sd.Missing {
		if strings.Contains(m, part) {
			return true
		}
	}
	return false
}

// TestStudyFromStatus: a PolicyStudy's status gives the listed front and the best, with notes
// that the dominated candidates and the metric values are not known.
func TestStudyFromStatus(t *testing.T) {
	sd := readStudyFile(t, "study_policystudy.yaml")
	checkStudyGolden(t, sd, "study_policystudy.golden.json")
	if sd.Name != "tri" || sd.Algorithm != "nsga2" || len(sd.Objectives) != 3 || sd.AllCandidates {
		t.Errorf("header %+v", sd)
	}
	if len(sd.Candidates) != 2 || sd.Best != "tri-g021-003" || sd.FrontSize != 12 {
		t.Fatalf("candidates %d, best %q, front %d", len(sd.Candidates), sd.Best, sd.FrontSize)
	}
	best := candidateByName(t, sd, "tri-g021-003")
	if !best.OnFront || best.Score != 0.8125 || !slices.Equal(best.Fitness, []float64{0.6, 0.65, 0.995}) || best.Raw != nil {
		t.Errorf("best %+v", best)
	}
	if sd.Objectives[2] != (StudyObjective{Name: "sloAttainment/critical", Direction: "maximize", Weight: 2}) {
		t.Errorf("objective %+v", sd.Objectives[2])
	}
	if !missingHas(sd, "Only the top 2 of the 12 points") || !missingHas(sd, "normalised fitness") ||
		!missingHas(sd, "starts at generation 22") {
		t.Errorf("missing %q", sd.Missing)
	}
	if got := StudyChartIDs(sd); !slices.Equal(got, []string{
		"pareto-ttftp99ms-vs-goodputrps", "pareto-ttftp99ms-vs-sloattainment-critical",
		"pareto-goodputrps-vs-sloattainment-critical", "convergence",
	}) {
		t.Errorf("charts %q", got)
	}
}

// TestStudyFromEvaluations: every candidate of the study, ranked by hand (see the fixture's
// comment), with metric values from the Evaluations.
func TestStudyFromEvaluations(t *testing.T) {
	sd := readStudyFile(t, "study_evaluations.yaml")
	checkStudyGolden(t, sd, "study_evaluations.golden.json")
	if !sd.AllCandidates || sd.Best != "duo-g000-000" || sd.FrontSize != 3 {
		t.Errorf("all %v, best %q, front %d", sd.AllCandidates, sd.Best, sd.FrontSize)
	}
	wantRanks := map[string]int{"duo-g000-000": 0, "duo-g000-001": 0, "duo-g001-000": 0, "ext-manual": 1, "duo-g000-002": 2, "duo-g001-001": 3}
	if len(sd.Candidates) != len(wantRanks) {
		t.Fatalf("%d candidates, want %d", len(sd.Candidates), len(wantRanks))
	}
	for name, r := range wantRanks {
		c := candidateByName(t, sd, name)
		if c.ParetoRank == nil || *c.ParetoRank != r || c.OnFront != (r == 0) {
			t.Errorf("%s: rank %v front %v, want %d", name, c.ParetoRank, c.OnFront, r)
		}
	}
	var order []string
	for _, c := range sd.Candidates {
		order = append(order, c.Evaluation)
	}
	// Score first, then name: the two 0.55s tie.
	if want := []string{"duo-g000-000", "duo-g001-000", "duo-g000-001", "ext-manual", "duo-g000-002", "duo-g001-001"}; !slices.Equal(order, want) {
		t.Errorf("order %q, want %q", order, want)
	}
	ext := candidateByName(t, sd, "ext-manual")
	if ext.Generation != nil || ext.Parameters != nil || !slices.Equal(ext.Raw, []float64{122.2, 45}) {
		t.Errorf("external %+v", ext)
	}
	g := candidateByName(t, sd, "duo-g001-000")
	if g.Generation == nil || *g.Generation != 1 || g.PolicyBundle != "duo-g001-000" ||
		!slices.Equal(g.Parameters, []blisv1alpha1.ParameterValue{{Path: "routing.scorers[name=queue-scorer].weight", Value: "1"}, {Path: "scheduler", Value: "sjf"}}) {
		t.Errorf("g001-000 %+v", g)
	}
	if want := (blisv1alpha1.StudyCounters{Created: 7, Running: 1, Succeeded: 5, Failed: 1, External: 1}); sd.Evaluations != want {
		t.Errorf("counters %+v, want %+v", sd.Evaluations, want)
	}
	if len(sd.Convergence) != 3 {
		t.Fatalf("convergence %+v", sd.Convergence)
	}
	c0, c1, c2 := sd.Convergence[0], sd.Convergence[1], sd.Convergence[2]
	if c0.Evaluated != 3 || *c0.Best != 0.55 || *c0.Mean != 0.483333 || *c0.BestSoFar != 0.55 {
		t.Errorf("generation 0 %+v", c0)
	}
	if c1.Evaluated != 2 || c1.Failed != 1 || *c1.Best != 0.55 || *c1.Mean != 0.425 {
		t.Errorf("generation 1 %+v", c1)
	}
	if c2.Evaluated != 0 || c2.Best != nil || c2.Mean != nil || c2.BestSoFar == nil || *c2.BestSoFar != 0.55 {
		t.Errorf("generation 2 %+v", c2)
	}
	if len(sd.Missing) != 0 {
		t.Errorf("missing %q", sd.Missing)
	}
	if got := StudyChartIDs(sd); !slices.Equal(got, []string{"pareto-ttftp99ms-vs-goodputrps", "convergence"}) {
		t.Errorf("charts %q", got)
	}
}

// TestStudyRanksMatchStudyPackage: the report's ranks are the study package's (the operator
// writes the same ranks into status.paretoRank).
func TestStudyRanksMatchStudyPackage(t *testing.T) {
	objs := [][]float64{{0.1, 0.9}, {0.5, 0.5}, {0.4, 0.4}, {0.9, 0.1}, {0.2, 0.2}, {0.5, 0.5}}
	var trials []StudyTrial
	var plain []study.Trial
	for i, o := range objs {
		tr := study.Trial{Name: study.Name("p", 0, i), Index: i, State: study.Succeeded, Score: (o[0] + o[1]) / 2, Objectives: o}
		trials = append(trials, StudyTrial{Trial: tr})
		plain = append(plain, tr)
	}
	ps := &blisv1alpha1.PolicyStudy{}
	ps.Name = "p"
	ps.Spec.Objectives = []blisv1alpha1.Objective{{Name: "a", Direction: "maximize", Weight: 1}, {Name: "b", Direction: "maximize", Weight: 1}}
	sd := StudyFromTrials(ps, trials)
	ranks := study.ParetoRanks(plain)
	for i, tr := range plain {
		c := candidateByName(t, sd, tr.Name)
		if *c.ParetoRank != ranks[i] {
			t.Errorf("%s: rank %d, study package %d", tr.Name, *c.ParetoRank, ranks[i])
		}
	}
	// Two candidates at (0.5, 0.5) are one point of the front.
	if sd.FrontSize != 3 || !missingHas(sd, "carry no metrics") {
		t.Errorf("front %d, missing %q", sd.FrontSize, sd.Missing)
	}
}

// TestStudyRawValues: metric values come from the headline metrics or a class's row, zero
// included; an unknown metric or class makes them unknown.
func TestStudyRawValues(t *testing.T) {
	st := &blisv1alpha1.EvaluationStatus{Metrics: &blisv1alpha1.EvaluationMetrics{
		TtftP99Ms: 42.5, RejectedRequests: 0, CompletedRequests: 7,
		PerClass: []blisv1alpha1.ClassMetrics{{Name: "critical", SloAttainment: 0.75}, {Name: "batch"}},
	}}
	got, ok := rawValues(st, []StudyObjective{{Name: "ttftP99Ms"}, {Name: "sloAttainment/critical"}, {Name: "rejectedRequests"}, {Name: "completedRequests"}, {Name: "goodputRps/batch"}})
	if !ok || !slices.Equal(got, []float64{42.5, 0.75, 0, 7, 0}) {
		t.Errorf("raw %v %v", got, ok)
	}
	for _, bad := range []string{"noSuchMetric", "sloAttainment/nope", "perClass"} {
		if _, ok := rawValues(st, []StudyObjective{{Name: bad}}); ok {
			t.Errorf("%s: found a value", bad)
		}
	}
	if _, ok := rawValues(&blisv1alpha1.EvaluationStatus{}, []StudyObjective{{Name: "ttftP99Ms"}}); ok {
		t.Error("a status without metrics gave values")
	}
}

var externalRef = regexp.MustCompile(`(?i)(src|href)\s*=\s*"(https?:)?//|url\(\s*['"]?(https?:)?//|@import|<script|<link`)

// TestStudyHTML: one inline SVG per chart inside its figure, the labels, the top-bundles table
// with differing rows highlighted, nothing loaded from the network, well-formed markup and the
// same bytes on every render.
func TestStudyHTML(t *testing.T) {
	for _, name := range []string{"study_evaluations.yaml", "study_policystudy.yaml"} {
		t.Run(name, func(t *testing.T) {
			sd := readStudyFile(t, name)
			var a, b bytes.Buffer
			if err := StudyHTML(&a, sd); err != nil {
				t.Fatal(err)
			}
			if err := StudyHTML(&b, sd); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Error("two renders differ")
			}
			html := a.String()
			wellFormed(t, a.Bytes())
			ids := StudyChartIDs(sd)
			if n := strings.Count(html, "<svg"); n != len(ids) {
				t.Errorf("%d <svg> elements, want %d", n, len(ids))
			}
			for _, id := range ids {
				fig := regexp.MustCompile(`<figure class="chart" id="` + regexp.QuoteMeta(id) + `"[^>]*>\s*<svg`)
				if !fig.MatchString(html) {
					t.Errorf("no figure %s holding an svg", id)
				}
			}
			if m := externalRef.FindString(html); m != "" {
				t.Errorf("external reference %q", m)
			}
			for _, want := range []string{"Study " + sd.Name, "Pareto front", "best score", "best so far", "mean of generation",
				"ttftP99Ms", `id="top-bundles"`, sd.Best} {
				if !strings.Contains(html, want) {
					t.Errorf("no %q", want)
				}
			}
			for _, m := range sd.Missing {
				if !strings.Contains(html, esc(m)) {
					t.Errorf("missing note %q not shown", m)
				}
			}
		})
	}
	sd := readStudyFile(t, "study_evaluations.yaml")
	var buf bytes.Buffer
	if err := StudyHTML(&buf, sd); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	// Top 5: g000-000 (1, fcfs), g001-000 (1, sjf), g000-001 (2.5, fcfs), ext-manual (unset),
	// g000-002 (4, fcfs): both parameter rows differ; dominated candidates are drawn.
	for _, row := range []string{
		`<tr class="significant"><td>routing.scorers[name=queue-scorer].weight</td><td>1</td><td>1</td><td>2.5</td><td>(not set)</td><td>4</td></tr>`,
		`<tr class="significant"><td>scheduler</td><td>fcfs</td><td>sjf</td><td>fcfs</td><td>(not set)</td><td>fcfs</td></tr>`,
		`<tr class="significant"><td>ttftP99Ms fitness</td><td>0.9</td><td>0.2</td><td>0.5</td><td>0.45</td><td>0.4</td></tr>`,
		`<tr class="significant"><td>ttftP99Ms</td><td>11.1</td><td>400</td><td>100</td><td>122.2</td><td>150</td></tr>`,
	} {
		if !strings.Contains(html, row) {
			t.Errorf("no row %s", row)
		}
	}
	// Equal values are not highlighted: both front points of the status use sjf.
	buf.Reset()
	if err := StudyHTML(&buf, readStudyFile(t, "study_policystudy.yaml")); err != nil {
		t.Fatal(err)
	}
	if row := `<tr><td>scheduler</td><td>sjf</td><td>sjf</td></tr>`; !strings.Contains(buf.String(), row) {
		t.Errorf("no row %s", row)
	}
	if strings.Count(html, "<th>") != 2+1+StudyTopBundles {
		t.Errorf("table headers: %d", strings.Count(html, "<th>"))
	}
	if !strings.Contains(html, "dominated") || !strings.Contains(html, "ttftP99Ms (lower is better)") {
		t.Error("the scatter lacks dominated points or metric axes")
	}
}

// TestStudyPNGs: one decodable PNG per chart, named after its id.
func TestStudyPNGs(t *testing.T) {
	sd := readStudyFile(t, "study_policystudy.yaml")
	dir := filepath.Join(t.TempDir(), "charts")
	paths, err := StudyPNGs(dir, sd)
	if err != nil {
		t.Fatal(err)
	}
	ids := StudyChartIDs(sd)
	if len(paths) != len(ids) {
		t.Fatalf("paths %q for charts %q", paths, ids)
	}
	for i, p := range paths {
		if filepath.Base(p) != ids[i]+".png" {
			t.Errorf("file %s for chart %s", p, ids[i])
		}
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
			t.Errorf("%s: %v", p, b)
		}
	}
}

// TestReadStudyFormats: StudyData JSON round-trips, `blis study` output and Lists are read,
// and wrong input is refused with a reason.
func TestReadStudyFormats(t *testing.T) {
	sd := readStudyFile(t, "study_evaluations.yaml")
	js, err := json.Marshal(sd)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadStudy(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	js2, _ := json.Marshal(back)
	if !bytes.Equal(js, js2) {
		t.Errorf("round trip differs:\n%s\n%s", js, js2)
	}

	// The same objects as a kubectl List (typed EvaluationList items carry no kind).
	raw, err := os.ReadFile(filepath.Join("testdata", "study_evaluations.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var items []json.RawMessage
	var ps json.RawMessage
	for i, doc := range strings.Split(string(raw), "\n---\n") {
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			ps = j
			continue
		}
		var m map[string]any
		_ = json.Unmarshal(j, &m)
		delete(m, "kind")
		j, _ = json.Marshal(m)
		items = append(items, j)
	}
	evList, _ := json.Marshal(map[string]any{"apiVersion": "blis.inference-sim.io/v1alpha1", "kind": "EvaluationList", "items": items})
	fromList, err := ReadStudy(strings.NewReader(string(ps) + "\n" + string(evList)))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(fromList)
	if !bytes.Equal(a, js) {
		t.Errorf("from a PolicyStudy and an EvaluationList:\n%s\nwant\n%s", a, js)
	}
	// kubectl get policystudy,evaluation -o json prints one List of both kinds.
	var evItems []any
	for _, it := range items {
		var m map[string]any
		_ = json.Unmarshal(it, &m)
		m["kind"] = "Evaluation"
		evItems = append(evItems, m)
	}
	list, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": append([]any{ps}, evItems...)})
	fromMixed, err := ReadStudy(bytes.NewReader(list))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(fromMixed); !bytes.Equal(b, js) {
		t.Errorf("from a List:\n%s\nwant\n%s", b, js)
	}

	// `blis study` prints the status alone.
	var full blisv1alpha1.PolicyStudy
	pol, _ := os.ReadFile(filepath.Join("testdata", "study_policystudy.yaml"))
	if err := yaml.Unmarshal(pol, &full); err != nil {
		t.Fatal(err)
	}
	out, _ := yaml.Marshal(full.Status)
	st, err := ReadStudy(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "tri" || len(st.Objectives) != 3 || st.Objectives[0].Direction != "" || len(st.Candidates) != 2 ||
		!missingHas(st, "no study spec") || st.Best != "tri-g021-003" {
		t.Errorf("from blis study output: %+v", st)
	}

	for _, c := range []struct{ in, err string }{
		{"", "empty"},
		{`{"version": "studyreport.blis.inference-sim.io/v0", "name": "x"}`, "version"},
		{`{"version": "` + StudyDataVersion + `", "name": "x", "extra": 1}`, "unknown field"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "no PolicyStudy"},
		{"nonsense: [1, 2]\n", "neither"},
		{string(pol) + "\n---\n" + string(pol), "2 PolicyStudies"},
	} {
		_, err := ReadStudy(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: error %v, want %q", c.in, err, c.err)
		}
	}
}

// TestStudyEmpty: a study with nothing succeeded yet still renders and says why it is empty.
func TestStudyEmpty(t *testing.T) {
	ps := &blisv1alpha1.PolicyStudy{}
	ps.Name = "fresh"
	ps.Spec.Objectives = []blisv1alpha1.Objective{{Name: "ttftP99Ms", Direction: "minimize", Weight: 1}}
	sd := StudyFromStatus(ps)
	if len(StudyChartIDs(sd)) != 0 || !missingHas(sd, "No candidate has succeeded") {
		t.Errorf("%+v", sd)
	}
	var buf bytes.Buffer
	if err := StudyHTML(&buf, sd); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "<svg") || !strings.Contains(buf.String(), "No candidate has succeeded") {
		t.Errorf("empty report:\n%s", buf.String())
	}
	paths, err := StudyPNGs(t.TempDir(), sd)
	if err != nil || len(paths) != 0 {
		t.Errorf("pngs %v %v", paths, err)
	}
}

// TestStudyObjectiveCounts: one objective draws no scatter; five draw the six pairs of the
// first four and say so.
func TestStudyObjectiveCounts(t *testing.T) {
	for _, c := range []struct {
		objectives int
		scatters   int
		note       string
	}{{1, 0, "single objective"}, {2, 1, ""}, {4, 6, ""}, {5, 6, "pairs of the first 4 only"}} {
		ps := &blisv1alpha1.PolicyStudy{}
		ps.Name = "n"
		var fit []float64
		for k := range c.objectives {
			ps.Spec.Objectives = append(ps.Spec.Objectives, blisv1alpha1.Objective{Name: "m" + string(rune('a'+k)), Direction: "maximize", Weight: 1})
			fit = append(fit, float64(k+1)/10)
		}
		sd := StudyFromTrials(ps, []StudyTrial{{Trial: study.Trial{Name: "n-g000-000", State: study.Succeeded, Score: 0.5, Objectives: fit}}})
		ids := StudyChartIDs(sd)
		if len(ids) != c.scatters+1 || ids[len(ids)-1] != "convergence" {
			t.Errorf("%d objectives: charts %q", c.objectives, ids)
		}
		if c.note != "" && !missingHas(sd, c.note) {
			t.Errorf("%d objectives: missing %q", c.objectives, sd.Missing)
		}
		if c.objectives == 4 && ids[5] != "pareto-mc-vs-md" {
			t.Errorf("last pair %q", ids[5])
		}
	}
}
