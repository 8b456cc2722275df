package evaluation

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/model"
)

// samplesDir holds the project's example manifests.
const samplesDir = "../../config/samples"

// loadSamples reads every sample manifest into one set.
func loadSamples(t *testing.T) *Manifests {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(samplesDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	m := &Manifests{}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Add(f, data); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// baseInputs is the sample Evaluation cache-aware-chat with its references, kept small.
func baseInputs(t *testing.T) Inputs {
	t.Helper()
	m := loadSamples(t)
	ev, err := m.Select("cache-aware-chat", false)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(100)
	ev.Spec.NumRequests = &n
	in, err := m.Inputs(ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func mustResolve(t *testing.T, in Inputs) *Resolved {
	t.Helper()
	r, err := Resolve(in)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return r
}

func TestResolveErrorsNameObjectAndField(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(in *Inputs)
		reason  string
		kind    string
		objName string
		field   string
		text    string
	}{
		{"missing cluster", func(in *Inputs) { in.Cluster = nil },
			ReasonReferenceNotFound, KindEvaluation, "cache-aware-chat", "spec.clusterRef.name", `SimulatedCluster "llama8b-h100" not found`},
		{"cluster of another name", func(in *Inputs) { c := *in.Cluster; c.Name = "other"; in.Cluster = &c },
			ReasonReferenceNotFound, KindEvaluation, "cache-aware-chat", "spec.clusterRef.name", "not found"},
		{"unknown model", func(in *Inputs) { c := in.Cluster.DeepCopy(); c.Spec.Model.Name = "no-such-model"; in.Cluster = c },
			ReasonInvalidSpec, KindSimulatedCluster, "llama8b-h100", "spec", "no-such-model"},
		{"monolithic beside disaggregated pools", func(in *Inputs) {
			c := in.Cluster.DeepCopy()
			c.Spec.Pools = []blisv1alpha1.ReplicaPoolSpec{{Name: "m", Replicas: 1}, {Name: "p", Role: blisv1alpha1.PoolPrefill, Replicas: 1}, {Name: "d", Role: blisv1alpha1.PoolDecode, Replicas: 1}}
			in.Cluster = c
		}, ReasonUnsupported, KindSimulatedCluster, "llama8b-h100", "spec.pools", "not simulated"},
		{"bad CEL", func(in *Inputs) {
			p := in.Policy.DeepCopy()
			p.Spec.Priority = &blisv1alpha1.PriorityPolicy{PolicyForms: blisv1alpha1.PolicyForms{CEL: "request.noSuchField +"}}
			in.Policy = p
		}, ReasonInvalidSpec, KindPolicyBundle, "cache-aware", "spec", "cel"},
		{"unknown routing template", func(in *Inputs) {
			p := in.Policy.DeepCopy()
			p.Spec.Routing = &blisv1alpha1.RoutingPolicy{Policy: "no-such-router"}
			in.Policy = p
		}, ReasonInvalidSpec, KindPolicyBundle, "cache-aware", "spec", "no-such-router"},
		{"precise prefix scoring on a cluster without prefix caching", func(in *Inputs) {
			c := in.Cluster.DeepCopy()
			off := false
			c.Spec.Engine.EnablePrefixCaching = &off
			in.Cluster = c
			p := in.Policy.DeepCopy()
			p.Spec.Routing = &blisv1alpha1.RoutingPolicy{Policy: "weighted", Scorers: []blisv1alpha1.Scorer{
				{Name: "queue-scorer", Weight: 1}, {Name: "precise-prefix-cache", Weight: 2}}}
			in.Policy = p
		}, ReasonInvalidSpec, KindPolicyBundle, "cache-aware", "spec.routing.scorers[1].name", "SimulatedCluster llama8b-h100 disables prefix caching (spec.engine.enablePrefixCaching: false)"},
		{"bad distribution", func(in *Inputs) {
			w := in.Workload.DeepCopy()
			w.Spec.Clients[0].InputDistribution.Type = "zipf"
			in.Workload = w
		}, ReasonInvalidSpec, KindWorkloadSpec, "chat-and-batch", "spec", "zipf"},
		{"unknown objective", func(in *Inputs) {
			in.Spec.Objectives = []blisv1alpha1.Objective{{Name: "ttftP999Ms", Direction: "minimize", Weight: 1}}
		}, ReasonInvalidSpec, KindEvaluation, "cache-aware-chat", "spec.objectives[0].name", "valid: injectedRequests, completedRequests"},
		{"unknown class objective", func(in *Inputs) {
			in.Spec.Objectives = []blisv1alpha1.Objective{{Name: "ttftP99Ms/gold", Direction: "minimize", Weight: 1}}
		}, ReasonInvalidSpec, KindEvaluation, "cache-aware-chat", "spec.objectives[0].name", `unknown SLO class "gold"`},
		{"bad direction", func(in *Inputs) {
			in.Spec.Objectives = []blisv1alpha1.Objective{{Name: "ttftP99Ms", Direction: "down", Weight: 1}}
		}, ReasonInvalidSpec, KindEvaluation, "cache-aware-chat", "spec.objectives[0].direction", "minimize or maximize"},
		{"bad fitness weight", func(in *Inputs) { in.Spec.FitnessWeights = map[string]float64{"p99_tft": 1} },
			ReasonInvalidSpec, KindEvaluation, "cache-aware-chat", "spec.fitnessWeights", "valid keys"},
		{"two workload sources", func(in *Inputs) { w := in.Workload.DeepCopy(); w.Spec.Scenario = "bursty-traffic"; in.Workload = w },
			ReasonInvalidSpec, KindWorkloadSpec, "chat-and-batch", "spec", "exactly one request source"},
		{"empirical file", func(in *Inputs) {
			w := in.Workload.DeepCopy()
			w.Spec.Clients[1].OutputDistribution = &blisv1alpha1.Distribution{Type: "empirical", File: "lengths.csv"}
			in.Workload = w
		}, ReasonUnsupported, KindWorkloadSpec, "chat-and-batch", "spec.clients[1].outputDistribution.file", "self-contained"},
		{"hardware override under blackbox", func(in *Inputs) {
			c := in.Cluster.DeepCopy()
			bw := 4.0
			c.Spec.Hardware = &blisv1alpha1.HardwareSpec{BwPeakTBs: &bw}
			c.Spec.LatencyModel.Backend = blisv1alpha1.LatencyBlackbox
			in.Cluster = c
		}, ReasonUnsupported, KindSimulatedCluster, "llama8b-h100", "spec.hardware.bwPeakTBs", "fitted per catalog GPU"},
		{"periodic signal without interval", func(in *Inputs) {
			c := in.Cluster.DeepCopy()
			c.Spec.Observability.KVUtilization.IntervalUs = nil
			in.Cluster = c
		}, ReasonInvalidSpec, KindSimulatedCluster, "llama8b-h100", "spec.observability", "interval_us > 0"},
		{"duplicate seed", func(in *Inputs) { in.Spec.Seeds = []int64{1, 1} },
			ReasonInvalidSpec, KindEvaluation, "cache-aware-chat", "spec.seeds[1]", "given twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := baseInputs(t)
			tc.mutate(&in)
			_, err := Resolve(in)
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("Resolve error = %v, want *Error", err)
			}
			if re.Reason != tc.reason || re.Kind != tc.kind || re.Name != tc.objName || re.Field != tc.field {
				t.Errorf("error = {%s %s %s %s}, want {%s %s %s %s}: %v", re.Reason, re.Kind, re.Name, re.Field,
					tc.reason, tc.kind, tc.objName, tc.field, err)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("error %q does not mention %q", err, tc.text)
			}
			if !strings.HasPrefix(err.Error(), tc.kind+" "+tc.objName+": "+tc.field+": ") {
				t.Errorf("error %q does not start with the kind, name and field", err)
			}
		})
	}
}

func TestResolveConfigMapReferences(t *testing.T) {
	m := loadSamples(t)
	// The PolicyBundle sample that keeps its BLIS file in a ConfigMap.
	ev := blisv1alpha1.Evaluation{Spec: blisv1alpha1.EvaluationSpec{
		ClusterRef:  &blisv1alpha1.LocalObjectReference{Name: "llama8b-h100"},
		PolicyRef:   &blisv1alpha1.LocalObjectReference{Name: "weighted-routing-from-file"},
		WorkloadRef: &blisv1alpha1.LocalObjectReference{Name: "azure-code-replay"},
	}}
	ev.Name = "from-configmaps"
	in, err := m.Inputs(ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := mustResolve(t, in)
	if !strings.Contains(r.Document.Policy, "precise-prefix-cache") {
		t.Errorf("the policy from the ConfigMap is not in the document:\n%s", r.Document.Policy)
	}
	if tr := r.Document.Workload.Trace; tr == nil || tr.Format != "azure" || !strings.Contains(tr.Data, "ContextTokens") || tr.Speedup != 2 {
		t.Errorf("the trace from the ConfigMap is not inline in the document: %+v", tr)
	}

	// A missing key names the referencing object and the key field.
	delete(in.ConfigMaps["blis-weighted-routing"], "policy.yaml")
	_, err = Resolve(in)
	var re *Error
	if !errors.As(err, &re) || re.Reason != ReasonReferenceNotFound || re.Kind != KindPolicyBundle ||
		re.Name != "weighted-routing-from-file" || re.Field != "spec.blisConfigMapRef.key" {
		t.Errorf("missing ConfigMap key: %v (%+v)", err, re)
	}
	// A missing ConfigMap names the ConfigMap field.
	delete(in.ConfigMaps, "azure-code-trace-sample")
	in.ConfigMaps["blis-weighted-routing"] = map[string]string{"policy.yaml": "routing: {policy: round-robin}\n"}
	_, err = Resolve(in)
	if !errors.As(err, &re) || re.Kind != KindWorkloadSpec || re.Field != "spec.trace.configMapRef.name" {
		t.Errorf("missing ConfigMap: %v (%+v)", err, re)
	}
	// An invalid BLIS file names the ConfigMap and its key.
	in.ConfigMaps["blis-weighted-routing"] = map[string]string{"policy.yaml": "routing: {policy: weighted, scorers: [{name: nope, weight: 1}]}\n"}
	in.ConfigMaps["azure-code-trace-sample"] = map[string]string{"trace.csv": "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"}
	_, err = Resolve(in)
	if !errors.As(err, &re) || re.Kind != KindConfigMap || re.Name != "blis-weighted-routing" || re.Field != "data.policy.yaml" {
		t.Errorf("invalid BLIS policy file: %v (%+v)", err, re)
	}
}

func TestHashStableAndSensitive(t *testing.T) {
	base := mustResolve(t, baseInputs(t))
	again := mustResolve(t, baseInputs(t))
	if base.Hash != again.Hash || string(base.Canonical) != string(again.Canonical) {
		t.Fatalf("same inputs, different documents:\n%s\n%s", base.Canonical, again.Canonical)
	}
	if len(base.Hash) != 64 {
		t.Errorf("hash %q is not a hex SHA-256", base.Hash)
	}
	// The document round-trips through its canonical form with the same hash.
	doc, _, err := ParseEnvelope(mustEnvelope(t, base))
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(doc)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Hash != base.Hash {
		t.Errorf("reloaded document hash %s, want %s", loaded.Hash, base.Hash)
	}

	changes := map[string]func(in *Inputs){
		"replicas": func(in *Inputs) { c := in.Cluster.DeepCopy(); c.Spec.Pools[0].Replicas++; in.Cluster = c },
		"gpu memory": func(in *Inputs) {
			c := in.Cluster.DeepCopy()
			u := 0.8
			c.Spec.Engine.GpuMemoryUtilization = &u
			in.Cluster = c
		},
		"routing latency": func(in *Inputs) { c := in.Cluster.DeepCopy(); c.Spec.ControlPlane.RoutingLatencyUs++; in.Cluster = c },
		"staleness": func(in *Inputs) {
			c := in.Cluster.DeepCopy()
			iv := int64(20000)
			c.Spec.Observability.KVUtilization.IntervalUs = &iv
			in.Cluster = c
		},
		"scorer weight": func(in *Inputs) { p := in.Policy.DeepCopy(); p.Spec.Routing.Scorers[0].Weight = 2.5; in.Policy = p },
		"scheduler":     func(in *Inputs) { p := in.Policy.DeepCopy(); p.Spec.Scheduler = "sjf"; in.Policy = p },
		"rate":          func(in *Inputs) { w := in.Workload.DeepCopy(); r := 41.0; w.Spec.AggregateRate = &r; in.Workload = w },
		"slo target": func(in *Inputs) {
			w := in.Workload.DeepCopy()
			w.Spec.GoodputSloTargets["critical"] = blisv1alpha1.SLODimTargets{TTFT: 201, E2E: 5000}
			in.Workload = w
		},
		"seeds":            func(in *Inputs) { in.Spec.Seeds = []int64{1, 2, 4} },
		"num requests":     func(in *Inputs) { n := int64(101); in.Spec.NumRequests = &n },
		"horizon":          func(in *Inputs) { h := int64(1000000); in.Spec.Horizon = &h },
		"objective weight": func(in *Inputs) { in.Spec.Objectives[0].Weight = 0.6 },
		"fitness weights":  func(in *Inputs) { in.Spec.FitnessWeights = map[string]float64{"throughput": 1} },
		"trace level":      func(in *Inputs) { in.Spec.Trace.Level = blisv1alpha1.TraceNone },
		"summary strategy": func(in *Inputs) { in.Spec.Trace.SummaryStrategy = "decision_audit" },
	}
	seen := map[string]string{base.Hash: "base"}
	for name, mutate := range changes {
		in := baseInputs(t)
		mutate(&in)
		r := mustResolve(t, in)
		if prev, dup := seen[r.Hash]; dup {
			t.Errorf("change %q gives the same hash as %q", name, prev)
		}
		seen[r.Hash] = name
	}
	// Names and settings the engine does not read leave the hash alone.
	in := baseInputs(t)
	c := in.Cluster.DeepCopy()
	c.Name = "renamed"
	c.Labels = map[string]string{"team": "x"}
	in.Cluster = c
	in.Spec.ClusterRef = &blisv1alpha1.LocalObjectReference{Name: "renamed"}
	in.Name = "another-evaluation"
	if r := mustResolve(t, in); r.Hash != base.Hash {
		t.Errorf("renaming objects changed the hash")
	}
}

func mustEnvelope(t *testing.T, r *Resolved) []byte {
	t.Helper()
	env, err := r.MarshalEnvelope()
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestEmbeddedDefaultMatchesSample(t *testing.T) {
	sample, err := os.ReadFile(filepath.Join(samplesDir, DefaultManifestName))
	if err != nil {
		t.Fatal(err)
	}
	if string(sample) != string(DefaultManifests()) {
		t.Errorf("internal/evaluation/embedded/%s differs from config/samples/%s; copy the sample again", DefaultManifestName, DefaultManifestName)
	}
}

// TestAPIServerDefaultsDoNotChangeHash checks that manifests read without an API server (the
// CLI) and the same objects after the CRD defaults were applied (the operator) resolve to the
// same document.
func TestAPIServerDefaultsDoNotChangeHash(t *testing.T) {
	in := baseInputs(t)
	c := in.Cluster.DeepCopy()
	c.Spec.Engine.PipelineParallelSize, c.Spec.Engine.DataParallelSize, c.Spec.Engine.BlockSize = 0, 0, 0
	c.Spec.LatencyModel.Backend = ""
	c.Spec.Pools[0].Role = ""
	in.Cluster = c
	bare := mustResolve(t, in)

	d := c.DeepCopy()
	d.Spec.Engine.PipelineParallelSize, d.Spec.Engine.DataParallelSize, d.Spec.Engine.BlockSize = 1, 1, 16
	d.Spec.LatencyModel.Backend = blisv1alpha1.LatencyTrainedPhysics
	d.Spec.Pools[0].Role = blisv1alpha1.PoolMonolithic
	in.Cluster = d
	if defaulted := mustResolve(t, in); defaulted.Hash != bare.Hash {
		t.Errorf("defaulted objects hash differently:\n%s\n%s", bare.Canonical, defaulted.Canonical)
	}

	// An objective without a weight gets the CRD default 1; an explicit 0 stays 0.
	m := loadSamples(t)
	ev, err := m.Select("inline-candidate-0001", false)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Spec.Objectives[0].Weight != 1 {
		t.Errorf("objective weight %v, want the default 1", ev.Spec.Objectives[0].Weight)
	}
	var z Manifests
	if err := z.Add("z.yaml", []byte("apiVersion: blis.inference-sim.io/v1alpha1\nkind: Evaluation\nmetadata: {name: z}\nspec:\n  objectives:\n  - {name: ttftP99Ms, direction: minimize, weight: 0}\n")); err != nil {
		t.Fatal(err)
	}
	if z.Evaluations[0].Spec.Objectives[0].Weight != 0 {
		t.Errorf("an explicit weight 0 was replaced")
	}
	in = baseInputs(t)
	in.Spec.Objectives = []blisv1alpha1.Objective{{Name: "ttftP99Ms", Direction: "minimize"}}
	var re *Error
	if _, err := Resolve(in); !errors.As(err, &re) || re.Field != "spec.objectives" {
		t.Errorf("objectives without a positive weight: %v", err)
	}
}

func TestResolveBLISWorkloadFromConfigMap(t *testing.T) {
	data, err := os.ReadFile("../blisfile/testdata/examples/multiturn-chat-demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in := baseInputs(t)
	w := in.Workload.DeepCopy()
	w.Spec = blisv1alpha1.WorkloadSpecSpec{BlisConfigMapRef: &blisv1alpha1.ConfigMapKeyReference{Name: "chat-file", Key: "workload.yaml"}}
	in.Workload = w
	in.Spec.Objectives = []blisv1alpha1.Objective{{Name: "e2eP99Ms", Direction: "minimize", Weight: 1}}
	in.ConfigMaps["chat-file"] = map[string]string{"workload.yaml": string(data)}
	r := mustResolve(t, in)
	if !strings.Contains(r.Document.Workload.Spec, "multi_turn") {
		t.Errorf("the BLIS file is not in the document:\n%s", r.Document.Workload.Spec)
	}
	// A broken file is reported against the ConfigMap key.
	in.ConfigMaps["chat-file"] = map[string]string{"workload.yaml": "version: \"2\"\nclients:\n- id: a\n  rate_fraction: 1\n  arrival: {process: zigzag}\n  input_distribution: {type: constant, params: {value: 10}}\n  output_distribution: {type: constant, params: {value: 10}}\naggregate_rate: 1\n"}
	_, err = Resolve(in)
	var re *Error
	if !errors.As(err, &re) || re.Kind != KindConfigMap || re.Name != "chat-file" || re.Field != "data.workload.yaml" || !strings.Contains(err.Error(), "zigzag") {
		t.Errorf("broken BLIS workload: %v", err)
	}
}

// spec.hardware replaces the cluster GPU's figures: 10 GiB more memory per GPU adds the KV
// blocks it holds, and the document (so its hash) carries the overrides.
func TestResolveHardwareOverrides(t *testing.T) {
	in := baseInputs(t)
	base := mustResolve(t, in)
	if base.Document.Cluster.Instance.HardwareOverrides != nil {
		t.Fatal("a cluster without spec.hardware has overrides in its document")
	}
	br, err := model.Resolve(base.Document.Cluster.Instance)
	if err != nil {
		t.Fatal(err)
	}
	c := in.Cluster.DeepCopy()
	mem := br.Hardware.MemoryGiB + 10
	c.Spec.Hardware = &blisv1alpha1.HardwareSpec{MemoryGiB: &mem}
	in.Cluster = c
	r := mustResolve(t, in)
	or, err := model.Resolve(r.Document.Cluster.Instance)
	if err != nil {
		t.Fatal(err)
	}
	gpus := int64(or.Engine.TensorParallelSize * or.Engine.PipelineParallelSize)
	// 9 GiB per GPU at utilisation 0.9, over blocks of KVCapacity.BlockBytes bytes.
	want := gpus * 9 << 30 / or.KVCapacity.BlockBytes
	if d := or.Engine.TotalKVBlocks - br.Engine.TotalKVBlocks; d < want-1 || d > want+1 {
		t.Fatalf("10 GiB more memory adds %d KV blocks, want %d", d, want)
	}
	if base.Hash == r.Hash {
		t.Fatal("the overrides do not change the document hash")
	}
}

// Under P/D, spec.hardware overrides the cluster's GPU: a pool running that GPU (its own
// engine, no gpu) keeps the overrides, a pool naming another GPU runs it as catalogued.
func TestResolveHardwareOverridesPools(t *testing.T) {
	in := baseInputs(t)
	c := in.Cluster.DeepCopy()
	mem := 90.0
	c.Spec.Hardware = &blisv1alpha1.HardwareSpec{MemoryGiB: &mem}
	c.Spec.Pools = []blisv1alpha1.ReplicaPoolSpec{
		{Name: "p", Role: blisv1alpha1.PoolPrefill, Replicas: 1, Engine: &blisv1alpha1.PoolEngineSpec{TensorParallelSize: 2}},
		{Name: "d", Role: blisv1alpha1.PoolDecode, Replicas: 1, GPU: "A100-80"},
	}
	in.Cluster = c
	pd := mustResolve(t, in).Document.Cluster.PD
	if pd.Prefill == nil || pd.Prefill.HardwareOverrides == nil || *pd.Prefill.HardwareOverrides.MemoryGiB != mem {
		t.Errorf("prefill pool on the cluster's GPU lost the overrides: %+v", pd.Prefill)
	}
	if pd.Decode == nil || pd.Decode.GPU != "A100-80" || pd.Decode.HardwareOverrides != nil {
		t.Errorf("decode pool on another GPU keeps the overrides: %+v", pd.Decode)
	}
}
