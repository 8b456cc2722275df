package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/report"
)

// reportCLI executes `blis args...` and returns stdout, stderr and the error.
func reportCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errOut.String(), err
}

// readFixtureDir is the report package's fixtures (written by this CLI on the quick-start).
const readFixtureDir = "../../internal/report/testdata/read"

// TestReportQuickstart runs blis report on the embedded quick-start: it prints the paths it
// wrote, the HTML holds every chart, the data has distributions and series and the same status
// as blis evaluate at trace level decisions, and a second run writes identical bytes.
func TestReportQuickstart(t *testing.T) {
	dir := t.TempDir()
	run := func(sub string) (string, []byte) {
		html := filepath.Join(dir, sub+".html")
		out, _, err := reportCLI(t, "report", "--num-requests", "40", "--seeds", "1,2", "-o", html,
			"--png-dir", filepath.Join(dir, sub), "--data-output", filepath.Join(dir, sub+".json"))
		if err != nil {
			t.Fatal(err)
		}
		page, err := os.ReadFile(html)
		if err != nil {
			t.Fatal(err)
		}
		return out, page
	}
	out, page := run("a")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 12 || lines[0] != filepath.Join(dir, "a.json") || lines[1] != filepath.Join(dir, "a.html") ||
		lines[3] != filepath.Join(dir, "a", "ttft-cdf.png") {
		t.Fatalf("printed paths:\n%s", out)
	}
	for _, p := range lines {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("printed %s, not written: %v", p, err)
		}
	}
	for _, id := range []string{"slo-attainment", "ttft-cdf", "itl-cdf", "e2e-cdf", "arrivals", "queue-depth", "batch-size", "kv-utilization", "cache-hit-rate", "fitness"} {
		if strings.Count(string(page), `<figure class="chart" id="`+id+`"`) != 1 {
			t.Errorf("the report lacks chart %s", id)
		}
	}
	if strings.Contains(string(page), "What this report cannot show") {
		t.Error("a report run from manifests lists missing parts")
	}
	_, again := run("b")
	if !bytes.Equal(page, again) {
		t.Error("two runs wrote different HTML")
	}
	f, err := os.Open(filepath.Join(dir, "a.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	d, err := report.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "quickstart" || len(d.Distributions) == 0 || d.Series == nil || len(d.Series.Instances) != 4 {
		t.Fatalf("data %q: %d distributions, series %v", d.Name, len(d.Distributions), d.Series != nil)
	}
	evOut, _, err := evaluateCLI(t, "--num-requests", "40", "--seeds", "1,2", "--trace-level", "decisions")
	if err != nil {
		t.Fatal(err)
	}
	st := mustStatus(t, evOut)
	if st.InputHash != d.Status.InputHash || st.Metrics.TtftP99Ms != d.Status.Metrics.TtftP99Ms {
		t.Errorf("blis report ran other inputs than blis evaluate --trace-level decisions: %s vs %s", d.Status.InputHash, st.InputHash)
	}
}

// TestReportFromFile reports a saved status: the page says what it lacks; the name comes from
// the file.
func TestReportFromFile(t *testing.T) {
	html := filepath.Join(t.TempDir(), "r.html")
	out, _, err := reportCLI(t, "report", filepath.Join(readFixtureDir, "status.yaml"), "-o", html)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != html {
		t.Errorf("printed %q", out)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<title>Evaluation report: status</title>", "What this report cannot show", `id="slo-attainment"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(string(page), `id="ttft-cdf"`) {
		t.Error("a status-only report draws a CDF")
	}
}

// TestReportToStdout writes the HTML to standard output with -o -.
func TestReportToStdout(t *testing.T) {
	out, errOut, err := reportCLI(t, "report", filepath.Join(readFixtureDir, "evaluation.yaml"), "-o", "-")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(out, "Evaluation report: team-a/quickstart") || errOut != "" {
		t.Errorf("stdout %.80q, stderr %q", out, errOut)
	}
}

// TestReportStudy renders a PolicyStudy source as a study report.
func TestReportStudy(t *testing.T) {
	html := filepath.Join(t.TempDir(), "s.html")
	if _, _, err := reportCLI(t, "report", "../../internal/report/testdata/study_policystudy.yaml", "-o", html); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `id="convergence"`) {
		t.Error("the study report lacks its convergence chart")
	}
}

// TestReportResolvers consults registered resolvers before files.
func TestReportResolvers(t *testing.T) {
	saved := sourceResolvers
	defer func() { sourceResolvers = saved }()
	// First in line, and under a prefix no other resolver claims.
	sourceResolvers = append([]func(context.Context, string) (*report.Data, bool, error){
		func(_ context.Context, arg string) (*report.Data, bool, error) {
			switch arg {
			case "test-source/fake":
				return report.FromStatus("cluster/fake", nil), true, nil
			case "test-source/broken":
				return nil, true, errors.New("no such evaluation")
			}
			return nil, false, nil
		}}, saved...)
	out, _, err := reportCLI(t, "report", "test-source/fake", "-o", "-")
	if err != nil || !strings.Contains(out, "Evaluation report: cluster/fake") {
		t.Fatalf("resolver not used: %v", err)
	}
	if _, _, err := reportCLI(t, "report", "test-source/broken", "-o", "-"); err == nil || err.Error() != "test-source/broken: no such evaluation" {
		t.Errorf("resolver error %v", err)
	}
	if _, _, err := reportCLI(t, "report", "test-source/none", "-o", "-"); err == nil || !os.IsNotExist(errors.Unwrap(err)) && !strings.Contains(err.Error(), "no such file") {
		t.Errorf("an unresolved argument should be read as a file: %v", err)
	}
}

// TestReportBadUsage refuses a source with manifests and a trace level without series.
func TestReportBadUsage(t *testing.T) {
	if _, _, err := reportCLI(t, "report", filepath.Join(readFixtureDir, "status.json"), "-f", "x.yaml"); err == nil ||
		!strings.Contains(err.Error(), "--filename runs an evaluation from manifests") {
		t.Errorf("source with -f: %v", err)
	}
	if _, _, err := reportCLI(t, "report", "--trace-level", "none", "-o", filepath.Join(t.TempDir(), "r.html")); err == nil ||
		!strings.Contains(err.Error(), "records no time series") {
		t.Errorf("--trace-level none: %v", err)
	}
	if _, _, err := reportCLI(t, "report", "a", "b"); err == nil {
		t.Error("two sources accepted")
	}
}
