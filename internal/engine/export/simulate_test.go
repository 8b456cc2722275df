package export

import (
	"bytes"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/metrics"
	"github.com/inference-sim/blis-operator/internal/engine/model"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/engine/sim"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// simulate runs b on four llama-3.1-8b instances with a shared-prefix Poisson workload of the
// given rate and returns the BLIS metrics output and the number of rejected requests.
func simulate(t *testing.T, b *policy.Bundle, rate float64) ([]byte, int64) {
	t.Helper()
	r, err := model.Resolve(model.InstanceSpec{Model: llama})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := sim.InstanceFromResolved(r)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &sim.Config{Policy: b, Seed: 11}
	for range 4 {
		cfg.Instances = append(cfg.Instances, inst)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	src, err := workload.NewDistribution(workload.DistributionConfig{Rate: rate, NumRequests: 400, Poisson: true, PrefixTokens: 512,
		Input:  workload.LengthConfig{Mean: 1024, Stdev: 512, Min: 16, Max: 4096},
		Output: workload.LengthConfig{Mean: 128, Stdev: 64, Min: 2, Max: 512}}, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	rep := res.Report(src.Tables(), metrics.Options{})
	var buf bytes.Buffer
	if err := rep.WriteBLIS(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), res.Rejected
}

// Export → import → simulate gives the same metrics as simulating the original bundle.
func TestRoundTripSameMetrics(t *testing.T) {
	cases := []struct{ name, bundle string }{
		{"llm-d default", "routing: {policy: weighted}\n"},
		{"prefix-affinity", "routing: {policy: prefix-affinity, params: {prefix_weight: 4}}\n"},
		{"tuned scorers", "routing:\n  policy: weighted\n  scorers:\n    - {name: prefix-affinity, weight: 3, params: {matchLengthWeight: 0.5}}\n    - {name: load-aware, weight: 1, params: {threshold: 16}}\n    - {name: token-load, weight: 1}\n  params: {picker: weighted-random}\n"},
		{"cel linear", "routing: {cel: \"3.0 * score.prefixCache + 1.0 * score.queue + 0.5 * score.kvCacheUtilization\"}\n"},
		{"gaie-legacy", "admission: {policy: gaie-legacy, gaie_qd_threshold: 2, slo_priorities: {standard: -1}}\npriority: {policy: slo-based}\nrouting: {policy: weighted}\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := loadBundle(t, c.bundle)
			cl := Cluster{}
			if b.Admission.SLOPriorities != nil {
				cl.SLOClasses = []string{"standard"}
			}
			res, err := Export(Input{Bundle: b, Cluster: cl}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var objs [][]byte
			if o := res.File(FileObjectives); o != nil {
				objs = append(objs, o)
			}
			im, err := Import(res.File(FileEPPConfig), objs...)
			if err != nil {
				t.Fatal(err)
			}
			rate := 40.0
			if b.Admission.Policy == "gaie-legacy" {
				rate = 400 // saturate the pool so that admission sheds
			}
			want, rejected := simulate(t, b, rate)
			got, _ := simulate(t, im.Bundle, rate)
			if !bytes.Equal(want, got) {
				t.Fatalf("metrics differ\noriginal:\n%s\nround-tripped:\n%s", want, got)
			}
			if b.Admission.Policy == "gaie-legacy" && rejected == 0 {
				t.Fatal("nothing shed: the admission mapping is not exercised")
			}
		})
	}
}

// The metrics tell routing policies apart, so equal metrics above mean something.
func TestSimulatedMetricsAreSensitive(t *testing.T) {
	a, _ := simulate(t, loadBundle(t, "routing: {policy: weighted}\n"), 40)
	b, _ := simulate(t, loadBundle(t, "routing: {policy: round-robin}\n"), 40)
	if bytes.Equal(a, b) {
		t.Fatal("llm-d's default profile and round-robin gave identical metrics")
	}
}

// Every sample configuration of llm-d-router v0.10.0 imports into a bundle the simulator runs.
func TestImportedSamplesSimulate(t *testing.T) {
	for _, name := range sampleNames(t) {
		t.Run(name, func(t *testing.T) {
			im, err := Import(readSample(t, name), readSample(t, "config_manifests_inferenceobjective.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			out, _ := simulate(t, im.Bundle, 40)
			if !bytes.Contains(out, []byte(`"completed_requests": 400`)) {
				t.Fatalf("not every request completed:\n%s", out)
			}
		})
	}
}
