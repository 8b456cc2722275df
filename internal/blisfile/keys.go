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

// Package blisfile converts BLIS workload and policy files to blis-operator resources and
// back.
//
// The mapping is mechanical: every BLIS key becomes the resource field of the same name in
// camelCase (aggregate_rate is aggregateRate, tenant_id is tenantId, gpu_memory_gib is
// gpuMemoryGib): the first letter after each underscore is upper-cased and the underscore
// dropped. The reverse puts an underscore before every upper-case letter and lower-cases it.
// The rewrite applies to keys at every depth except the keys of maps whose keys are user
// data (tenant IDs, SLO class names, tool names, template parameter names), which are kept
// exactly; the values of such maps are rewritten as usual. Values are never changed.
//
// After the rewrite the document is decoded strictly into the typed spec, so a misspelt or
// unknown BLIS key is an error that names the key.
package blisfile

import (
	"strings"
	"unicode"
)

// VerbatimMapKeys are the BLIS keys whose values are maps keyed by user data; the keys of
// these maps are never rewritten.
var VerbatimMapKeys = []string{
	"tenant_budgets",      // policy: tenant ID -> budget fraction
	"slo_priorities",      // policy admission: SLO class -> priority
	"slo_targets",         // policy admission: SLO class -> TTFT target
	"goodput_slo_targets", // workload: SLO class -> latency thresholds
	"tools",               // workload agentic: tool name -> tool
	"parameters",          // policy stages and scorers: template parameter name -> value
	"fitness_weights",     // evaluation: BLIS metric name -> weight
}

// ToCamel rewrites a snake_case key to camelCase: aggregate_rate -> aggregateRate.
func ToCamel(key string) string {
	if !strings.Contains(key, "_") {
		return key
	}
	var b strings.Builder
	b.Grow(len(key))
	upper := false
	for _, r := range key {
		if r == '_' {
			upper = true
			continue
		}
		if upper {
			b.WriteRune(unicode.ToUpper(r))
			upper = false
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ToSnake rewrites a camelCase key to snake_case: aggregateRate -> aggregate_rate. It is the
// inverse of ToCamel for every key ToCamel produces from lower-case snake_case.
func ToSnake(key string) string {
	var b strings.Builder
	b.Grow(len(key) + 4)
	for _, r := range key {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// VerbatimValueKeys are the keys whose whole value is user data at every depth and is copied
// unchanged: template options (strings) and template tables (name -> name -> number).
var VerbatimValueKeys = []string{
	"options",        // policy stages: option name -> string
	"parameter_maps", // policy stages: table name -> (user name -> number)
}

func isVerbatimValue(snakeKey string) bool {
	for _, k := range VerbatimValueKeys {
		if k == snakeKey {
			return true
		}
	}
	return false
}

func isVerbatim(snakeKey string) bool {
	for _, k := range VerbatimMapKeys {
		if k == snakeKey {
			return true
		}
	}
	return false
}

// rewriteKeys returns a copy of v with every map key passed through rename, except the keys
// of maps held under a verbatim key. toSnake tells how to recognise a verbatim key: when
// converting to camelCase the keys are still snake_case, and the reverse.
func rewriteKeys(v any, rename func(string) string, toSnake bool) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			snake := k
			if toSnake {
				snake = ToSnake(k)
			}
			if isVerbatimValue(snake) {
				out[rename(k)] = val
				continue
			}
			if isVerbatim(snake) {
				if m, ok := val.(map[string]any); ok {
					kept := make(map[string]any, len(m))
					for mk, mv := range m {
						kept[mk] = rewriteKeys(mv, rename, toSnake)
					}
					out[rename(k)] = kept
					continue
				}
			}
			out[rename(k)] = rewriteKeys(val, rename, toSnake)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = rewriteKeys(e, rename, toSnake)
		}
		return out
	default:
		return v
	}
}

// KeysToCamel rewrites the keys of a decoded BLIS document to camelCase.
func KeysToCamel(doc any) any { return rewriteKeys(doc, ToCamel, false) }

// KeysToSnake rewrites the keys of a decoded resource spec to BLIS's snake_case.
func KeysToSnake(doc any) any { return rewriteKeys(doc, ToSnake, true) }
