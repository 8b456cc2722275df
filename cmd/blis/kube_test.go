package main

import (
	"bytes"
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation"
)

// fakeCluster makes the cluster commands talk to a fake API server holding objs, with
// "default" as the kubeconfig's namespace, for the rest of the test.
func fakeCluster(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	scheme, err := kubeScheme()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&blisv1alpha1.Evaluation{}, &blisv1alpha1.PolicyStudy{}).Build()
	saved := connectKube
	connectKube = func(*kubeOptions) (*kubeConn, error) { return &kubeConn{client: c, namespace: "default"}, nil }
	t.Cleanup(func() { connectKube = saved })
	return c
}

// quickstartObjects are the embedded quick-start manifests as cluster objects in namespace ns:
// the SimulatedCluster, PolicyBundle, WorkloadSpec and Evaluation "quickstart".
func quickstartObjects(t *testing.T, ns string) (*blisv1alpha1.SimulatedCluster, *blisv1alpha1.PolicyBundle, *blisv1alpha1.WorkloadSpec, *blisv1alpha1.Evaluation) {
	t.Helper()
	var m evaluation.Manifests
	if err := m.Add(evaluation.DefaultManifestName, evaluation.DefaultManifests()); err != nil {
		t.Fatal(err)
	}
	if len(m.Clusters) != 1 || len(m.Policies) != 1 || len(m.Workloads) != 1 || len(m.Evaluations) != 1 {
		t.Fatalf("the quick start has %d clusters, %d bundles, %d workloads, %d evaluations; want one each",
			len(m.Clusters), len(m.Policies), len(m.Workloads), len(m.Evaluations))
	}
	sc, pb, ws, ev := &m.Clusters[0], &m.Policies[0], &m.Workloads[0], &m.Evaluations[0]
	for _, o := range []client.Object{sc, pb, ws, ev} {
		o.SetNamespace(ns)
	}
	return sc, pb, ws, ev
}

// TestFetchInputsMatchesManifests: inputs read from a cluster resolve to the same document
// (and hash) as the same objects read from manifests, ConfigMaps included.
func TestFetchInputsMatchesManifests(t *testing.T) {
	sc, pb, ws, ev := quickstartObjects(t, "team-a")
	pb.Spec = blisv1alpha1.PolicyBundleSpec{BlisConfigMapRef: &blisv1alpha1.ConfigMapKeyReference{Name: "blis-policy", Key: "policy.yaml"}}
	cm := &corev1.ConfigMap{}
	cm.Name, cm.Namespace = "blis-policy", "team-a"
	cm.Data = map[string]string{"policy.yaml": "admission:\n  policy: always-admit\nrouting:\n  policy: least-loaded\n"}
	c := fakeCluster(t, sc, pb, ws, ev, cm)

	in, err := fetchInputs(context.Background(), c, ev)
	if err != nil {
		t.Fatal(err)
	}
	if in.Cluster == nil || in.Policy == nil || in.Workload == nil || in.ConfigMaps["blis-policy"]["policy.yaml"] == "" {
		t.Fatalf("incomplete inputs: %+v", in)
	}
	got, err := evaluation.Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	var m evaluation.Manifests
	m.Clusters = append(m.Clusters, *sc)
	m.Policies = append(m.Policies, *pb)
	m.Workloads = append(m.Workloads, *ws)
	m.ConfigMaps = append(m.ConfigMaps, *cm)
	want, err := m.Inputs(*ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantRes, err := evaluation.Resolve(want)
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash != wantRes.Hash || !bytes.Equal(got.Canonical, wantRes.Canonical) {
		t.Fatalf("cluster inputs resolve to %s, manifests to %s", got.Hash, wantRes.Hash)
	}
}

// TestFetchInputsMissingReference names the missing object and its namespace.
func TestFetchInputsMissingReference(t *testing.T) {
	sc, _, ws, ev := quickstartObjects(t, "default")
	c := fakeCluster(t, sc, ws, ev)
	_, err := fetchInputs(context.Background(), c, ev)
	if err == nil || err.Error() != `PolicyBundle "quickstart-llm-d-default", which Evaluation quickstart references, does not exist in namespace default` {
		t.Fatalf("error %v", err)
	}
}

// TestCommandName: the plugin binary name reads as kubectl's subcommand.
func TestCommandName(t *testing.T) {
	for arg0, want := range map[string]string{
		"blis": "blis", "/usr/local/bin/blis": "blis", "kubectl-blis": "kubectl blis",
		"/home/u/.krew/bin/kubectl-blis": "kubectl blis", "kubectl-blis.exe": "kubectl blis", "kubectl": "blis",
	} {
		if got := commandName(arg0); got != want {
			t.Errorf("commandName(%q) = %q, want %q", arg0, got, want)
		}
	}
}

// TestPluginHelp: under the plugin name, help and usage read "kubectl blis".
func TestPluginHelp(t *testing.T) {
	root := newRootCommand()
	setDisplayName(root, commandName("/usr/local/bin/kubectl-blis"))
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"get", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out.Bytes(), []byte("kubectl blis get TYPE [NAME...] [flags]")) {
		t.Fatalf("help:\n%s", out.String())
	}
}
