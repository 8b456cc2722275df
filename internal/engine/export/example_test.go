package export_test

import (
	"fmt"

	"github.com/inference-sim/blis-operator/internal/engine/export"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

// Export a bundle evolved in simulation for llm-d-router v0.10, then read the configuration
// back as a bundle.
func ExampleExport() {
	b, err := policy.Parse([]byte(`
routing:
  policy: weighted
  scorers:
    - {name: prefix-cache-scorer, weight: 3.5}
    - {name: queue-scorer, weight: 1.25}
admission: {policy: gaie-legacy}
priority: {policy: slo-based}
`))
	if err != nil {
		panic(err)
	}
	res, err := export.Export(export.Input{Bundle: b, Cluster: export.Cluster{
		Model:      "meta-llama/llama-3.1-8b-instruct",
		Pools:      []export.Pool{{Name: "vllm", Replicas: 4}},
		SLOClasses: []string{"critical", "batch"},
	}}, export.Options{Target: "llm-d-v0.10"})
	if err != nil {
		panic(err)
	}
	for _, f := range res.Files() {
		fmt.Println(f.Name)
	}
	for _, w := range res.Warnings {
		fmt.Println("warning:", w)
	}

	im, err := export.Import(res.File(export.FileEPPConfig), res.File(export.FileObjectives))
	if err != nil {
		panic(err)
	}
	fmt.Println(im.Bundle.Admission.Policy, im.Bundle.Routing.Scorers, im.Cluster.SLOClasses, len(im.Unsupported))
	// Output:
	// epp-config.yaml
	// inference-objectives.yaml
	// model-servers.yaml
	// gaie-legacy [{prefix-cache-scorer 3.5 map[]} {queue-scorer 1.25 map[]}] [batch critical] 0
}
