package report

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The fixtures in testdata/read were written by the CLI on the embedded quick-start with
// --num-requests 40 --seeds 1,2 --trace-level decisions: status.json and status.yaml by
// blis evaluate -o json|yaml, engine-result.json by blis engine on its --write-input, data.json
// by blis report --data-output; evaluation.yaml and evaluation-list.json wrap that status in the
// quick-start Evaluation as kubectl prints it, and result-configmap.yaml holds the engine
// result as the operator stores it.
const (
	fixtureHash      = "0774443e9a9d1dfe6fbe1ec0442cddabaea9454864e42c7de90bf89a4658782e"
	fixtureTTFTP99Ms = 44.367
)

func readFixture(t *testing.T, name string) (*Data, error) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "read", name))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	return Read(f)
}

// TestReadStatusForms reads every status-only form into the same headline numbers, with
// Missing naming the distributions and time series.
func TestReadStatusForms(t *testing.T) {
	for file, name := range map[string]string{
		"status.json": "", "status.yaml": "", "engine-result.json": "", "result-configmap.yaml": "",
		"evaluation.yaml": "team-a/quickstart", "evaluation-list.json": "team-a/quickstart",
	} {
		t.Run(file, func(t *testing.T) {
			d, err := readFixture(t, file)
			if err != nil {
				t.Fatal(err)
			}
			if d.Version != DataVersion || d.Name != name {
				t.Errorf("version %q name %q", d.Version, d.Name)
			}
			m := d.Status.Metrics
			if m == nil || m.CompletedRequests != 40 || m.TtftP99Ms != fixtureTTFTP99Ms || d.Status.InputHash != fixtureHash {
				t.Fatalf("status %+v", d.Status)
			}
			if d.Status.Replicates == nil || d.Status.Replicates.Count != 2 {
				t.Errorf("replicates %+v", d.Status.Replicates)
			}
			if len(d.Distributions) != 0 || d.Series != nil {
				t.Error("a status has no distributions or series")
			}
			joined := strings.Join(d.Missing, "\n")
			if !strings.Contains(joined, "Latency distributions") || !strings.Contains(joined, "Time series") {
				t.Errorf("missing %q", joined)
			}
			if strings.Contains(joined, "trace summary") {
				t.Errorf("the fixture has a trace summary, yet Missing says %q", joined)
			}
		})
	}
	d, err := readFixture(t, "evaluation.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if want := "cluster quickstart-llama8b-h100, workload quickstart-two-tenants, policy bundle quickstart-llm-d-default, 2 seeds"; d.Description != want {
		t.Errorf("description %q", d.Description)
	}
}

// TestReadData reads report data back as written, and its status equals blis evaluate's.
func TestReadData(t *testing.T) {
	d, err := readFixture(t, "data.json")
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "quickstart" || d.Seed != 1 || len(d.Distributions) != 9 || d.Series == nil ||
		len(d.Series.Instances) != 4 || len(d.Series.Cluster.ArrivalsPerSec) != 56 || len(d.Missing) != 0 {
		t.Fatalf("data: name %q seed %d, %d distributions, series %v, missing %v", d.Name, d.Seed, len(d.Distributions), d.Series != nil, d.Missing)
	}
	for _, dist := range d.Distributions {
		if len(dist.Points) != 103 || dist.Points[0].P != 0 || dist.Points[102].P != 1 {
			t.Errorf("%s/%s: %d points", dist.Metric, dist.Class, len(dist.Points))
		}
	}
	st, err := readFixture(t, "status.json")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.Status.Metrics, st.Status.Metrics) || !reflect.DeepEqual(d.Status.Replicates, st.Status.Replicates) {
		t.Error("blis report's status differs from blis evaluate's for the same inputs")
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, d); err != nil {
		t.Fatal(err)
	}
	back, err := Read(&b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, d) {
		t.Error("WriteJSON then Read changes the data")
	}
	page := renderHTML(t, d)
	figs := parsePage(t, page)
	want := "slo-attainment,ttft-cdf,itl-cdf,e2e-cdf,arrivals,queue-depth,batch-size,kv-utilization,cache-hit-rate,fitness"
	if got := figureIDs(figs); got != want {
		t.Errorf("figures %s, want %s", got, want)
	}
	if figs[1].series != "all|batch|critical" {
		t.Errorf("ttft-cdf series %q", figs[1].series)
	}
}

// TestReadRefuses refuses another data version, studies (with ErrPolicyStudy), failed engine
// results and unknown documents.
func TestReadRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		in    string
		want  string
		study bool
	}{
		"old version":   {`{"version": "report.blis.inference-sim.io/v0", "name": "x"}`, `report data version "report.blis.inference-sim.io/v0" is not supported`, false},
		"study data":    {`{"version": "` + StudyDataVersion + `", "name": "s"}`, "study report data", true},
		"study object":  {"apiVersion: blis.inference-sim.io/v1alpha1\nkind: PolicyStudy\nmetadata: {name: s}\n", "PolicyStudy", true},
		"study status":  {`{"searchHash": "abc", "generation": 3, "phase": "Running"}`, "PolicyStudy status", true},
		"failed engine": {`{"engineVersion": "devel", "reason": "RunFailed", "message": "boom"}`, "the engine run failed (RunFailed): boom", false},
		"other kind":    {"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n", "not a report input", false},
		"long list":     {`{"apiVersion": "v1", "kind": "List", "items": [{}, {}]}`, "the list holds 2 items", false},
		"no result key": {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n", "has no result.json key", false},
		"unknown":       {`{"hello": "world"}`, "not a report input", false},
		"scalar":        {`42`, "not a JSON or YAML object", false},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if errors.Is(err, ErrPolicyStudy) != tc.study {
				t.Errorf("errors.Is(ErrPolicyStudy) = %v", !tc.study)
			}
		})
	}
}

// TestFromStatusWithoutMetrics says an unfinished evaluation has nothing to chart.
func TestFromStatusWithoutMetrics(t *testing.T) {
	d := FromStatus("ns/e", nil)
	if len(d.Missing) != 3 || !strings.Contains(d.Missing[0], "no metrics (phase unknown)") {
		t.Fatalf("missing %q", d.Missing)
	}
	page := renderHTML(t, d)
	if figs := parsePage(t, page); len(figs) != 0 {
		t.Errorf("figures %s", figureIDs(figs))
	}
}
