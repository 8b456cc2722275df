package llmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Feature gates the router registers; listing any other gate stops it. Before v0.9 the data
// layer and legacy metrics were gated too (v0.9 removed those gates).
var featureGates = map[string]bool{"flowControl": true, "haPopulateNonLeaderDatastore": true}

var legacyFeatureGates = map[string]bool{"flowControl": true, "dataLayer": true, "enableLegacyMetrics": true, "prepareDataPlugins": true}

func gateKnown(t Target, name string) bool {
	if t.order == v08 {
		return legacyFeatureGates[name]
	}
	return featureGates[name]
}

// ErrExperimental is wrapped by Validate's error when the configuration uses an Alpha plugin
// and experimental plugins are not allowed.
var ErrExperimental = errors.New("needs --allow-experimental-plugins")

// ValidateOptions control Validate.
type ValidateOptions struct {
	// AllowExperimental accepts Alpha plugins (the router's --allow-experimental-plugins).
	AllowExperimental bool
}

// Validate checks cfg the way target t's router checks it at start-up: accepted apiVersion,
// registered feature gates and plugin types, parameter keys of every plugin with a schema,
// Alpha plugins, references between plugins, and the profile and handler rules. Parameters
// must be json.RawMessage (Decode) or this package's parameter structs. It returns the
// deprecation notices the router would log; the error joins every violation.
func Validate(cfg *EndpointPickerConfig, t Target, o ValidateOptions) (warnings []string, err error) {
	v := &validator{cfg: cfg, t: t, byName: map[string]PluginInfo{}, seenProfile: map[string]bool{}}
	v.checkHeader()
	v.checkTopLevelKeys()
	v.checkPlugins(o.AllowExperimental)
	profiles := v.checkProfiles()
	v.checkHandlers(len(profiles))
	v.checkRequestRefs()
	v.checkFlowControl()
	v.checkDataLayerRefs()
	v.checkParamRefs()
	return v.warnings, errors.Join(v.errs...)
}

// validator holds what Validate has learned of a configuration and what it found wrong.
type validator struct {
	cfg *EndpointPickerConfig
	t   Target

	// byName is every plugin with a registered type by its reference name.
	byName map[string]PluginInfo
	// seenProfile holds the names of the scheduling profiles (the router's default one when
	// the configuration lists none).
	seenProfile map[string]bool

	warnings []string
	errs     []error
}

func (v *validator) fail(format string, a ...any) {
	v.errs = append(v.errs, fmt.Errorf(format, a...))
}

func (v *validator) warn(msg string) {
	v.warnings = append(v.warnings, msg)
}

// checkHeader checks the kind, the apiVersion and the feature gates.
func (v *validator) checkHeader() {
	cfg, t := v.cfg, v.t
	if cfg.Kind != KindEndpointPickerConfig {
		v.fail("kind is %q, want %q", cfg.Kind, KindEndpointPickerConfig)
	}
	switch {
	case cfg.APIVersion == t.APIVersion:
	case cfg.APIVersion == APIVersionLegacy && (t.order == v09 || t.order == v010):
		v.warn(fmt.Sprintf("apiVersion %s is deprecated on %s (use %s)", APIVersionLegacy, t.Name, APIVersionV1Alpha1))
	case cfg.APIVersion == APIVersionV1Alpha1 && t.order == vMain:
		v.warn(fmt.Sprintf("apiVersion %s is deprecated on %s (use %s)", APIVersionV1Alpha1, t.Name, APIVersionV1))
	default:
		v.fail("apiVersion %q is not accepted by %s (it accepts %s)", cfg.APIVersion, t.Router, t.APIVersion)
	}
	for _, g := range cfg.FeatureGates {
		name, val, hasVal := strings.Cut(g, "=")
		if !gateKnown(t, name) {
			v.fail("featureGates: unknown gate %q for %s", name, t.Router)
		} else if hasVal && val != "true" && val != "false" {
			v.fail("featureGates: %q: value must be true or false", g)
		}
	}
}

// checkTopLevelKeys checks the top-level and data-layer keys that only some releases accept.
func (v *validator) checkTopLevelKeys() {
	cfg, t := v.cfg, v.t
	if t.order == v010 && cfg.SaturationDetector != nil {
		v.warn("top-level saturationDetector is deprecated (use flowControl.saturationDetector)")
	}
	if t.order == v010 && cfg.Parser != nil {
		v.warn("top-level parser is deprecated (use requestHandler.parsers)")
	}
	if t.order == vMain && cfg.SaturationDetector != nil {
		v.fail("saturationDetector: top-level key removed in %s (use flowControl.saturationDetector)", APIVersionV1)
	}
	if t.order == vMain && cfg.Parser != nil {
		v.fail("parser: top-level key removed in %s (use requestHandler.parsers)", APIVersionV1)
	}
	if d := cfg.DataLayer; d != nil {
		if t.order == vMain && (d.CrossReplicaSyncerPluginRef != "" || d.CrossReplicaSyncInterval != "") {
			v.fail("dataLayer.crossReplicaSyncerPluginRef/crossReplicaSyncInterval moved to dataLayer.crossReplica in %s", APIVersionV1)
		}
		if t.order < v010 && (d.CrossReplicaSyncerPluginRef != "" || d.CrossReplicaSyncInterval != "") {
			v.fail("dataLayer cross-replica keys need llm-d-router v0.10 or later")
		}
		if t.order != vMain && d.CrossReplica != nil {
			v.fail("dataLayer.crossReplica is a %s key", APIVersionV1)
		}
	}
}

// checkPlugins checks each plugin's type, name and parameters, records it in byName, and
// refuses Alpha plugins unless allowExperimental.
func (v *validator) checkPlugins(allowExperimental bool) {
	cfg, t := v.cfg, v.t
	var experimental []string
	for i := range cfg.Plugins {
		p := &cfg.Plugins[i]
		where := fmt.Sprintf("plugins[%d]", i)
		if p.Type == "" {
			v.fail("%s: type is required", where)
			continue
		}
		info, ok := Lookup(t, p.Type)
		if !ok {
			if _, known := registry[p.Type]; known {
				v.fail("%s: plugin type %q is not registered by %s", where, p.Type, t.Router)
			} else {
				v.fail("%s: unknown plugin type %q", where, p.Type)
			}
			continue
		}
		name := p.RefName()
		if _, dup := v.byName[name]; dup {
			v.fail("%s: duplicate plugin name %q", where, name)
		}
		v.byName[name] = info
		if info.Stability == Alpha {
			experimental = append(experimental, p.Type)
		}
		if info.Deprecated != "" {
			v.warn(fmt.Sprintf("plugin type %q is deprecated (use %s)", p.Type, info.Deprecated))
		}
		if err := checkParams(p, info, t); err != nil {
			if t.strictParams {
				v.fail("%s (%s): parameters: %v", where, p.Type, err)
			} else {
				v.warn(fmt.Sprintf("%s (%s): parameters: %v (ignored by %s)", where, p.Type, err, t.Router))
			}
		}
	}
	if len(experimental) > 0 && !allowExperimental {
		v.fail("plugin(s) %s are Alpha: the endpoint picker %w", strings.Join(experimental, ", "), ErrExperimental)
	}
}

// ref checks that a non-empty pluginRef names a plugin.
func (v *validator) ref(where, name string) {
	if name == "" {
		return
	}
	if _, ok := v.byName[name]; !ok {
		v.fail("%s: pluginRef %q names no plugin", where, name)
	}
}

// refRole checks that a non-empty pluginRef names a plugin of the given role.
func (v *validator) refRole(where, name, role string) {
	v.ref(where, name)
	if info, ok := v.byName[name]; ok && info.Role != role {
		v.fail("%s: %q is a %s, not a %s", where, name, info.Role, role)
	}
}

// checkProfiles checks the scheduling profiles, or the default profile the router builds
// from every filter, scorer and picker when there are none, and returns them.
func (v *validator) checkProfiles() []SchedulingProfile {
	cfg := v.cfg
	profiles := cfg.SchedulingProfiles
	if len(profiles) == 0 {
		var auto SchedulingProfile
		auto.Name = "default"
		for i := range cfg.Plugins {
			if info, ok := v.byName[cfg.Plugins[i].RefName()]; ok && (info.Role == RoleFilter || info.Role == RoleScorer || info.Role == RolePicker) {
				auto.Plugins = append(auto.Plugins, ProfilePlugin{PluginRef: cfg.Plugins[i].RefName()})
			}
		}
		profiles = []SchedulingProfile{auto}
	}
	for i, sp := range profiles {
		where := fmt.Sprintf("schedulingProfiles[%d]", i)
		if sp.Name == "" {
			v.fail("%s: name is required", where)
		}
		if v.seenProfile[sp.Name] {
			v.fail("%s: duplicate profile name %q", where, sp.Name)
		}
		v.seenProfile[sp.Name] = true
		pickers := 0
		for j, pp := range sp.Plugins {
			w := fmt.Sprintf("%s.plugins[%d]", where, j)
			info, ok := v.byName[pp.PluginRef]
			if !ok {
				v.fail("%s: pluginRef %q names no plugin", w, pp.PluginRef)
				continue
			}
			switch info.Role {
			case RolePicker:
				pickers++
			case RoleFilter, RoleScorer:
			default:
				v.fail("%s: %q is a %s; a profile holds filters, scorers and a picker", w, pp.PluginRef, info.Role)
			}
		}
		if pickers > 1 {
			v.fail("%s: %d pickers; a profile has at most one", where, pickers)
		}
	}
	return profiles
}

// checkHandlers checks the profile handler against the number of scheduling profiles.
func (v *validator) checkHandlers(profiles int) {
	cfg := v.cfg
	var handlers []string
	for i := range cfg.Plugins {
		if info, ok := v.byName[cfg.Plugins[i].RefName()]; ok && info.Role == RoleHandler {
			handlers = append(handlers, cfg.Plugins[i].Type)
		}
	}
	switch {
	case len(handlers) > 1:
		v.fail("%d profile handlers (%s); at most one is allowed", len(handlers), strings.Join(handlers, ", "))
	case len(handlers) == 0 && profiles > 1:
		v.fail("%d scheduling profiles and no profile handler configured", profiles)
	case len(handlers) == 1 && handlers[0] == "single-profile-handler" && profiles > 1:
		v.fail("single-profile-handler with %d scheduling profiles", profiles)
	}
}

// checkRequestRefs checks the parser and saturation detector references outside flowControl.
func (v *validator) checkRequestRefs() {
	cfg := v.cfg
	if cfg.RequestHandler != nil {
		for i, r := range cfg.RequestHandler.Parsers {
			v.refRole(fmt.Sprintf("requestHandler.parsers[%d]", i), r.PluginRef, RoleParser)
		}
	}
	if cfg.Parser != nil {
		v.refRole("parser", cfg.Parser.PluginRef, RoleParser)
	}
	if cfg.SaturationDetector != nil {
		v.refRole("saturationDetector", cfg.SaturationDetector.PluginRef, RoleFlow)
	}
}

// checkFlowControl checks flowControl's references and priority bands, and warns about
// settings the router ignores without the flowControl gate.
func (v *validator) checkFlowControl() {
	fc := v.cfg.FlowControl
	if fc == nil {
		return
	}
	if fc.SaturationDetector != nil {
		v.refRole("flowControl.saturationDetector", fc.SaturationDetector.PluginRef, RoleFlow)
	}
	v.refRole("flowControl.usageLimitPolicyPluginRef", fc.UsageLimitPolicyPluginRef, RoleFlow)
	bands := append([]PriorityBand(nil), fc.PriorityBands...)
	for _, b := range []*PriorityBand{fc.DefaultPriorityBand, fc.DefaultNegativePriorityBand} {
		if b != nil {
			bands = append(bands, *b)
		}
	}
	seen := map[int]bool{}
	for i, b := range fc.PriorityBands {
		if b.Priority == nil {
			v.fail("flowControl.priorityBands[%d]: priority is required", i)
		} else if seen[*b.Priority] {
			v.fail("flowControl.priorityBands[%d]: duplicate priority %d", i, *b.Priority)
		} else {
			seen[*b.Priority] = true
		}
	}
	for _, b := range bands {
		v.refRole("flowControl band fairnessPolicyRef", b.FairnessPolicyRef, RoleFlow)
		v.refRole("flowControl band orderingPolicyRef", b.OrderingPolicyRef, RoleFlow)
	}
	if !hasGate(v.cfg.FeatureGates, "flowControl") && (len(fc.PriorityBands) > 0 || fc.DefaultPriorityBand != nil ||
		fc.MaxRequests != "" || fc.MaxBytes != "" || fc.UsageLimitPolicyPluginRef != "") {
		v.warn("flowControl settings other than saturationDetector are ignored without the flowControl feature gate")
	}
}

// checkDataLayerRefs checks the data layer's sources, extractors, cross-replica syncer and
// discovery.
func (v *validator) checkDataLayerRefs() {
	d := v.cfg.DataLayer
	if d == nil {
		return
	}
	for i, s := range d.Sources {
		v.refRole(fmt.Sprintf("dataLayer.sources[%d]", i), s.PluginRef, RoleData)
		for j, e := range s.Extractors {
			v.ref(fmt.Sprintf("dataLayer.sources[%d].extractors[%d]", i, j), e.PluginRef)
		}
	}
	v.ref("dataLayer.crossReplicaSyncerPluginRef", d.CrossReplicaSyncerPluginRef)
	// discovery is {pluginRef} in v1alpha1 and {endpoints: {pluginRef}, peers: {pluginRef}}
	// in v1.
	allowed := map[string]bool{"pluginRef": true}
	if v.t.order == vMain {
		allowed = map[string]bool{"endpoints": true, "peers": true}
	}
	for _, k := range sortedKeys(d.Discovery) {
		if !allowed[k] {
			v.fail("dataLayer.discovery: unknown field %q for %s", k, v.t.Name)
			continue
		}
		val := d.Discovery[k]
		if k != "pluginRef" {
			m, _ := val.(map[string]any)
			val = m["pluginRef"]
		}
		name, _ := val.(string)
		if name == "" {
			v.fail("dataLayer.discovery.%s: pluginRef is required", k)
			continue
		}
		v.refRole("dataLayer.discovery."+k, name, RoleData)
	}
}

// checkParamRefs checks the plugin and profile references inside the profile handlers'
// parameters.
func (v *validator) checkParamRefs() {
	for i := range v.cfg.Plugins {
		p := &v.cfg.Plugins[i]
		where := fmt.Sprintf("plugins[%d] (%s)", i, p.Type)
		switch p.Type {
		case "disagg-profile-handler":
			var dp DisaggProfileHandlerParams
			if raw, err := ParamsJSON(p); err == nil && raw != nil && json.Unmarshal(raw, &dp) == nil {
				v.checkDisaggRefs(where, &dp)
			}
		case "pd-profile-handler":
			var pp PDProfileHandlerParams
			if raw, err := ParamsJSON(p); err == nil && raw != nil && json.Unmarshal(raw, &pp) == nil {
				v.refRole(where+" deciderPluginName", pp.DeciderPluginName, RoleDecider)
			}
		}
	}
}

// checkDisaggRefs checks disagg-profile-handler's deciders and the profiles it routes to.
func (v *validator) checkDisaggRefs(where string, dp *DisaggProfileHandlerParams) {
	if dp.Deciders != nil {
		v.refRole(where+" deciders.prefill", dp.Deciders.Prefill, RoleDecider)
		v.refRole(where+" deciders.encode", dp.Deciders.Encode, RoleDecider)
	}
	v.refRole(where+" prefillDeciderPluginName", dp.PrefillDeciderPluginName, RoleDecider)
	v.refRole(where+" deciderPluginName", dp.DeciderPluginName, RoleDecider)
	prof := func(what, name, def string) {
		if name == "" {
			name = def
		}
		if len(v.cfg.SchedulingProfiles) > 0 && !v.seenProfile[name] && (what != "encode" || name != def) {
			v.fail("%s: %s profile %q does not exist", where, what, name)
		}
	}
	var ps DisaggProfiles
	if dp.Profiles != nil {
		ps = *dp.Profiles
	}
	prof("decode", firstNonEmpty(ps.Decode, dp.DecodeProfile), "decode")
	hasPrefill := dp.Deciders != nil && dp.Deciders.Prefill != "" || dp.PrefillDeciderPluginName != "" || dp.DeciderPluginName != ""
	if hasPrefill {
		prof("prefill", firstNonEmpty(ps.Prefill, dp.PrefillProfile), "prefill")
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

func hasGate(gates []string, name string) bool {
	for _, g := range gates {
		n, v, _ := strings.Cut(g, "=")
		if n == name && v != "false" {
			return true
		}
	}
	return false
}

// HasGate reports whether the configuration enables a feature gate.
func (c *EndpointPickerConfig) HasGate(name string) bool { return hasGate(c.FeatureGates, name) }

// checkParams decodes a plugin's parameters strictly into its schema and applies the
// per-release rules for keys added later.
func checkParams(p *Plugin, info PluginInfo, t Target) error {
	raw, err := ParamsJSON(p)
	if err != nil || raw == nil || !info.HasParamSchema() {
		return err
	}
	v, err := info.decodeParams(raw)
	if err != nil {
		return err
	}
	if d, ok := v.(*PrefixBasedPDDeciderParams); ok && d.PromptTokens != nil && t.order < v010 {
		return errors.New(`unknown field "promptTokens" (added in llm-d-router v0.10.0)`)
	}
	return nil
}

// DecodeParams strictly decodes a plugin's parameters into the plugin type's schema
// (for example *PrefixCacheScorerParams). ok is false for types without a schema.
func DecodeParams(p *Plugin) (v any, ok bool, err error) {
	info, known := registry[p.Type]
	if !known || !info.HasParamSchema() {
		return nil, false, nil
	}
	raw, err := ParamsJSON(p)
	if err != nil {
		return nil, true, err
	}
	if raw == nil {
		return info.params(), true, nil
	}
	v, err = info.decodeParams(raw)
	return v, true, err
}
