package evaluation

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/metrics"
	"github.com/inference-sim/blis-operator/internal/engine/sim"
	"github.com/inference-sim/blis-operator/internal/report"
)

var updateReportGolden = flag.Bool("update-report", false, "rewrite testdata/quickstart-report.json")

// quickstart resolves the embedded quick-start with one seed and the given trace level, and
// runs it.
func quickstart(t *testing.T, level string, opts Options) *Result {
	t.Helper()
	m := &Manifests{}
	if err := m.Add(DefaultManifestName, DefaultManifests()); err != nil {
		t.Fatal(err)
	}
	ev, err := m.Select("", false)
	if err != nil {
		t.Fatal(err)
	}
	ev.Spec.Seeds = []int64{1}
	ev.Spec.Trace.Level = blisv1alpha1.TraceLevel(level)
	in, err := m.Inputs(ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunWithOptions(context.Background(), r, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// point returns a distribution's value at probability p.
func point(t *testing.T, d *report.Distribution, p float64) float64 {
	t.Helper()
	for _, q := range d.Points {
		if q.P == p {
			return q.Ms
		}
	}
	t.Fatalf("%s/%q has no point at %v", d.Metric, d.Class, p)
	return 0
}

func TestReportDataQuickstart(t *testing.T) {
	var reports int
	var last sim.Progress
	res := quickstart(t, "decisions", Options{Progress: func(seed int64, p sim.Progress) {
		if seed != 1 {
			t.Errorf("progress of seed %d", seed)
		}
		reports++
		last = p
	}})
	d := res.ReportData("default/quickstart")
	if d.Version != report.DataVersion || d.Name != "default/quickstart" || d.Seed != 1 {
		t.Fatalf("header %q %q seed %d", d.Version, d.Name, d.Seed)
	}
	if reports == 0 || last.Finished != last.Generated || last.Generated != 3000 {
		t.Fatalf("%d progress reports, last %+v", reports, last)
	}
	const desc = "meta-llama/llama-3.1-8b-instruct on 4 × H100 (TP 1); workload: 2 clients at 60 req/s, 3000 requests; " +
		"policies: admission always-admit, priority slo-based, routing weighted (prefix-cache-scorer 3, queue-scorer 2, kv-cache-utilization-scorer 2), scheduler priority-fcfs"
	if d.Description != desc {
		t.Errorf("description\n%s\nwant\n%s", d.Description, desc)
	}
	if st := res.Status(); !reflect.DeepEqual(d.Status, st) {
		t.Fatal("the report's status differs from the result's status")
	}
	if len(d.Missing) != 0 {
		t.Fatalf("missing: %q", d.Missing)
	}

	// All requests first (ttft, itl, e2e), then every class in the status order.
	m := d.Status.Metrics
	var order []string
	for i := range d.Distributions {
		x := &d.Distributions[i]
		order = append(order, x.Metric+"/"+x.Class)
		if len(x.Points) != len(metrics.QuantileGrid()) || x.Points[0].P != 0 || x.Points[len(x.Points)-1].P != 1 {
			t.Fatalf("%s/%q: %d points", x.Metric, x.Class, len(x.Points))
		}
		var want *float64
		switch {
		case x.Class == "" && x.Metric == report.MetricTTFT:
			want = &m.TtftP99Ms
		case x.Class == "" && x.Metric == report.MetricITL:
			want = &m.ItlP99Ms
		case x.Class == "" && x.Metric == report.MetricE2E:
			want = &m.E2eP99Ms
		default:
			for j := range m.PerClass {
				if c := &m.PerClass[j]; c.Name == x.Class {
					want = map[string]*float64{report.MetricTTFT: &c.TtftP99Ms, report.MetricITL: &c.ItlP99Ms, report.MetricE2E: &c.E2eP99Ms}[x.Metric]
				}
			}
			if want == nil {
				t.Fatalf("class %q is not in the status", x.Class)
			}
		}
		if want != nil && blisv1alpha1.RoundMetric(point(t, x, 0.99)) != *want {
			t.Errorf("%s/%q p99 %v, status %v", x.Metric, x.Class, point(t, x, 0.99), *want)
		}
	}
	wantOrder := []string{"ttft/", "itl/", "e2e/", "ttft/batch", "itl/batch", "e2e/batch", "ttft/critical", "itl/critical", "e2e/critical"}
	if !reflect.DeepEqual(order, wantOrder) {
		t.Fatalf("distributions %v, want %v", order, wantOrder)
	}

	s := d.Series
	if s == nil || len(s.Instances) != 4 || s.Instances[3].Name != "instance_3" {
		t.Fatalf("series %+v", s)
	}
	n := len(s.Cluster.ArrivalsPerSec)
	var arrivals float64
	for k := range n {
		dur := float64(min(s.BucketUs, s.EndUs-int64(k)*s.BucketUs)) / 1e6
		arrivals += s.Cluster.ArrivalsPerSec[k] * dur
		if s.Cluster.ReadyInstances[k] != 4 && k < n-1 {
			t.Errorf("bucket %d: %v ready instances", k, s.Cluster.ReadyInstances[k])
		}
	}
	if arrivals < 2999.999 || arrivals > 3000.001 {
		t.Fatalf("arrival rates integrate to %v requests, want 3000", arrivals)
	}

	golden := filepath.Join("testdata", "quickstart-report.json")
	got, err := json.MarshalIndent(d, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if *updateReportGolden {
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(got, '\n'), want) {
		t.Fatalf("report data differs from %s (rerun with -update-report after checking the change)", golden)
	}
}

// At trace level none the report has everything but the series, and says why.
func TestReportDataWithoutSeries(t *testing.T) {
	with := quickstart(t, "decisions", Options{})
	without := quickstart(t, "none", Options{})
	d := without.ReportData("quickstart")
	if d.Series != nil || !reflect.DeepEqual(d.Missing, []string{MissingSeries}) {
		t.Fatalf("series %v, missing %q", d.Series != nil, d.Missing)
	}
	if !reflect.DeepEqual(d.Distributions, with.ReportData("quickstart").Distributions) {
		t.Fatal("the distributions depend on the trace level")
	}
	// Recording series changes no status number (the trace summary depends on the level).
	a, b := with.Status(), without.Status()
	if !reflect.DeepEqual(a.Metrics, b.Metrics) || !reflect.DeepEqual(a.Fitness, b.Fitness) {
		t.Fatal("the trace level changed the metrics")
	}
}
