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
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// PolicyToEngine renders a PolicyBundle spec as a policy file of this project's engine. The
// BLIS keys map mechanically, exactly as in PolicyToBLIS; the evolvable forms are rewritten to
// the engine's spelling:
//
//   - a stage's parameters, options ("true"/"false" as booleans) and parameterMaps merge
//     into params, and routing.picker joins them as params.picker; a scorer's parameters
//     become its params;
//   - a decisionTree's numbered nodes become the engine's nested tree (if/then/else with the
//     condition's op and value; leaves with action, delay_us, reason or score);
//   - cel stays cel (an expression string in both);
//   - instanceScheduler.parameters become the top-level scheduler_params;
//   - lineage {generation, parentID, mutations} becomes metadata {generation, parent,
//     mutations}.
//
// Forms the engine does not implement (instance-scheduler, preemption or autoscaler trees, CEL
// or template settings, autoscale templates) are errors naming the field rather than being
// dropped.
func PolicyToEngine(spec *blisv1alpha1.PolicyBundleSpec) ([]byte, error) {
	if spec.BlisConfigMapRef != nil {
		return nil, errors.New("the spec references a BLIS file in ConfigMap " + spec.BlisConfigMapRef.Name + "; convert that file instead")
	}
	js, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var raw any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, &raw); err != nil {
		return nil, err
	}
	doc, _ := KeysToSnake(raw).(map[string]any)
	var unsupported []string
	for _, stage := range []string{"admission", "priority", "routing"} {
		m, ok := doc[stage].(map[string]any)
		if !ok {
			continue
		}
		params, err := engineParams(m)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", stage, err)
		}
		if params != nil {
			m["params"] = params
		}
		if t, ok := m["decision_tree"]; ok {
			tree, err := nestTree(t)
			if err != nil {
				return nil, fmt.Errorf("%s.decisionTree: %w", stage, err)
			}
			m["tree"] = tree
			delete(m, "decision_tree")
		}
	}
	if r, ok := doc["routing"].(map[string]any); ok {
		if scorers, ok := r["scorers"].([]any); ok {
			for _, s := range scorers {
				if sm, ok := s.(map[string]any); ok {
					renameKey(sm, "parameters", "params")
				}
			}
		}
		if p, ok := r["picker"]; ok {
			params, _ := r["params"].(map[string]any)
			if params == nil {
				params = map[string]any{}
			}
			if _, dup := params["picker"]; dup {
				return nil, errors.New("routing: picker is given both as a field and as an option")
			}
			params["picker"] = p
			r["params"] = params
			delete(r, "picker")
		}
	}
	if s, ok := doc["instance_scheduler"].(map[string]any); ok {
		params, err := engineParams(s)
		if err != nil {
			return nil, fmt.Errorf("instanceScheduler: %w", err)
		}
		if params != nil {
			doc["scheduler_params"] = params
		}
		for _, k := range []string{"decision_tree", "cel"} {
			if _, ok := s[k]; ok {
				unsupported = append(unsupported, "instanceScheduler."+ToCamel(k))
			}
		}
		delete(doc, "instance_scheduler")
	}
	if p, ok := doc["preemption"].(map[string]any); ok {
		for _, k := range []string{"parameters", "options", "parameter_maps", "decision_tree", "cel"} {
			if _, ok := p[k]; ok {
				unsupported = append(unsupported, "preemption."+ToCamel(k))
			}
		}
	}
	if a, ok := doc["autoscaler"].(map[string]any); ok {
		for _, k := range []string{"policy", "parameters", "options", "parameter_maps", "decision_tree", "cel"} {
			if _, ok := a[k]; ok {
				unsupported = append(unsupported, "autoscaler."+ToCamel(k))
			}
		}
	}
	if l, ok := doc["lineage"].(map[string]any); ok {
		md := map[string]any{}
		for k, v := range l {
			switch k {
			case "parent_i_d":
				md["parent"] = v
			default:
				md[k] = v
			}
		}
		doc["metadata"] = md
		delete(doc, "lineage")
	}
	if len(unsupported) > 0 {
		sort.Strings(unsupported)
		return nil, fmt.Errorf("the engine does not implement %s", strings.Join(unsupported, ", "))
	}
	return yaml.Marshal(doc)
}

// engineParams merges a stage's parameters, options and parameter_maps into the engine's
// single params map (removing the three keys from m); option values "true" and "false"
// become booleans. It returns nil when the stage has none.
func engineParams(m map[string]any) (map[string]any, error) {
	out := map[string]any{}
	add := func(k string, v any) error {
		if _, dup := out[k]; dup {
			return fmt.Errorf("template setting %q is given twice", k)
		}
		out[k] = v
		return nil
	}
	if p, ok := m["parameters"].(map[string]any); ok {
		for k, v := range p {
			if err := add(k, v); err != nil {
				return nil, err
			}
		}
	}
	if o, ok := m["options"].(map[string]any); ok {
		for k, v := range o {
			switch v {
			case "true":
				v = true
			case "false":
				v = false
			}
			if err := add(k, v); err != nil {
				return nil, err
			}
		}
	}
	if t, ok := m["parameter_maps"].(map[string]any); ok {
		for k, v := range t {
			if err := add(k, v); err != nil {
				return nil, err
			}
		}
	}
	delete(m, "parameters")
	delete(m, "options")
	delete(m, "parameter_maps")
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func renameKey(m map[string]any, from, to string) {
	if v, ok := m[from]; ok {
		m[to] = v
		delete(m, from)
	}
}

// nestTree turns the numbered nodes of a decision tree (snake_case keys) into the engine's
// nested form, starting at node 0.
func nestTree(t any) (map[string]any, error) {
	tm, ok := t.(map[string]any)
	if !ok {
		return nil, errors.New("not an object")
	}
	list, _ := tm["nodes"].([]any)
	nodes := make(map[int64]map[string]any, len(list))
	for _, n := range list {
		nm, ok := n.(map[string]any)
		if !ok {
			return nil, errors.New("a node is not an object")
		}
		id, ok := nm["id"].(int64)
		if !ok {
			return nil, fmt.Errorf("node without an integer id: %v", nm["id"])
		}
		nodes[id] = nm
	}
	return nestNode(nodes, 0, 0)
}

func nestNode(nodes map[int64]map[string]any, id int64, depth int) (map[string]any, error) {
	n, ok := nodes[id]
	if !ok {
		return nil, fmt.Errorf("node %d does not exist", id)
	}
	if depth > len(nodes) {
		return nil, errors.New("the tree has a cycle")
	}
	out := map[string]any{}
	if c, ok := n["condition"].(map[string]any); ok {
		cond := map[string]any{"observable": c["observable"], "op": c["operator"]}
		if v, ok := c["threshold"]; ok {
			cond["value"] = v
		} else {
			cond["value"] = c["value"]
		}
		out["if"] = cond
		for key, child := range map[string]string{"then": "true_node", "else": "false_node"} {
			cid, ok := n[child].(int64)
			if !ok {
				return nil, fmt.Errorf("node %d: %s missing", id, ToCamel(child))
			}
			sub, err := nestNode(nodes, cid, depth+1)
			if err != nil {
				return nil, err
			}
			out[key] = sub
		}
		return out, nil
	}
	a, ok := n["action"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("node %d has neither condition nor action", id)
	}
	if r, ok := a["reason"]; ok {
		out["reason"] = r
	}
	switch d := a["decision"]; d {
	case "score":
		out["score"] = a["value"]
	case "delay":
		out["action"] = d
		out["delay_us"] = toInt64(a["value"])
	default:
		out["action"] = d
	}
	return out, nil
}

func toInt64(v any) int64 {
	switch t := v.(type) {
	case int64:
		return t
	case float64:
		return int64(t)
	}
	return 0
}
