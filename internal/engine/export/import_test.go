package export

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/export/llmd"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

const samplesDir = "llmd/testdata/router-v0.10.0"

func readSample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(samplesDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sampleNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(samplesDir, "deploy_config_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	var out []string
	for _, f := range files {
		out = append(out, filepath.Base(f))
	}
	return out
}

// Every EndpointPickerConfig of llm-d-router v0.10.0 imports into a bundle the simulator
// accepts, with exactly the unmodelled parts listed.
func TestImportSamples(t *testing.T) {
	objectives := readSample(t, "config_manifests_inferenceobjective.yaml")
	wantUnsupported := map[string][]string{
		"deploy_config_dp-epp-config.yaml":                      {"plugin data-parallel-profile-handler"},
		"deploy_config_epp-config.yaml":                         nil,
		"deploy_config_epp-precise-prefix-cache-config.yaml":    {"plugin precise-prefix-cache-producer (precise-prefix-cache-producer): indexerConfig", "plugin token-producer"},
		"deploy_config_pd-epp-config.yaml":                      nil,
		"deploy_config_probabilistic-admitter-epp-config.yaml":  {"plugin probabilistic-admitter"},
		"deploy_config_sim-pd-epp-config.yaml":                  nil,
		"deploy_config_sim-program-aware-config.yaml":           {"flowControl"},
		"deploy_config_soft-reflective-ceiling-epp-config.yaml": {"flowControl"},
	}
	for _, name := range sampleNames(t) {
		t.Run(name, func(t *testing.T) {
			im, err := Import(readSample(t, name), objectives)
			if err != nil {
				t.Fatal(err)
			}
			want, ok := wantUnsupported[name]
			if !ok {
				t.Fatalf("no expectation for %s", name)
			}
			if len(im.Unsupported) != len(want) {
				t.Fatalf("unsupported: got %v, want entries starting with %q", im.Unsupported, want)
			}
			for i, w := range want {
				if !strings.HasPrefix(im.Unsupported[i].String(), w) {
					t.Errorf("unsupported[%d] = %q, want prefix %q", i, im.Unsupported[i], w)
				}
			}
			out, err := BundleYAML(im.Bundle)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := policy.Parse(out); err != nil {
				t.Fatal(err)
			}
			if strings.Join(im.Cluster.SLOClasses, ",") != "small-segment-lora,base-model,base-model-cpu" {
				t.Errorf("SLO classes: %v", im.Cluster.SLOClasses)
			}
		})
	}
}

func TestImportDetails(t *testing.T) {
	im, err := Import(readSample(t, "deploy_config_pd-epp-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if d := im.Cluster.Disaggregation; d == nil || d.Decider != DeciderPrefixThreshold || d.Threshold != 15 {
		t.Fatalf("disaggregation: %+v", im.Cluster.Disaggregation)
	}
	pc := im.Bundle.Routing.PrefixCache
	if pc == nil || *pc.MaxPrefixTokensToMatch != 16384 || *pc.LRUCapacityPerServer != 31250 {
		t.Fatalf("prefix cache: %+v", pc)
	}
	if got := fmt.Sprint(im.Bundle.Routing.Scorers); got != "[{prefix-cache-scorer 2 map[]} {queue-scorer 1 map[]}]" {
		t.Fatalf("scorers: %s", got)
	}
	im, err = Import(readSample(t, "deploy_config_epp-precise-prefix-cache-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if im.Cluster.Engine.BlockSize != 64 || im.Bundle.Routing.Scorers[0].Params["prefixMatchInfoProducerName"] != preciseProducer {
		t.Fatalf("precise: block size %d, scorers %v", im.Cluster.Engine.BlockSize, im.Bundle.Routing.Scorers)
	}
	im, err = Import(readSample(t, "deploy_config_probabilistic-admitter-epp-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if a := im.Bundle.Admission; a.Policy != "gaie-legacy" || *a.GAIEQDThreshold != NeverSaturatedQueueDepth || im.Bundle.Routing.Params["picker"] != "random" {
		t.Fatalf("probabilistic: admission %q, routing %+v", im.Bundle.Admission.Policy, im.Bundle.Routing)
	}
	// Objectives with a negative priority make llm-d's default legacy admission shed.
	obj := []byte("apiVersion: llm-d.ai/v1alpha2\nkind: InferenceObjective\nmetadata: {name: bulk}\nspec: {priority: -1, poolRef: {name: p}}\n")
	im, err = Import(readSample(t, "deploy_config_epp-config.yaml"), obj)
	if err != nil {
		t.Fatal(err)
	}
	if im.Bundle.Admission.Policy != "gaie-legacy" || im.Bundle.Admission.SLOPriorities["bulk"] != -1 || im.Bundle.Admission.SLOPriorities["standard"] != 0 {
		t.Fatalf("admission: %+v", im.Bundle.Admission)
	}
}

func TestImportLegacyNames(t *testing.T) {
	doc := "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n" +
		"- type: pd-profile-handler\n  parameters: {threshold: 10, hashBlockSize: 16}\n- type: precise-prefix-cache-scorer\n  parameters: {tokenProcessorConfig: {blockSize: 64}}\n" +
		"- type: prefill-filter\n- type: decode-filter\n- type: max-score-picker\n" +
		"schedulingProfiles:\n- name: prefill\n  plugins: [{pluginRef: prefill-filter}, {pluginRef: precise-prefix-cache-scorer, weight: 2}]\n" +
		"- name: decode\n  plugins: [{pluginRef: decode-filter}, {pluginRef: precise-prefix-cache-scorer, weight: 2}]\n"
	im, err := Import([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if d := im.Cluster.Disaggregation; d == nil || d.Decider != DeciderPrefixThreshold || d.Threshold != 10 {
		t.Fatalf("disaggregation: %+v", im.Cluster.Disaggregation)
	}
	if s := im.Bundle.Routing.Scorers; len(s) != 1 || s[0].Name != policy.ScorerPrefixCache || s[0].Params["prefixMatchInfoProducerName"] != preciseProducer {
		t.Fatalf("scorers: %v", s)
	}
	// The same scorer twice: one scorer with the summed weight, or listed when parameters differ.
	twice := "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- {name: a, type: load-aware-scorer}\n- {name: b, type: load-aware-scorer}\n" +
		"- {name: c, type: load-aware-scorer, parameters: {threshold: 4}}\nschedulingProfiles:\n- name: default\n  plugins: [{pluginRef: a, weight: 2}, {pluginRef: b}, {pluginRef: c}]\n"
	im, err = Import([]byte(twice))
	if err != nil {
		t.Fatal(err)
	}
	if s := im.Bundle.Routing.Scorers; len(s) != 1 || s[0].Weight != 3 || len(im.Unsupported) != 1 || !strings.HasPrefix(im.Unsupported[0].Element, "plugin c ") {
		t.Fatalf("scorers %v, unsupported %v", s, im.Unsupported)
	}
	// The legacy group is still accepted by v0.10 for current plugins.
	cur := "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins: [{type: token-producer}, {type: queue-scorer}]\nschedulingProfiles: []\n"
	if _, err := Import([]byte(cur)); err != nil {
		t.Fatalf("legacy group with a v0.9+ plugin: %v", err)
	}
	// A v1alpha1 document with the removed parameter does not load, and is refused.
	if _, err := Import([]byte(strings.Replace(doc, "inference.networking.x-k8s.io/v1alpha1", "llm-d.ai/v1alpha1", 1))); err == nil {
		t.Fatal("removed pd-profile-handler threshold accepted on v1alpha1")
	}
}

// norm is the part of an EndpointPickerConfig that decides behaviour, after llm-d's defaulting
// (default weight 1, max-score-picker and single-profile-handler injected, names resolved to
// types), without the elements an import listed as unsupported.
func norm(t *testing.T, data []byte, skip []Unsupported) string {
	t.Helper()
	cfg, err := llmd.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	skipped := func(p *llmd.Plugin) bool {
		for _, u := range skip {
			if strings.HasPrefix(u.Element, "plugin "+p.RefName()+" ") {
				return true
			}
		}
		return false
	}
	flowSkipped := false
	for _, u := range skip {
		flowSkipped = flowSkipped || u.Element == "flowControl"
	}
	byName := map[string]*llmd.Plugin{}
	for i := range cfg.Plugins {
		byName[cfg.Plugins[i].RefName()] = &cfg.Plugins[i]
	}
	params := func(p *llmd.Plugin) string {
		raw, _ := llmd.ParamsJSON(p)
		m := map[string]any{}
		if raw != nil {
			_ = json.Unmarshal(raw, &m)
		}
		if tpc, ok := m["tokenProcessorConfig"].(map[string]any); ok {
			// blockSize is the deprecated spelling; only the block size reaches the simulator.
			bs := tpc["blockSizeTokens"]
			if bs == nil {
				bs = tpc["blockSize"]
			}
			m = map[string]any{"blockSize": bs}
		}
		if v, ok := m["blockSize"]; ok && p.Type == approxProducer {
			m["blockSizeTokens"] = v
			delete(m, "blockSize")
		}
		if name, ok := m["prefixMatchInfoProducerName"].(string); ok && byName[name] != nil {
			m["prefixMatchInfoProducerName"] = byName[name].Type
		}
		for _, k := range []string{"deciders"} {
			if d, ok := m[k].(map[string]any); ok {
				for dk, dv := range d {
					if s, ok := dv.(string); ok && byName[s] != nil {
						d[dk] = byName[s].Type
					}
				}
			}
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	var lines []string
	profiles := cfg.SchedulingProfiles
	handlers := 0
	for i := range cfg.Plugins {
		p := &cfg.Plugins[i]
		info, ok := llmd.Info(p.Type)
		if !ok || skipped(p) || infraTypes[p.Type] && p.Type != "single-profile-handler" {
			continue
		}
		switch info.Role {
		case llmd.RoleHandler:
			handlers++
			lines = append(lines, "handler "+p.Type+params(p))
		case llmd.RoleDecider, llmd.RoleProducer:
			lines = append(lines, info.Role+" "+p.Type+params(p))
		case llmd.RoleFlow:
			if !flowSkipped {
				lines = append(lines, "flow "+p.Type+params(p))
			}
		}
	}
	if handlers == 0 && len(profiles) <= 1 {
		lines = append(lines, "handler single-profile-handler{}")
	}
	for _, sp := range profiles {
		var entries []string
		picker := "picker max-score-picker{}"
		for _, pp := range sp.Plugins {
			p := byName[pp.PluginRef]
			if skipped(p) {
				continue
			}
			info, _ := llmd.Info(p.Type)
			switch {
			case info.Role == llmd.RolePicker:
				picker = "picker " + p.Type + params(p)
			case info.Role == llmd.RoleScorer:
				w := 1.0
				if pp.Weight != nil {
					w = *pp.Weight
				}
				entries = append(entries, fmt.Sprintf("scorer %s%s@%g", p.Type, params(p), w))
			case p.Type == "decode-filter" && len(profiles) == 1:
				// With one profile the pool is monolithic: decode-filter keeps every
				// unlabelled pod, so it selects nothing and is neutral.
			default:
				entries = append(entries, "filter "+p.Type)
			}
		}
		entries = append(entries, picker)
		sort.Strings(entries)
		lines = append(lines, "profile "+sp.Name+": "+strings.Join(entries, ", "))
	}
	if !flowSkipped {
		lines = append(lines, "gates "+strings.Join(cfg.FeatureGates, ","))
		if cfg.FlowControl != nil && cfg.FlowControl.SaturationDetector != nil {
			lines = append(lines, "detector "+byName[cfg.FlowControl.SaturationDetector.PluginRef].Type)
		} else if cfg.SaturationDetector != nil {
			lines = append(lines, "detector "+byName[cfg.SaturationDetector.PluginRef].Type)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// Import then export gives the same plugins, parameters and weights as the original sample,
// apart from what the import listed as unsupported.
func TestRoundTripImportExport(t *testing.T) {
	for _, name := range sampleNames(t) {
		t.Run(name, func(t *testing.T) {
			orig := readSample(t, name)
			im, err := Import(orig)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Export(Input{Bundle: im.Bundle, Cluster: im.Cluster}, Options{Target: "llm-d-v0.10", AllowExperimental: true})
			if err != nil {
				t.Fatal(err)
			}
			want, got := norm(t, orig, im.Unsupported), norm(t, res.File(FileEPPConfig), im.Unsupported)
			if want != got {
				t.Fatalf("round trip differs\noriginal:\n%s\nexported:\n%s\nfile:\n%s", want, got, res.File(FileEPPConfig))
			}
			for _, w := range res.Warnings {
				if w.Approximation {
					t.Errorf("the export of an imported configuration approximates: %s", w)
				}
			}
		})
	}
}

// canonical is a bundle's behaviour as llm-d can carry it: scorers with weights and non-default
// parameters, picker, prefix producer, admission, the class priorities and disaggregation.
func canonical(t *testing.T, b *policy.Bundle, c Cluster) string {
	t.Helper()
	var lines []string
	r := b.Routing
	name := stagePolicy(r.Policy, r.Tree, r.CEL, "round-robin")
	var specs []policy.ScorerSpec
	switch name {
	case policy.PolicyCEL:
		var err error
		if specs, _, err = linearCEL(r.CEL); err != nil {
			t.Fatal(err)
		}
	case "prefix-affinity":
		specs = []policy.ScorerSpec{{Name: policy.ScorerPrefixCache, Weight: num(r.Params, "prefix_weight", 5)}, {Name: policy.ScorerQueue, Weight: num(r.Params, "queue_weight", 1)}}
	default:
		specs = r.Scorers
		if len(specs) == 0 {
			specs = policy.DefaultScorers()
		}
	}
	for _, s := range specs {
		if s.Weight == 0 {
			continue
		}
		canon, _ := policy.CanonicalScorer(s.Name)
		p := map[string]any{}
		for k, v := range s.Params {
			p[k] = v
		}
		if s.Name == preciseAlias {
			p["prefixMatchInfoProducerName"] = preciseProducer
		}
		if p["prefixMatchInfoProducerName"] == approxProducer {
			delete(p, "prefixMatchInfoProducerName")
		}
		raw, _ := json.Marshal(p)
		lines = append(lines, fmt.Sprintf("scorer %s%s@%g", canon, raw, s.Weight))
	}
	lines = append(lines, "picker "+strings.TrimSuffix(str(r.Params, "picker", "max-score"), "-picker"))
	if r.PrefixCache != nil {
		raw, _ := json.Marshal(r.PrefixCache)
		lines = append(lines, "prefix "+string(raw))
	}
	a := b.Admission
	adm := stagePolicy(a.Policy, a.Tree, a.CEL, "always-admit")
	p := a.EffectiveParams()
	if adm == "gaie-legacy" {
		adm = fmt.Sprintf("gaie-legacy qd=%g kv=%g", num(p, "qd_threshold", 5), num(p, "kv_threshold", 0.8))
	}
	lines = append(lines, "admission "+adm)
	if pn := stagePolicy(b.Priority.Policy, nil, "", "constant"); pn == "slo-based" || strings.HasPrefix(adm, "gaie") {
		table := map[string]int{}
		for k, v := range policy.DefaultSLOPriorities {
			table[k] = v
		}
		for k, v := range a.SLOPriorities {
			table[k] = v
		}
		for _, cl := range c.SLOClasses {
			v, ok := table[cl]
			if !ok {
				v = table["standard"]
			}
			lines = append(lines, fmt.Sprintf("class %s=%d", cl, v))
		}
	}
	if d := c.Disaggregation; d != nil {
		lines = append(lines, fmt.Sprintf("pd %s %d", d.Decider, d.Threshold))
	}
	return strings.Join(lines, "\n")
}

// Export then import gives the original bundle back (scorers, weights, parameters, picker,
// prefix producer, admission, class priorities and disaggregation) for every mapping that is
// exact, with nothing listed as unsupported.
func TestRoundTripExportImport(t *testing.T) {
	classes := []string{"critical", "standard", "batch", "sheddable"}
	pd := func(decider string, thr int64) Cluster {
		return Cluster{Pools: []Pool{{Name: "prefill", Role: RolePrefill, Replicas: 1}, {Name: "decode", Role: RoleDecode, Replicas: 1}},
			Disaggregation: &Disaggregation{Decider: decider, Threshold: thr}}
	}
	cases := []struct {
		name, bundle string
		cluster      Cluster
	}{
		{"llm-d default", "routing: {policy: weighted}\n", Cluster{}},
		{"blis weighted-routing", "file:../policy/testdata/blis/weighted-routing.yaml", Cluster{}},
		{"scorer params", "routing:\n  policy: weighted\n  scorers:\n    - {name: prefix-affinity, weight: 3, params: {matchLengthWeight: 0.25, matchLengthScaleTokens: 4096}}\n    - {name: load-aware, weight: 1, params: {threshold: 64}}\n    - {name: active-request-scorer, weight: 0.5, params: {idleThreshold: 2, maxBusyScore: 0.5}}\n    - {name: token-load-scorer, weight: 0.75, params: {queueThresholdTokens: 100000}}\n    - {name: no-hit-lru, weight: 0.25, params: {lruSize: 64}}\n    - {name: running-requests, weight: 0.1}\n  params: {picker: weighted-random}\n  prefix_cache: {autoTune: false, blockSizeTokens: 64, lruCapacityPerServer: 1000, maxPrefixTokensToMatch: 8192}\n", Cluster{}},
		{"prefix-affinity", "routing: {policy: prefix-affinity, params: {prefix_weight: 7}}\n", Cluster{}},
		{"cel linear", "routing: {cel: \"3.0 * score.prefixCache + 1.5 * score.queue - 0.5 * score.runningRequests\", params: {picker: random}}\n", Cluster{}},
		{"gaie-legacy default", "admission: {policy: gaie-legacy}\npriority: {policy: slo-based}\nrouting: {policy: weighted}\n", Cluster{SLOClasses: classes}},
		{"gaie-legacy tuned", "admission: {policy: gaie-legacy, gaie_qd_threshold: 12, gaie_kv_threshold: 0.95, slo_priorities: {batch: -5, critical: 9}}\npriority: {policy: slo-based}\nrouting: {policy: weighted}\n", Cluster{SLOClasses: classes}},
		{"always-admit sheddable", "priority: {policy: slo-based}\nrouting: {policy: weighted}\n", Cluster{SLOClasses: classes}},
		{"pd prefix-threshold", "routing: {policy: weighted}\n", pd(DeciderPrefixThreshold, 31)},
		{"pd prompt-length", "routing: {policy: weighted}\n", pd(DeciderPromptLength, 255)},
		{"pd always", "routing: {policy: weighted}\n", pd(DeciderAlways, 0)},
		{"pd never", "routing: {policy: weighted}\n", pd(DeciderNever, 0)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := loadBundle(t, c.bundle)
			res, err := Export(Input{Bundle: b, Cluster: c.cluster}, Options{})
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
			if len(im.Unsupported) > 0 && c.name != "always-admit sheddable" {
				t.Fatalf("unsupported after export: %v", im.Unsupported)
			}
			if c.cluster.SLOClasses != nil && strings.Join(im.Cluster.SLOClasses, ",") != strings.Join(sortedCopy(c.cluster.SLOClasses), ",") {
				t.Fatalf("classes: %v", im.Cluster.SLOClasses)
			}
			want := canonical(t, b, c.cluster)
			got := canonical(t, im.Bundle, Cluster{SLOClasses: c.cluster.SLOClasses, Disaggregation: im.Cluster.Disaggregation})
			if want != got {
				t.Fatalf("round trip differs\noriginal:\n%s\nimported:\n%s", want, got)
			}
		})
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
