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
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	if cfg.Kind != KindEndpointPickerConfig {
		fail("kind is %q, want %q", cfg.Kind, KindEndpointPickerConfig)
	}
	switch {
	case cfg.APIVersion == t.APIVersion:
	case cfg.APIVersion == APIVersionLegacy && (t.order == v09 || t.order == v010):
		warnings = append(warnings, fmt.Sprintf("apiVersion %s is deprecated on %s (use %s)", APIVersionLegacy, t.Name, APIVersionV1Alpha1))
	case cfg.APIVersion == APIVersionV1Alpha1 && t.order == vMain:
		warnings = append(warnings, fmt.Sprintf("apiVersion %s is deprecated on %s (use %s)", APIVersionV1Alpha1, t.Name, APIVersionV1))
	default:
		fail("apiVersion %q is not accepted by %s (it accepts %s)", cfg.APIVersion, t.Router, t.APIVersion)
	}
	for _, g := range cfg.FeatureGates {
		name, val, hasVal := strings.Cut(g, "=")
		if !gateKnown(t, name) {
			fail("featureGates: unknown gate %q for %s", name, t.Router)
		} else if hasVal && val != "true" && val != "false" {
			fail("featureGates: %q: value must be true or false", g)
		}
	}
	if t.order == v010 && cfg.SaturationDetector != nil {
		warnings = append(warnings, "top-level saturationDetector is deprecated (use flowControl.saturationDetector)")
	}
	if t.order == v010 && cfg.Parser != nil {
		warnings = append(warnings, "top-level parser is deprecated (use requestHandler.parsers)")
	}
	if t.order == vMain && cfg.SaturationDetector != nil {
		fail("saturationDetector: top-level key removed in %s (use flowControl.saturationDetector)", APIVersionV1)
	}
	if t.order == vMain && cfg.Parser != nil {
		fail("parser: top-level key removed in %s (use requestHandler.parsers)", APIVersionV1)
	}
	if cfg.DataLayer != nil {
		d := cfg.DataLayer
		if t.order == vMain && (d.CrossReplicaSyncerPluginRef != "" || d.CrossReplicaSyncInterval != "") {
			fail("dataLayer.crossReplicaSyncerPluginRef/crossReplicaSyncInterval moved to dataLayer.crossReplica in %s", APIVersionV1)
		}
		if t.order < v010 && (d.CrossReplicaSyncerPluginRef != "" || d.CrossReplicaSyncInterval != "") {
			fail("dataLayer cross-replica keys need llm-d-router v0.10 or later")
		}
		if t.order != vMain && d.CrossReplica != nil {
			fail("dataLayer.crossReplica is a %s key", APIVersionV1)
		}
	}

	byName := map[string]PluginInfo{}
	var experimental []string
	for i := range cfg.Plugins {
		p := &cfg.Plugins[i]
		where := fmt.Sprintf("plugins[%d]", i)
		if p.Type == "" {
			fail("%s: type is required", where)
			continue
		}
		info, ok := Lookup(t, p.Type)
		if !ok {
			if _, known := registry[p.Type]; known {
				fail("%s: plugin type %q is not registered by %s", where, p.Type, t.Router)
			} else {
				fail("%s: unknown plugin type %q", where, p.Type)
			}
			continue
		}
		name := p.RefName()
		if _, dup := byName[name]; dup {
			fail("%s: duplicate plugin name %q", where, name)
		}
		byName[name] = info
		if info.Stability == Alpha {
			experimental = append(experimental, p.Type)
		}
		if info.Deprecated != "" {
			warnings = append(warnings, fmt.Sprintf("plugin type %q is deprecated (use %s)", p.Type, info.Deprecated))
		}
		if err := checkParams(p, info, t); err != nil {
			if t.strictParams {
				fail("%s (%s): parameters: %v", where, p.Type, err)
			} else {
				warnings = append(warnings, fmt.Sprintf("%s (%s): parameters: %v (ignored by %s)", where, p.Type, err, t.Router))
			}
		}
	}
	if len(experimental) > 0 && !o.AllowExperimental {
		errs = append(errs, fmt.Errorf("Alpha plugin(s) %s: the endpoint picker %w", strings.Join(experimental, ", "), ErrExperimental))
	}

	ref := func(where, name string) {
		if name == "" {
			return
		}
		if _, ok := byName[name]; !ok {
			fail("%s: pluginRef %q names no plugin", where, name)
		}
	}
	refRole := func(where, name, role string) {
		ref(where, name)
		if info, ok := byName[name]; ok && info.Role != role {
			fail("%s: %q is a %s, not a %s", where, name, info.Role, role)
		}
	}
	profiles := cfg.SchedulingProfiles
	if len(profiles) == 0 {
		// The router builds a "default" profile from every filter, scorer and picker.
		var auto SchedulingProfile
		auto.Name = "default"
		for i := range cfg.Plugins {
			if info, ok := byName[cfg.Plugins[i].RefName()]; ok && (info.Role == RoleFilter || info.Role == RoleScorer || info.Role == RolePicker) {
				auto.Plugins = append(auto.Plugins, ProfilePlugin{PluginRef: cfg.Plugins[i].RefName()})
			}
		}
		profiles = []SchedulingProfile{auto}
	}
	seenProfile := map[string]bool{}
	for i, sp := range profiles {
		where := fmt.Sprintf("schedulingProfiles[%d]", i)
		if sp.Name == "" {
			fail("%s: name is required", where)
		}
		if seenProfile[sp.Name] {
			fail("%s: duplicate profile name %q", where, sp.Name)
		}
		seenProfile[sp.Name] = true
		pickers := 0
		for j, pp := range sp.Plugins {
			w := fmt.Sprintf("%s.plugins[%d]", where, j)
			info, ok := byName[pp.PluginRef]
			if !ok {
				fail("%s: pluginRef %q names no plugin", w, pp.PluginRef)
				continue
			}
			switch info.Role {
			case RolePicker:
				pickers++
			case RoleFilter, RoleScorer:
			default:
				fail("%s: %q is a %s; a profile holds filters, scorers and a picker", w, pp.PluginRef, info.Role)
			}
		}
		if pickers > 1 {
			fail("%s: %d pickers; a profile has at most one", where, pickers)
		}
	}
	var handlers []string
	for i := range cfg.Plugins {
		if info, ok := byName[cfg.Plugins[i].RefName()]; ok && info.Role == RoleHandler {
			handlers = append(handlers, cfg.Plugins[i].Type)
		}
	}
	switch {
	case len(handlers) > 1:
		fail("%d profile handlers (%s); at most one is allowed", len(handlers), strings.Join(handlers, ", "))
	case len(handlers) == 0 && len(profiles) > 1:
		fail("%d scheduling profiles and no profile handler configured", len(profiles))
	case len(handlers) == 1 && handlers[0] == "single-profile-handler" && len(profiles) > 1:
		fail("single-profile-handler with %d scheduling profiles", len(profiles))
	}
	if cfg.RequestHandler != nil {
		for i, r := range cfg.RequestHandler.Parsers {
			refRole(fmt.Sprintf("requestHandler.parsers[%d]", i), r.PluginRef, RoleParser)
		}
	}
	if cfg.Parser != nil {
		refRole("parser", cfg.Parser.PluginRef, RoleParser)
	}
	if cfg.SaturationDetector != nil {
		refRole("saturationDetector", cfg.SaturationDetector.PluginRef, RoleFlow)
	}
	if fc := cfg.FlowControl; fc != nil {
		if fc.SaturationDetector != nil {
			refRole("flowControl.saturationDetector", fc.SaturationDetector.PluginRef, RoleFlow)
		}
		refRole("flowControl.usageLimitPolicyPluginRef", fc.UsageLimitPolicyPluginRef, RoleFlow)
		bands := append([]PriorityBand(nil), fc.PriorityBands...)
		for _, b := range []*PriorityBand{fc.DefaultPriorityBand, fc.DefaultNegativePriorityBand} {
			if b != nil {
				bands = append(bands, *b)
			}
		}
		seen := map[int]bool{}
		for i, b := range fc.PriorityBands {
			if b.Priority == nil {
				fail("flowControl.priorityBands[%d]: priority is required", i)
			} else if seen[*b.Priority] {
				fail("flowControl.priorityBands[%d]: duplicate priority %d", i, *b.Priority)
			} else {
				seen[*b.Priority] = true
			}
		}
		for _, b := range bands {
			refRole("flowControl band fairnessPolicyRef", b.FairnessPolicyRef, RoleFlow)
			refRole("flowControl band orderingPolicyRef", b.OrderingPolicyRef, RoleFlow)
		}
		if !hasGate(cfg.FeatureGates, "flowControl") && (len(fc.PriorityBands) > 0 || fc.DefaultPriorityBand != nil ||
			fc.MaxRequests != "" || fc.MaxBytes != "" || fc.UsageLimitPolicyPluginRef != "") {
			warnings = append(warnings, "flowControl settings other than saturationDetector are ignored without the flowControl feature gate")
		}
	}
	if d := cfg.DataLayer; d != nil {
		for i, s := range d.Sources {
			refRole(fmt.Sprintf("dataLayer.sources[%d]", i), s.PluginRef, RoleData)
			for j, e := range s.Extractors {
				ref(fmt.Sprintf("dataLayer.sources[%d].extractors[%d]", i, j), e.PluginRef)
			}
		}
		ref("dataLayer.crossReplicaSyncerPluginRef", d.CrossReplicaSyncerPluginRef)
		// discovery is {pluginRef} in v1alpha1 and {endpoints: {pluginRef}, peers: {pluginRef}}
		// in v1.
		allowed := map[string]bool{"pluginRef": true}
		if t.order == vMain {
			allowed = map[string]bool{"endpoints": true, "peers": true}
		}
		for _, k := range sortedKeys(d.Discovery) {
			if !allowed[k] {
				fail("dataLayer.discovery: unknown field %q for %s", k, t.Name)
				continue
			}
			v := d.Discovery[k]
			if k != "pluginRef" {
				m, _ := v.(map[string]any)
				v = m["pluginRef"]
			}
			name, _ := v.(string)
			if name == "" {
				fail("dataLayer.discovery.%s: pluginRef is required", k)
				continue
			}
			refRole("dataLayer.discovery."+k, name, RoleData)
		}
	}
	// Plugin-to-plugin references inside parameters.
	for i := range cfg.Plugins {
		p := &cfg.Plugins[i]
		where := fmt.Sprintf("plugins[%d] (%s)", i, p.Type)
		switch p.Type {
		case "disagg-profile-handler":
			var dp DisaggProfileHandlerParams
			if raw, err := ParamsJSON(p); err == nil && raw != nil && json.Unmarshal(raw, &dp) == nil {
				if dp.Deciders != nil {
					refRole(where+" deciders.prefill", dp.Deciders.Prefill, RoleDecider)
					refRole(where+" deciders.encode", dp.Deciders.Encode, RoleDecider)
				}
				refRole(where+" prefillDeciderPluginName", dp.PrefillDeciderPluginName, RoleDecider)
				refRole(where+" deciderPluginName", dp.DeciderPluginName, RoleDecider)
				prof := func(what, name, def string) {
					if name == "" {
						name = def
					}
					if len(cfg.SchedulingProfiles) > 0 && !seenProfile[name] && (what != "encode" || name != def) {
						fail("%s: %s profile %q does not exist", where, what, name)
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
		case "pd-profile-handler":
			var pp PDProfileHandlerParams
			if raw, err := ParamsJSON(p); err == nil && raw != nil && json.Unmarshal(raw, &pp) == nil {
				refRole(where+" deciderPluginName", pp.DeciderPluginName, RoleDecider)
			}
		}
	}
	return warnings, errors.Join(errs...)
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
