package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/report"
)

// TestStudyReport runs the grid sample with --report and --report-data: the HTML holds the
// study's charts and the data holds every candidate with its metrics, agreeing with the
// status `blis study` prints.
func TestStudyReport(t *testing.T) {
	dir := t.TempDir()
	html := filepath.Join(dir, "study.html")
	data := filepath.Join(dir, "study.json")
	out, _, err := studyCLI(t, "-f", studySamples+"blis_v1alpha1_policystudy_inputs.yaml", "-f", studySamples+"blis_v1alpha1_policystudy_grid.yaml",
		"--report", html, "--report-data", data)
	if err != nil {
		t.Fatal(err)
	}
	st := mustStudyStatus(t, out)
	f, err := os.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sd, err := report.ReadStudy(f)
	if err != nil {
		t.Fatal(err)
	}
	if sd.Name != "admission-sweep" || !sd.AllCandidates || len(sd.Candidates) != int(st.Evaluations.Succeeded) ||
		sd.Best != st.Best.Evaluation || sd.FrontSize != int(st.ParetoFrontSize) || len(sd.Missing) != 0 {
		t.Fatalf("report data %+v for status %+v", sd, st)
	}
	onFront := 0
	for _, c := range sd.Candidates {
		if len(c.Raw) != 2 || len(c.Parameters) != 2 || c.ParetoRank == nil {
			t.Errorf("candidate %+v", c)
		}
		if c.OnFront {
			onFront++
		}
		// The first objective is sloAttainment/critical, a fraction maximised: its fitness
		// is the metric itself.
		if c.Raw[0] != c.Fitness[0] {
			t.Errorf("%s: sloAttainment/critical %v, fitness %v", c.Evaluation, c.Raw[0], c.Fitness[0])
		}
	}
	if onFront < len(st.ParetoFront) {
		t.Errorf("%d candidates on the front, status lists %d", onFront, len(st.ParetoFront))
	}
	for _, front := range st.ParetoFront {
		found := false
		for _, c := range sd.Candidates {
			found = found || (c.Evaluation == front.Evaluation && c.OnFront)
		}
		if !found {
			t.Errorf("front candidate %s is not on the report's front", front.Evaluation)
		}
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<figure class="chart" id="pareto-sloattainment-critical-vs-ttftp99ms"`, `<figure class="chart" id="convergence"`,
		`id="top-bundles"`, "admission.parameters.refill_rate", st.Best.Evaluation} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if n := strings.Count(string(page), "<svg"); n != 2 {
		t.Errorf("%d charts, want 2", n)
	}
}
