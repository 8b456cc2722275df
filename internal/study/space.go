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

// Package study is the search engine of policy studies: search spaces over parameter paths,
// the search algorithms (grid, random, NSGA-II, a (mu+lambda) evolution strategy and
// CMA-ES), the planner that decides which candidates to evaluate next from the results so far,
// and the leaderboard (best, Pareto front, convergence). It knows nothing about Kubernetes: the
// operator and `blis study` drive the same Planner through an Evaluator each.
//
// Determinism: candidate k of generation g is a pure function of the study's seed, its
// settings and the finished trials of earlier generations in (generation, index) order, so a
// study that is restarted proposes exactly the candidates it proposed before.
package study

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Kind is the kind of values a parameter takes.
type Kind int

// The parameter kinds.
const (
	// Float is a real number in [Min, Max].
	Float Kind = iota
	// Int is an integer in [Min, Max].
	Int
	// Choice is one of Choices.
	Choice
)

// Param is one dimension of a search space.
type Param struct {
	// Path addresses the field the parameter sets (see ParsePath).
	Path string
	// Kind is Float, Int or Choice.
	Kind Kind
	// Min and Max bound a Float or Int parameter.
	Min, Max float64
	// Log samples the parameter on a logarithmic scale (Min > 0).
	Log bool
	// Choices are the values of a Choice parameter.
	Choices []string
	// GridPoints is the number of grid values of a Float or Int parameter.
	GridPoints int
}

// Space is a search space: one Param per dimension.
type Space []Param

// Validate checks every parameter.
func (s Space) Validate() error {
	if len(s) == 0 {
		return errors.New("the search space has no parameters")
	}
	seen := map[string]bool{}
	for i, p := range s {
		if _, err := ParsePath(p.Path); err != nil {
			return fmt.Errorf("searchSpace[%d].path: %w", i, err)
		}
		if seen[p.Path] {
			return fmt.Errorf("searchSpace[%d].path: %q is given twice", i, p.Path)
		}
		seen[p.Path] = true
		switch p.Kind {
		case Float, Int:
			if math.IsNaN(p.Min) || math.IsNaN(p.Max) || math.IsInf(p.Min, 0) || math.IsInf(p.Max, 0) || !(p.Min < p.Max) {
				return fmt.Errorf("searchSpace[%d] (%s): min must be less than max", i, p.Path)
			}
			if p.Log && !(p.Min > 0) {
				return fmt.Errorf("searchSpace[%d] (%s): logScale needs min > 0", i, p.Path)
			}
			if p.Kind == Int && (p.Min != math.Trunc(p.Min) || p.Max != math.Trunc(p.Max)) {
				return fmt.Errorf("searchSpace[%d] (%s): the bounds of an int parameter must be whole numbers", i, p.Path)
			}
			if p.GridPoints < 2 {
				return fmt.Errorf("searchSpace[%d] (%s): gridPoints must be >= 2", i, p.Path)
			}
		case Choice:
			if len(p.Choices) == 0 {
				return fmt.Errorf("searchSpace[%d] (%s): a choice parameter needs values", i, p.Path)
			}
		default:
			return fmt.Errorf("searchSpace[%d] (%s): unknown parameter kind", i, p.Path)
		}
	}
	return nil
}

// Value is the value of one parameter: a number, or a choice.
type Value struct {
	// Num is the number of a Float or Int parameter.
	Num float64
	// Str is the choice of a Choice parameter.
	Str string
	// IsStr marks a choice.
	IsStr bool
}

// String formats the value as it is reported: a choice as is, a number in shortest form.
func (v Value) String() string {
	if v.IsStr {
		return v.Str
	}
	return strconv.FormatFloat(v.Num, 'g', -1, 64)
}

// significant rounds a float parameter's value to 6 significant digits, so candidates have
// short, stable decimal forms.
func significant(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	if err != nil {
		return v
	}
	return r
}

// Decode maps a unit coordinate u in [0, 1] to the parameter's value.
func (p *Param) Decode(u float64) Value {
	u = clamp01(u)
	switch p.Kind {
	case Choice:
		n := len(p.Choices)
		k := min(int(u*float64(n)), n-1)
		return Value{Str: p.Choices[k], IsStr: true}
	case Int:
		v := math.Round(p.scale(u))
		return Value{Num: math.Max(p.Min, math.Min(p.Max, v))}
	default:
		return Value{Num: math.Max(p.Min, math.Min(p.Max, significant(p.scale(u))))}
	}
}

// scale maps u to [Min, Max], linearly or logarithmically.
func (p *Param) scale(u float64) float64 {
	if p.Log {
		lo, hi := math.Log(p.Min), math.Log(p.Max)
		return math.Exp(lo + u*(hi-lo))
	}
	return p.Min + u*(p.Max-p.Min)
}

// Encode maps a value back to its unit coordinate (a choice to the middle of its interval).
// ok is false when the value does not belong to the parameter.
func (p *Param) Encode(v Value) (float64, bool) {
	switch p.Kind {
	case Choice:
		if !v.IsStr {
			return 0, false
		}
		for k, c := range p.Choices {
			if c == v.Str {
				return (float64(k) + 0.5) / float64(len(p.Choices)), true
			}
		}
		return 0, false
	default:
		if v.IsStr || v.Num < p.Min || v.Num > p.Max {
			return 0, false
		}
		if p.Log {
			lo, hi := math.Log(p.Min), math.Log(p.Max)
			return clamp01((math.Log(v.Num) - lo) / (hi - lo)), true
		}
		return clamp01((v.Num - p.Min) / (p.Max - p.Min)), true
	}
}

// ParseValue reads a value in its String form.
func (p *Param) ParseValue(s string) (Value, error) {
	if p.Kind == Choice {
		for _, c := range p.Choices {
			if c == s {
				return Value{Str: s, IsStr: true}, nil
			}
		}
		return Value{}, fmt.Errorf("%s: %q is not one of the values", p.Path, s)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return Value{}, fmt.Errorf("%s: %q is not a number", p.Path, s)
	}
	return Value{Num: f}, nil
}

// gridValues are the parameter's grid coordinates in increasing order.
func (p *Param) gridValues() []float64 {
	switch p.Kind {
	case Choice:
		out := make([]float64, len(p.Choices))
		for k := range out {
			out[k] = (float64(k) + 0.5) / float64(len(p.Choices))
		}
		return out
	case Int:
		span := int(p.Max-p.Min) + 1
		if span <= p.GridPoints && !p.Log {
			out := make([]float64, span)
			for k := range out {
				out[k] = float64(k) / float64(span-1)
			}
			return out
		}
	}
	n := p.GridPoints
	out := make([]float64, 0, n)
	last := Value{Num: math.NaN()}
	for k := range n {
		u := float64(k) / float64(n-1)
		// Integer grids on a log scale may round two points to one value; keep it once.
		if v := p.Decode(u); v != last {
			out = append(out, u)
			last = v
		}
	}
	return out
}

func clamp01(u float64) float64 {
	switch {
	case math.IsNaN(u) || u < 0:
		return 0
	case u > 1:
		return 1
	}
	return u
}

// Point is a candidate in unit coordinates, one per parameter.
type Point []float64

// Decode maps a point to the parameters' values.
func (s Space) Decode(pt Point) []Value {
	out := make([]Value, len(s))
	for i := range s {
		out[i] = s[i].Decode(pt[i])
	}
	return out
}

// Encode maps values to a point; ok is false when a value does not belong to its parameter.
func (s Space) Encode(vals []Value) (Point, bool) {
	if len(vals) != len(s) {
		return nil, false
	}
	pt := make(Point, len(s))
	for i := range s {
		u, ok := s[i].Encode(vals[i])
		if !ok {
			return nil, false
		}
		pt[i] = u
	}
	return pt, true
}
