package export

import (
	"strings"
	"testing"
)

// A KV tier below the CPU one is simulated but has no counterpart in the export: a warning.
func TestLowerKVTiersAreWarnings(t *testing.T) {
	c := Cluster{Model: llama, Engine: mustEngine(), KVOffload: &KVOffload{CPUBlocks: 50000}, LowerKVTiers: []string{"filesystem", "object-store"}}
	res, err := Export(Input{Bundle: loadBundle(t, "routing: {policy: weighted}\n"), Cluster: c}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, w := range res.Warnings {
		for _, k := range c.LowerKVTiers {
			found[k] = found[k] || (w.Stage == "kvTiers" && strings.Contains(w.Message, k))
		}
	}
	if !found["filesystem"] || !found["object-store"] {
		t.Errorf("warnings %+v lack the lower tiers", res.Warnings)
	}
	c.LowerKVTiers = []string{"tape"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "lowerKVTiers") {
		t.Errorf("unknown lower tier: %v", err)
	}
}
