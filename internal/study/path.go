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

package study

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Segment is one step of a parameter path: a field name, optionally followed by a list
// selector ([key=value] or [index]).
type Segment struct {
	// Field is the JSON field (or map key) name.
	Field string
	// HasSelector marks a list selector after the field.
	HasSelector bool
	// Key and Match select the list element whose Key field equals Match.
	Key, Match string
	// Index selects the list element by position when Key is empty.
	Index int
}

// ParsePath parses a parameter path: dot-separated field names, each optionally followed by
// [key=value] (the list element whose key field is value) or [n] (the n-th element), for
// example routing.scorers[name=queue-scorer].weight. Selector values may contain dots.
func ParsePath(path string) ([]Segment, error) {
	if path == "" {
		return nil, errors.New("empty path")
	}
	var segs []Segment
	i := 0
	for i < len(path) {
		start := i
		for i < len(path) && path[i] != '.' && path[i] != '[' {
			i++
		}
		seg := Segment{Field: path[start:i]}
		if seg.Field == "" {
			return nil, fmt.Errorf("path %q: empty field name at offset %d", path, start)
		}
		if i < len(path) && path[i] == '[' {
			end := strings.IndexByte(path[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("path %q: unclosed [", path)
			}
			sel := path[i+1 : i+end]
			i += end + 1
			seg.HasSelector = true
			if k, v, ok := strings.Cut(sel, "="); ok {
				if k == "" || v == "" {
					return nil, fmt.Errorf("path %q: selector [%s] needs key=value", path, sel)
				}
				seg.Key, seg.Match = k, v
			} else {
				n, err := strconv.Atoi(sel)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("path %q: selector [%s] is neither key=value nor an index", path, sel)
				}
				seg.Index = n
			}
		}
		segs = append(segs, seg)
		if i < len(path) {
			if path[i] != '.' {
				return nil, fmt.Errorf("path %q: expected . at offset %d", path, i)
			}
			i++
			if i == len(path) {
				return nil, fmt.Errorf("path %q ends with a dot", path)
			}
		}
	}
	if segs[len(segs)-1].HasSelector {
		return nil, fmt.Errorf("path %q must end in a field, not a list element", path)
	}
	return segs, nil
}

// Lookup returns the value at path in doc (a JSON object as decoded by encoding/json), and
// whether it is set.
func Lookup(doc map[string]any, path string) (any, bool, error) {
	segs, err := ParsePath(path)
	if err != nil {
		return nil, false, err
	}
	var cur any = doc
	for _, s := range segs {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		next, ok := m[s.Field]
		if !ok {
			return nil, false, nil
		}
		if s.HasSelector {
			el, err := selectElement(next, s, path)
			if err != nil {
				return nil, false, nil
			}
			next = el
		}
		cur = next
	}
	return cur, true, nil
}

// Patch sets the field at path in doc to v, converted to the JSON type of the field's current
// value (see Convert). Objects missing along the way are created; list selectors must match
// an existing element.
func Patch(doc map[string]any, path string, v Value) error {
	segs, err := ParsePath(path)
	if err != nil {
		return err
	}
	cur := doc
	for i, s := range segs {
		last := i == len(segs)-1
		if last {
			conv, err := Convert(v, cur[s.Field])
			if err != nil {
				return fmt.Errorf("path %q: %w", path, err)
			}
			cur[s.Field] = conv
			return nil
		}
		next, ok := cur[s.Field]
		if s.HasSelector {
			if !ok {
				return fmt.Errorf("path %q: %s is not set in the base bundle", path, s.Field)
			}
			if next, err = selectElement(next, s, path); err != nil {
				return err
			}
		} else if !ok || next == nil {
			next = map[string]any{}
			cur[s.Field] = next
		}
		m, isMap := next.(map[string]any)
		if !isMap {
			return fmt.Errorf("path %q: %s is not an object", path, s.Field)
		}
		cur = m
	}
	return nil
}

// selectElement picks the list element a segment's selector names.
func selectElement(v any, s Segment, path string) (any, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("path %q: %s is not a list", path, s.Field)
	}
	if s.Key == "" {
		if s.Index >= len(list) {
			return nil, fmt.Errorf("path %q: %s has %d elements, no index %d", path, s.Field, len(list), s.Index)
		}
		return list[s.Index], nil
	}
	for _, el := range list {
		m, ok := el.(map[string]any)
		if !ok {
			continue
		}
		if fmt.Sprint(m[s.Key]) == s.Match {
			return m, nil
		}
	}
	return nil, fmt.Errorf("path %q: no element of %s has %s=%s in the base bundle", path, s.Field, s.Key, s.Match)
}

// Convert gives v the JSON type of the field's current value: a number field receives a
// number (a choice is parsed), a string field a string (a number in shortest form), a boolean
// field a boolean. A field that is not set receives a number, or a choice's string.
func Convert(v Value, current any) (any, error) {
	switch current.(type) {
	case string:
		return v.String(), nil
	case bool:
		b, err := strconv.ParseBool(v.String())
		if err != nil {
			return nil, fmt.Errorf("the field is a boolean and %q is not", v.String())
		}
		return b, nil
	case float64, int64, int:
		if !v.IsStr {
			return jsonNumber(v.Num), nil
		}
		f, err := strconv.ParseFloat(v.Str, 64)
		if err != nil {
			return nil, fmt.Errorf("the field is a number and %q is not", v.Str)
		}
		return jsonNumber(f), nil
	case nil:
		if v.IsStr {
			return v.Str, nil
		}
		return jsonNumber(v.Num), nil
	}
	return nil, errors.New("the field is an object or a list, not a value")
}

// jsonNumber keeps whole numbers integral so that integer fields decode.
func jsonNumber(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f)
	}
	return f
}
