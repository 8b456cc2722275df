// Package examples holds the optimizer integrations (Python, standard library only) and this
// test, which runs each of them once against a freshly built blis CLI.
package examples

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildBlis builds the CLI into a temporary directory.
func buildBlis(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH")
	}
	bin := filepath.Join(t.TempDir(), "blis")
	cmd := exec.Command(goBin, "build", "-o", bin, "../cmd/blis")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building blis: %v\n%s", err, out)
	}
	return bin
}

// python runs a script with BLIS_BIN set and returns its standard output.
func python(t *testing.T, bin string, wantOK bool, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("python3", args...)
	cmd.Env = append(os.Environ(), "BLIS_BIN="+bin, "PYTHONDONTWRITEBYTECODE=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if (err == nil) != wantOK {
		t.Fatalf("python3 %v: %v\nstderr:\n%s\nstdout:\n%s", args, err, stderr.String(), out)
	}
	return out
}

func TestExamples(t *testing.T) {
	bin := buildBlis(t)

	t.Run("openevolve", func(t *testing.T) {
		var m map[string]float64
		if err := json.Unmarshal(python(t, bin, true, "openevolve/evaluator.py", "openevolve/initial_program.yaml"), &m); err != nil {
			t.Fatal(err)
		}
		if m["error"] != 0 || m["combined_score"] <= 0 || m["combined_score"] > 1 || m["completedRequests"] != 600 {
			t.Errorf("metrics %v", m)
		}
		if _, ok := m["anomalies/priorityInversions"]; !ok {
			t.Errorf("no anomaly counters in %v", m)
		}
		bad := filepath.Join(t.TempDir(), "bad.yaml")
		if err := os.WriteFile(bad, []byte("routing:\n  policy: teleport\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(python(t, bin, false, "openevolve/evaluator.py", bad), &m); err != nil {
			t.Fatal(err)
		}
		if m["error"] != 1 || m["combined_score"] != 0 {
			t.Errorf("invalid candidate: %v", m)
		}
	})

	t.Run("gepa", func(t *testing.T) {
		var out struct {
			Scores  []float64 `json:"scores"`
			Dataset map[string][]struct {
				Inputs   map[string]int `json:"Inputs"`
				Outputs  string         `json:"Generated Outputs"`
				Feedback string         `json:"Feedback"`
			} `json:"reflective_dataset"`
		}
		if err := json.Unmarshal(python(t, bin, true, "gepa/adapter.py"), &out); err != nil {
			t.Fatal(err)
		}
		recs := out.Dataset["policy_bundle"]
		if len(out.Scores) != 2 || out.Scores[0] <= 0 || len(recs) != 2 || recs[1].Inputs["seed"] != 2 {
			t.Fatalf("adapter output: %+v", out)
		}
		for _, r := range recs {
			for _, want := range []string{"Score ", "## Outcome", "## Key Issues", "## Suggested Focus"} {
				if !strings.Contains(r.Feedback, want) {
					t.Errorf("feedback lacks %q:\n%s", want, r.Feedback)
				}
			}
			if !strings.Contains(r.Outputs, "EVOLVE-BLOCK-START") {
				t.Errorf("generated outputs: %q", r.Outputs)
			}
		}
	})
}
