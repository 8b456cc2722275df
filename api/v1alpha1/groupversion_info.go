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

// Package v1alpha1 contains the API of blis-operator: SimulatedCluster, PolicyBundle,
// WorkloadSpec and Evaluation in the group blis.inference-sim.io.
//
// Field names are the camelCase forms of the BLIS YAML keys they mirror (aggregate_rate is
// aggregateRate, tenant_id is tenantId), so a BLIS file converts to a resource and back by a
// mechanical key rewrite; see internal/blisfile.
//
// Numbers: decimal parameters (weights, rates, thresholds, coefficients) are float64 so that
// the YAML decimals BLIS files use (0.5, 1e-3) are accepted as written; integers that count
// tokens, blocks, replicas or microseconds are int32/int64.
//
// +kubebuilder:object:generate=true
// +groupName=blis.inference-sim.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "blis.inference-sim.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// knownTypes are the objects of every kind in this package; each kind's file adds its own
// from init with registerKnownTypes.
var knownTypes []runtime.Object

// registerKnownTypes records objects for addKnownTypes to add to a scheme.
func registerKnownTypes(objects ...runtime.Object) {
	knownTypes = append(knownTypes, objects...)
}

// addKnownTypes adds the kinds of this package, and the meta/v1 types every group version
// carries (ListOptions, WatchEvent and so on), to s.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, knownTypes...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
