package policy

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Params are a template's parameters as written in a bundle (decoded YAML values).
type Params map[string]any

// paramReader reads typed parameters with defaults and remembers which names the template
// knows, so that unknown or mistyped parameters fail with the policy, field and name.
type paramReader struct {
	m     Params
	known []string
	err   error
}

func newParamReader(m Params) *paramReader { return &paramReader{m: m} }

func (r *paramReader) fail(name, format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("parameter %q: %s", name, fmt.Sprintf(format, args...))
	}
}

func (r *paramReader) lookup(name string) (any, bool) {
	r.known = append(r.known, name)
	v, ok := r.m[name]
	return v, ok
}

// toFloat converts a decoded YAML scalar to float64.
func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	case float32:
		return float64(x), true
	}
	return 0, false
}

func (r *paramReader) float(name string, def float64) float64 {
	v, ok := r.lookup(name)
	if !ok {
		return def
	}
	f, ok := toFloat(v)
	if !ok {
		r.fail(name, "want a number, got %T %v", v, v)
		return def
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		r.fail(name, "must be finite, got %v", f)
		return def
	}
	return f
}

func (r *paramReader) int(name string, def int64) int64 {
	v, ok := r.lookup(name)
	if !ok {
		return def
	}
	f, ok := toFloat(v)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		r.fail(name, "want an integer, got %T %v", v, v)
		return def
	}
	return int64(f)
}

func (r *paramReader) bool(name string, def bool) bool {
	v, ok := r.lookup(name)
	if !ok {
		return def
	}
	b, ok := v.(bool)
	if !ok {
		r.fail(name, "want true or false, got %T %v", v, v)
		return def
	}
	return b
}

func (r *paramReader) str(name, def string, allowed ...string) string {
	v, ok := r.lookup(name)
	if !ok {
		return def
	}
	s, ok := v.(string)
	if !ok {
		r.fail(name, "want a string, got %T %v", v, v)
		return def
	}
	if len(allowed) > 0 {
		for _, a := range allowed {
			if s == a {
				return s
			}
		}
		r.fail(name, "must be one of %s, got %q", strings.Join(allowed, ", "), s)
		return def
	}
	return s
}

// floatMap reads a map of names to numbers; def is used when the parameter is absent.
func (r *paramReader) floatMap(name string, def map[string]float64) map[string]float64 {
	v, ok := r.lookup(name)
	if !ok {
		return def
	}
	m, ok := v.(map[string]any)
	if pm, isParams := v.(Params); isParams {
		m, ok = pm, true // nested maps decode with the enclosing map's type
	}
	if !ok {
		r.fail(name, "want a map of names to numbers, got %T", v)
		return def
	}
	out := make(map[string]float64, len(m))
	for _, k := range sortedKeys(m) {
		x := m[k]
		f, ok := toFloat(x)
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
			r.fail(name, "entry %q: want a finite number, got %T %v", k, x, x)
			return def
		}
		out[k] = f
	}
	return out
}

// done reports the first type error, or the first parameter the template does not know.
func (r *paramReader) done() error {
	if r.err != nil {
		return r.err
	}
	for _, k := range sortedKeys(r.m) {
		found := false
		for _, kn := range r.known {
			if kn == k {
				found = true
				break
			}
		}
		if !found {
			known := append([]string(nil), r.known...)
			sort.Strings(known)
			if len(known) == 0 {
				return fmt.Errorf("unknown parameter %q (this template takes no parameters)", k)
			}
			return fmt.Errorf("unknown parameter %q (known: %s)", k, strings.Join(known, ", "))
		}
	}
	return nil
}

// sortedKeys returns the keys of m in ascending order, so that validation reports the same
// first error on every run.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
