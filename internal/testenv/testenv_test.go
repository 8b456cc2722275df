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

package testenv

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestKubernetesVersionIsPinned(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	v, err := KubernetesVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^v1\.\d+\.\d+$`).MatchString(v) {
		t.Errorf("pinned version %q is not a Kubernetes release", v)
	}
}

func TestMissingBinariesTellHowToBuildThem(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	t.Setenv("KUBEBUILDER_ASSETS", empty)
	_, err = AssetsDir(root)
	if err == nil || !strings.Contains(err.Error(), "make envtest") || !strings.Contains(err.Error(), empty) {
		t.Fatalf("error = %v, want it to name %s and say `make envtest`", err, empty)
	}
	for _, b := range binaries {
		if err := os.WriteFile(filepath.Join(empty, b), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := AssetsDir(root)
	if err != nil || dir != empty {
		t.Fatalf("AssetsDir = %q, %v; want %q", dir, err, empty)
	}
}
