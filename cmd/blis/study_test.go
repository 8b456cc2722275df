package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/export"
)

// studyCLI executes `blis study args...`.
func studyCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"study"}, args...))
	err := root.Execute()
	return out.String(), errOut.String(), err
}

const studySamples = "../../config/samples/studies/"

// TestStudySamples runs every study sample to its end, twice: the status is complete and
// identical between runs (apart from condition times).
func TestStudySamples(t *testing.T) {
	for _, name := range []string{"blis_v1alpha1_policystudy.yaml", "blis_v1alpha1_policystudy_grid.yaml", "blis_v1alpha1_policystudy_evolution.yaml"} {
		t.Run(name, func(t *testing.T) {
			args := []string{"-f", studySamples + "blis_v1alpha1_policystudy_inputs.yaml", "-f", studySamples + name, "-o", "json"}
			out, _, err := studyCLI(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			st := mustStudyStatus(t, out)
			if !meta(st, blisv1alpha1.StudyConditionCompleted) || st.Best == nil || st.Evaluations.Failed != 0 ||
				st.Evaluations.Succeeded != st.Evaluations.Created || st.Evaluations.Created == 0 {
				t.Fatalf("status %+v", st)
			}
			if len(st.ParetoFront) == 0 || len(st.ParetoFront) > blisv1alpha1.MaxStudyParetoFront || len(st.Convergence) > blisv1alpha1.MaxStudyConvergence {
				t.Errorf("front %d, convergence %d", len(st.ParetoFront), len(st.Convergence))
			}
			again, _, err := studyCLI(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			st2 := mustStudyStatus(t, again)
			st.Conditions, st2.Conditions = nil, nil
			a, _ := yaml.Marshal(st)
			b, _ := yaml.Marshal(st2)
			if !bytes.Equal(a, b) {
				t.Errorf("two runs differ:\n%s\n---\n%s", a, b)
			}
		})
	}
}

func meta(st blisv1alpha1.PolicyStudyStatus, typ string) bool {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c.Status == "True"
		}
	}
	return false
}

func mustStudyStatus(t *testing.T, out string) blisv1alpha1.PolicyStudyStatus {
	t.Helper()
	var st blisv1alpha1.PolicyStudyStatus
	if err := yaml.UnmarshalStrict([]byte(out), &st); err != nil {
		t.Fatalf("output is not a PolicyStudyStatus: %v\n%s", err, out)
	}
	return st
}

// TestStudyWinnerAndExport writes the best candidate as a PolicyBundle and as llm-d files.
func TestStudyWinnerAndExport(t *testing.T) {
	dir := t.TempDir()
	winner := filepath.Join(dir, "winner.yaml")
	exportDir := filepath.Join(dir, "llm-d")
	out, _, err := studyCLI(t, "-f", studySamples+"blis_v1alpha1_policystudy_inputs.yaml", "-f", studySamples+"blis_v1alpha1_policystudy_grid.yaml",
		"--winner", winner, "--export", exportDir)
	if err != nil {
		t.Fatal(err)
	}
	st := mustStudyStatus(t, out)
	data, err := os.ReadFile(winner)
	if err != nil {
		t.Fatal(err)
	}
	var pb blisv1alpha1.PolicyBundle
	if err := yaml.UnmarshalStrict(data, &pb); err != nil {
		t.Fatal(err)
	}
	if pb.Name != "admission-sweep-winner" || pb.Labels[blisv1alpha1.LabelStudy] != "admission-sweep" || pb.Spec.Lineage == nil {
		t.Errorf("winner bundle %+v", pb.ObjectMeta)
	}
	for _, p := range st.Best.Parameters {
		if !strings.Contains(strings.Join(pb.Spec.Lineage.Mutations, "\n"), p.Path+"="+p.Value) {
			t.Errorf("lineage %v lacks %s=%s", pb.Spec.Lineage.Mutations, p.Path, p.Value)
		}
	}
	if pb.Spec.Scheduler != st.Best.Parameters[1].Value {
		t.Errorf("winner scheduler %q, best %v", pb.Spec.Scheduler, st.Best.Parameters)
	}
	epp, err := os.ReadFile(filepath.Join(exportDir, export.FileEPPConfig))
	if err != nil || !strings.Contains(string(epp), "EndpointPickerConfig") {
		t.Errorf("export: %v\n%s", err, epp)
	}
}

// TestStudyErrors: a study whose path does not fit the base bundle, and files without a study.
func TestStudyErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	doc := `apiVersion: blis.inference-sim.io/v1alpha1
kind: PolicyStudy
metadata: {name: bad}
spec:
  clusterRef: {name: study-small-cluster}
  workloadRef: {name: study-contention}
  basePolicyRef: {name: study-prefix-affinity}
  searchSpace:
  - {path: "routing.scorers[name=load-aware-scorer].weight", type: float, min: 0, max: 1}
  objectives: [{name: ttftP99Ms, direction: minimize}]
  budget: {maxEvaluations: 3}
`
	if err := os.WriteFile(bad, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := studyCLI(t, "-f", studySamples+"blis_v1alpha1_policystudy_inputs.yaml", "-f", bad)
	if err == nil || !strings.Contains(err.Error(), "no element of scorers has name=load-aware-scorer") {
		t.Errorf("bad path: %v", err)
	}
	_, _, err = studyCLI(t, "-f", studySamples+"blis_v1alpha1_policystudy_inputs.yaml")
	if err == nil || !strings.Contains(err.Error(), "no PolicyStudy") {
		t.Errorf("no study: %v", err)
	}
}

// TestStudyCMAESSample runs the CMA-ES sample: it completes, its generations have the default
// population of 4 + floor(3 ln 3) = 7, the best candidate beats generation 0's best, and a
// second run gives the same status.
func TestStudyCMAESSample(t *testing.T) {
	args := []string{"-f", studySamples + "blis_v1alpha1_policystudy_inputs.yaml", "-f", studySamples + "blis_v1alpha1_policystudy_cmaes.yaml", "-o", "json"}
	out, _, err := studyCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	st := mustStudyStatus(t, out)
	if !meta(st, blisv1alpha1.StudyConditionCompleted) || st.Best == nil || st.Best.FitnessScore == nil ||
		st.Evaluations.Created != 42 || st.Evaluations.Succeeded != 42 || st.Generation != 6 {
		t.Fatalf("status %+v", st)
	}
	for _, g := range st.Convergence {
		if g.Evaluated != 7 {
			t.Errorf("generation %d evaluated %d, want 7", g.Generation, g.Evaluated)
		}
	}
	first := st.Convergence[0]
	if first.Generation != 0 || first.BestScore == nil || !(*st.Best.FitnessScore > *first.BestScore) || *st.Best.Generation == 0 {
		t.Fatalf("best %v (generation %v) does not improve on generation 0's %v", *st.Best.FitnessScore, *st.Best.Generation, first.BestScore)
	}
	again, _, err := studyCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	st2 := mustStudyStatus(t, again)
	st.Conditions, st2.Conditions = nil, nil
	a, _ := yaml.Marshal(st)
	b, _ := yaml.Marshal(st2)
	if !bytes.Equal(a, b) {
		t.Errorf("two runs differ:\n%s\n---\n%s", a, b)
	}
}
