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

// Package testenv starts a real etcd and kube-apiserver (controller-runtime envtest) with the
// project's CRDs installed, for API validation and controller tests.
//
// The binaries come from KUBEBUILDER_ASSETS when it is set, otherwise from
// <repo>/bin/k8s/<kubernetes version>/ as built by `make envtest`. When neither has them,
// Start returns an error telling the developer to run `make envtest`; tests fail rather
// than skip, so a missing test cluster never passes silently.
package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// Env is a running test control plane.
type Env struct {
	// Environment is the underlying envtest environment.
	Environment *envtest.Environment
	// Config connects to the API server as an administrator.
	Config *rest.Config
	// Scheme knows the built-in kinds and the blis.inference-sim.io kinds.
	Scheme *runtime.Scheme
	// Client is a direct (uncached) client using Scheme.
	Client client.Client
	// RepoRoot is the repository's root directory.
	RepoRoot string
	// AssetsDir is the directory of the control-plane binaries (and kubectl, when built).
	AssetsDir string
}

// binaries are the files envtest needs in the assets directory.
var binaries = []string{"etcd", "kube-apiserver"}

// RepoRoot returns the directory of the go.mod of this module, searching upwards from the
// working directory (tests run in their package directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(data), "module github.com/inference-sim/blis-operator\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: cannot find the blis-operator go.mod above the working directory")
		}
		dir = parent
	}
}

// KubernetesVersion returns the pinned Kubernetes version of the test binaries, read from
// hack/tools/kube/go.mod (the same source the Makefile uses).
func KubernetesVersion(root string) (string, error) {
	f, err := os.Open(filepath.Join(root, "hack", "tools", "kube", "go.mod"))
	if err != nil {
		return "", fmt.Errorf("testenv: reading the pinned Kubernetes version: %w", err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[0] == "require" && fields[1] == "k8s.io/kubernetes" {
			return fields[2], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("testenv: hack/tools/kube/go.mod has no `require k8s.io/kubernetes` line")
}

// AssetsDir returns the directory holding etcd and kube-apiserver: KUBEBUILDER_ASSETS if
// set, else <root>/bin/k8s/<version>. It errors when the binaries are missing.
func AssetsDir(root string) (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		version, err := KubernetesVersion(root)
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin", "k8s", version)
	}
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("testenv: %s not found in %s; run `make envtest` to build the test control plane", b, dir)
		}
	}
	return dir, nil
}

// NewScheme returns a scheme with the built-in kinds and the blis.inference-sim.io kinds.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := blisv1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Start starts etcd and kube-apiserver, installs the CRDs of config/crd/bases and returns a
// connected Env. Call Stop when done.
func Start() (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets, err := AssetsDir(root)
	if err != nil {
		return nil, err
	}
	s, err := NewScheme()
	if err != nil {
		return nil, err
	}
	te := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
		Scheme:                s,
	}
	cfg, err := te.Start()
	if err != nil {
		return nil, fmt.Errorf("testenv: starting the control plane from %s: %w", assets, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		_ = te.Stop()
		return nil, fmt.Errorf("testenv: creating a client: %w", err)
	}
	return &Env{Environment: te, Config: cfg, Scheme: s, Client: c, RepoRoot: root, AssetsDir: assets}, nil
}

// Kubectl returns the path of the kubectl built with the control plane and a kubeconfig
// file (in dir) that points it at this Env's API server.
func (e *Env) Kubectl(dir string) (kubectl, kubeconfig string, err error) {
	kubectl = filepath.Join(e.AssetsDir, "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		return "", "", fmt.Errorf("testenv: kubectl not found in %s; run `make envtest` to build it", e.AssetsDir)
	}
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, e.Environment.KubeConfig, 0o600); err != nil {
		return "", "", err
	}
	return kubectl, kubeconfig, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error {
	return e.Environment.Stop()
}

// StartT starts an Env for one test, fails the test if it cannot, and stops it when the
// test ends.
func StartT(t testing.TB) *Env {
	t.Helper()
	env, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("testenv: stopping: %v", err)
		}
	})
	return env
}

// RunMain is a TestMain body: it starts one Env for the package, stores it in *env, runs the
// tests and stops the control plane. It returns the exit code for os.Exit.
func RunMain(m *testing.M, env **Env) int {
	e, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: stopping:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
