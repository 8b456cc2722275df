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

package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/rest"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func parse(t *testing.T, args ...string) *options {
	t.Helper()
	o, err := parseFlags(args, env(nil), io.Discard)
	if err != nil {
		t.Fatalf("parseFlags(%q): %v", args, err)
	}
	return o
}

func TestDefaults(t *testing.T) {
	o := parse(t)
	if o.metricsAddr != ":8443" || !o.metricsSecure || o.probeAddr != ":8081" {
		t.Fatalf("metrics %q secure %v probes %q", o.metricsAddr, o.metricsSecure, o.probeAddr)
	}
	if o.leaderElect || o.leaderElectionID != defaultLeaderElectionID || o.enableHTTP2 {
		t.Fatalf("leader election %v %q http2 %v", o.leaderElect, o.leaderElectionID, o.enableHTTP2)
	}
	if o.kubeAPIQPS != 50 || o.kubeAPIBurst != 100 || o.gracefulShutdownTimeout != 30*time.Second {
		t.Fatalf("qps %v burst %d shutdown %v", o.kubeAPIQPS, o.kubeAPIBurst, o.gracefulShutdownTimeout)
	}
}

func TestMetricsAddressFollowsSecureMode(t *testing.T) {
	if o := parse(t, "--metrics-secure=false"); o.metricsAddr != ":8080" {
		t.Fatalf("insecure default address %q, want :8080", o.metricsAddr)
	}
	if o := parse(t, "--metrics-bind-address=0"); o.metricsAddr != "0" {
		t.Fatalf("disabled metrics address %q, want 0", o.metricsAddr)
	}
	if o := parse(t, "--metrics-bind-address=127.0.0.1:9443"); o.metricsAddr != "127.0.0.1:9443" {
		t.Fatalf("explicit address %q", o.metricsAddr)
	}
}

func TestAllFlags(t *testing.T) {
	o := parse(t, "--leader-elect", "--leader-election-id=x", "--leader-election-namespace=ns",
		"--health-probe-bind-address=:9000", "--kube-api-qps=7.5", "--kube-api-burst=9",
		"--graceful-shutdown-timeout=5s", "--enable-http2", "--engine-image=example.com/blis:1",
		"--zap-log-level=debug", "--kubeconfig=/dev/null")
	if !o.leaderElect || o.leaderElectionID != "x" || o.leaderElectionNamespace != "ns" || o.probeAddr != ":9000" {
		t.Fatalf("unexpected %+v", o)
	}
	if o.kubeAPIQPS != 7.5 || o.kubeAPIBurst != 9 || o.gracefulShutdownTimeout != 5*time.Second || !o.enableHTTP2 {
		t.Fatalf("unexpected %+v", o)
	}
	if o.engineImage != "example.com/blis:1" || o.zap.Level == nil {
		t.Fatalf("engine image %q, zap level %v", o.engineImage, o.zap.Level)
	}
}

func TestEngineImageFromEnvironment(t *testing.T) {
	getenv := env(map[string]string{"ENGINE_IMAGE": "example.com/blis:env"})
	o, err := parseFlags(nil, getenv, io.Discard)
	if err != nil || o.engineImage != "example.com/blis:env" {
		t.Fatalf("engine image %q (%v)", o.engineImage, err)
	}
	o, err = parseFlags([]string{"--engine-image=example.com/blis:flag"}, getenv, io.Discard)
	if err != nil || o.engineImage != "example.com/blis:flag" {
		t.Fatalf("flag must override the environment: %q (%v)", o.engineImage, err)
	}
}

func TestRejectsInvalidOptions(t *testing.T) {
	cases := map[string][]string{
		"zero qps":                 {"--kube-api-qps=0"},
		"zero burst":               {"--kube-api-burst=0"},
		"negative shutdown":        {"--graceful-shutdown-timeout=-1s"},
		"empty election id":        {"--leader-elect", "--leader-election-id="},
		"certificates w/o TLS":     {"--metrics-secure=false", "--metrics-cert-path=/certs"},
		"positional argument":      {"extra"},
		"unknown flag":             {"--no-such-flag"},
		"malformed duration value": {"--graceful-shutdown-timeout=soon"},
	}
	for name, args := range cases {
		if _, err := parseFlags(args, env(nil), io.Discard); err == nil {
			t.Errorf("%s: %q accepted", name, args)
		}
	}
	if _, err := parseFlags([]string{"--help"}, env(nil), io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v, want flag.ErrHelp", err)
	}
}

func TestManagerOptions(t *testing.T) {
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	o := parse(t, "--leader-elect", "--graceful-shutdown-timeout=12s")
	mo, watcher, err := o.managerOptions(scheme)
	if err != nil || watcher != nil {
		t.Fatalf("managerOptions: watcher %v err %v", watcher, err)
	}
	if mo.Metrics.BindAddress != ":8443" || !mo.Metrics.SecureServing || mo.Metrics.FilterProvider == nil {
		t.Fatalf("secure metrics must authenticate and authorize callers: %+v", mo.Metrics)
	}
	cfg := &tls.Config{NextProtos: []string{"h2", "http/1.1"}}
	for _, f := range mo.Metrics.TLSOpts {
		f(cfg)
	}
	if slices.Contains(cfg.NextProtos, "h2") {
		t.Fatalf("HTTP/2 offered although disabled: %v", cfg.NextProtos)
	}
	if !mo.LeaderElection || mo.LeaderElectionID != defaultLeaderElectionID || !mo.LeaderElectionReleaseOnCancel {
		t.Fatalf("leader election options %+v", mo)
	}
	if mo.GracefulShutdownTimeout == nil || *mo.GracefulShutdownTimeout != 12*time.Second || mo.HealthProbeBindAddress != ":8081" {
		t.Fatalf("shutdown %v probes %q", mo.GracefulShutdownTimeout, mo.HealthProbeBindAddress)
	}

	insecure, _, err := parse(t, "--metrics-secure=false", "--enable-http2").managerOptions(scheme)
	if err != nil {
		t.Fatal(err)
	}
	if insecure.Metrics.SecureServing || insecure.Metrics.FilterProvider != nil || len(insecure.Metrics.TLSOpts) != 0 {
		t.Fatalf("plain metrics must have no TLS and no filter: %+v", insecure.Metrics)
	}

	if _, _, err := parse(t, "--metrics-cert-path="+t.TempDir()).managerOptions(scheme); err == nil ||
		!strings.Contains(err.Error(), "metrics certificate") {
		t.Fatalf("a certificate directory without certificates must fail: %v", err)
	}
}

func TestRestConfigTuning(t *testing.T) {
	base := &rest.Config{Host: "https://example.invalid", QPS: 1, Burst: 1}
	got := parse(t, "--kube-api-qps=33", "--kube-api-burst=44").restConfig(base)
	if got.QPS != 33 || got.Burst != 44 || got.Host != base.Host || !strings.HasPrefix(got.UserAgent, "blis-operator/") {
		t.Fatalf("rest config %+v", got)
	}
	if base.QPS != 1 || base.Burst != 1 {
		t.Fatal("the base config was modified")
	}
}

func TestSchemeKnowsBuiltinAndBlisKinds(t *testing.T) {
	s, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	if !s.IsVersionRegistered(blisv1alpha1.GroupVersion) {
		t.Fatalf("%v is not registered", blisv1alpha1.GroupVersion)
	}
	if len(s.KnownTypes(blisv1alpha1.GroupVersion)) == 0 {
		t.Fatal("no blis kinds registered")
	}
	if !s.Recognizes(appsv1.SchemeGroupVersion.WithKind("Deployment")) {
		t.Fatal("apps/v1 Deployment is not registered")
	}
}

func TestEvaluationFlags(t *testing.T) {
	o := parse(t)
	rc := o.reconcilerConfig().Controller
	if rc.DefaultExecutor != blisv1alpha1.ExecutorJob || rc.InProcessOnly || rc.MaxRunning != 64 || rc.MaxRunningPerNamespace != 32 ||
		rc.MaxConcurrentReconciles != 4 || rc.JobTTLSeconds != 3600 || rc.DefaultTimeout != 30*time.Minute || rc.InProcessWorkers < 1 {
		t.Fatalf("defaults %+v", rc)
	}
	o = parse(t, "--default-executor=inProcess", "--in-process-only", "--max-running-evaluations=0",
		"--max-running-evaluations-per-namespace=3", "--in-process-workers=5", "--max-concurrent-reconciles=9",
		"--job-ttl=90s", "--default-timeout=2m", "--engine-image=img:1", "--engine-image-pull-policy=Never")
	rc = o.reconcilerConfig().Controller
	if rc.DefaultExecutor != blisv1alpha1.ExecutorInProcess || !rc.InProcessOnly || rc.MaxRunning != 0 || rc.MaxRunningPerNamespace != 3 ||
		rc.InProcessWorkers != 5 || rc.MaxConcurrentReconciles != 9 || rc.JobTTLSeconds != 90 || rc.DefaultTimeout != 2*time.Minute ||
		rc.EngineImage != "img:1" || rc.EnginePullPolicy != "Never" {
		t.Fatalf("parsed %+v", rc)
	}
	for name, args := range map[string][]string{
		"unknown executor":    {"--default-executor=pod"},
		"unknown pull policy": {"--engine-image-pull-policy=Sometimes"},
		"negative cap":        {"--max-running-evaluations=-1"},
		"no workers":          {"--in-process-workers=0"},
		"no reconciles":       {"--max-concurrent-reconciles=0"},
		"sub-second ttl":      {"--job-ttl=10ms"},
		"sub-second timeout":  {"--default-timeout=0s"},
		"negative per-ns cap": {"--max-running-evaluations-per-namespace=-2"},
	} {
		if _, err := parseFlags(args, env(nil), io.Discard); err == nil {
			t.Errorf("%s: %q accepted", name, args)
		}
	}
}

func TestManagerCachesOnlyOwnJobsAndConfigMaps(t *testing.T) {
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	mo, _, err := parse(t).managerOptions(scheme)
	if err != nil {
		t.Fatal(err)
	}
	if len(mo.Cache.ByObject) != 2 {
		t.Fatalf("cache restrictions %v", mo.Cache.ByObject)
	}
	for obj, by := range mo.Cache.ByObject {
		if by.Label == nil || !strings.Contains(by.Label.String(), "app.kubernetes.io/managed-by=blis-operator") {
			t.Errorf("%T cached without the managed-by selector: %v", obj, by.Label)
		}
	}
}

func TestReconcilersAreRegistered(t *testing.T) {
	if len(reconcilerSetups) != 3 {
		t.Fatalf("%d reconciler setups, want 3 (the four resource kinds, PolicyStudy, promotion)", len(reconcilerSetups))
	}
}
