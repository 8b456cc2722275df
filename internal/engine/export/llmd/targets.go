package llmd

import (
	"fmt"
	"strings"
)

// API versions of the EndpointPickerConfig document.
const (
	// APIVersionLegacy is GIE's group, the only one of llm-d-inference-scheduler <= v0.8.0
	// (still accepted, with a deprecation log, by v0.9 and v0.10).
	APIVersionLegacy = "inference.networking.x-k8s.io/v1alpha1"
	// APIVersionV1Alpha1 is llm-d-router's group from v0.9.0.
	APIVersionV1Alpha1 = "llm-d.ai/v1alpha1"
	// APIVersionV1 is accepted only after v0.10.0; v0.10.0 rejects it.
	APIVersionV1 = "llm-d.ai/v1"
)

// Target is one router release line the exporter can write for.
type Target struct {
	// Name is what --target accepts, e.g. "llm-d-v0.10".
	Name string
	// Router describes the release line in words.
	Router string
	// APIVersion is the EndpointPickerConfig apiVersion written for it.
	APIVersion string
	// ObjectiveAPIVersion is the InferenceObjective group/version it reconciles.
	ObjectiveAPIVersion string
	// order ranks release lines for the since/until checks of the registry.
	order int
	// strictParams says whether unknown parameter keys stop the router (v0.9.0 onwards).
	strictParams bool
}

// Release-line ranks.
const (
	v08 = iota + 1
	v09
	v010
	vMain
)

var targets = []Target{
	{Name: "llm-d-v0.8", Router: "llm-d-inference-scheduler <= v0.8.0 (GIE <= v1.5.0)", APIVersion: APIVersionLegacy,
		ObjectiveAPIVersion: "inference.networking.x-k8s.io/v1alpha2", order: v08},
	{Name: "llm-d-v0.9", Router: "llm-d-router v0.9.x", APIVersion: APIVersionV1Alpha1,
		ObjectiveAPIVersion: "llm-d.ai/v1alpha2", order: v09, strictParams: true},
	{Name: "llm-d-v0.10", Router: "llm-d-router v0.10.x", APIVersion: APIVersionV1Alpha1,
		ObjectiveAPIVersion: "llm-d.ai/v1alpha2", order: v010, strictParams: true},
	{Name: "llm-d-v1", Router: "llm-d-router after v0.10 (EndpointPickerConfig llm-d.ai/v1)", APIVersion: APIVersionV1,
		ObjectiveAPIVersion: "llm-d.ai/v1alpha2", order: vMain, strictParams: true},
}

// DefaultTarget is the target written when none is chosen.
const DefaultTarget = "llm-d-v0.10"

// Targets lists the supported targets, oldest first.
func Targets() []Target { return append([]Target(nil), targets...) }

// TargetNames lists the names --target accepts.
func TargetNames() []string {
	out := make([]string, len(targets))
	for i, t := range targets {
		out[i] = t.Name
	}
	return out
}

// LookupTarget finds a target by name; "" is the default. A leading "llm-d-" and a patch
// level ("llm-d-v0.10.0") are optional.
func LookupTarget(name string) (Target, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "" {
		n = DefaultTarget
	}
	if !strings.HasPrefix(n, "llm-d-") {
		n = "llm-d-" + n
	}
	for _, t := range targets {
		if n == t.Name || strings.HasPrefix(n, t.Name+".") {
			return t, nil
		}
	}
	return Target{}, fmt.Errorf("unsupported target %q (supported: %s)", name, strings.Join(TargetNames(), ", "))
}

// TargetForAPIVersion returns the newest target that writes apiVersion, used to check a
// document read from a file against the release line it was written for.
func TargetForAPIVersion(apiVersion string) (Target, error) {
	switch apiVersion {
	case APIVersionLegacy:
		return targets[0], nil
	case APIVersionV1Alpha1:
		return targets[2], nil
	case APIVersionV1:
		return targets[3], nil
	}
	return Target{}, fmt.Errorf("unknown EndpointPickerConfig apiVersion %q (known: %s, %s, %s)",
		apiVersion, APIVersionV1Alpha1, APIVersionLegacy, APIVersionV1)
}

// TargetsForAPIVersion lists the release lines that accept apiVersion, the newest first. A
// document is checked against them in turn: a legacy-group document may be a current one that
// kept the old group, or an old one with parameters current releases reject.
func TargetsForAPIVersion(apiVersion string) ([]Target, error) {
	switch apiVersion {
	case APIVersionLegacy:
		return []Target{targets[2], targets[0]}, nil
	case APIVersionV1Alpha1:
		return []Target{targets[2], targets[3]}, nil
	case APIVersionV1:
		return []Target{targets[3]}, nil
	}
	_, err := TargetForAPIVersion(apiVersion)
	return nil, err
}

// AtLeast reports whether t is the release line named by other or a later one.
func (t Target) AtLeast(other string) bool {
	o, err := LookupTarget(other)
	return err == nil && t.order >= o.order
}
