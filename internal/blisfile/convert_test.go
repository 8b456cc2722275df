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
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// exampleKinds is the expected kind of every BLIS example file.
var exampleKinds = map[string]Kind{
	"epp-estimate-prefix.yaml":              KindPolicy,
	"epp-precise-prefix.yaml":               KindPolicy,
	"policy-config.yaml":                    KindPolicy,
	"weighted-routing.yaml":                 KindPolicy,
	"inference-perf-shared-prefix.yaml":     KindWorkload,
	"multiturn-chat-demo.yaml":              KindWorkload,
	"prefix-affinity-demo.yaml":             KindWorkload,
	"regression_workload_cache_warmup.yaml": KindWorkload,
	"regression_workload_multiturn.yaml":    KindWorkload,
}

func examples(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(exampleKinds) {
		t.Fatalf("found %d example files, expected %d: %v", len(files), len(exampleKinds), files)
	}
	return files
}

func TestToCamelToSnake(t *testing.T) {
	cases := map[string]string{
		"aggregate_rate":                     "aggregateRate",
		"tenant_id":                          "tenantId",
		"gpu_memory_gib":                     "gpuMemoryGib",
		"gaie_qd_threshold":                  "gaieQdThreshold",
		"e2e_ms":                             "e2eMs",
		"scale_down_stabilization_window_us": "scaleDownStabilizationWindowUs",
		"seed":                               "seed",
	}
	for snake, camel := range cases {
		if got := ToCamel(snake); got != camel {
			t.Errorf("ToCamel(%q) = %q, want %q", snake, got, camel)
		}
		if got := ToSnake(camel); got != snake {
			t.Errorf("ToSnake(%q) = %q, want %q", camel, got, snake)
		}
	}
}

func TestDetect(t *testing.T) {
	for _, f := range examples(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Detect(data)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if want := exampleKinds[filepath.Base(f)]; got != want {
			t.Errorf("%s: detected %s, want %s", f, got, want)
		}
	}
	for _, bad := range []struct{ doc, want string }{
		{"admission: {policy: always-admit}\nclients: []\n", "mixes policy keys"},
		{"foo: 1\n", "unknown top-level keys foo"},
		{"- a\n- b\n", "not a YAML mapping"},
		{"", "empty"},
	} {
		_, err := Detect([]byte(bad.doc))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Detect(%q) error = %v, want it to contain %q", bad.doc, err, bad.want)
		}
	}
}

// TestExamplesGolden converts every example file to its resource and compares it with the
// golden manifest in testdata/golden.
func TestExamplesGolden(t *testing.T) {
	for _, f := range examples(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := Convert(data, NameFromPath(f), "")
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		got, err := Manifest(obj, "yaml")
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", "golden", filepath.Base(f))
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run `go test ./internal/blisfile -update` to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: converted manifest differs from %s:\n%s", f, golden, got)
		}
	}
}

// TestExamplesRoundTrip converts every example to a resource and back to a BLIS file and
// checks that nothing was lost: the BLIS file produced carries the same keys and values as
// the original (apart from zero values, which BLIS treats as absent), and converting it
// again gives the same typed spec.
func TestExamplesRoundTrip(t *testing.T) {
	for _, f := range examples(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var back []byte
		var again any
		var first any
		switch exampleKinds[filepath.Base(f)] {
		case KindPolicy:
			spec, err := ParsePolicy(data)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if back, err = PolicyToBLIS(spec); err != nil {
				t.Fatal(err)
			}
			spec2, err := ParsePolicy(back)
			if err != nil {
				t.Fatalf("%s: re-parsing the BLIS output: %v\n%s", f, err, back)
			}
			first, again = spec, spec2
		case KindWorkload:
			spec, err := ParseWorkload(data)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if back, err = WorkloadToBLIS(spec); err != nil {
				t.Fatal(err)
			}
			spec2, err := ParseWorkload(back)
			if err != nil {
				t.Fatalf("%s: re-parsing the BLIS output: %v\n%s", f, err, back)
			}
			first, again = spec, spec2
		}
		if !reflect.DeepEqual(first, again) {
			t.Errorf("%s: the spec changed over a round trip", f)
		}
		orig := genericPruned(t, data)
		out := genericPruned(t, back)
		if !reflect.DeepEqual(orig, out) {
			t.Errorf("%s: the BLIS file differs after a round trip\noriginal: %v\nround trip: %v", f, orig, out)
		}
	}
}

// genericPruned decodes YAML into generic values with numbers as float64 and drops zero
// scalars (false, 0, "") and the empty maps they leave, so that two BLIS files that mean the
// same compare equal.
func genericPruned(t *testing.T, data []byte) any {
	t.Helper()
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, &v); err != nil {
		t.Fatal(err)
	}
	p, _ := prune(v)
	return p
}

func prune(v any) (any, bool) {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range t {
			if pe, keep := prune(e); keep {
				out[k] = pe
			}
		}
		return out, len(out) > 0
	case []any:
		out := make([]any, 0, len(t))
		for _, e := range t {
			pe, _ := prune(e)
			out = append(out, pe)
		}
		return out, true
	case int64:
		return float64(t), t != 0
	case float64:
		return t, t != 0
	case bool:
		return t, t
	case string:
		return t, t != ""
	case nil:
		return nil, false
	default:
		return t, true
	}
}

func TestUnknownKeyIsNamed(t *testing.T) {
	// The key is "arrival" with one r dropped, the kind of typo the check exists for.
	typo := "ar" + "ival"
	_, err := ParseWorkload([]byte("version: \"2\"\naggregate_rate: 1\nclients:\n- id: a\n  rate_fraction: 1\n  " + typo + ": {process: poisson}\n"))
	if err == nil || !strings.Contains(err.Error(), "clients[0]."+typo) {
		t.Fatalf("error = %v, want it to name clients[0].%s", err, typo)
	}
	_, err = ParsePolicy([]byte("admission:\n  policy: token-bucket\n  token_bucket_capacty: 5\n"))
	if err == nil || !strings.Contains(err.Error(), "admission.token_bucket_capacty") {
		t.Fatalf("error = %v, want it to name admission.token_bucket_capacty", err)
	}
}

func TestVerbatimMapKeys(t *testing.T) {
	spec, err := ParsePolicy([]byte(`
admission:
  policy: tier-shed
  slo_priorities: {critical_plus: 5}
  slo_targets: {very_fast: 100000}
tenant_budgets: {team_a: 0.5, team_b: 0.25}
routing:
  policy: weighted
  scorers:
  - name: load-aware-scorer
    weight: 0.5
    parameters: {queue_threshold: 128}
`))
	if err != nil {
		t.Fatal(err)
	}
	if spec.TenantBudgets["team_a"] != 0.5 || spec.TenantBudgets["team_b"] != 0.25 {
		t.Errorf("tenant budgets = %v, want keys kept as team_a/team_b", spec.TenantBudgets)
	}
	if spec.Admission.SloPriorities["critical_plus"] != 5 || spec.Admission.SloTargets["very_fast"] != 100000 {
		t.Errorf("admission maps = %v %v, want keys kept", spec.Admission.SloPriorities, spec.Admission.SloTargets)
	}
	if spec.Routing.Scorers[0].Parameters["queue_threshold"] != 128 {
		t.Errorf("scorer parameters = %v, want key queue_threshold kept", spec.Routing.Scorers[0].Parameters)
	}
	back, err := PolicyToBLIS(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"team_a: 0.5", "critical_plus: 5", "very_fast: 100000", "queue_threshold: 128", "slo_priorities:", "tenant_budgets:"} {
		if !strings.Contains(string(back), want) {
			t.Errorf("BLIS output lacks %q:\n%s", want, back)
		}
	}

	wl, err := ParseWorkload([]byte(`
version: 2
category: agentic
aggregate_rate: 2
goodput_slo_targets:
  critical: {ttft: 200, e2e: 2000}
clients:
- id: agent
  rate_fraction: 1
  arrival: {process: poisson}
  agentic:
    steps:
    - {id: plan, type: llm_call, input_distribution: {type: constant, params: {value: 10}}, output_distribution: {type: constant, params: {value: 5}}}
    - {id: search, type: tool_call, tool: web_search, depends_on: [plan]}
    tools:
      web_search:
        latency: {type: exponential, params: {mean: 50000}}
        output_tokens: {type: gaussian, params: {mean: 200, std_dev: 50}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if wl.Version != "2" {
		t.Errorf("version = %q, want the unquoted number read as \"2\"", wl.Version)
	}
	if wl.GoodputSloTargets["critical"].E2E != 2000 {
		t.Errorf("goodput targets = %v", wl.GoodputSloTargets)
	}
	tool, ok := wl.Clients[0].Agentic.Tools["web_search"]
	if !ok || tool.OutputTokens == nil || *tool.OutputTokens.Params.StdDev != 50 {
		t.Errorf("tools = %+v, want web_search kept with output_tokens.params.std_dev 50", wl.Clients[0].Agentic.Tools)
	}
	if got := wl.Clients[0].Agentic.Steps[1].DependsOn; len(got) != 1 || got[0] != "plan" {
		t.Errorf("depends_on = %v", got)
	}
}

func TestToBLISFromManifest(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "examples", "weighted-routing.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := Convert(data, "weighted", "ns")
	if err != nil {
		t.Fatal(err)
	}
	pb, ok := obj.(*blisv1alpha1.PolicyBundle)
	if !ok {
		t.Fatalf("converted object is %T, want *PolicyBundle", obj)
	}
	if pb.Name != "weighted" || pb.Namespace != "ns" || pb.Kind != "PolicyBundle" || pb.APIVersion != "blis.inference-sim.io/v1alpha1" {
		t.Errorf("object meta = %+v %+v", pb.TypeMeta, pb.ObjectMeta)
	}
	manifest, err := Manifest(obj, "json")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(manifest), "status") || strings.Contains(string(manifest), "creationTimestamp") {
		t.Errorf("manifest carries empty status or timestamp:\n%s", manifest)
	}
	back, err := ToBLIS(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(genericPruned(t, back), genericPruned(t, data)) {
		t.Errorf("ToBLIS did not reproduce the file:\n%s", back)
	}
	if _, err := ToBLIS([]byte("apiVersion: blis.inference-sim.io/v1alpha1\nkind: Evaluation\n")); err == nil {
		t.Error("ToBLIS accepted an Evaluation")
	}
	if _, err := ToBLIS([]byte("apiVersion: v1\nkind: ConfigMap\n")); err == nil {
		t.Error("ToBLIS accepted a ConfigMap")
	}
	ref := &blisv1alpha1.PolicyBundleSpec{BlisConfigMapRef: &blisv1alpha1.ConfigMapKeyReference{Name: "cm", Key: "policy.yaml"}}
	if _, err := PolicyToBLIS(ref); err == nil {
		t.Error("PolicyToBLIS rendered a ConfigMap reference")
	}
}

func TestNameFromPath(t *testing.T) {
	for in, want := range map[string]string{
		"data/regression_workload_multiturn.yaml": "regression-workload-multiturn",
		"Weighted Routing.yml":                    "weighted-routing",
		"___.yaml":                                "blis",
	} {
		if got := NameFromPath(in); got != want {
			t.Errorf("NameFromPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVerbatimListIsSorted(t *testing.T) {
	// The documentation lists the verbatim keys; keep them unique so the list stays exact.
	seen := map[string]bool{}
	keys := append([]string(nil), VerbatimMapKeys...)
	sort.Strings(keys)
	for _, k := range keys {
		if seen[k] {
			t.Errorf("duplicate verbatim key %q", k)
		}
		seen[k] = true
		if ToSnake(ToCamel(k)) != k {
			t.Errorf("verbatim key %q does not survive camelCase and back", k)
		}
	}
}

// TestCompleteFilesRoundTrip converts files that use every BLIS key (and the extensions)
// with non-zero values and checks that nothing is lost on the way to the resource and back.
func TestCompleteFilesRoundTrip(t *testing.T) {
	for name, parse := range map[string]func([]byte) ([]byte, error){
		"all-policy-keys.yaml": func(d []byte) ([]byte, error) {
			s, err := ParsePolicy(d)
			if err != nil {
				return nil, err
			}
			return PolicyToBLIS(s)
		},
		"all-workload-keys.yaml": func(d []byte) ([]byte, error) {
			s, err := ParseWorkload(d)
			if err != nil {
				return nil, err
			}
			return WorkloadToBLIS(s)
		},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", "complete", name))
		if err != nil {
			t.Fatal(err)
		}
		back, err := parse(data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if orig, out := genericPruned(t, data), genericPruned(t, back); !reflect.DeepEqual(orig, out) {
			t.Errorf("%s: changed over a round trip\noriginal:   %v\nround trip: %v", name, orig, out)
		}
	}
}
