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

package blisfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// Kind is the kind of a BLIS file.
type Kind string

// The BLIS file kinds.
const (
	// KindWorkload is a BLIS workload spec (clients, cohorts, inference_perf, ...); it
	// converts to a WorkloadSpec.
	KindWorkload Kind = "WorkloadSpec"
	// KindPolicy is a BLIS policy config (admission, routing, scheduler, ...); it converts to
	// a PolicyBundle.
	KindPolicy Kind = "PolicyBundle"
)

// policyKeys and workloadKeys are the top-level keys of the two BLIS file kinds.
var (
	policyKeys = []string{"admission", "routing", "priority", "scheduler", "preemption",
		"tenant_budgets", "node_pools", "autoscaler", "instance_lifecycle"}
	workloadKeys = []string{"version", "seed", "category", "aggregate_rate", "num_requests",
		"horizon", "clients", "cohorts", "servegen_data", "inference_perf", "goodput_slo_targets"}
)

// decode parses YAML (or JSON) into generic values, keeping integers as int64 so that
// seeds and microsecond counts survive exactly.
func decode(data []byte) (map[string]any, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("parsing YAML: %w", err)
	}
	var doc any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, &doc); err != nil {
		return nil, fmt.Errorf("parsing YAML: %w", err)
	}
	if doc == nil {
		return nil, errors.New("the file is empty")
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("the file is not a YAML mapping")
	}
	return m, nil
}

// Detect tells whether a BLIS file is a workload spec or a policy config from its top-level
// keys.
func Detect(data []byte) (Kind, error) {
	doc, err := decode(data)
	if err != nil {
		return "", err
	}
	return detect(doc)
}

func detect(doc map[string]any) (Kind, error) {
	var pol, wl, other []string
	for k := range doc {
		switch {
		case contains(policyKeys, k):
			pol = append(pol, k)
		case contains(workloadKeys, k):
			wl = append(wl, k)
		default:
			other = append(other, k)
		}
	}
	sort.Strings(pol)
	sort.Strings(wl)
	sort.Strings(other)
	switch {
	case len(pol) > 0 && len(wl) > 0:
		return "", fmt.Errorf("the file mixes policy keys (%s) and workload keys (%s)", strings.Join(pol, ", "), strings.Join(wl, ", "))
	case len(pol) > 0:
		return KindPolicy, nil
	case len(wl) > 0:
		return KindWorkload, nil
	case len(other) > 0:
		return "", fmt.Errorf("unknown top-level keys %s: neither a BLIS workload spec nor a BLIS policy config", strings.Join(other, ", "))
	default:
		return "", errors.New("the file has no keys")
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// strictInto marshals a camelCase document and decodes it strictly into out. Unknown keys are
// reported by their BLIS (snake_case) path.
func strictInto(doc any, out any) error {
	js, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	strictErrs, err := sigsjson.UnmarshalStrict(js, out)
	if err != nil {
		return fmt.Errorf("decoding: %s", snakeMessage(err.Error()))
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = snakeMessage(e.Error())
		}
		sort.Strings(msgs)
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

var quoted = regexp.MustCompile(`"[^"]*"`)

// snakeMessage rewrites the quoted field paths of a decoding error to BLIS key spelling.
func snakeMessage(msg string) string {
	msg = strings.Replace(msg, "json: ", "", 1)
	return quoted.ReplaceAllStringFunc(msg, func(q string) string {
		return ToSnake(q)
	})
}

// ParseWorkload converts a BLIS workload spec to a WorkloadSpec spec.
func ParseWorkload(data []byte) (*blisv1alpha1.WorkloadSpecSpec, error) {
	doc, err := decode(data)
	if err != nil {
		return nil, err
	}
	return workloadFromDoc(doc)
}

func workloadFromDoc(doc map[string]any) (*blisv1alpha1.WorkloadSpecSpec, error) {
	// BLIS reads an unquoted `version: 2` as the string "2".
	if v, ok := doc["version"].(int64); ok {
		doc["version"] = fmt.Sprint(v)
	}
	var spec blisv1alpha1.WorkloadSpecSpec
	if err := strictInto(KeysToCamel(doc), &spec); err != nil {
		return nil, fmt.Errorf("BLIS workload spec: %w", err)
	}
	return &spec, nil
}

// ParsePolicy converts a BLIS policy config to a PolicyBundle spec.
func ParsePolicy(data []byte) (*blisv1alpha1.PolicyBundleSpec, error) {
	doc, err := decode(data)
	if err != nil {
		return nil, err
	}
	return policyFromDoc(doc)
}

func policyFromDoc(doc map[string]any) (*blisv1alpha1.PolicyBundleSpec, error) {
	var spec blisv1alpha1.PolicyBundleSpec
	if err := strictInto(KeysToCamel(doc), &spec); err != nil {
		return nil, fmt.Errorf("BLIS policy config: %w", err)
	}
	return &spec, nil
}

// toBLIS renders a typed spec as a BLIS YAML file.
func toBLIS(spec any) ([]byte, error) {
	js, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var doc any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, &doc); err != nil {
		return nil, err
	}
	return yaml.Marshal(KeysToSnake(doc))
}

// WorkloadToBLIS renders a WorkloadSpec spec as a BLIS workload spec file. A spec that only
// references a ConfigMap has no typed content and is refused.
func WorkloadToBLIS(spec *blisv1alpha1.WorkloadSpecSpec) ([]byte, error) {
	if spec.BlisConfigMapRef != nil {
		return nil, errors.New("the spec references a BLIS file in ConfigMap " + spec.BlisConfigMapRef.Name + "; that file is the BLIS form")
	}
	if spec.Scenario != "" {
		return nil, errors.New("the spec names built-in scenario " + spec.Scenario + "; its BLIS form comes from the engine's scenario catalog")
	}
	if spec.Trace != nil {
		return nil, errors.New("the spec replays a trace; a trace has no BLIS workload spec form")
	}
	return toBLIS(spec)
}

// PolicyToBLIS renders a PolicyBundle spec as a BLIS policy config file. A spec that only
// references a ConfigMap has no typed content and is refused.
func PolicyToBLIS(spec *blisv1alpha1.PolicyBundleSpec) ([]byte, error) {
	if spec.BlisConfigMapRef != nil {
		return nil, errors.New("the spec references a BLIS file in ConfigMap " + spec.BlisConfigMapRef.Name + "; that file is the BLIS form")
	}
	return toBLIS(spec)
}

// Convert turns a BLIS file into a WorkloadSpec or PolicyBundle named name in namespace
// (namespace may be empty).
func Convert(data []byte, name, namespace string) (runtime.Object, error) {
	doc, err := decode(data)
	if err != nil {
		return nil, err
	}
	kind, err := detect(doc)
	if err != nil {
		return nil, err
	}
	meta := metav1.ObjectMeta{Name: name, Namespace: namespace}
	switch kind {
	case KindPolicy:
		spec, err := policyFromDoc(doc)
		if err != nil {
			return nil, err
		}
		return &blisv1alpha1.PolicyBundle{
			TypeMeta:   metav1.TypeMeta{APIVersion: blisv1alpha1.GroupVersion.String(), Kind: string(KindPolicy)},
			ObjectMeta: meta,
			Spec:       *spec,
		}, nil
	default:
		spec, err := workloadFromDoc(doc)
		if err != nil {
			return nil, err
		}
		return &blisv1alpha1.WorkloadSpec{
			TypeMeta:   metav1.TypeMeta{APIVersion: blisv1alpha1.GroupVersion.String(), Kind: string(KindWorkload)},
			ObjectMeta: meta,
			Spec:       *spec,
		}, nil
	}
}

// ToBLIS renders a WorkloadSpec or PolicyBundle manifest (YAML or JSON) as the BLIS file it
// stands for.
func ToBLIS(manifest []byte) ([]byte, error) {
	js, err := yaml.YAMLToJSON(manifest)
	if err != nil {
		return nil, fmt.Errorf("parsing the manifest: %w", err)
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return nil, fmt.Errorf("parsing the manifest: %w", err)
	}
	if tm.APIVersion != blisv1alpha1.GroupVersion.String() {
		return nil, fmt.Errorf("apiVersion %q is not %s", tm.APIVersion, blisv1alpha1.GroupVersion.String())
	}
	switch Kind(tm.Kind) {
	case KindWorkload:
		var obj blisv1alpha1.WorkloadSpec
		if err := strictObject(js, &obj); err != nil {
			return nil, err
		}
		return WorkloadToBLIS(&obj.Spec)
	case KindPolicy:
		var obj blisv1alpha1.PolicyBundle
		if err := strictObject(js, &obj); err != nil {
			return nil, err
		}
		return PolicyToBLIS(&obj.Spec)
	default:
		return nil, fmt.Errorf("kind %q has no BLIS file form (only WorkloadSpec and PolicyBundle have)", tm.Kind)
	}
}

func strictObject(js []byte, out any) error {
	strictErrs, err := sigsjson.UnmarshalStrict(js, out)
	if err != nil {
		return fmt.Errorf("decoding the manifest: %w", err)
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("decoding the manifest: %s", strings.Join(msgs, "; "))
	}
	return nil
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// NameFromPath derives a resource name (DNS-1123 label) from a file path:
// data/regression_workload_multiturn.yaml becomes regression-workload-multiturn.
func NameFromPath(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	name := nonName.ReplaceAllString(strings.ToLower(base), "-")
	name = strings.Trim(name, "-")
	if len(name) > 63 {
		name = strings.Trim(name[:63], "-")
	}
	if name == "" {
		name = "blis"
	}
	return name
}

// Manifest renders a converted resource as YAML or JSON without the empty status and
// creationTimestamp that a plain marshal would add.
func Manifest(obj runtime.Object, format string) ([]byte, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(u, "status")
	if md, ok := u["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	switch format {
	case "json":
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(u); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case "yaml", "":
		return yaml.Marshal(u)
	default:
		return nil, fmt.Errorf("unknown output format %q (yaml or json)", format)
	}
}
