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
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/model"
)

func TestHFConfigJSONReadByTheEngine(t *testing.T) {
	cfg := &blisv1alpha1.HFModelConfig{
		ModelType:             "mixtral",
		Architectures:         []string{"MixtralForCausalLM"},
		NumHiddenLayers:       32,
		HiddenSize:            4096,
		IntermediateSize:      14336,
		NumAttentionHeads:     32,
		NumKeyValueHeads:      ptr.To(int32(8)),
		VocabSize:             32000,
		MaxPositionEmbeddings: 32768,
		TorchDtype:            "bfloat16",
		NumLocalExperts:       ptr.To(int32(8)),
		NumExpertsPerTok:      ptr.To(int32(2)),
	}
	js, err := HFConfigJSON(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"num_hidden_layers":32`, `"num_key_value_heads":8`, `"num_local_experts":8`, `"num_experts_per_tok":2`, `"torch_dtype":"bfloat16"`} {
		if !strings.Contains(string(js), key) {
			t.Errorf("config.json lacks %s: %s", key, js)
		}
	}
	m, err := model.ParseHFConfig(js)
	if err != nil {
		t.Fatalf("the engine rejects the rendered config.json: %v\n%s", err, js)
	}
	if m.NumLayers != 32 || m.NumKVHeads != 8 || m.HiddenSize != 4096 || !m.IsMoE() || m.MoE.NumExpertsPerTok != 2 {
		t.Errorf("the engine read %+v (MoE %+v)", m, m.MoE)
	}
}
