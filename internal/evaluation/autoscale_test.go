package evaluation

import (
	"context"
	"strings"
	"testing"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// autoscaledInputs is the base evaluation on a cluster that starts with one replica and may
// grow to four, with the bundle's autoscaler on the given template.
func autoscaledInputs(t *testing.T, template string, drain string) Inputs {
	t.Helper()
	in := baseInputs(t)
	n := int64(400)
	in.Spec.NumRequests = &n
	in.Spec.Seeds = []int64{1}
	c := in.Cluster.DeepCopy()
	c.Spec.Pools = []blisv1alpha1.ReplicaPoolSpec{{Name: "main", Replicas: 1}}
	c.Spec.Autoscaling = &blisv1alpha1.AutoscalingSpec{
		MinReplicas: 1, MaxReplicas: 4,
		ProvisioningDelayUs: 2_000_000, ModelLoadDelayUs: 1_000_000, WarmupDelayUs: 500_000,
		DrainPolicy: drain, CostPerReplicaHour: 10,
	}
	in.Cluster = c
	p := in.Policy.DeepCopy()
	p.Spec.Autoscaler = &blisv1alpha1.AutoscalerPolicy{Policy: template, IntervalUs: 1_000_000}
	in.Policy = p
	return in
}

func TestEvaluationAutoscaling(t *testing.T) {
	in := autoscaledInputs(t, "oscillator", "redirect")
	r := mustResolve(t, in)
	for _, n := range r.Notes {
		if strings.Contains(n, "autoscal") && strings.Contains(n, "not simulated") {
			t.Errorf("note %q: autoscaling is simulated", n)
		}
	}
	if a := r.Document.Cluster.Autoscaling; a == nil || a.MaxReplicas != 4 || a.DrainPolicy != "redirect" {
		t.Fatalf("document autoscaling %+v", a)
	}
	if !strings.Contains(r.Document.Policy, "oscillator") {
		t.Fatalf("engine policy lacks the template:\n%s", r.Document.Policy)
	}
	res, err := Run(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	st := res.Status()
	if st.Anomalies == nil || st.Anomalies.ScaleOscillations == 0 {
		t.Errorf("the oscillator template raised no scale oscillations: %+v", st.Anomalies)
	}
	if st.Metrics == nil || st.Metrics.ReplicaSeconds <= 0 {
		t.Fatalf("replica seconds missing: %+v", st.Metrics)
	}

	// The same cluster with fixed replicas reports replicas x duration instead, and a bundle
	// without a template scales on the analyzer's thresholds.
	fixed := autoscaledInputs(t, "", "")
	fixed.Cluster.Spec.Autoscaling = nil
	fixed.Policy.Spec.Autoscaler = nil
	fr, err := Run(context.Background(), mustResolve(t, fixed))
	if err != nil {
		t.Fatal(err)
	}
	if fs := fr.Status(); fs.Anomalies != nil && fs.Anomalies.ScaleOscillations != 0 {
		t.Errorf("fixed cluster oscillated: %+v", fs.Anomalies)
	}
}

func TestEvaluationAutoscalingErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(in *Inputs)
		want string
	}{
		{"min above max", func(in *Inputs) { in.Cluster.Spec.Autoscaling.MinReplicas = 5 }, "must not exceed maxReplicas"},
		{"min zero", func(in *Inputs) { in.Cluster.Spec.Autoscaling.MinReplicas = 0 }, "must be >= 1"},
		{"replicas outside bounds", func(in *Inputs) { in.Cluster.Spec.Pools[0].Replicas = 6 }, "within autoscaling"},
		{"bad hysteresis", func(in *Inputs) {
			up, down := 0.3, 0.6
			in.Policy.Spec.Autoscaler = &blisv1alpha1.AutoscalerPolicy{IntervalUs: 1_000_000,
				Analyzer: &blisv1alpha1.AutoscalerAnalyzer{ScaleUpThreshold: &up, ScaleDownBoundary: &down}}
		}, "below scale_up_threshold"},
	} {
		in := autoscaledInputs(t, "threshold", "wait")
		c.mod(&in)
		if _, err := Resolve(in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}
