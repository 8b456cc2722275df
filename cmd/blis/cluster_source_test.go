package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation"
	"github.com/inference-sim/blis-operator/internal/report"
)

// ranQuickstart is the quick-start Evaluation (one seed, 80 requests, trace level lvl) in
// namespace default as the operator leaves it after running it: Succeeded, with the status of
// a run of its inputs. It returns the objects to put in the fake cluster.
func ranQuickstart(t *testing.T, lvl blisv1alpha1.TraceLevel) (*blisv1alpha1.Evaluation, []client.Object) {
	t.Helper()
	sc, pb, ws, ev := quickstartObjects(t, "default")
	ev.Spec.Seeds = []int64{3}
	ev.Spec.NumRequests = ptr.To[int64](80)
	ev.Spec.Trace.Level = lvl
	in, err := fetchInputs(context.Background(), fakeCluster(t, sc, pb, ws), ev)
	if err != nil {
		t.Fatal(err)
	}
	r, err := evaluation.Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	res, err := evaluation.Run(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	ev.Status = res.Status()
	ev.Status.Phase = blisv1alpha1.PhaseSucceeded
	ev.Status.Attempts = 1
	return ev, []client.Object{sc, pb, ws, ev}
}

func TestEvaluationReportReRunsWhenInputsMatch(t *testing.T) {
	for _, lvl := range []blisv1alpha1.TraceLevel{blisv1alpha1.TraceDecisions, blisv1alpha1.TraceNone} {
		t.Run(string(lvl), func(t *testing.T) {
			ev, objs := ranQuickstart(t, lvl)
			c := fakeCluster(t, objs...)
			d, err := evaluationReport(context.Background(), c, ev, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Validate(); err != nil {
				t.Fatal(err)
			}
			if d.Name != "default/quickstart" || d.Seed != 3 || d.Series == nil || len(d.Distributions) == 0 {
				t.Fatalf("report data: name %q seed %d series %v distributions %d missing %q", d.Name, d.Seed, d.Series != nil, len(d.Distributions), d.Missing)
			}
			if d.Status.Metrics.CompletedRequests != ev.Status.Metrics.CompletedRequests || d.Status.Metrics.TtftP99Ms != ev.Status.Metrics.TtftP99Ms {
				t.Errorf("re-run metrics %+v, stored %+v", d.Status.Metrics, ev.Status.Metrics)
			}
			raised := strings.Contains(d.Description, "re-run at trace level decisions")
			if raised != (lvl == blisv1alpha1.TraceNone) {
				t.Errorf("level %s: description %q", lvl, d.Description)
			}
			if lvl == blisv1alpha1.TraceDecisions && d.Status.InputHash != ev.Status.InputHash {
				t.Errorf("same document, hash %s vs %s", d.Status.InputHash, ev.Status.InputHash)
			}
		})
	}
}

func TestEvaluationReportRefusesChangedInputs(t *testing.T) {
	ev, objs := ranQuickstart(t, blisv1alpha1.TraceDecisions)
	ws := objs[2].(*blisv1alpha1.WorkloadSpec)
	ws.Spec.AggregateRate = ptr.To(75.0)
	c := fakeCluster(t, objs...)
	_, err := evaluationReport(context.Background(), c, ev, false, nil)
	if err == nil || !strings.Contains(err.Error(), "the inputs of Evaluation default/quickstart changed since it ran") ||
		!strings.Contains(err.Error(), "--status-only") {
		t.Fatalf("error %v", err)
	}
	// --status-only reports the stored status whatever the inputs became.
	d, err := evaluationReport(context.Background(), c, ev, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Series != nil || len(d.Distributions) != 0 || d.Status.InputHash != ev.Status.InputHash || len(d.Missing) == 0 ||
		d.Description != "cluster quickstart-llama8b-h100, workload quickstart-two-tenants, policy bundle quickstart-llm-d-default" {
		t.Fatalf("status-only data: %+v", d)
	}
}

func TestEvaluationReportRefusesOtherEngineAndOtherMetrics(t *testing.T) {
	ev, objs := ranQuickstart(t, blisv1alpha1.TraceDecisions)
	c := fakeCluster(t, objs...)
	in, err := fetchInputs(context.Background(), c, ev)
	if err != nil {
		t.Fatal(err)
	}
	r, err := evaluation.Resolve(in)
	if err != nil {
		t.Fatal(err)
	}

	// Same inputs, another engine build: the inputs check passes, the re-run is refused.
	other := ev.DeepCopy()
	other.Status.EngineVersion = "v0.0.1"
	if other.Status.InputHash, err = evaluation.HashAs(r, "v0.0.1"); err != nil {
		t.Fatal(err)
	}
	_, err = evaluationReport(context.Background(), c, other, false, nil)
	if err == nil || !strings.Contains(err.Error(), "default/quickstart ran on engine v0.0.1 and this blis is engine "+evaluation.EngineVersion()) {
		t.Fatalf("other engine: %v", err)
	}

	// A status the inputs do not reproduce is not reported as their run.
	tampered := ev.DeepCopy()
	tampered.Status.Metrics.TtftP99Ms++
	_, err = evaluationReport(context.Background(), c, tampered, false, nil)
	if err == nil || !strings.Contains(err.Error(), "its metrics differ from the Evaluation's status") {
		t.Fatalf("tampered metrics: %v", err)
	}
}

func TestEvaluationReportNotSucceeded(t *testing.T) {
	_, _, _, ev := quickstartObjects(t, "default")
	ev.Status.Phase = blisv1alpha1.PhaseRunning
	c := fakeCluster(t, ev)
	d, err := evaluationReport(context.Background(), c, ev, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.Metrics != nil || !strings.Contains(strings.Join(d.Missing, " "), "phase Running") {
		t.Fatalf("running evaluation: %+v", d)
	}
}

// TestReportCommandClusterSources runs `blis report evaluation/NAME` and `blis report
// study/NAME` against the fake cluster.
func TestReportCommandClusterSources(t *testing.T) {
	_, objs := ranQuickstart(t, blisv1alpha1.TraceDecisions)
	ps := &blisv1alpha1.PolicyStudy{
		ObjectMeta: metav1.ObjectMeta{Name: "sweep", Namespace: "default"},
		Spec: blisv1alpha1.PolicyStudySpec{
			Algorithm:  blisv1alpha1.StudyAlgorithm{Name: "grid"},
			Objectives: []blisv1alpha1.Objective{{Name: "ttftP99Ms", Direction: "minimize", Weight: 1}},
		},
	}
	var children []client.Object
	for i, ttft := range []float64{120, 90} {
		children = append(children, &blisv1alpha1.Evaluation{
			ObjectMeta: metav1.ObjectMeta{Name: "sweep-c" + string(rune('0'+i)), Namespace: "default",
				Labels: map[string]string{blisv1alpha1.LabelStudy: "sweep"}},
			Status: blisv1alpha1.EvaluationStatus{Phase: blisv1alpha1.PhaseSucceeded, FitnessScore: ptr.To(1 / ttft),
				Metrics: &blisv1alpha1.EvaluationMetrics{TtftP99Ms: ttft, CompletedRequests: 10}},
		})
	}
	stranger := &blisv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: "default"},
		Status: blisv1alpha1.EvaluationStatus{Phase: blisv1alpha1.PhaseSucceeded}}
	fakeCluster(t, append(append(objs, ps, stranger), children...)...)

	dir := t.TempDir()
	for _, arg := range []string{"evaluation/quickstart", "ev/quickstart"} {
		data := filepath.Join(dir, "data.json")
		root := newRootCommand()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs([]string{"report", arg, "-o", filepath.Join(dir, "report.html"), "--data-output", data})
		if err := root.Execute(); err != nil {
			t.Fatalf("%s: %v\n%s", arg, err, errOut.String())
		}
		f, err := os.Open(data)
		if err != nil {
			t.Fatal(err)
		}
		d, err := report.Read(f)
		_ = f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if d.Name != "default/quickstart" || d.Series == nil {
			t.Errorf("%s: data %q series %v", arg, d.Name, d.Series != nil)
		}
		html, err := os.ReadFile(filepath.Join(dir, "report.html"))
		if err != nil || !bytes.Contains(html, []byte("default/quickstart")) {
			t.Errorf("%s: report %d bytes, %v", arg, len(html), err)
		}
	}

	sd, err := studyReport(context.Background(), connectFake(t), "default", "sweep")
	if err != nil {
		t.Fatal(err)
	}
	if len(sd.Candidates) != 2 || sd.Best != "sweep-c1" {
		t.Fatalf("study data: %d candidates, best %q", len(sd.Candidates), sd.Best)
	}
	root := newRootCommand()
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	root.SetArgs([]string{"report", "study/sweep", "-o", filepath.Join(dir, "study.html")})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if html, err := os.ReadFile(filepath.Join(dir, "study.html")); err != nil || !bytes.Contains(html, []byte("sweep-c1")) {
		t.Errorf("study report: %d bytes, %v", len(html), err)
	}

	// A missing object is the API server's error; a file of the same path wins over the cluster.
	root = newRootCommand()
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	root.SetArgs([]string{"report", "ev/missing", "-o", filepath.Join(dir, "x.html")})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), `"missing" not found`) {
		t.Errorf("missing Evaluation: %v", err)
	}
	if _, _, ok := clusterRef("cluster_source_test.go"); ok {
		t.Error("a file name without a slash read as a reference")
	}
	if err := os.MkdirAll(filepath.Join(dir, "ev"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ev", "x.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if _, _, ok := clusterRef("ev/x.json"); ok {
		t.Error("an existing file read as a cluster reference")
	}
	if r, name, ok := clusterRef("ev/y"); !ok || r.plural != "evaluations" || name != "y" {
		t.Errorf("ev/y: %v %q %v", r, name, ok)
	}
}

// connectFake is the client fakeCluster installed.
func connectFake(t *testing.T) client.Client {
	t.Helper()
	k, err := connectKube(&kubeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return k.client
}

// TestCompareClusterSources: blis compare takes cluster references too, re-run or stored.
func TestCompareClusterSources(t *testing.T) {
	ev, objs := ranQuickstart(t, blisv1alpha1.TraceDecisions)
	twin := ev.DeepCopy()
	twin.Name = "quickstart-twin"
	twin.ResourceVersion = ""
	fakeCluster(t, append(objs, twin)...)
	dir := t.TempDir()
	for _, extra := range [][]string{nil, {"--status-only"}} {
		root := newRootCommand()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs(append([]string{"compare", "ev/quickstart", "evaluation/quickstart-twin", "-o", filepath.Join(dir, "c.html")}, extra...))
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v\n%s", extra, err, errOut.String())
		}
		if !strings.Contains(out.String(), "default/quickstart-twin") {
			t.Errorf("%v: the comparison does not name both:\n%s", extra, out.String())
		}
	}
}
