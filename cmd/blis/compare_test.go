package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// candidateBundle is a second bundle for the cache-aware sample: least-loaded routing.
const candidateBundle = `apiVersion: blis.inference-sim.io/v1alpha1
kind: PolicyBundle
metadata:
  name: least-loaded
spec:
  routing:
    policy: least-loaded
`

// TestCompareBundles evaluates two bundles on the sample cluster and workload: the table and
// the page name each evaluation after its bundle and overlay one line per bundle.
func TestCompareBundles(t *testing.T) {
	dir := t.TempDir()
	cand := filepath.Join(dir, "candidate.yaml")
	if err := os.WriteFile(cand, []byte(candidateBundle), 0o644); err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(dir, "c.html")
	out, errOut, err := reportCLI(t, "compare", "--bundle", "../../config/samples/blis_v1alpha1_policybundle.yaml", "--bundle", cand,
		"-f", "../../config/samples/blis_v1alpha1_simulatedcluster.yaml", "-f", "../../config/samples/blis_v1alpha1_workloadspec.yaml",
		"--num-requests", "60", "-o", html, "--png-dir", filepath.Join(dir, "png"))
	if err != nil {
		t.Fatal(err)
	}
	header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
	if strings.Join(header, " ") != "metric unit cache-aware (baseline) least-loaded delta beyond CI" {
		t.Errorf("header %q", header)
	}
	if !strings.Contains(out, "n/a (single seed)") {
		t.Error("single-seed evaluations should say the CI test does not apply")
	}
	if !strings.Contains(errOut, "wrote "+html) || !strings.Contains(errOut, filepath.Join(dir, "png", "ttft-cdf.png")) {
		t.Errorf("stderr %q", errOut)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), `data-series="cache-aware|least-loaded"`); n < 8 {
		t.Errorf("%d overlaid charts, want at least 8", n)
	}
}

// TestCompareManifestsAndFiles compares every Evaluation of the policy-comparison sample with
// seeds (so the CI test applies), then two saved results.
func TestCompareManifestsAndFiles(t *testing.T) {
	dir := t.TempDir()
	out, _, err := reportCLI(t, "compare", "-f", "../../config/samples/policy-comparison.yaml",
		"-f", "../../config/samples/blis_v1alpha1_simulatedcluster.yaml", "-f", "../../config/samples/blis_v1alpha1_workloadspec.yaml",
		"--num-requests", "60", "--seeds", "1,2", "-o", filepath.Join(dir, "m.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "compare-baseline-run (baseline)") || !strings.Contains(out, "compare-candidate-run") {
		t.Fatalf("table:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "TTFT p99 ") {
			f := strings.Fields(l)
			if last := f[len(f)-1]; last != "yes" && last != "no" {
				t.Errorf("TTFT p99 has replicate statistics on both sides, yet: %q", l)
			}
			break
		}
	}
	out, _, err = reportCLI(t, "compare", filepath.Join(readFixtureDir, "status.json"), filepath.Join(readFixtureDir, "data.json"),
		"-o", filepath.Join(dir, "f.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "metric") || !strings.Contains(out, "status (baseline)") {
		t.Errorf("table:\n%s", out)
	}
	// The same inputs on both sides: every delta is 0 and no difference exceeds the intervals.
	if strings.Contains(out, " yes") || strings.Contains(out, "better") || strings.Contains(out, "worse") {
		t.Errorf("equal results differ:\n%s", out)
	}
}

// TestCompareBadUsage needs two evaluations, and bundles that hold one bundle.
func TestCompareBadUsage(t *testing.T) {
	if _, _, err := reportCLI(t, "compare", filepath.Join(readFixtureDir, "status.json")); err == nil ||
		!strings.Contains(err.Error(), "at least two evaluations, got 1") {
		t.Errorf("one source: %v", err)
	}
	if _, _, err := reportCLI(t, "compare", "--bundle", "../../config/samples/policy-comparison.yaml", "--bundle", "../../config/samples/blis_v1alpha1_policybundle.yaml",
		"-f", "../../config/samples/blis_v1alpha1_simulatedcluster.yaml"); err == nil || !strings.Contains(err.Error(), "must hold exactly one PolicyBundle") {
		t.Errorf("a bundle file with several objects: %v", err)
	}
	if _, _, err := reportCLI(t, "compare", "a.json", "b.json", "--seeds", "1,2"); err == nil || !strings.Contains(err.Error(), "--seeds adjusts evaluations run from manifests") {
		t.Errorf("--seeds without manifests: %v", err)
	}
	if _, _, err := reportCLI(t, "compare", filepath.Join(readFixtureDir, "status.json"), "../../internal/report/testdata/study_policystudy.yaml"); err == nil ||
		!strings.Contains(err.Error(), "is a study, not an evaluation") {
		t.Errorf("a study source: %v", err)
	}
}
