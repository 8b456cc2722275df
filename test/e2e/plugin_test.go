//go:build e2e

/*
Copyright 2026 The blis-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/report"
)

// TestKubectlPlugin installs blis as kubectl's plugin (the binary built as kubectl-blis on
// PATH), runs the quick-start Evaluation in the cluster and reads it back through `kubectl
// blis`: `get evaluations -o wide` shows it with its metrics and input hash, and `report
// evaluation/quickstart` re-runs it locally from the objects in the cluster (after checking
// the input hash) into an HTML report and report data whose numbers are the cluster's.
func TestKubectlPlugin(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	managerPod(ctx, t, c)
	ns := c.newNamespace(ctx, t, "blis-e2e-plugin")
	c.dumpOnFailure(t, ns, "app.kubernetes.io/managed-by=blis-operator")
	c.dumpManagerLogsOnFailure(t)

	// The plugin: the blis binary of this tree under kubectl's plugin name, alone on a PATH
	// entry of its own.
	binDir := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(binDir, "kubectl-blis"), "./cmd/blis")
	build.Dir = c.repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kubectl-blis: %v\n%s", err, out)
	}
	plugin := func(args ...string) (string, string, error) {
		cmd := exec.CommandContext(ctx, c.kubectl, append([]string{"blis"}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		if err != nil {
			err = fmt.Errorf("kubectl blis %s: %w\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
		}
		return out.String(), errOut.String(), err
	}

	help, _, err := plugin("--help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(help, "kubectl blis [command]") {
		t.Errorf("the plugin's help does not read as kubectl blis:\n%s", help)
	}

	if _, err := c.runKubectl(ctx, "apply", "-n", ns, "-f", filepath.Join(c.repoRoot, "config", "samples", "quickstart.yaml")); err != nil {
		t.Fatal(err)
	}
	ev := waitEvaluation(ctx, t, c, ns, "quickstart", condSucceeded, evaluationTimeout)

	out, _, err := plugin("get", "evaluations", "-o", "wide", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl blis get evaluations -o wide:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want a header and one row, got %d lines", len(lines))
	}
	header, row := strings.Fields(lines[0]), strings.Fields(lines[1])
	wantHeader := []string{"NAME", "PHASE", "READY", "FITNESS", "TTFT-P99-MS", "E2E-P99-MS", "RPS", "SLO-ATTAINMENT",
		"CACHE-HIT-RATE", "SEEDS", "ATTEMPTS", "CACHED-FROM", "ENGINE", "INPUT-HASH", "AGE"}
	if strings.Join(header, " ") != strings.Join(wantHeader, " ") || len(row) != len(header) {
		t.Fatalf("columns %v, row %v; want %v", header, row, wantHeader)
	}
	col := func(name string) string {
		for i, h := range header {
			if h == name {
				return row[i]
			}
		}
		return ""
	}
	if col("NAME") != "quickstart" || col("PHASE") != "Succeeded" || col("READY") != "True" || col("SEEDS") != "3" ||
		col("ENGINE") != ev.Status.EngineVersion || col("INPUT-HASH") != ev.Status.InputHash[:12] ||
		col("TTFT-P99-MS") != strconv.FormatFloat(ev.Status.Metrics.TtftP99Ms, 'f', -1, 64) {
		t.Errorf("row %v does not show Evaluation %s (engine %s, hash %s, TTFT p99 %v)", row, ev.Name,
			ev.Status.EngineVersion, ev.Status.InputHash, ev.Status.Metrics.TtftP99Ms)
	}

	dir := t.TempDir()
	html, data := filepath.Join(dir, "quickstart.html"), filepath.Join(dir, "quickstart.json")
	if _, _, err := plugin("report", "evaluation/quickstart", "-n", ns, "-o", html, "--data-output", data); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte("<html")) || !bytes.Contains(page, []byte(ns+"/quickstart")) || !bytes.Contains(page, []byte("<svg")) {
		t.Errorf("the report (%d bytes) is not an HTML page with charts of %s/quickstart", len(page), ns)
	}
	f, err := os.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	d, err := report.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	m := d.Status.Metrics
	if d.Name != ns+"/quickstart" || d.Series == nil || len(d.Distributions) == 0 || m == nil ||
		m.CompletedRequests != ev.Status.Metrics.CompletedRequests || m.TtftP99Ms != ev.Status.Metrics.TtftP99Ms {
		t.Errorf("report data %q: series %v, %d distributions, metrics %+v; the cluster's metrics %+v",
			d.Name, d.Series != nil, len(d.Distributions), m, ev.Status.Metrics)
	}

	// --status-only reports the stored status without re-running it.
	if _, _, err := plugin("report", "ev/quickstart", "-n", ns, "--status-only", "-o", html, "--data-output", data); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	st, err := report.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if st.Status.InputHash != ev.Status.InputHash || st.Series != nil || st.Status.Phase != blisv1alpha1.PhaseSucceeded {
		t.Errorf("status-only data: hash %s series %v phase %s", st.Status.InputHash, st.Series != nil, st.Status.Phase)
	}
}
