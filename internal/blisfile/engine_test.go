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

package blisfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// sampleSpecs decodes the PolicyBundle and WorkloadSpec documents of config/samples.
func sampleSpecs(t *testing.T) (map[string]*blisv1alpha1.PolicyBundleSpec, map[string]*blisv1alpha1.WorkloadSpecSpec) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	policies := map[string]*blisv1alpha1.PolicyBundleSpec{}
	workloads := map[string]*blisv1alpha1.WorkloadSpecSpec{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var raw map[string]any
			if err := dec.Decode(&raw); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("%s: %v", f, err)
			}
			js, err := yaml.Marshal(raw)
			if err != nil {
				t.Fatal(err)
			}
			switch raw["kind"] {
			case "PolicyBundle":
				var pb blisv1alpha1.PolicyBundle
				if err := yaml.UnmarshalStrict(js, &pb); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				policies[pb.Name] = &pb.Spec
			case "WorkloadSpec":
				var wl blisv1alpha1.WorkloadSpec
				if err := yaml.UnmarshalStrict(js, &wl); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				workloads[wl.Name] = &wl.Spec
			}
		}
	}
	return policies, workloads
}

// TestSamplePoliciesRunOnTheEngine renders every sample PolicyBundle in the engine's format
// and checks that the engine parses and validates it.
func TestSamplePoliciesRunOnTheEngine(t *testing.T) {
	policies, _ := sampleSpecs(t)
	checked := 0
	for name, spec := range policies {
		if spec.BlisConfigMapRef != nil {
			continue
		}
		out, err := PolicyToEngine(spec)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		b, err := policy.Parse(out)
		if err != nil {
			t.Errorf("%s: the engine cannot parse the rendered bundle: %v\n%s", name, err, out)
			continue
		}
		if err := b.Validate(); err != nil {
			t.Errorf("%s: the engine rejects the rendered bundle: %v\n%s", name, err, out)
		}
		checked++
	}
	if checked < 4 {
		t.Errorf("only %d sample bundles checked", checked)
	}
}

// TestExamplePoliciesRunOnTheEngine does the same for every BLIS example policy file (and the
// file using every policy key) after a round trip through the resource.
func TestExamplePoliciesRunOnTheEngine(t *testing.T) {
	var files []string
	for _, f := range examples(t) {
		if exampleKinds[filepath.Base(f)] == KindPolicy {
			files = append(files, f)
		}
	}
	files = append(files, filepath.Join("testdata", "complete", "all-policy-keys.yaml"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := ParsePolicy(data)
		if err != nil {
			t.Fatal(err)
		}
		out, err := PolicyToEngine(spec)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		b, err := policy.Parse(out)
		if err == nil {
			err = b.Validate()
		}
		if err != nil {
			t.Errorf("%s: %v\n%s", f, err, out)
		}
	}
}

// TestWorkloadsRunOnTheEngine renders every sample WorkloadSpec with generated traffic and
// every BLIS example workload as BLIS files and checks that the engine parses and validates
// them.
func TestWorkloadsRunOnTheEngine(t *testing.T) {
	_, workloads := sampleSpecs(t)
	checked := 0
	for name, spec := range workloads {
		if spec.BlisConfigMapRef != nil || spec.Trace != nil || spec.Scenario != "" {
			if _, err := WorkloadToBLIS(spec); err == nil {
				t.Errorf("%s: WorkloadToBLIS rendered a spec without typed traffic", name)
			}
			continue
		}
		out, err := WorkloadToBLIS(spec)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := workload.ParseSpec(out); err != nil {
			t.Errorf("%s: the engine rejects the workload: %v\n%s", name, err, out)
		}
		checked++
	}
	for _, f := range examples(t) {
		if exampleKinds[filepath.Base(f)] != KindWorkload {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := ParseWorkload(data)
		if err != nil {
			t.Fatal(err)
		}
		out, err := WorkloadToBLIS(spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := workload.ParseSpec(out); err != nil {
			t.Errorf("%s: the engine rejects the round-tripped workload: %v\n%s", f, err, out)
		}
		checked++
	}
	if checked < 8 {
		t.Errorf("only %d workloads checked", checked)
	}
}

func TestPolicyToEngineForms(t *testing.T) {
	policies, _ := sampleSpecs(t)
	out, err := PolicyToEngine(policies["compare-candidate"])
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	wantTree := mustYAMLMap(t, `
if: {observable: global.inFlight, op: ">", value: 900}
then:
  if: {observable: request.sloClass, op: "==", value: sheddable}
  then: {action: reject, reason: sheddable request while busy}
  else: {action: admit}
else: {action: admit}
`)
	gotTree := doc["admission"].(map[string]any)["tree"]
	if !reflect.DeepEqual(gotTree, wantTree) {
		t.Errorf("admission tree = %v, want %v", gotTree, wantTree)
	}
	md := doc["metadata"].(map[string]any)
	if md["parent"] != "compare-baseline" || md["generation"] != float64(4) {
		t.Errorf("metadata = %v", md)
	}
	scorers := doc["routing"].(map[string]any)["scorers"].([]any)
	if p := scorers[1].(map[string]any)["params"]; !reflect.DeepEqual(p, map[string]any{"threshold": float64(128)}) {
		t.Errorf("scorer params = %v", p)
	}

	out, err = PolicyToEngine(policies["cache-aware"])
	if err != nil {
		t.Fatal(err)
	}
	doc = nil
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if p := doc["priority"].(map[string]any)["params"]; !reflect.DeepEqual(p, mustYAMLMap(t, `class_scores: {critical: 100, standard: 50, batch: 10}`)) {
		t.Errorf("priority params = %v", p)
	}
	if p := doc["admission"].(map[string]any)["params"]; !reflect.DeepEqual(p, map[string]any{"per_tenant": true}) {
		t.Errorf("admission params = %v, want per_tenant as a boolean", p)
	}
	if p := doc["routing"].(map[string]any)["params"]; !reflect.DeepEqual(p, map[string]any{"picker": "max-score"}) {
		t.Errorf("routing params = %v, want the picker", p)
	}

	delay := &blisv1alpha1.PolicyBundleSpec{Admission: &blisv1alpha1.AdmissionPolicy{PolicyForms: blisv1alpha1.PolicyForms{
		DecisionTree: &blisv1alpha1.DecisionTree{Nodes: []blisv1alpha1.DecisionNode{
			{ID: 0, Action: &blisv1alpha1.DecisionAction{Decision: "delay", Value: ptrTo(2500.0)}},
		}}}}}
	out, err = PolicyToEngine(delay)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "delay_us: 2500") || !strings.Contains(string(out), "action: delay") {
		t.Errorf("delay leaf rendered as:\n%s", out)
	}

	unsupported := &blisv1alpha1.PolicyBundleSpec{
		Autoscaler: &blisv1alpha1.AutoscalerPolicy{Policy: "oscillator"},
		Preemption: &blisv1alpha1.PreemptionPolicy{PolicyForms: blisv1alpha1.PolicyForms{CEL: "1.0"}},
	}
	if _, err := PolicyToEngine(unsupported); err == nil || !strings.Contains(err.Error(), "autoscaler.policy") || !strings.Contains(err.Error(), "preemption.cel") {
		t.Errorf("unsupported forms: err = %v, want both named", err)
	}
}

func mustYAMLMap(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func ptrTo[T any](v T) *T { return &v }
