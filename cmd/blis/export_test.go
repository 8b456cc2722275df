package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/export"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

// blisCLI executes `blis args...` and returns standard error and the error.
func blisCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	return errOut.String(), err
}

func TestExportImportCommands(t *testing.T) {
	dir := t.TempDir()
	bundle := filepath.Join(dir, "bundle.yaml")
	if err := os.WriteFile(bundle, []byte("routing: {policy: round-robin}\npriority: {policy: slo-based}\nadmission: {policy: gaie-legacy}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	stderr, err := blisCLI(t, "export", "--bundle", bundle, "--model", testModel, "--num-instances", "3",
		"--block-size", "32", "--slo-classes", "critical,batch", "--inference-pool", "-o", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "warning: routing (approximation): round-robin") {
		t.Fatalf("warning not printed: %q", stderr)
	}
	for _, f := range []string{export.FileEPPConfig, export.FileObjectives, export.FilePool, export.FileModelServers, export.FileWarnings} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Fatalf("%s not written: %v", f, err)
		}
	}
	servers, _ := os.ReadFile(filepath.Join(out, export.FileModelServers))
	if !strings.Contains(string(servers), "--block-size=32") || !strings.Contains(string(servers), "replicas: 3") {
		t.Fatalf("engine flags not applied:\n%s", servers)
	}

	imported := filepath.Join(dir, "imported.yaml")
	clusterOut := filepath.Join(dir, "cluster.yaml")
	if _, err := blisCLI(t, "import", "--epp", filepath.Join(out, export.FileEPPConfig), "--objectives", filepath.Join(out, export.FileObjectives),
		"-o", imported, "--cluster-out", clusterOut); err != nil {
		t.Fatal(err)
	}
	b, err := policy.Load(imported)
	if err != nil {
		t.Fatal(err)
	}
	if b.Admission.Policy != "gaie-legacy" || b.Admission.SLOPriorities["batch"] != -1 || b.Routing.Params["picker"] != "random" {
		t.Fatalf("imported bundle: %+v", b)
	}
	c, err := export.LoadCluster(clusterOut)
	if err != nil || strings.Join(c.SLOClasses, ",") != "batch,critical" {
		t.Fatalf("cluster: %+v %v", c, err)
	}

	// A second export without objectives removes the stale file.
	if _, err := blisCLI(t, "export", "--bundle", imported, "--cluster", clusterOut, "-o", out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, export.FilePool)); !os.IsNotExist(err) {
		t.Fatalf("stale %s kept: %v", export.FilePool, err)
	}

	if _, err := blisCLI(t, "export", "--target", "llm-d-v0.5", "-o", out); err == nil || !strings.Contains(err.Error(), "llm-d-v0.10") {
		t.Fatalf("unsupported target: %v", err)
	}
	if _, err := blisCLI(t, "export", "--bundle", bundle, "--strict", "-o", out); err == nil || !strings.Contains(err.Error(), "strict") {
		t.Fatalf("strict: %v", err)
	}
}
