package export

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/inference-sim/blis-operator/internal/engine/export/llmd"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

// Unsupported is a part of an imported llm-d configuration the simulator does not model.
type Unsupported struct {
	// Element names the configuration element: a plugin ("plugin <name> (<type>)"), a
	// profile or a top-level key such as "flowControl".
	Element string
	// Reason says what the simulation does instead.
	Reason string
}

// String formats the entry as "element: reason".
func (u Unsupported) String() string { return u.Element + ": " + u.Reason }

// Imported is an llm-d configuration read back as a simulation input.
type Imported struct {
	// Bundle is the policy bundle; policy.Load accepts its YAML.
	Bundle *policy.Bundle
	// Cluster carries what the configuration says about the deployment: prefill and decode
	// pools with the disaggregation decider, the objectives as SLO classes, and the vLLM block
	// size of the precise prefix producer. Model and replica counts come from the deployment.
	Cluster Cluster
	// APIVersion is the document's apiVersion.
	APIVersion string
	// Unsupported lists what the simulator cannot model.
	Unsupported []Unsupported
}

// ImportEPP reads an EndpointPickerConfig and its InferenceObjectives (each element may hold
// several YAML documents) into a policy bundle and the list of unmodelled parts.
func ImportEPP(data []byte, objectives [][]byte) (*policy.Bundle, []Unsupported, error) {
	im, err := Import(data, objectives...)
	if err != nil {
		return nil, nil, err
	}
	return im.Bundle, im.Unsupported, nil
}

// infraTypes are plugins that feed data or parse requests; the simulator's snapshots and
// request records stand in for them, so importing them loses nothing.
var infraTypes = map[string]bool{
	"metrics-data-source": true, "core-metrics-extractor": true, "endpoint-notification-source": true,
	"k8s-notification-source": true, "models-data-source": true, "models-data-extractor": true,
	"openai-parser": true, "anthropic-parser": true, "vllmhttp-parser": true, "vllmgrpc-parser": true,
	"passthrough-parser": true, "vertexai-parser": true, "sglanghttp-parser": true, "file-discovery": true,
	"single-profile-handler": true, "global-strict-fairness-policy": true, "fcfs-ordering-policy": true,
	"static-usage-limit-policy": true,
}

// legacyTypes are renamed plugin types.
var legacyTypes = map[string]string{
	"by-label": "label-selector-filter", "by-label-selector": "label-selector-filter",
	"tokenizer": "token-producer", "active-request-filter": "utilization-filter",
}

type importer struct {
	cfg     *llmd.EndpointPickerConfig
	byName  map[string]*llmd.Plugin
	params  map[string]map[string]any
	im      *Imported
	used    map[string]bool
	classes map[string]int32
	order   []string
}

func (ip *importer) unsupported(elem, format string, a ...any) {
	ip.im.Unsupported = append(ip.im.Unsupported, Unsupported{Element: elem, Reason: fmt.Sprintf(format, a...)})
}

func pluginElem(p *llmd.Plugin) string { return fmt.Sprintf("plugin %s (%s)", p.RefName(), p.Type) }

// Import reads an EndpointPickerConfig (any accepted apiVersion, checked the way the matching
// router checks it) and its InferenceObjectives into a simulation input. Everything it cannot
// model is listed in Unsupported; the error is for documents the router itself would reject.
func Import(data []byte, objectives ...[]byte) (*Imported, error) {
	cfg, err := llmd.Decode(data)
	if err != nil {
		return nil, err
	}
	candidates, err := llmd.TargetsForAPIVersion(cfg.APIVersion)
	if err != nil {
		return nil, err
	}
	var firstErr error
	for _, t := range candidates {
		if _, err := llmd.Validate(cfg, t, llmd.ValidateOptions{AllowExperimental: true}); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("import: the configuration does not load in %s: %w", t.Router, err)
			}
			continue
		}
		firstErr = nil
		break
	}
	if firstErr != nil {
		return nil, firstErr
	}
	ip := &importer{cfg: cfg, byName: map[string]*llmd.Plugin{}, params: map[string]map[string]any{},
		im: &Imported{Bundle: &policy.Bundle{}, APIVersion: cfg.APIVersion}, used: map[string]bool{}, classes: map[string]int32{}}
	for i := range cfg.Plugins {
		p := &cfg.Plugins[i]
		if to, ok := legacyTypes[p.Type]; ok {
			p.Type = to
		}
		ip.byName[p.RefName()] = p
		m := map[string]any{}
		if raw, _ := llmd.ParamsJSON(p); raw != nil {
			if err := json.Unmarshal(raw, &m); err != nil {
				return nil, fmt.Errorf("import: %s: parameters: %w", pluginElem(p), err)
			}
		}
		ip.params[p.RefName()] = m
	}
	if err := ip.objectives(objectives); err != nil {
		return nil, err
	}
	ip.routing()
	ip.admission()
	ip.leftovers()
	if err := ip.im.Bundle.Validate(); err != nil {
		return nil, fmt.Errorf("import: the imported bundle is invalid: %w", err)
	}
	return ip.im, nil
}

// objectives reads InferenceObjectives: each becomes an SLO class with its priority. Classes
// without an objective get priority 0, as requests naming no objective do in llm-d.
func (ip *importer) objectives(docs [][]byte) error {
	for _, d := range docs {
		parts, err := llmd.SplitDocuments(d)
		if err != nil {
			return fmt.Errorf("import: objectives: %w", err)
		}
		for _, part := range parts {
			o, err := llmd.DecodeObjective(part)
			if err != nil {
				return fmt.Errorf("import: %w", err)
			}
			var p int32
			if o.Spec.Priority != nil {
				p = *o.Spec.Priority
			}
			if prev, dup := ip.classes[o.Metadata.Name]; dup && prev != p {
				return fmt.Errorf("import: objective %q given twice with priorities %d and %d", o.Metadata.Name, prev, p)
			} else if !dup {
				ip.order = append(ip.order, o.Metadata.Name)
			}
			ip.classes[o.Metadata.Name] = p
		}
	}
	if len(ip.classes) == 0 {
		return nil
	}
	sp := map[string]int{}
	for k := range policy.DefaultSLOPriorities {
		sp[k] = 0
	}
	for k, v := range ip.classes {
		sp[k] = int(v)
	}
	b := ip.im.Bundle
	b.Admission.SLOPriorities = sp
	b.Priority.Policy = "slo-based"
	ip.im.Cluster.SLOClasses = append([]string(nil), ip.order...)
	return nil
}

// handler finds the profile handler plugin.
func (ip *importer) handler() *llmd.Plugin {
	for i := range ip.cfg.Plugins {
		if info, ok := llmd.Info(ip.cfg.Plugins[i].Type); ok && info.Role == llmd.RoleHandler {
			return &ip.cfg.Plugins[i]
		}
	}
	return nil
}

func getString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

func getMap(m map[string]any, k string) map[string]any {
	v, _ := m[k].(map[string]any)
	if v == nil {
		return map[string]any{}
	}
	return v
}

func getInt(m map[string]any, k string) (int, bool) {
	f, ok := m[k].(float64)
	if !ok || f != math.Trunc(f) {
		return 0, false
	}
	return int(f), true
}

// routing reads the scheduling profile (the decode profile for P/D) into weighted scoring.
func (ip *importer) routing() {
	profiles := ip.cfg.SchedulingProfiles
	if len(profiles) == 0 {
		auto := llmd.SchedulingProfile{Name: "default"}
		for i := range ip.cfg.Plugins {
			p := &ip.cfg.Plugins[i]
			if info, ok := llmd.Info(p.Type); ok && (info.Role == llmd.RoleFilter || info.Role == llmd.RoleScorer || info.Role == llmd.RolePicker) {
				auto.Plugins = append(auto.Plugins, llmd.ProfilePlugin{PluginRef: p.RefName()})
			}
		}
		profiles = []llmd.SchedulingProfile{auto}
	}
	byProfile := map[string]*llmd.SchedulingProfile{}
	for i := range profiles {
		byProfile[profiles[i].Name] = &profiles[i]
	}
	main := &profiles[0]
	if h := ip.handler(); h != nil {
		ip.used[h.RefName()] = true
		hp := ip.params[h.RefName()]
		switch h.Type {
		case "single-profile-handler":
		case "disagg-profile-handler", "pd-profile-handler":
			ps := getMap(hp, "profiles")
			decode := firstNonEmpty(getString(ps, "decode"), getString(hp, "decodeProfile"), "decode")
			prefill := firstNonEmpty(getString(ps, "prefill"), getString(hp, "prefillProfile"), "prefill")
			decider := firstNonEmpty(getString(getMap(hp, "deciders"), "prefill"), getString(hp, "prefillDeciderPluginName", "deciderPluginName"))
			if d, ok := byProfile[decode]; ok {
				main = d
			}
			ip.disaggregation(h, decider)
			if pf, ok := byProfile[prefill]; ok && ip.profileKey(pf, "prefill-filter") != ip.profileKey(main, "decode-filter") {
				ip.unsupported("schedulingProfiles["+prefill+"]", "the prefill profile differs from the decode profile; the simulator scores prefill endpoints with the decode profile %q", main.Name)
			}
			if encode := firstNonEmpty(getString(getMap(hp, "deciders"), "encode"), getString(hp, "encodeDeciderPluginName")); encode != "" {
				if ep := ip.byName[encode]; ep != nil {
					ip.used[encode] = true
					ip.unsupported(pluginElem(ep), "encode disaggregation (multimodal) is not simulated")
				}
			}
		default:
			ip.unsupported(pluginElem(h), "profile handler not simulated; the simulator routes with profile %q", main.Name)
		}
	}
	if len(profiles) > 1 && ip.im.Cluster.Disaggregation == nil {
		ip.unsupported("schedulingProfiles", "%d profiles; the simulator routes with profile %q only", len(profiles), main.Name)
	}
	b := ip.im.Bundle
	b.Routing.Policy = "weighted-scoring"
	var specs []policy.ScorerSpec
	picker := "max-score"
	for _, pp := range main.Plugins {
		p := ip.byName[pp.PluginRef]
		if p == nil {
			continue
		}
		ip.used[p.RefName()] = true
		info, _ := llmd.Info(p.Type)
		m := ip.params[p.RefName()]
		switch {
		case p.Type == "decode-filter" || p.Type == "prefill-filter":
			// Role filters: a no-op in a monolithic pool (unlabelled pods pass), and the pool
			// split itself under P/D.
		case info.Role == llmd.RolePicker:
			picker = strings.TrimSuffix(p.Type, "-picker")
			if n, ok := getInt(m, "maxNumOfEndpoints"); ok && n > 1 {
				ip.unsupported(pluginElem(p), "maxNumOfEndpoints %d: the simulator picks one endpoint (fallback endpoints are not simulated)", n)
			}
		case info.Role == llmd.RoleScorer:
			w := 1.0
			if pp.Weight != nil {
				w = *pp.Weight
			}
			sp, ok := ip.scorer(p, m, w)
			if !ok {
				break
			}
			merged := false
			for i := range specs {
				if specs[i].Name != sp.Name {
					continue
				}
				// The simulator takes each scorer once: the same scorer twice with the same
				// parameters is one scorer with the summed weight.
				a, _ := json.Marshal(specs[i].Params)
				c, _ := json.Marshal(sp.Params)
				if string(a) == string(c) {
					specs[i].Weight += sp.Weight
				} else {
					ip.unsupported(pluginElem(p), "a second %s with other parameters; the simulator takes one", sp.Name)
				}
				merged = true
				break
			}
			if !merged {
				specs = append(specs, sp)
			}
		default:
			ip.unsupported(pluginElem(p), "filter not simulated; every endpoint stays a candidate")
		}
	}
	if len(specs) == 0 {
		// No scorer: every endpoint scores 0 and the picker alone decides; a zero-weight
		// scorer expresses that (weighted scoring needs one), and the exporter drops it.
		specs = []policy.ScorerSpec{{Name: policy.ScorerQueue, Weight: 0}}
	}
	b.Routing.Scorers = specs
	if picker != "max-score" {
		b.Routing.Params = policy.Params{"picker": picker}
	}
}

// profileKey summarises a profile's scorers, weights and picker, the role filter named by
// filter left out, to compare the prefill and decode profiles.
func (ip *importer) profileKey(sp *llmd.SchedulingProfile, filter string) string {
	var parts []string
	for _, pp := range sp.Plugins {
		p := ip.byName[pp.PluginRef]
		if p == nil || p.Type == filter {
			continue
		}
		w := 1.0
		if pp.Weight != nil {
			w = *pp.Weight
		}
		raw, _ := json.Marshal(ip.params[p.RefName()])
		parts = append(parts, fmt.Sprintf("%s@%g%s", p.Type, w, raw))
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}

// simScorerKeys are the scorer parameters the simulator reads, per llm-d type.
var simScorerKeys = map[string][]string{
	policy.ScorerLoadAware:   {"threshold"},
	policy.ScorerActive:      {"idleThreshold", "maxBusyScore"},
	policy.ScorerTokenLoad:   {"queueThresholdTokens"},
	policy.ScorerPrefixCache: {"matchLengthWeight", "matchLengthScaleTokens"},
	policy.ScorerNoHitLRU:    {"lruSize"},
}

// scorer converts one llm-d scorer plugin.
func (ip *importer) scorer(p *llmd.Plugin, m map[string]any, w float64) (policy.ScorerSpec, bool) {
	typ := p.Type
	sp := policy.ScorerSpec{Name: typ, Weight: w}
	params := policy.Params{}
	if typ == "precise-prefix-cache-scorer" {
		sp.Name = policy.ScorerPrefixCache
		params["prefixMatchInfoProducerName"] = preciseProducer
		ip.preciseProducer(p, m)
		m = map[string]any{}
	}
	if _, ok := policy.CanonicalScorer(sp.Name); !ok || sp.Name == policy.ScorerLoadBalance {
		ip.unsupported(pluginElem(p), "scorer not simulated; dropped from the profile (weight %g)", w)
		return sp, false
	}
	for _, k := range sortedKeys(m) {
		v := m[k]
		known := false
		for _, sk := range simScorerKeys[sp.Name] {
			if k == sk {
				known = true
			}
		}
		switch {
		case known:
			params[k] = v
		case k == "prefixMatchInfoProducerName":
			name, _ := v.(string)
			prod := ip.byName[name]
			switch {
			case name == approxProducer || prod != nil && prod.Type == approxProducer:
			case name == preciseProducer || prod != nil && prod.Type == preciseProducer:
				params[k] = preciseProducer
				if prod != nil {
					ip.used[prod.RefName()] = true
					ip.preciseProducer(prod, ip.params[prod.RefName()])
				}
			default:
				ip.unsupported(pluginElem(p), "prefix producer %q not simulated; the approximate producer is used", name)
			}
		default:
			ip.unsupported(pluginElem(p), "parameter %s=%v not simulated", k, v)
		}
	}
	if len(params) > 0 {
		sp.Params = params
	}
	return sp, true
}

// preciseProducer reads the precise producer's block size (it must equal vLLM's) into the
// cluster hint.
func (ip *importer) preciseProducer(p *llmd.Plugin, m map[string]any) {
	tpc := getMap(m, "tokenProcessorConfig")
	bs, ok := getInt(tpc, "blockSizeTokens")
	if !ok {
		bs, ok = getInt(tpc, "blockSize")
	}
	if ok && bs > 0 {
		ip.im.Cluster.Engine.BlockSize = int64(bs)
	}
	for _, k := range sortedKeys(m) {
		if k == "tokenProcessorConfig" {
			for _, tk := range sortedKeys(tpc) {
				if tk != "blockSize" && tk != "blockSizeTokens" && tk != "hashSeed" {
					ip.unsupported(pluginElem(p), "tokenProcessorConfig.%s not simulated", tk)
				}
			}
			continue
		}
		ip.unsupported(pluginElem(p), "%s not simulated (the simulator reads the instances' caches directly)", k)
	}
}

// disaggregation reads the P/D decider into the cluster hint.
func (ip *importer) disaggregation(h *llmd.Plugin, decider string) {
	c := &ip.im.Cluster
	c.Pools = []Pool{{Name: "prefill", Role: RolePrefill, Replicas: 1}, {Name: "decode", Role: RoleDecode, Replicas: 1}}
	d := &Disaggregation{Decider: DeciderNever}
	c.Disaggregation = d
	hp := ip.params[h.RefName()]
	if h.Type == "pd-profile-handler" {
		if thr, ok := getInt(hp, "threshold"); ok {
			d.Decider, d.Threshold = DeciderPrefixThreshold, int64(thr)
			return
		}
	}
	if decider == "" {
		return
	}
	dp := ip.byName[decider]
	if dp == nil {
		return
	}
	ip.used[dp.RefName()] = true
	m := ip.params[dp.RefName()]
	switch dp.Type {
	case "always-disagg-pd-decider":
		d.Decider = DeciderAlways
	case "prefix-based-pd-decider":
		nc, _ := getInt(m, "nonCachedTokens")
		pt, _ := getInt(m, "promptTokens")
		switch {
		case nc <= 0:
			d.Decider = DeciderNever
		case pt > 0:
			d.Decider, d.Threshold = DeciderPromptLength, int64(pt-1)
			if nc > 1 {
				ip.unsupported(pluginElem(dp), "promptTokens together with nonCachedTokens %d: the simulator applies the prompt-length gate only", nc)
			}
		default:
			d.Decider, d.Threshold = DeciderPrefixThreshold, int64(nc-1)
		}
	default:
		ip.unsupported(pluginElem(dp), "decider not simulated; every request is disaggregated")
		d.Decider = DeciderAlways
	}
}

// admission reads legacy admission (saturation detector and sheddable objectives) or reports
// flow control.
func (ip *importer) admission() {
	cfg := ip.cfg
	b := ip.im.Bundle
	ref := ""
	if cfg.FlowControl != nil && cfg.FlowControl.SaturationDetector != nil {
		ref = cfg.FlowControl.SaturationDetector.PluginRef
	} else if cfg.SaturationDetector != nil {
		ref = cfg.SaturationDetector.PluginRef
	}
	if cfg.HasGate("flowControl") {
		ip.unsupported("flowControl", "flow-control queueing, priority bands, fairness and usage limits are not simulated; requests are admitted and queue in the instances")
		if ref != "" {
			ip.used[ref] = true
		}
		if fc := cfg.FlowControl; fc != nil && fc.UsageLimitPolicyPluginRef != "" {
			ip.used[fc.UsageLimitPolicyPluginRef] = true
		}
		ip.markFlowPlugins()
		b.Admission.Policy = alwaysAdmit
		return
	}
	negative := false
	for _, v := range ip.classes {
		if v < 0 {
			negative = true
		}
	}
	if ref == "" {
		if negative {
			b.Admission.Policy = "gaie-legacy"
		} else {
			b.Admission.Policy = alwaysAdmit
		}
		return
	}
	det := ip.byName[ref]
	ip.used[ref] = true
	m := ip.params[ref]
	switch det.Type {
	case "utilization-detector":
		qd, okQ := getInt(m, "queueDepthThreshold")
		kv, okK := m["kvCacheUtilThreshold"].(float64)
		if !okQ {
			qd = int(policy.DefaultSaturationQueueThreshold)
		}
		if !okK {
			kv = policy.DefaultSaturationKVThreshold
		}
		for _, k := range sortedKeys(m) {
			if k != "queueDepthThreshold" && k != "kvCacheUtilThreshold" {
				ip.unsupported(pluginElem(det), "parameter %s not simulated", k)
			}
		}
		if qd >= NeverSaturatedQueueDepth && negative {
			// The exporter's form of always-admit with sheddable objectives.
			b.Admission.Policy = alwaysAdmit
			ip.unsupported(pluginElem(det), "saturation by KV-cache use alone (kvCacheUtilThreshold %g) is not simulated: nothing is shed", kv)
			return
		}
		b.Admission.Policy = "gaie-legacy"
		b.Admission.GAIEQDThreshold = ptr(float64(qd))
		b.Admission.GAIEKVThreshold = ptr(kv)
	default:
		ip.unsupported(pluginElem(det), "saturation detector not simulated; nothing is shed")
		b.Admission.Policy = alwaysAdmit
	}
}

// markFlowPlugins marks the plugins only flow control uses as covered by the flowControl
// entry.
func (ip *importer) markFlowPlugins() {
	for i := range ip.cfg.Plugins {
		p := &ip.cfg.Plugins[i]
		if info, ok := llmd.Info(p.Type); ok && info.Role == llmd.RoleFlow {
			ip.used[p.RefName()] = true
		}
	}
}

// leftovers reads producers and lists every plugin that took no part in the mapping.
func (ip *importer) leftovers() {
	for i := range ip.cfg.Plugins {
		p := &ip.cfg.Plugins[i]
		name := p.RefName()
		if ip.used[name] || infraTypes[p.Type] {
			continue
		}
		m := ip.params[name]
		switch p.Type {
		case approxProducer:
			pc := &policy.PrefixCacheSpec{}
			if v, ok := m["autoTune"].(bool); ok {
				pc.AutoTune = ptr(v)
			}
			intp := func(k string) *int {
				if v, ok := getInt(m, k); ok {
					return ptr(v)
				}
				return nil
			}
			pc.BlockSizeTokens = intp("blockSizeTokens")
			if pc.BlockSizeTokens == nil {
				pc.BlockSizeTokens = intp("blockSize")
			}
			pc.MaxPrefixBlocksToMatch = intp("maxPrefixBlocksToMatch")
			pc.MaxPrefixTokensToMatch = intp("maxPrefixTokensToMatch")
			pc.LRUCapacityPerServer = intp("lruCapacityPerServer")
			if *pc != (policy.PrefixCacheSpec{}) {
				ip.im.Bundle.Routing.PrefixCache = pc
			}
		case preciseProducer:
			ip.preciseProducer(p, m)
		case "token-producer":
			if len(m) > 0 {
				ip.unsupported(pluginElem(p), "tokenizer endpoint settings are deployment details; the simulator knows token counts")
			}
		case "decode-filter", "prefill-filter":
		case "utilization-detector", "concurrency-detector":
			ip.unsupported(pluginElem(p), "saturation detector not referenced by flowControl.saturationDetector; not used")
		default:
			ip.unsupported(pluginElem(p), "not simulated")
		}
	}
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// BundleYAML writes a bundle as YAML that policy.Load reads back (checked before returning).
func BundleYAML(b *policy.Bundle) ([]byte, error) {
	out, err := llmd.Marshal(b)
	if err != nil {
		return nil, err
	}
	back, err := policy.Parse(out)
	if err != nil {
		return nil, fmt.Errorf("bundle YAML does not read back: %w", err)
	}
	if err := back.Validate(); err != nil {
		return nil, fmt.Errorf("bundle YAML does not validate: %w", err)
	}
	return out, nil
}
