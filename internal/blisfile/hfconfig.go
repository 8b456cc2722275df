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

	sigsjson "sigs.k8s.io/json"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// HFConfigJSON renders an inline model architecture as a HuggingFace config.json: the
// resource's camelCase keys are the config.json keys in camelCase (num_hidden_layers is
// numHiddenLayers), so the same mechanical rule gives them back.
func HFConfigJSON(cfg *blisv1alpha1.HFModelConfig) ([]byte, error) {
	js, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	var doc any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, &doc); err != nil {
		return nil, err
	}
	return json.Marshal(KeysToSnake(doc))
}
