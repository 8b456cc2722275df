package llmd

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func sampleConfigs(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("testdata/router-v0.10.0/deploy_config_*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no sample configs: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}

// Every sample configuration of llm-d-router v0.10.0 decodes strictly and validates against
// the v0.10 target; the one with an Alpha plugin needs experimental plugins allowed.
func TestSampleConfigsValidateOnV010(t *testing.T) {
	target, err := LookupTarget("llm-d-v0.10")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range sampleConfigs(t) {
		t.Run(name, func(t *testing.T) {
			cfg, err := Decode(data)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			_, err = Validate(cfg, target, ValidateOptions{})
			alpha := strings.Contains(name, "soft-reflective")
			if alpha {
				if !errors.Is(err, ErrExperimental) || !strings.Contains(err.Error(), "soft-reflective-ceiling-policy") {
					t.Fatalf("want the Alpha plugin reported, got %v", err)
				}
				_, err = Validate(cfg, target, ValidateOptions{AllowExperimental: true})
			}
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
		})
	}
}

func TestDecodeRejectsUnknownAndMiscasedKeys(t *testing.T) {
	cases := map[string]string{
		"top-level":  "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins: []\nschedulingProfiles: []\nextra: 1\n",
		"miscased":   "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins: []\nSchedulingProfiles: []\n",
		"in profile": "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins: []\nschedulingProfiles:\n- name: a\n  plugins: []\n  weight: 1\n",
		"duplicate":  "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins: []\nplugins: []\n",
		"wrong kind": "apiVersion: llm-d.ai/v1alpha1\nkind: Other\nplugins: []\n",
	}
	for name, doc := range cases {
		if _, err := Decode([]byte(doc)); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

func validateDoc(t *testing.T, target, doc string) error {
	t.Helper()
	tg, err := LookupTarget(target)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Decode([]byte(doc))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	_, err = Validate(cfg, tg, ValidateOptions{})
	return err
}

func TestValidateCatchesWhatTheRouterRejects(t *testing.T) {
	const head = "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\n"
	cases := []struct {
		name, target, doc, want string
	}{
		{"legacy prefix params", "llm-d-v0.10", head + "plugins:\n- type: prefix-cache-scorer\n  parameters: {blockSize: 16}\nschedulingProfiles: []\n", `unknown field "blockSize"`},
		{"removed pd threshold", "llm-d-v0.10", head + "plugins:\n- type: pd-profile-handler\n  parameters: {threshold: 10}\nschedulingProfiles: []\n", `unknown field "threshold"`},
		{"unknown type", "llm-d-v0.10", head + "plugins:\n- type: round-robin-picker\nschedulingProfiles: []\n", `unknown plugin type "round-robin-picker"`},
		{"unknown gate", "llm-d-v0.10", head + "featureGates: [dataLayer]\nplugins: []\nschedulingProfiles: []\n", `unknown gate "dataLayer"`},
		{"dangling ref", "llm-d-v0.10", head + "plugins: []\nschedulingProfiles:\n- name: default\n  plugins: [{pluginRef: queue-scorer}]\n", `names no plugin`},
		{"two pickers", "llm-d-v0.10", head + "plugins:\n- type: max-score-picker\n- type: random-picker\nschedulingProfiles: []\n", `pickers`},
		{"no handler", "llm-d-v0.10", head + "plugins: [{type: queue-scorer}]\nschedulingProfiles:\n- {name: a, plugins: [{pluginRef: queue-scorer}]}\n- {name: b, plugins: [{pluginRef: queue-scorer}]}\n", `no profile handler`},
		{"v1 rejected by v0.10", "llm-d-v0.10", "apiVersion: llm-d.ai/v1\nkind: EndpointPickerConfig\nplugins: []\nschedulingProfiles: []\n", `not accepted`},
		{"v1alpha1 rejected by v0.8", "llm-d-v0.8", head + "plugins: []\nschedulingProfiles: []\n", `not accepted`},
		{"promptTokens before v0.10", "llm-d-v0.9", head + "plugins:\n- type: prefix-based-pd-decider\n  parameters: {promptTokens: 10}\nschedulingProfiles: []\n", `promptTokens`},
		{"token-producer before v0.9", "llm-d-v0.8", "apiVersion: " + APIVersionLegacy + "\nkind: EndpointPickerConfig\nplugins: [{type: token-producer}]\nschedulingProfiles: []\n", `not registered`},
		{"tokenizer removed after v0.10", "llm-d-v1", "apiVersion: llm-d.ai/v1\nkind: EndpointPickerConfig\nplugins: [{type: tokenizer}]\nschedulingProfiles: []\n", `not registered`},
		{"missing decider", "llm-d-v0.10", head + "plugins:\n- type: disagg-profile-handler\n  parameters: {deciders: {prefill: nope}}\nschedulingProfiles: []\n", `"nope" names no plugin`},
	}
	for _, c := range cases {
		err := validateDoc(t, c.target, c.doc)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want error containing %q, got %v", c.name, c.want, err)
		}
	}
	// The v0.8 router ignored unknown parameters: a warning, not an error.
	tg, _ := LookupTarget("llm-d-v0.8")
	cfg, err := Decode([]byte("apiVersion: " + APIVersionLegacy + "\nkind: EndpointPickerConfig\nplugins:\n- type: prefix-cache-scorer\n  parameters: {hashBlockSize: 16}\nschedulingProfiles: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	warns, err := Validate(cfg, tg, ValidateOptions{})
	if err != nil || len(warns) == 0 {
		t.Fatalf("v0.8: want a warning and no error, got %v %v", warns, err)
	}
	// Gates that v0.9 removed are still valid for v0.8.
	cfg.FeatureGates = []string{"dataLayer"}
	if _, err := Validate(cfg, tg, ValidateOptions{}); err != nil {
		t.Fatalf("v0.8 dataLayer gate: %v", err)
	}
}

func TestLookupTarget(t *testing.T) {
	for in, want := range map[string]string{"": "llm-d-v0.10", "v0.10": "llm-d-v0.10", "llm-d-v0.10.0": "llm-d-v0.10",
		"LLM-D-V0.8": "llm-d-v0.8", "llm-d-v1": "llm-d-v1", "v0.9.1": "llm-d-v0.9"} {
		got, err := LookupTarget(in)
		if err != nil || got.Name != want {
			t.Errorf("LookupTarget(%q) = %v, %v; want %s", in, got.Name, err, want)
		}
	}
	_, err := LookupTarget("llm-d-v0.7")
	if err == nil || !strings.Contains(err.Error(), "llm-d-v0.8, llm-d-v0.9, llm-d-v0.10, llm-d-v1") {
		t.Fatalf("want the supported targets listed, got %v", err)
	}
}

func TestDecodeObjectives(t *testing.T) {
	data, err := os.ReadFile("testdata/router-v0.10.0/config_manifests_inferenceobjective.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := SplitDocuments(data)
	if err != nil || len(docs) != 3 {
		t.Fatalf("SplitDocuments: %d docs, %v", len(docs), err)
	}
	var got []string
	for _, d := range docs {
		o, err := DecodeObjective(d)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, o.Metadata.Name+"="+strconv.Itoa(int(*o.Spec.Priority)))
	}
	if strings.Join(got, ",") != "small-segment-lora=1,base-model=2,base-model-cpu=2" {
		t.Fatalf("objectives: %v", got)
	}
	if _, err := DecodeObjective([]byte("apiVersion: llm-d.ai/v1alpha2\nkind: InferenceObjective\nmetadata: {name: a}\nspec: {priority: 1, criticality: Critical, poolRef: {name: p}}\n")); err == nil {
		t.Fatal("unknown spec key accepted")
	}
}

func TestValidateDiscoveryPerAPIVersion(t *testing.T) {
	ok := "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins: [{type: file-discovery}]\nschedulingProfiles: []\ndataLayer: {discovery: {pluginRef: file-discovery}}\n"
	if err := validateDoc(t, "llm-d-v0.10", ok); err != nil {
		t.Fatal(err)
	}
	if err := validateDoc(t, "llm-d-v1", strings.Replace(ok, "llm-d.ai/v1alpha1", "llm-d.ai/v1", 1)); err == nil || !strings.Contains(err.Error(), "discovery") {
		t.Fatalf("v1alpha1 discovery form accepted for llm-d.ai/v1: %v", err)
	}
	v1 := "apiVersion: llm-d.ai/v1\nkind: EndpointPickerConfig\nplugins: [{type: file-discovery}]\nschedulingProfiles: []\ndataLayer: {discovery: {endpoints: {pluginRef: file-discovery}}}\n"
	if err := validateDoc(t, "llm-d-v1", v1); err != nil {
		t.Fatal(err)
	}
	if err := validateDoc(t, "llm-d-v1", strings.Replace(v1, "pluginRef: file-discovery}}", "pluginRef: nope}}", 1)); err == nil {
		t.Fatal("dangling discovery reference accepted")
	}
}
