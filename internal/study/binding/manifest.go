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

package binding

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// KindPolicyStudy is the kind name of a PolicyStudy.
const KindPolicyStudy = "PolicyStudy"

// ParseStudy reads a PolicyStudy manifest strictly and applies the defaults the API server
// applies (algorithm random with a population of 16, search seed 1, parallelism 4, the
// in-process executor, 10 failures, 5 grid points, objective weight 1, step 200 permille),
// so the CLI runs the same study the operator would.
func ParseStudy(doc []byte) (*blisv1alpha1.PolicyStudy, error) {
	var ps blisv1alpha1.PolicyStudy
	if err := yaml.UnmarshalStrict(doc, &ps); err != nil {
		return nil, err
	}
	if ps.Kind != KindPolicyStudy || ps.APIVersion != blisv1alpha1.GroupVersion.String() {
		return nil, fmt.Errorf("not a %s %s", blisv1alpha1.GroupVersion, KindPolicyStudy)
	}
	var raw struct {
		Spec struct {
			Seed       *int64           `json:"seed"`
			Objectives []map[string]any `json:"objectives"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(doc, &raw); err != nil {
		return nil, err
	}
	s := &ps.Spec
	if raw.Spec.Seed == nil {
		s.Seed = 1
	}
	for i, o := range raw.Spec.Objectives {
		if _, ok := o["weight"]; !ok && i < len(s.Objectives) {
			s.Objectives[i].Weight = 1
		}
	}
	if s.Algorithm.Name == "" {
		s.Algorithm.Name = blisv1alpha1.AlgorithmRandom
	}
	if s.Algorithm.PopulationSize == 0 {
		s.Algorithm.PopulationSize = 16
	}
	if s.Algorithm.InitialStepPermille == 0 {
		s.Algorithm.InitialStepPermille = 200
	}
	if s.Parallelism == 0 {
		s.Parallelism = 4
	}
	if s.Budget.MaxFailures == 0 {
		s.Budget.MaxFailures = 10
	}
	if s.Execution == nil {
		s.Execution = &blisv1alpha1.ExecutionSpec{Executor: blisv1alpha1.ExecutorInProcess}
	} else if s.Execution.Executor == "" {
		s.Execution.Executor = blisv1alpha1.ExecutorJob
	}
	for i := range s.SearchSpace {
		if s.SearchSpace[i].GridPoints == 0 {
			s.SearchSpace[i].GridPoints = 5
		}
	}
	if p := s.Promotion; p != nil && p.OnCompletion == nil {
		t := true
		p.OnCompletion = &t
	}
	return &ps, nil
}

// WinnerBundle is the PolicyBundle a promotion writes: the winner's spec named name, labelled
// with the study, with a lineage that records the study generation, the base it was derived
// from and the parameter values as mutations.
func WinnerBundle(ps *blisv1alpha1.PolicyStudy, name string, spec *blisv1alpha1.PolicyBundleSpec, best *blisv1alpha1.StudyCandidate) *blisv1alpha1.PolicyBundle {
	pb := &blisv1alpha1.PolicyBundle{
		TypeMeta: metav1.TypeMeta{APIVersion: blisv1alpha1.GroupVersion.String(), Kind: "PolicyBundle"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ps.Namespace,
			Labels: map[string]string{blisv1alpha1.LabelStudy: ps.Name}},
		Spec: *spec.DeepCopy(),
	}
	lin := &blisv1alpha1.Lineage{ParentID: ps.Name}
	if ref := ps.Spec.BasePolicyRef; ref != nil {
		lin.ParentID = ref.Name
	}
	if best != nil {
		if best.Generation != nil {
			lin.Generation = int64(*best.Generation)
		}
		for _, p := range best.Parameters {
			if len(lin.Mutations) < 32 {
				lin.Mutations = append(lin.Mutations, truncate(p.Path+"="+p.Value, 256))
			}
		}
	}
	pb.Spec.Lineage = lin
	return pb
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
