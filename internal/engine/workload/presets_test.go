package workload

import (
	"os"
	"strings"
	"testing"
)

// The built-in presets are exactly the `workloads:` section of the BLIS defaults.yaml the
// engine ships.
func TestPresetsMatchShippedDefaults(t *testing.T) {
	data, err := os.ReadFile("../model/data/defaults.yaml")
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := ParsePresets(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(parsed) != len(PresetNames()) {
		t.Fatalf("defaults.yaml has %d presets, built in: %v", len(parsed), PresetNames())
	}
	for _, name := range PresetNames() {
		got, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if want := parsed[name]; got != want {
			t.Errorf("preset %s = %+v, defaults.yaml says %+v", name, got, want)
		}
	}
	c, _ := Preset("chatbot")
	if c.Input.Mean != 256 || c.Output.Min != 1 || c.Rate != 1 || c.NumRequests != 100 {
		t.Fatalf("chatbot preset %+v", c)
	}
	if _, err := Preset("qa"); err == nil || !strings.Contains(err.Error(), "chatbot, contentgen, multidoc, summarization") {
		t.Fatalf("unknown preset error %v", err)
	}
	if _, err := ParsePresets([]byte("workloads:\n  bad: {prompt_tokens: 10, prompt_tokens_min: 0, prompt_tokens_max: 5, output_tokens_min: 1, output_tokens_max: 2}\n")); err == nil || !strings.Contains(err.Error(), "workloads.bad: field Input.Min") {
		t.Fatalf("invalid preset error %v", err)
	}
}
