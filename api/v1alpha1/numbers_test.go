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

package v1alpha1_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

func TestRoundMetric(t *testing.T) {
	cases := []struct{ in, want float64 }{
		{0, 0},
		{123.456789, 123.457},
		{0.1 + 0.2, 0.3},
		{-98765.4321, -98765.4},
		{1234567890, 1.23457e9},
		{0.000123456789, 0.000123457},
		{math.NaN(), 0},
		{math.Inf(1), 0},
		{math.Inf(-1), 0},
	}
	for _, c := range cases {
		if got := blisv1alpha1.RoundMetric(c.in); got != c.want {
			t.Errorf("RoundMetric(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	// Sums in different orders serialise identically after rounding.
	a := blisv1alpha1.RoundMetric(0.1 + 0.2 + 0.3)
	b := blisv1alpha1.RoundMetric(0.3 + 0.2 + 0.1)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) || string(ja) != "0.6" {
		t.Errorf("rounded sums serialise as %s and %s, want 0.6 for both", ja, jb)
	}
}

func TestTruncateMessage(t *testing.T) {
	short := "fine"
	if got := blisv1alpha1.TruncateMessage(short); got != short {
		t.Errorf("short message changed to %q", got)
	}
	long := strings.Repeat("é", blisv1alpha1.MaxConditionMessageLength) // two bytes each
	got := blisv1alpha1.TruncateMessage(long)
	if len(got) > blisv1alpha1.MaxConditionMessageLength || !strings.HasSuffix(got, "...") || !utf8.ValidString(got) {
		t.Errorf("truncated message: %d bytes, valid UTF-8 %v, suffix %q", len(got), utf8.ValidString(got), got[len(got)-3:])
	}
}
