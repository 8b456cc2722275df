package llmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Marshal writes v as YAML with two-space indentation, keeping the field order of the structs
// so that documents read like upstream's samples.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// YAMLToJSON converts one YAML document to JSON, as the router's loader does before decoding
// (duplicate keys are errors).
func YAMLToJSON(data []byte) ([]byte, error) {
	var v any
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty document")
		}
		return nil, err
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("expected one YAML document")
	}
	v, err := jsonable(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// jsonable converts decoded YAML into values encoding/json accepts.
func jsonable(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			c, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			x[k] = c
		}
		return x, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("non-string key %v", k)
			}
			c, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			out[ks] = c
		}
		return out, nil
	case []any:
		for i, e := range x {
			c, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			x[i] = c
		}
		return x, nil
	}
	return v, nil
}

// SplitDocuments splits a multi-document YAML stream into its non-empty documents.
func SplitDocuments(data []byte) ([][]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out [][]byte
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(n.Content) == 0 || n.Content[0].Kind == yaml.ScalarNode && n.Content[0].Tag == "!!null" {
			continue
		}
		b, err := yaml.Marshal(&n)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
}

// strictJSON decodes raw into v rejecting unknown keys, and also keys that match a field only
// case-insensitively (encoding/json would accept them; the router's decoder does not).
func strictJSON(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	back, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var orig, round any
	if err := json.Unmarshal(raw, &orig); err != nil {
		return err
	}
	if err := json.Unmarshal(back, &round); err != nil {
		return err
	}
	return caseCheck("", orig, round)
}

func caseCheck(path string, orig, round any) error {
	switch o := orig.(type) {
	case map[string]any:
		r, _ := round.(map[string]any)
		for _, k := range sortedKeys(o) {
			if rv, ok := r[k]; ok {
				if err := caseCheck(path+"."+k, o[k], rv); err != nil {
					return err
				}
				continue
			}
			for rk := range r {
				if strings.EqualFold(rk, k) {
					return fmt.Errorf("unknown field %q (did you mean %q?)", strings.TrimPrefix(path+"."+k, "."), rk)
				}
			}
		}
	case []any:
		r, _ := round.([]any)
		for i := range o {
			if i < len(r) {
				if err := caseCheck(fmt.Sprintf("%s[%d]", path, i), o[i], r[i]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Decode reads an EndpointPickerConfig strictly: YAML converted to JSON, unknown or
// miscased keys rejected. Plugin parameters are kept as json.RawMessage; Validate checks them
// against the plugin's schema.
func Decode(data []byte) (*EndpointPickerConfig, error) {
	raw, err := YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("EndpointPickerConfig: %w", err)
	}
	var cfg EndpointPickerConfig
	if err := strictJSON(raw, &cfg); err != nil {
		return nil, fmt.Errorf("EndpointPickerConfig: %w", err)
	}
	if cfg.Kind != KindEndpointPickerConfig {
		return nil, fmt.Errorf("EndpointPickerConfig: kind is %q, want %q", cfg.Kind, KindEndpointPickerConfig)
	}
	for i := range cfg.Plugins {
		p := &cfg.Plugins[i]
		if p.Parameters == nil {
			continue
		}
		b, err := json.Marshal(p.Parameters)
		if err != nil {
			return nil, err
		}
		p.Parameters = json.RawMessage(b)
	}
	return &cfg, nil
}

// DecodeObjective reads one InferenceObjective strictly.
func DecodeObjective(data []byte) (*InferenceObjective, error) {
	raw, err := YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("InferenceObjective: %w", err)
	}
	var head struct {
		Metadata map[string]any `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("InferenceObjective: %w", err)
	}
	// Object metadata may carry any Kubernetes field (labels, annotations, uid...); only
	// the rest of the object is decoded strictly.
	var obj struct {
		APIVersion string                 `json:"apiVersion"`
		Kind       string                 `json:"kind"`
		Metadata   json.RawMessage        `json:"metadata"`
		Spec       InferenceObjectiveSpec `json:"spec"`
		Status     json.RawMessage        `json:"status"`
	}
	if err := strictJSON(raw, &obj); err != nil {
		return nil, fmt.Errorf("InferenceObjective: %w", err)
	}
	if obj.Kind != "InferenceObjective" {
		return nil, fmt.Errorf("InferenceObjective: kind is %q, want InferenceObjective", obj.Kind)
	}
	switch obj.APIVersion {
	case "llm-d.ai/v1alpha2", "inference.networking.x-k8s.io/v1alpha2":
	default:
		return nil, fmt.Errorf("InferenceObjective: unknown apiVersion %q (known: llm-d.ai/v1alpha2, inference.networking.x-k8s.io/v1alpha2)", obj.APIVersion)
	}
	name, _ := head.Metadata["name"].(string)
	if name == "" {
		return nil, errors.New("InferenceObjective: metadata.name is required")
	}
	ns, _ := head.Metadata["namespace"].(string)
	return &InferenceObjective{APIVersion: obj.APIVersion, Kind: obj.Kind,
		Metadata: ObjectMeta{Name: name, Namespace: ns}, Spec: obj.Spec}, nil
}

// UnmarshalStrict decodes one YAML document into v through JSON, rejecting unknown and
// miscased keys (v's json tags name the keys).
func UnmarshalStrict(data []byte, v any) error {
	raw, err := YAMLToJSON(data)
	if err != nil {
		return err
	}
	return strictJSON(raw, v)
}
