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

package v1alpha1

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// LocalObjectReference names an object of a known kind in the same namespace.
type LocalObjectReference struct {
	// name of the referenced object in the same namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
}

// ConfigMapKeyReference selects one key of a ConfigMap in the same namespace.
type ConfigMapKeyReference struct {
	// name of the ConfigMap in the same namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// key within the ConfigMap's data whose value is the file.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +required
	Key string `json:"key"`
}

// DelaySpec is a normally distributed delay, truncated at zero. Both numbers are in seconds,
// as in BLIS policy files.
type DelaySpec struct {
	// mean delay in seconds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Mean float64 `json:"mean,omitempty"`

	// stddev is the standard deviation of the delay in seconds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Stddev float64 `json:"stddev,omitempty"`
}

// MetricSignificantDigits is the number of significant decimal digits kept in every
// floating-point number the operator writes into status (see RoundMetric).
const MetricSignificantDigits = 6

// RoundMetric rounds v to MetricSignificantDigits significant decimal digits. Status numbers
// pass through it so that the same result always serialises to the same JSON text (no
// last-bit noise from summation order), which keeps status diffs and the content hashes built
// on them stable. NaN and the infinities, which JSON cannot carry, become 0.
func RoundMetric(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	if v == 0 {
		return 0
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', MetricSignificantDigits, 64), 64)
	if err != nil {
		return v
	}
	return r
}

// MaxConditionMessageLength is the longest condition message the operator writes; longer
// messages are cut by TruncateMessage so that status stays small whatever an error says.
const MaxConditionMessageLength = 512

// TruncateMessage cuts msg to at most MaxConditionMessageLength bytes on a UTF-8 boundary,
// marking the cut with "...".
func TruncateMessage(msg string) string {
	if len(msg) <= MaxConditionMessageLength {
		return msg
	}
	cut := MaxConditionMessageLength - len("...")
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "..."
}
