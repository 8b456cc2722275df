package export

import (
	"os"
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/export/llmd"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

// The user documentation names every template the exporter maps and every target.
func TestDocsCoverTemplatesAndTargets(t *testing.T) {
	data, err := os.ReadFile("../../../docs/llm-d-export.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	var names []string
	names = append(names, policy.AdmissionTemplates...)
	names = append(names, policy.PriorityTemplates...)
	names = append(names, policy.RoutingTemplates...)
	names = append(names, llmd.TargetNames()...)
	names = append(names, "priority-fcfs", "sjf", "reverse-priority", DeciderAlways, DeciderNever, DeciderPrefixThreshold, DeciderPromptLength,
		FileEPPConfig, FileObjectives, FilePool, FileModelServers, FileScaledObjects, FileWarnings)
	for _, n := range names {
		if !strings.Contains(doc, "`"+n+"`") && !strings.Contains(doc, n+"`") {
			t.Errorf("docs/llm-d-export.md does not mention %q", n)
		}
	}
}
