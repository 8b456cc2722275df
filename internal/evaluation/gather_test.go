package evaluation

import (
	"reflect"
	"testing"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

func TestConfigMapNames(t *testing.T) {
	ref := func(name string) *blisv1alpha1.ConfigMapKeyReference {
		return &blisv1alpha1.ConfigMapKeyReference{Name: name, Key: "k"}
	}
	in := Inputs{
		Policy: &blisv1alpha1.PolicyBundle{Spec: blisv1alpha1.PolicyBundleSpec{BlisConfigMapRef: ref("policy")}},
		Workload: &blisv1alpha1.WorkloadSpec{Spec: blisv1alpha1.WorkloadSpecSpec{
			Trace: &blisv1alpha1.TraceSource{ConfigMapRef: ref("trace"), HeaderConfigMapRef: ref("header")}}},
	}
	if got, want := ConfigMapNames(&in), []string{"header", "policy", "trace"}; !reflect.DeepEqual(got, want) {
		t.Errorf("referenced objects: %v, want %v", got, want)
	}
	// Inline specs count when there is no referenced object; a referenced one replaces them.
	in = Inputs{Spec: blisv1alpha1.EvaluationSpec{
		Policy:   &blisv1alpha1.PolicyBundleSpec{BlisConfigMapRef: ref("inline-policy")},
		Workload: &blisv1alpha1.WorkloadSpecSpec{BlisConfigMapRef: ref("inline-workload")},
	}}
	if got, want := ConfigMapNames(&in), []string{"inline-policy", "inline-workload"}; !reflect.DeepEqual(got, want) {
		t.Errorf("inline specs: %v, want %v", got, want)
	}
	in.Policy = &blisv1alpha1.PolicyBundle{}
	if got, want := ConfigMapNames(&in), []string{"inline-workload"}; !reflect.DeepEqual(got, want) {
		t.Errorf("referenced bundle without a file: %v, want %v", got, want)
	}
	if got := ConfigMapNames(&Inputs{}); len(got) != 0 {
		t.Errorf("no inputs: %v", got)
	}
}

func TestHashAs(t *testing.T) {
	r := mustResolve(t, baseInputs(t))
	for _, v := range []string{"", r.Document.EngineVersion} {
		if h, err := HashAs(r, v); err != nil || h != r.Hash {
			t.Errorf("HashAs(%q) = %s, %v; want the document's own %s", v, h, err, r.Hash)
		}
	}
	other, err := HashAs(r, "v9.9.9")
	if err != nil {
		t.Fatal(err)
	}
	doc := r.Document
	doc.EngineVersion = "v9.9.9"
	c, err := Canonical(doc)
	if err != nil {
		t.Fatal(err)
	}
	if other == r.Hash || other != Hash(c) {
		t.Errorf("HashAs(v9.9.9) = %s, want %s (and not %s)", other, Hash(c), r.Hash)
	}
	if r.Document.EngineVersion == "v9.9.9" {
		t.Fatal("the document's engine version changed")
	}
}
