package main

import (
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inference-sim/blis-operator/internal/engine/export"
	"github.com/inference-sim/blis-operator/internal/promote"
)

// TestExportFromCluster: evaluation/NAME and bundle/NAME --cluster NAME read from the cluster
// write the same files as the manifest mode reading the same objects from a file.
func TestExportFromCluster(t *testing.T) {
	quickstart := filepath.Join("..", "..", "config", "samples", "quickstart.yaml")
	sc, pb, ws, ev := quickstartObjects(t, "default")
	fakeCluster(t, sc, pb, ws, ev)
	dir := t.TempDir()
	out := func(name string) string { return filepath.Join(dir, name) }

	for _, args := range [][]string{
		{"export", "-f", quickstart, "-o", out("manifests")},
		{"export", "evaluation/quickstart", "-o", out("cluster")},
		{"export", "-f", quickstart, "--bundle-name", "quickstart-llm-d-default", "--cluster-name", "quickstart-llama8b-h100",
			"--workload-name", "quickstart-two-tenants", "-o", out("bundle-manifests")},
		{"export", "pb/quickstart-llm-d-default", "--cluster", "quickstart-llama8b-h100",
			"--workload-name", "quickstart-two-tenants", "-o", out("bundle-cluster")},
	} {
		if stderr, err := blisCLI(t, args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr)
		}
	}
	sameExport(t, "evaluation", out("manifests"), out("cluster"))
	sameExport(t, "bundle", out("bundle-manifests"), out("bundle-cluster"))
	if files := readDir(t, out("cluster")); files[export.FileEPPConfig] == "" {
		t.Fatalf("no %s in %v", export.FileEPPConfig, keys(files))
	}
}

func TestExportFromClusterRefusals(t *testing.T) {
	sc, pb, ws, ev := quickstartObjects(t, "default")
	ev.Status.InputHash = strings.Repeat("0", 64)
	annotated := pb.DeepCopy()
	annotated.Name = "annotated"
	annotated.Annotations = map[string]string{promote.AnnotationCluster: sc.Name}
	fakeCluster(t, []client.Object{sc, pb, ws, ev, annotated}...)
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"evaluation/quickstart"}, "changed after it resolved them"},
		{[]string{"pb/quickstart-llm-d-default"}, "give --cluster NAME"},
		{[]string{"pb/quickstart-llm-d-default", "--cluster", "nope"}, `SimulatedCluster "nope" does not exist in namespace default`},
		{[]string{"ev/quickstart", "--cluster-name", "x"}, "are for a bundle"},
		{[]string{"ev/quickstart", "--model", "x"}, "--model describes a cluster of the file mode"},
		{[]string{"ev/quickstart", "-f", "x.yaml"}, "-f, --evaluation, --bundle-name and --bundle choose objects of files"},
		{[]string{"sc/quickstart-llama8b-h100"}, "is not evaluation/NAME or bundle/NAME"},
		{[]string{"ev/missing"}, `"missing" not found`},
		{[]string{"ev/quickstart", "-n", "elsewhere"}, `"quickstart" not found`},
	} {
		args := append(append([]string{"export"}, tc.args...), "-o", dir)
		if _, err := blisCLI(t, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
	// The annotation names the cluster, as for the operator's promotion; -n names the
	// generated objects' namespace too.
	if stderr, err := blisCLI(t, "export", "pb/annotated", "-n", "default", "-o", dir); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if files := readDir(t, dir); !strings.Contains(files[export.FileObjectives], "namespace: default") {
		t.Errorf("objectives without the namespace:\n%s", files[export.FileObjectives])
	}
}
