package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/report"
	"github.com/inference-sim/blis-operator/internal/study"
	"github.com/inference-sim/blis-operator/internal/study/binding"
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

// TestStudyReportReadsTrialsLikeBinding: the report reads an Evaluation's outcome as the study
// binding does (the report package keeps its own copy, as it cannot import the binding).
func TestStudyReportReadsTrialsLikeBinding(t *testing.T) {
	raw, err := os.ReadFile("../../internal/report/testdata/study_evaluations.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ps *blisv1alpha1.PolicyStudy
	var evs []blisv1alpha1.Evaluation
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatal(err)
		}
		if tm.Kind == "PolicyStudy" {
			ps = &blisv1alpha1.PolicyStudy{}
			if err := yaml.Unmarshal([]byte(doc), ps); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var ev blisv1alpha1.Evaluation
		if err := yaml.Unmarshal([]byte(doc), &ev); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	sd := report.StudyFromEvaluations(ps, evs)
	byName := map[string]report.StudyCandidate{}
	for _, c := range sd.Candidates {
		byName[c.Evaluation] = c
	}
	succeeded := 0
	for i := range evs {
		if evs[i].Labels[blisv1alpha1.LabelStudy] != ps.Name {
			continue
		}
		var tr study.Trial
		binding.ResultOf(&tr, ps.Spec.Objectives, &evs[i].Status)
		c, ok := byName[evs[i].Name]
		if ok != (tr.State == study.Succeeded) {
			t.Errorf("%s: in the report %v, binding state %v", evs[i].Name, ok, tr.State)
			continue
		}
		if ok {
			succeeded++
			if c.Score != tr.Score || !slices.Equal(c.Fitness, tr.Objectives) {
				t.Errorf("%s: report %v %v, binding %v %v", evs[i].Name, c.Score, c.Fitness, tr.Score, tr.Objectives)
			}
		}
	}
	if succeeded != len(sd.Candidates) || succeeded == 0 {
		t.Errorf("%d succeeded, %d candidates", succeeded, len(sd.Candidates))
	}
}
