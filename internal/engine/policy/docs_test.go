package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsCoverEveryName keeps docs/policies.md in step with the code: every observable,
// template and scorer name must be documented.
func TestDocsCoverEveryName(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "policies.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	var names []string
	for _, o := range observables {
		names = append(names, o.name)
	}
	names = append(names, AdmissionTemplates...)
	names = append(names, PriorityTemplates...)
	names = append(names, RoutingTemplates...)
	names = append(names, SchedulerNames()...)
	names = append(names, ScorerNames()...)
	for _, n := range names {
		if !strings.Contains(doc, "`"+n+"`") {
			t.Errorf("docs/policies.md does not mention `%s`", n)
		}
	}
}
