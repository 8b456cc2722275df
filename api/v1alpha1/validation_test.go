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

package v1alpha1_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/blisfile"
	"github.com/inference-sim/blis-operator/internal/testenv"
)

// env is the package's control plane: a real etcd and kube-apiserver with the CRDs of
// config/crd/bases installed.
var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.RunMain(m, &env))
}

// newNamespace creates a fresh namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "blis-test-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// readDocs decodes every YAML document of a file.
func readDocs(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("%s: %v", path, err)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

func TestSamplesAccepted(t *testing.T) {
	ns := newNamespace(t)
	files, err := filepath.Glob(filepath.Join(env.RepoRoot, "config", "samples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	kustomization, err := os.ReadFile(filepath.Join(env.RepoRoot, "config", "samples", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, f := range files {
		base := filepath.Base(f)
		if base == "kustomization.yaml" {
			continue
		}
		if !strings.Contains(string(kustomization), "- "+base+"\n") {
			t.Errorf("%s is not listed in config/samples/kustomization.yaml", base)
		}
		for _, u := range readDocs(t, f) {
			u.SetNamespace(ns)
			if err := env.Client.Create(context.Background(), u); err != nil {
				t.Errorf("%s: %s %s rejected: %v", base, u.GetKind(), u.GetName(), err)
				continue
			}
			kinds[u.GetKind()]++
		}
	}
	for _, k := range []string{"SimulatedCluster", "PolicyBundle", "WorkloadSpec", "Evaluation"} {
		if kinds[k] == 0 {
			t.Errorf("no %s sample", k)
		}
	}
}

func TestConvertedBLISExamplesAccepted(t *testing.T) {
	ns := newNamespace(t)
	files, err := filepath.Glob(filepath.Join(env.RepoRoot, "internal", "blisfile", "testdata", "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 9 {
		t.Fatalf("found %d BLIS examples, expected 9", len(files))
	}
	complete, err := filepath.Glob(filepath.Join(env.RepoRoot, "internal", "blisfile", "testdata", "complete", "*.yaml"))
	if err != nil || len(complete) != 2 {
		t.Fatalf("expected the 2 files using every BLIS key, found %v (%v)", complete, err)
	}
	files = append(files, complete...)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := blisfile.Convert(data, blisfile.NameFromPath(f), ns)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if err := env.Client.Create(context.Background(), obj.(client.Object)); err != nil {
			t.Errorf("%s: converted resource rejected: %v", filepath.Base(f), err)
		}
	}
}

// base manifests that are valid; each invalid case breaks one thing.
const (
	baseCluster = `
apiVersion: blis.inference-sim.io/v1alpha1
kind: SimulatedCluster
metadata: {name: c}
spec:
  model: {name: m}
  gpu: H100
  pools: [{name: main, replicas: 2}]
`
	basePolicy = `
apiVersion: blis.inference-sim.io/v1alpha1
kind: PolicyBundle
metadata: {name: p}
spec:
  routing:
    policy: weighted
    scorers: [{name: queue-scorer, weight: 1}]
`
	baseWorkload = `
apiVersion: blis.inference-sim.io/v1alpha1
kind: WorkloadSpec
metadata: {name: w}
spec:
  version: "2"
  aggregateRate: 10
  clients:
  - id: a
    rateFraction: 1
    arrival: {process: poisson}
    inputDistribution: {type: constant, params: {value: 10}}
    outputDistribution: {type: constant, params: {value: 10}}
`
	baseEvaluation = `
apiVersion: blis.inference-sim.io/v1alpha1
kind: Evaluation
metadata: {name: e}
spec:
  clusterRef: {name: c}
  policyRef: {name: p}
  workloadRef: {name: w}
`
	hfConfig = `{numHiddenLayers: 2, hiddenSize: 64, intermediateSize: 128, numAttentionHeads: 4, numKeyValueHeads: 8}`
)

// mustYAML parses a YAML snippet into generic values.
func mustYAML(s string) any {
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	return v
}

var segment = regexp.MustCompile(`^([A-Za-z0-9]+)(?:\[(\d+)\])?$`)

// set assigns value (a YAML snippet) at a dotted path such as spec.pools[0].replicas,
// creating maps on the way; a nil value deletes the key.
func set(obj map[string]any, path string, value *string) {
	parts := strings.Split(path, ".")
	cur := obj
	for i, p := range parts {
		m := segment.FindStringSubmatch(p)
		if m == nil {
			panic("bad path " + path)
		}
		last := i == len(parts)-1
		if m[2] == "" {
			if last {
				if value == nil {
					delete(cur, m[1])
				} else {
					cur[m[1]] = mustYAML(*value)
				}
				return
			}
			next, ok := cur[m[1]].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[m[1]] = next
			}
			cur = next
			continue
		}
		idx, _ := strconv.Atoi(m[2])
		list := cur[m[1]].([]any)
		if last {
			list[idx] = mustYAML(*value)
			return
		}
		cur = list[idx].(map[string]any)
	}
}

type edit struct {
	path  string
	value *string // nil deletes
}

func to(path, value string) edit { return edit{path, &value} }
func del(path string) edit       { return edit{path, nil} }

type invalidCase struct {
	name      string
	base      string
	edits     []edit
	wantField string // the field path the API server must name
	wantMsg   string // a fragment of the rule's message
}

var invalidCases = []invalidCase{
	// SimulatedCluster
	{"cluster: KV heads above attention heads", baseCluster, []edit{to("spec.model.config", hfConfig)},
		"spec.model.config.numKeyValueHeads", "must not exceed numAttentionHeads"},
	{"cluster: heads not a multiple of KV heads", baseCluster, []edit{to("spec.model.config", hfConfig), to("spec.model.config.numKeyValueHeads", "3")},
		"spec.model.config.numKeyValueHeads", "multiple of numKeyValueHeads"},
	{"cluster: experts per token above experts", baseCluster, []edit{to("spec.model.config", hfConfig), to("spec.model.config.numKeyValueHeads", "2"), to("spec.model.config.numLocalExperts", "2"), to("spec.model.config.numExpertsPerTok", "4")},
		"spec.model.config.numExpertsPerTok", "must not exceed"},
	{"cluster: tensor parallelism 0", baseCluster, []edit{to("spec.engine.tensorParallelSize", "0")},
		"spec.engine.tensorParallelSize", "greater than or equal to 1"},
	{"cluster: gpu memory utilisation above 1", baseCluster, []edit{to("spec.engine.gpuMemoryUtilization", "1.5")},
		"spec.engine.gpuMemoryUtilization", "less than or equal to 1"},
	{"cluster: both memory utilisation and KV blocks", baseCluster, []edit{to("spec.engine.gpuMemoryUtilization", "0.9"), to("spec.engine.totalKVBlocks", "1000")},
		"spec.engine.totalKVBlocks", "not both"},
	{"cluster: block size not a supported value", baseCluster, []edit{to("spec.engine.blockSize", "12")},
		"spec.engine.blockSize", "Unsupported value"},
	{"cluster: replicas above maxReplicas", baseCluster, []edit{to("spec.pools[0]", "{name: main, replicas: 5, maxReplicas: 3}")},
		"spec.pools[0].maxReplicas", "must not exceed maxReplicas"},
	{"cluster: monolithic and prefill pools mixed", baseCluster, []edit{to("spec.pools", "[{name: main, replicas: 1}, {name: pf, role: prefill, replicas: 1}, {name: dc, role: decode, replicas: 1}]")},
		"spec.pools", "cannot be mixed"},
	{"cluster: prefill pool without decode pool", baseCluster, []edit{to("spec.pools", "[{name: pf, role: prefill, replicas: 1}]")},
		"spec.pools", "at least one decode pool"},
	{"cluster: KV transfer on a monolithic cluster", baseCluster, []edit{to("spec.kvTransfer", "{bandwidthGBps: 10}")},
		"spec.kvTransfer", "only to a disaggregated cluster"},
	{"cluster: unknown latency backend", baseCluster, []edit{to("spec.latencyModel.backend", "magic")},
		"spec.latencyModel.backend", "Unsupported value"},
	{"cluster: blackbox with two beta coefficients", baseCluster, []edit{to("spec.latencyModel", "{backend: blackbox, betaCoeffs: [1.5, 2]}")},
		"spec.latencyModel.betaCoeffs", "exactly 3 beta coefficients"},
	{"cluster: autoscaling min above max", baseCluster, []edit{to("spec.autoscaling", "{minReplicas: 5, maxReplicas: 2}")},
		"spec.autoscaling.minReplicas", "must not exceed maxReplicas"},
	{"cluster: periodic refresh without interval", baseCluster, []edit{to("spec.observability.kvUtilization", "{mode: periodic}")},
		"spec.observability.kvUtilization.intervalUs", "needs intervalUs > 0"},
	{"cluster: no pools", baseCluster, []edit{to("spec.pools", "[]")},
		"spec.pools", "at least 1 items"},
	{"cluster: duplicate pool names", baseCluster, []edit{to("spec.pools", "[{name: a, replicas: 1}, {name: a, replicas: 2}]")},
		"spec.pools[1]", "Duplicate value"},
	{"cluster: pool overrides on a monolithic pool", baseCluster, []edit{to("spec.pools", "[{name: a, replicas: 1, gpu: A100-80}]")},
		"spec.pools[0].role", "apply only to prefill and decode pools"},
	{"cluster: pool with both KV sizings", baseCluster, []edit{to("spec.pools", "[{name: p, role: prefill, replicas: 1, engine: {gpuMemoryUtilization: 0.8, totalKVBlocks: 100}}, {name: d, role: decode, replicas: 1}]")},
		"spec.pools[0].engine.totalKVBlocks", "not both"},
	{"cluster: missing model", baseCluster, []edit{del("spec.model")},
		"spec.model", "Required value"},
	{"cluster: unknown weight dtype", baseCluster, []edit{to("spec.model.config", hfConfig), to("spec.model.config.numKeyValueHeads", "2"), to("spec.model.config.torchDtype", "int3")},
		"spec.model.config.torchDtype", "Unsupported value"},

	// PolicyBundle
	{"policy: negative scorer weight", basePolicy, []edit{to("spec.routing.scorers[0].weight", "-0.5")},
		"spec.routing.scorers[0].weight", "greater than or equal to 0"},
	{"policy: unknown scorer", basePolicy, []edit{to("spec.routing.scorers[0].name", "magic-scorer")},
		"spec.routing.scorers[0].name", "Unsupported value"},
	{"policy: duplicate scorer", basePolicy, []edit{to("spec.routing.scorers", "[{name: queue-depth, weight: 1}, {name: queue-depth, weight: 2}]")},
		"spec.routing.scorers[1]", "Duplicate value"},
	{"policy: template and CEL in one stage", basePolicy, []edit{to("spec.admission", "{policy: always-admit, cel: 'true'}")},
		"spec.admission", "at most one of policy, decisionTree and cel"},
	{"policy: unknown admission template", basePolicy, []edit{to("spec.admission.policy", "admit-everything")},
		"spec.admission.policy", "Unsupported value"},
	{"policy: scorers with round-robin", basePolicy, []edit{to("spec.routing.policy", "round-robin")},
		"spec.routing.scorers", "only to the weighted"},
	{"policy: tenant budget above 1", basePolicy, []edit{to("spec.tenantBudgets", "{team-a: 1.2}")},
		"spec.tenantBudgets", "must be in [0, 1]"},
	{"policy: decision tree edge back to an earlier node", basePolicy, []edit{to("spec.admission.decisionTree.nodes", `[
		{id: 0, condition: {observable: request.inputTokens, operator: ">", threshold: 1000}, trueNode: 2, falseNode: 3},
		{id: 1, action: {decision: admit}},
		{id: 2, condition: {observable: global.inFlight, operator: ">", threshold: 10}, trueNode: 1, falseNode: 3},
		{id: 3, action: {decision: reject}}]`)},
		"spec.admission.decisionTree.nodes[2].trueNode", "greater than the node's own id"},
	{"policy: decision tree child that does not exist", basePolicy, []edit{to("spec.admission.decisionTree.nodes", `[
		{id: 0, condition: {observable: request.inputTokens, operator: ">", threshold: 1000}, trueNode: 1, falseNode: 9},
		{id: 1, action: {decision: admit}}]`)},
		"spec.admission.decisionTree.nodes", "falseNode must be the id of a node"},
	{"policy: decision tree leaf with a condition", basePolicy, []edit{to("spec.priority.decisionTree.nodes", `[
		{id: 0, condition: {observable: request.inputTokens, operator: ">", threshold: 1}, action: {decision: score, value: 3}}]`)},
		"spec.priority.decisionTree.nodes[0]", "either a condition (inner node) or an action (leaf)"},
	{"policy: unknown observable", basePolicy, []edit{to("spec.admission.decisionTree.nodes", `[
		{id: 0, condition: {observable: mood, operator: ">", threshold: 1}, trueNode: 1, falseNode: 2},
		{id: 1, action: {decision: admit}}, {id: 2, action: {decision: reject}}]`)},
		"spec.admission.decisionTree.nodes[0].condition.observable", "should match"},
	{"policy: string comparison with <", basePolicy, []edit{to("spec.admission.decisionTree.nodes", `[
		{id: 0, condition: {observable: request.sloClass, operator: "<", value: critical}, trueNode: 1, falseNode: 2},
		{id: 1, action: {decision: admit}}, {id: 2, action: {decision: reject}}]`)},
		"spec.admission.decisionTree.nodes[0].condition.operator", "only == and !="},
	{"policy: delay leaf without a delay", basePolicy, []edit{to("spec.admission.decisionTree.nodes", `[{id: 0, action: {decision: delay}}]`)},
		"spec.admission.decisionTree.nodes[0].action.value", "delay needs value"},
	{"policy: admission tree leaf that scores", basePolicy, []edit{to("spec.admission.decisionTree.nodes", `[{id: 0, action: {decision: score, value: 1}}]`)},
		"spec.admission.decisionTree", "admission tree leaves decide admit, reject or delay"},
	{"policy: routing tree leaf that admits", basePolicy, []edit{to("spec.routing", `{decisionTree: {nodes: [{id: 0, action: {decision: admit}}]}}`)},
		"spec.routing.decisionTree", "decide score"},
	{"policy: ConfigMap reference and typed fields", basePolicy, []edit{to("spec.blisConfigMapRef", "{name: cm, key: policy.yaml}")},
		"spec.blisConfigMapRef", "mutually exclusive"},
	{"policy: node pool min above max", basePolicy, []edit{to("spec.nodePools", "[{name: a, gpuType: H100, gpusPerNode: 8, minNodes: 3, maxNodes: 2, initialNodes: 2}]")},
		"spec.nodePools[0].minNodes", "must not exceed maxNodes"},
	{"policy: GAIE KV threshold above 1", basePolicy, []edit{to("spec.admission", "{policy: gaie-legacy, gaieKvThreshold: 1.5}")},
		"spec.admission.gaieKvThreshold", "less than or equal to 1"},
	{"policy: empty CEL expression", basePolicy, []edit{to("spec.priority.cel", `""`)},
		"spec.priority.cel", "at least 1 chars"},
	{"policy: unknown scheduler", basePolicy, []edit{to("spec.scheduler", "lifo")},
		"spec.scheduler", "Unsupported value"},
	{"policy: parameters without a template", basePolicy, []edit{to("spec.priority", "{parameters: {critical_score: 10}}")},
		"spec.priority", "need policy"},

	// WorkloadSpec
	{"workload: no request source", baseWorkload, []edit{del("spec.clients")},
		"spec", "exactly one request source"},
	{"workload: clients and a trace", baseWorkload, []edit{to("spec.trace", "{format: azure, path: /traces/a.csv}")},
		"spec", "exactly one request source"},
	{"workload: blis-v2 trace without its header", baseWorkload, []edit{del("spec.clients"), to("spec.trace", "{format: blis-v2, path: /traces/data.csv}")},
		"spec.trace", "needs its header file"},
	{"workload: distribution min above max", baseWorkload, []edit{to("spec.clients[0].inputDistribution", "{type: gaussian, params: {mean: 10, stdDev: 1, min: 100, max: 10}}")},
		"spec.clients[0].inputDistribution.params.min", "min must not exceed max"},
	{"workload: gaussian without stdDev", baseWorkload, []edit{to("spec.clients[0].inputDistribution", "{type: gaussian, params: {mean: 10}}")},
		"spec.clients[0].inputDistribution.params", "gaussian needs params.mean and params.stdDev"},
	{"workload: unknown arrival process", baseWorkload, []edit{to("spec.clients[0].arrival.process", "lumpy")},
		"spec.clients[0].arrival.process", "Unsupported value"},
	{"workload: negative aggregate rate", baseWorkload, []edit{to("spec.aggregateRate", "-1")},
		"spec.aggregateRate", "greater than or equal to 0"},
	{"workload: bursty parameters on a poisson process", baseWorkload, []edit{to("spec.clients[0].arrival", "{process: poisson, spikeMultiplier: 5}")},
		"spec.clients[0].arrival", "apply to the bursty process"},
	{"workload: scenario with its own rate", baseWorkload, []edit{del("spec.clients"), del("spec.version"), to("spec.scenario", "bursty-traffic")},
		"spec.scenario", "only seed, horizon and numRequests may override it"},
	{"workload: absolute mode without trace rates", baseWorkload, []edit{to("spec.aggregateRate", "0")},
		"spec.clients", "needs lifecycle windows with traceRate"},
	{"workload: unknown SLO class", baseWorkload, []edit{to("spec.clients[0].sloClass", "vip")},
		"spec.clients[0].sloClass", "Unsupported value"},
	{"workload: activity window ends before it starts", baseWorkload, []edit{to("spec.clients[0].lifecycle", "{windows: [{startUs: 100, endUs: 50}]}")},
		"spec.clients[0].lifecycle.windows[0].endUs", "startUs must be before endUs"},
	{"workload: ConfigMap reference with other fields", baseWorkload, []edit{del("spec.clients"), to("spec.blisConfigMapRef", "{name: cm, key: workload.yaml}")},
		"spec.blisConfigMapRef", "no other field may be set"},
	{"workload: diurnal peak hour 24", baseWorkload, []edit{del("spec.clients"), to("spec.cohorts", `[{id: c, population: 3, rateFraction: 1, arrival: {process: poisson},
		inputDistribution: {type: constant, params: {value: 1}}, outputDistribution: {type: constant, params: {value: 1}}, diurnal: {peakHour: 24, peakToTroughRatio: 2}}]`)},
		"spec.cohorts[0].diurnal.peakHour", "less than or equal to 23"},
	{"workload: agentic step uses an undefined tool", baseWorkload, []edit{to("spec.category", "agentic"), to("spec.clients[0]", `{id: a, rateFraction: 1, arrival: {process: poisson}, agentic: {steps: [
		{id: plan, type: llm_call, inputDistribution: {type: constant, params: {value: 1}}, outputDistribution: {type: constant, params: {value: 1}}},
		{id: search, type: tool_call, tool: web_search, dependsOn: [plan]}]}}`)},
		"spec.clients[0].agentic.tools", "every tool must be defined in tools"},
	{"workload: agentic step depends on an unknown step", baseWorkload, []edit{to("spec.category", "agentic"), to("spec.clients[0]", `{id: a, rateFraction: 1, arrival: {process: poisson}, agentic: {steps: [
		{id: plan, type: llm_call, inputDistribution: {type: constant, params: {value: 1}}, outputDistribution: {type: constant, params: {value: 1}}},
		{id: answer, type: llm_call, dependsOn: [plann], inputDistribution: {type: constant, params: {value: 1}}, outputDistribution: {type: constant, params: {value: 1}}}]}}`)},
		"spec.clients[0].agentic.steps", "dependsOn must name steps"},
	{"workload: agentic fan-out of 1", baseWorkload, []edit{to("spec.category", "agentic"), to("spec.clients[0]", `{id: a, rateFraction: 1, arrival: {process: poisson}, agentic: {steps: [
		{id: plan, type: llm_call, fanOut: 1, inputDistribution: {type: constant, params: {value: 1}}, outputDistribution: {type: constant, params: {value: 1}}}]}}`)},
		"spec.clients[0].agentic.steps[0].fanOut", "greater than or equal to 2"},
	{"workload: agentic together with reasoning", baseWorkload, []edit{to("spec.category", "agentic"), to("spec.clients[0]", `{id: a, rateFraction: 1, arrival: {process: poisson}, reasoning: {multiTurn: {maxRounds: 2}}, agentic: {steps: [
		{id: plan, type: llm_call, inputDistribution: {type: constant, params: {value: 1}}, outputDistribution: {type: constant, params: {value: 1}}}]}}`)},
		"spec.clients[0].agentic", "mutually exclusive with reasoning and multimodal"},
	{"workload: tool call with a token distribution", baseWorkload, []edit{to("spec.category", "agentic"), to("spec.clients[0]", `{id: a, rateFraction: 1, arrival: {process: poisson}, agentic: {steps: [
		{id: plan, type: llm_call, inputDistribution: {type: constant, params: {value: 1}}, outputDistribution: {type: constant, params: {value: 1}}},
		{id: t, type: tool_call, tool: x, dependsOn: [plan], inputDistribution: {type: constant, params: {value: 1}}}],
		tools: {x: {latency: {type: constant, params: {value: 5}}}}}}`)},
		"spec.clients[0].agentic.steps[1].tool", "takes no distributions"},

	// Evaluation
	{"evaluation: both clusterRef and inline cluster", baseEvaluation, []edit{to("spec.cluster", "{model: {name: m}, gpu: H100, pools: [{name: a, replicas: 1}]}")},
		"spec", "exactly one of clusterRef and cluster"},
	{"evaluation: no policy", baseEvaluation, []edit{del("spec.policyRef")},
		"spec", "exactly one of policyRef and policy"},
	{"evaluation: duplicate seeds", baseEvaluation, []edit{to("spec.seeds", "[1, 1]")},
		"spec.seeds[1]", "Duplicate value"},
	{"evaluation: 33 seeds", baseEvaluation, []edit{to("spec.seeds", "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33]")},
		"spec.seeds", "must have at most 32 items"},
	{"evaluation: unknown objective direction", baseEvaluation, []edit{to("spec.objectives", "[{name: ttftP99Ms, direction: lower}]")},
		"spec.objectives[0].direction", "Unsupported value"},
	{"evaluation: negative objective weight", baseEvaluation, []edit{to("spec.objectives", "[{name: ttftP99Ms, direction: minimize, weight: -1}]")},
		"spec.objectives[0].weight", "greater than or equal to 0"},
	{"evaluation: all objective weights zero", baseEvaluation, []edit{to("spec.objectives", "[{name: ttftP99Ms, direction: minimize, weight: 0}]")},
		"spec.objectives", "at least one objective needs a positive weight"},
	{"evaluation: negative fitness weight", baseEvaluation, []edit{to("spec.fitnessWeights", "{p99_ttft: -0.5}")},
		"spec.fitnessWeights", "must be non-negative"},
	{"evaluation: unknown trace level", baseEvaluation, []edit{to("spec.trace.level", "verbose")},
		"spec.trace.level", "Unsupported value"},
	{"evaluation: unknown executor", baseEvaluation, []edit{to("spec.execution.executor", "lambda")},
		"spec.execution.executor", "Unsupported value"},
	{"evaluation: 11 retries", baseEvaluation, []edit{to("spec.execution.maxRetries", "11")},
		"spec.execution.maxRetries", "less than or equal to 10"},
	{"evaluation: invalid inline cluster", baseEvaluation, []edit{del("spec.clusterRef"), to("spec.cluster", "{model: {name: m, config: "+hfConfig+"}, gpu: H100, pools: [{name: a, replicas: 1}]}")},
		"spec.cluster.model.config.numKeyValueHeads", "must not exceed numAttentionHeads"},
	{"evaluation: invalid inline policy", baseEvaluation, []edit{del("spec.policyRef"), to("spec.policy", "{routing: {policy: weighted, scorers: [{name: queue-scorer, weight: -2}]}}")},
		"spec.policy.routing.scorers[0].weight", "greater than or equal to 0"},
}

// TestInvalidManifestsRejected applies every invalid manifest and checks that the API server
// rejects it naming the offending field and the broken rule.
func TestInvalidManifestsRejected(t *testing.T) {
	if len(invalidCases) < 25 {
		t.Fatalf("only %d invalid cases", len(invalidCases))
	}
	ns := newNamespace(t)
	for i, tc := range invalidCases {
		t.Run(tc.name, func(t *testing.T) {
			obj := mustYAML(tc.base).(map[string]any)
			for _, e := range tc.edits {
				set(obj, e.path, e.value)
			}
			u := &unstructured.Unstructured{Object: obj}
			u.SetNamespace(ns)
			u.SetName(fmt.Sprintf("invalid-%d", i))
			err := env.Client.Create(context.Background(), u)
			if err == nil {
				t.Fatalf("accepted; want a rejection naming %s", tc.wantField)
			}
			var status *apierrors.StatusError
			if !errors.As(err, &status) || !apierrors.IsInvalid(err) {
				t.Fatalf("error is not an Invalid status error: %v", err)
			}
			for _, c := range status.ErrStatus.Details.Causes {
				if c.Field == tc.wantField && strings.Contains(c.Message, tc.wantMsg) {
					t.Log(err)
					return
				}
			}
			t.Errorf("no cause names field %q with %q; got: %v", tc.wantField, tc.wantMsg, err)
		})
	}
}

func TestValidBaseManifestsAccepted(t *testing.T) {
	// The invalid cases are meaningful only if their bases are valid.
	ns := newNamespace(t)
	for _, b := range []string{baseCluster, basePolicy, baseWorkload, baseEvaluation} {
		u := &unstructured.Unstructured{Object: mustYAML(b).(map[string]any)}
		u.SetNamespace(ns)
		if err := env.Client.Create(context.Background(), u); err != nil {
			t.Errorf("base %s rejected: %v", u.GetKind(), err)
		}
	}
}

func TestDefaultsApplied(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	sc := &blisv1alpha1.SimulatedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: ns},
		Spec: blisv1alpha1.SimulatedClusterSpec{
			Model: blisv1alpha1.ModelSpec{Name: "m"},
			GPU:   "H100",
			Pools: []blisv1alpha1.ReplicaPoolSpec{{Name: "main", Replicas: 1}},
		},
	}
	if err := env.Client.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	e := sc.Spec.Engine
	if e.TensorParallelSize != 0 || e.PipelineParallelSize != 1 || e.DataParallelSize != 1 || e.BlockSize != 16 {
		t.Errorf("engine defaults = %+v, want TP absent (the model's default), PP=DP=1 and blockSize 16", e)
	}
	if sc.Spec.LatencyModel.Backend != blisv1alpha1.LatencyTrainedPhysics || sc.Spec.Pools[0].Role != blisv1alpha1.PoolMonolithic {
		t.Errorf("latency backend %q, pool role %q", sc.Spec.LatencyModel.Backend, sc.Spec.Pools[0].Role)
	}
	ev := &blisv1alpha1.Evaluation{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: ns},
		Spec: blisv1alpha1.EvaluationSpec{
			ClusterRef:  &blisv1alpha1.LocalObjectReference{Name: "c"},
			PolicyRef:   &blisv1alpha1.LocalObjectReference{Name: "p"},
			WorkloadRef: &blisv1alpha1.LocalObjectReference{Name: "w"},
			Objectives:  []blisv1alpha1.Objective{{Name: "ttftP99Ms", Direction: "minimize"}},
		},
	}
	if err := env.Client.Create(ctx, ev); err != nil {
		t.Fatal(err)
	}
	x := ev.Spec.Execution
	if x.Executor != "" || x.ReuseCachedResult == nil || !*x.ReuseCachedResult || x.MaxRetries == nil || *x.MaxRetries != 2 {
		t.Errorf("execution defaults = %+v", x)
	}
	if ev.Spec.Trace.Level != blisv1alpha1.TraceNone || ev.Spec.Objectives[0].Weight != 1 {
		t.Errorf("trace level %q, objective weight %v", ev.Spec.Trace.Level, ev.Spec.Objectives[0].Weight)
	}

	// A manifest that omits the sections entirely gets the same defaults.
	for _, doc := range []string{baseEvaluation, baseCluster} {
		u := &unstructured.Unstructured{Object: mustYAML(doc).(map[string]any)}
		u.SetNamespace(ns)
		u.SetName("defaults-from-yaml")
		if err := env.Client.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	var fromYAML blisv1alpha1.Evaluation
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "defaults-from-yaml"}, &fromYAML); err != nil {
		t.Fatal(err)
	}
	if x := fromYAML.Spec.Execution; x.Executor != "" || x.ReuseCachedResult == nil || x.MaxRetries == nil || fromYAML.Spec.Trace.Level != blisv1alpha1.TraceNone {
		t.Errorf("defaults of an Evaluation without execution and trace: %+v %+v", x, fromYAML.Spec.Trace)
	}
	var scYAML blisv1alpha1.SimulatedCluster
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "defaults-from-yaml"}, &scYAML); err != nil {
		t.Fatal(err)
	}
	if scYAML.Spec.Engine.BlockSize != 16 || scYAML.Spec.LatencyModel.Backend != blisv1alpha1.LatencyTrainedPhysics {
		t.Errorf("defaults of a SimulatedCluster without engine and latencyModel: %+v %+v", scYAML.Spec.Engine, scYAML.Spec.LatencyModel)
	}
}

// TestEvaluationSpecImmutable checks that the spec cannot change after creation while status
// and metadata can.
func TestEvaluationSpecImmutable(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	ev := &blisv1alpha1.Evaluation{
		ObjectMeta: metav1.ObjectMeta{Name: "immutable", Namespace: ns},
		Spec: blisv1alpha1.EvaluationSpec{
			ClusterRef:  &blisv1alpha1.LocalObjectReference{Name: "c"},
			PolicyRef:   &blisv1alpha1.LocalObjectReference{Name: "p"},
			WorkloadRef: &blisv1alpha1.LocalObjectReference{Name: "w"},
			Seeds:       []int64{1, 2},
		},
	}
	if err := env.Client.Create(ctx, ev); err != nil {
		t.Fatal(err)
	}

	changed := ev.DeepCopy()
	changed.Spec.Seeds = []int64{1, 2, 3}
	err := env.Client.Update(ctx, changed)
	if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec is immutable") {
		t.Fatalf("spec update: err = %v, want an Invalid error saying the spec is immutable", err)
	}
	changed = ev.DeepCopy()
	changed.Spec.PolicyRef = &blisv1alpha1.LocalObjectReference{Name: "other"}
	if err := env.Client.Update(ctx, changed); err == nil || !strings.Contains(err.Error(), "spec is immutable") {
		t.Fatalf("policyRef update: err = %v, want rejection", err)
	}

	labelled := ev.DeepCopy()
	labelled.Labels = map[string]string{"study": "s1"}
	if err := env.Client.Update(ctx, labelled); err != nil {
		t.Fatalf("metadata update rejected: %v", err)
	}

	labelled.Status.Phase = blisv1alpha1.PhaseSucceeded
	labelled.Status.ObservedGeneration = labelled.Generation
	labelled.Status.FitnessScore = ptr.To(blisv1alpha1.RoundMetric(0.8123456789))
	labelled.Status.Metrics = &blisv1alpha1.EvaluationMetrics{TtftP99Ms: 123.456, E2eP99Ms: 2345.5, CompletedRequests: 100}
	if err := env.Client.Status().Update(ctx, labelled); err != nil {
		t.Fatalf("status update rejected: %v", err)
	}
	var got blisv1alpha1.Evaluation
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ev), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != blisv1alpha1.PhaseSucceeded || *got.Status.FitnessScore != 0.812346 || got.Status.Metrics.TtftP99Ms != 123.456 {
		t.Errorf("status after update = %+v", got.Status)
	}
	if len(got.Spec.Seeds) != 2 {
		t.Errorf("seeds changed to %v", got.Spec.Seeds)
	}
}

// maximalStatus fills every bounded field of an Evaluation status to its limit.
func maximalStatus() blisv1alpha1.EvaluationStatus {
	name := func(prefix string, i, n int) string {
		s := fmt.Sprintf("%s%02d", prefix, i)
		return s + strings.Repeat("x", n-len(s))
	}
	now := metav1.Now()
	st := blisv1alpha1.EvaluationStatus{
		ObservedGeneration: 1,
		Phase:              blisv1alpha1.PhaseSucceeded,
		StartTime:          &now,
		CompletionTime:     &now,
		Attempts:           3,
		InputHash:          strings.Repeat("a", 128),
		EngineVersion:      strings.Repeat("v", 128),
		CachedFrom:         strings.Repeat("c", 253),
		FitnessScore:       ptr.To(-123456.789012),
		ParetoRank:         ptr.To(int32(12)),
		TraceSummary:       strings.Repeat("A summary line of the trace with numbers 12345.\n", blisv1alpha1.MaxTraceSummaryLength/48+1)[:blisv1alpha1.MaxTraceSummaryLength],
		ResultRef: &blisv1alpha1.ResultReference{Kind: "ConfigMap", Name: strings.Repeat("r", 253), Key: strings.Repeat("k", 253),
			URI: strings.Repeat("u", 1024), Digest: strings.Repeat("d", 64), SizeBytes: 1 << 40},
		Anomalies: &blisv1alpha1.AnomalyCounters{PriorityInversions: 1 << 40, HolBlockingEvents: 1 << 40, ScaleOscillations: 1 << 40,
			KvThrashingEvents: 1 << 40, RejectedRequests: 1 << 40, DroppedUnservable: 1 << 40, TimedOutRequests: 1 << 40},
	}
	big := -123456.789012
	// Every number of the metrics set to a long value.
	m := &blisv1alpha1.EvaluationMetrics{}
	mv := map[string]any{}
	for _, f := range []string{"injectedRequests", "completedRequests", "rejectedRequests", "stillQueued", "stillRunning",
		"droppedUnservable", "timedOutRequests", "lengthCappedRequests", "preemptionCount", "kvAllocationFailures",
		"totalInputTokens", "totalOutputTokens"} {
		mv[f] = int64(1) << 50
	}
	for _, f := range []string{"vllmEstimatedDurationS", "responsesPerSec", "tokensPerSec", "goodputRps", "ttftMeanMs", "ttftP50Ms",
		"ttftP90Ms", "ttftP95Ms", "ttftP99Ms", "e2eMeanMs", "e2eP50Ms", "e2eP90Ms", "e2eP95Ms", "e2eP99Ms", "itlMeanMs",
		"itlP50Ms", "itlP90Ms", "itlP95Ms", "itlP99Ms", "schedulingDelayP99Ms", "sloAttainment", "cacheHitRate", "jainFairnessIndex",
		"replicaSeconds"} {
		mv[f] = big
	}
	b, _ := json.Marshal(mv)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		panic(err)
	}
	for i := 0; i < blisv1alpha1.MaxClassMetrics; i++ {
		m.PerClass = append(m.PerClass, blisv1alpha1.ClassMetrics{Name: name("class", i, 63), CompletedRequests: 1 << 50,
			RejectedRequests: 1 << 50, TtftP99Ms: big, E2eP99Ms: big, ItlP99Ms: big, SloAttainment: big, GoodputRps: big})
	}
	for _, pool := range []string{"prefill", "decode"} {
		m.Pools = append(m.Pools, blisv1alpha1.PoolMetrics{Name: pool, Replicas: 1024, CompletedRequests: 1 << 50, TtftMeanMs: big,
			TtftP99Ms: big, ItlP99Ms: big, E2eMeanMs: big, E2eP99Ms: big, ResponsesPerSec: big, TokensPerSec: big, PeakKVUtilization: big,
			KVTransfers: 1 << 50, KVTransferredBytes: 1 << 60, KVTransferMeanMs: big, ReplicaSeconds: big})
	}
	st.Metrics = m
	for i := 0; i < blisv1alpha1.MaxFitnessValues; i++ {
		st.Fitness = append(st.Fitness, blisv1alpha1.NamedValue{Name: name("objective", i, 63), Value: big})
	}
	st.Replicates = &blisv1alpha1.ReplicateStatistics{Count: 32}
	for i := 0; i < blisv1alpha1.MaxReplicateStats; i++ {
		st.Replicates.Metrics = append(st.Replicates.Metrics, blisv1alpha1.ReplicateStat{Name: name("metric", i, 63), Mean: big, Stddev: big, Ci95: big})
	}
	for i := 0; i < blisv1alpha1.MaxConditions; i++ {
		st.Conditions = append(st.Conditions, metav1.Condition{
			Type: name("Condition", i, 40), Status: metav1.ConditionFalse, ObservedGeneration: 1, LastTransitionTime: now,
			Reason:  name("Reason", i, 128),
			Message: blisv1alpha1.TruncateMessage(strings.Repeat("an error message ", 200)),
		})
	}
	return st
}

// TestMaximalStatusSize writes a status with every list full and every string at its limit
// and checks that the stored object stays far below etcd's object limit.
func TestMaximalStatusSize(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	ev := &blisv1alpha1.Evaluation{
		ObjectMeta: metav1.ObjectMeta{Name: "maximal", Namespace: ns},
		Spec: blisv1alpha1.EvaluationSpec{
			ClusterRef:  &blisv1alpha1.LocalObjectReference{Name: "c"},
			PolicyRef:   &blisv1alpha1.LocalObjectReference{Name: "p"},
			WorkloadRef: &blisv1alpha1.LocalObjectReference{Name: "w"},
		},
	}
	if err := env.Client.Create(ctx, ev); err != nil {
		t.Fatal(err)
	}
	ev.Status = maximalStatus()
	if err := env.Client.Status().Update(ctx, ev); err != nil {
		t.Fatalf("maximal status rejected: %v", err)
	}
	var got blisv1alpha1.Evaluation
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ev), &got); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(&got)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 48 << 10
	if len(data) > limit {
		t.Errorf("maximal Evaluation is %d bytes, want at most %d (64 KiB budget with headroom)", len(data), limit)
	}
	status, _ := json.Marshal(got.Status)
	managed, _ := json.Marshal(got.ManagedFields)
	t.Logf("maximal Evaluation: %d bytes of JSON (status %d, managedFields %d)", len(data), len(status), len(managed))

	over := got.DeepCopy()
	over.Status.TraceSummary += "x"
	if err := env.Client.Status().Update(ctx, over); err == nil || !strings.Contains(err.Error(), "status.traceSummary") {
		t.Errorf("over-long trace summary: err = %v, want a rejection naming status.traceSummary", err)
	}
	over = got.DeepCopy()
	over.Status.Fitness = append(over.Status.Fitness, blisv1alpha1.NamedValue{Name: "one-too-many", Value: 1})
	if err := env.Client.Status().Update(ctx, over); err == nil || !strings.Contains(err.Error(), "status.fitness") {
		t.Errorf("17 fitness values: err = %v, want a rejection naming status.fitness", err)
	}
}

// TestPrinterColumnsAndNames reads the installed CRDs back and checks the names and columns
// kubectl shows.
func TestPrinterColumnsAndNames(t *testing.T) {
	want := map[string]struct {
		short   []string
		columns []string
	}{
		"evaluations":       {[]string{"eval"}, []string{"Phase", "Ready", "Fitness", "TTFT-P99-ms", "E2E-P99-ms", "Age"}},
		"simulatedclusters": {[]string{"simcluster", "simc"}, []string{"Model", "GPU", "TP", "Latency", "Ready", "Age"}},
		"policybundles":     {[]string{"pbundle", "pb"}, []string{"Admission", "Routing", "Scheduler", "Ready", "Age"}},
		"workloadspecs":     {[]string{"wls", "wl"}, []string{"Category", "Rate", "Requests", "Ready", "Age"}},
	}
	for plural, w := range want {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: plural + ".blis.inference-sim.io"}, u); err != nil {
			t.Fatal(err)
		}
		short, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "names", "shortNames")
		if strings.Join(short, ",") != strings.Join(w.short, ",") {
			t.Errorf("%s short names = %v, want %v", plural, short, w.short)
		}
		cats, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "names", "categories")
		if len(cats) != 1 || cats[0] != "blis" {
			t.Errorf("%s categories = %v, want [blis]", plural, cats)
		}
		versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
		v := versions[0].(map[string]any)
		if _, ok := v["subresources"].(map[string]any)["status"]; !ok {
			t.Errorf("%s has no status subresource", plural)
		}
		var names []string
		for _, c := range v["additionalPrinterColumns"].([]any) {
			col := c.(map[string]any)
			if p, ok := col["priority"]; ok && p != int64(0) {
				continue
			}
			names = append(names, col["name"].(string))
		}
		if strings.Join(names, ",") != strings.Join(w.columns, ",") {
			t.Errorf("%s columns = %v, want %v", plural, names, w.columns)
		}
	}
}

// TestFloatsAcceptDecimals checks that decimal parameters written as BLIS writes them are
// stored exactly as given.
func TestFloatsAcceptDecimals(t *testing.T) {
	ns := newNamespace(t)
	u := &unstructured.Unstructured{Object: mustYAML(`
apiVersion: blis.inference-sim.io/v1alpha1
kind: PolicyBundle
metadata: {name: decimals}
spec:
  admission: {policy: gaie-legacy, gaieKvThreshold: 0.85, gaieQdThreshold: 1e-3}
  routing:
    policy: weighted
    scorers: [{name: prefix-affinity, weight: 0.5}, {name: load-balance, weight: 2.5e-1}]
  tenantBudgets: {a: 0.125}
`).(map[string]any)}
	u.SetNamespace(ns)
	if err := env.Client.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	var pb blisv1alpha1.PolicyBundle
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "decimals"}, &pb); err != nil {
		t.Fatal(err)
	}
	if *pb.Spec.Admission.GaieKvThreshold != 0.85 || *pb.Spec.Admission.GaieQdThreshold != 0.001 ||
		pb.Spec.Routing.Scorers[0].Weight != 0.5 || pb.Spec.Routing.Scorers[1].Weight != 0.25 || pb.Spec.TenantBudgets["a"] != 0.125 {
		t.Errorf("stored numbers differ: %+v %+v %v", *pb.Spec.Admission, pb.Spec.Routing.Scorers, pb.Spec.TenantBudgets)
	}
}

// TestKubectlView checks what users see: kubectl get shows the Evaluation columns with the
// status numbers, the blis category lists every kind, and kubectl explain shows the field
// documentation.
func TestKubectlView(t *testing.T) {
	kubectl, kubeconfig, err := env.Kubectl(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	ctx := context.Background()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	ev := &blisv1alpha1.Evaluation{
		ObjectMeta: metav1.ObjectMeta{Name: "shown", Namespace: ns},
		Spec: blisv1alpha1.EvaluationSpec{
			ClusterRef:  &blisv1alpha1.LocalObjectReference{Name: "c"},
			PolicyRef:   &blisv1alpha1.LocalObjectReference{Name: "p"},
			WorkloadRef: &blisv1alpha1.LocalObjectReference{Name: "w"},
		},
	}
	if err := env.Client.Create(ctx, ev); err != nil {
		t.Fatal(err)
	}
	ev.Status = blisv1alpha1.EvaluationStatus{
		Phase:        blisv1alpha1.PhaseSucceeded,
		FitnessScore: ptr.To(0.812346),
		Metrics:      &blisv1alpha1.EvaluationMetrics{TtftP99Ms: 182.413, E2eP99Ms: 2412.71},
		Conditions: []metav1.Condition{{Type: blisv1alpha1.ConditionReady, Status: metav1.ConditionTrue,
			Reason: "Succeeded", Message: "done", LastTransitionTime: metav1.Now()}},
	}
	if err := env.Client.Status().Update(ctx, ev); err != nil {
		t.Fatal(err)
	}
	out := run("get", "eval", "-n", ns)
	for _, want := range []string{"PHASE", "READY", "FITNESS", "TTFT-P99-MS", "E2E-P99-MS", "AGE", "shown", "Succeeded", "True", "0.812346", "182.413", "2412.71"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get eval lacks %q:\n%s", want, out)
		}
	}
	out = run("get", "blis", "-n", ns)
	if !strings.Contains(out, "evaluation.blis.inference-sim.io/shown") {
		t.Errorf("kubectl get blis does not list the Evaluation:\n%s", out)
	}
	out = run("explain", "evaluations.spec.execution.executor")
	if !strings.Contains(out, "batch/v1 Job per Evaluation") {
		t.Errorf("kubectl explain lacks the field documentation:\n%s", out)
	}
}

// TestCRDsFitClientSideApply keeps every CRD small enough for client-side kubectl apply,
// which stores the applied object as JSON in an annotation (all annotations together are
// limited to 256 KiB).
func TestCRDsFitClientSideApply(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(env.RepoRoot, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) != 5 {
		t.Fatalf("expected 5 CRDs, found %v (%v)", files, err)
	}
	const limit = 256<<10 - 8<<10 // the annotation limit less room for metadata
	for _, f := range files {
		for _, u := range readDocs(t, f) {
			data, err := json.Marshal(u.Object)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) > limit {
				t.Errorf("%s is %d bytes of JSON, above %d: shorten descriptions (crd:maxDescLen) or bound the schema", filepath.Base(f), len(data), limit)
			}
		}
	}
}
