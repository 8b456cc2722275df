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

// Command manager is the blis-operator controller manager: it serves health and readiness probes
// and Prometheus metrics, takes part in leader election, and runs the reconcilers of the blis
// custom resources until it receives SIGTERM or SIGINT.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	corev1 "k8s.io/api/core/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/controller"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

const (
	defaultSecureMetricsAddr   = ":8443"
	defaultInsecureMetricsAddr = ":8080"
	defaultLeaderElectionID    = "blis-operator.blis.inference-sim.io"
)

// options is the manager's command line.
type options struct {
	metricsAddr             string
	metricsSecure           bool
	metricsCertPath         string
	metricsCertName         string
	metricsCertKey          string
	enableHTTP2             bool
	probeAddr               string
	leaderElect             bool
	leaderElectionID        string
	leaderElectionNamespace string
	gracefulShutdownTimeout time.Duration
	kubeAPIQPS              float64
	kubeAPIBurst            int
	engineImage             string
	enginePullPolicy        string
	defaultExecutor         string
	inProcessOnly           bool
	maxRunning              int
	maxRunningPerNamespace  int
	inProcessWorkers        int
	maxConcurrentReconciles int
	jobTTL                  time.Duration
	defaultTimeout          time.Duration
	zap                     zap.Options
}

// parseFlags reads the manager's flags from args; getenv supplies defaults taken from the
// environment (ENGINE_IMAGE).
func parseFlags(args []string, getenv func(string) string, output io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", "",
		"Address the metrics endpoint binds to: "+defaultSecureMetricsAddr+" by default when --metrics-secure, "+
			defaultInsecureMetricsAddr+" otherwise; 0 disables the endpoint.")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true,
		"Serve metrics over HTTPS, to callers the API server authenticates and authorizes for GET /metrics.")
	fs.StringVar(&o.metricsCertPath, "metrics-cert-path", "",
		"Directory holding the metrics server certificate; a self-signed one is generated in memory when empty.")
	fs.StringVar(&o.metricsCertName, "metrics-cert-name", "tls.crt", "Certificate file name in --metrics-cert-path.")
	fs.StringVar(&o.metricsCertKey, "metrics-cert-key", "tls.key", "Key file name in --metrics-cert-path.")
	fs.BoolVar(&o.enableHTTP2, "enable-http2", false,
		"Allow HTTP/2 on the metrics server (off by default: HTTP/2 Rapid Reset and Stream Cancellation).")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081",
		"Address the /healthz and /readyz endpoints bind to; 0 disables them.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false,
		"Elect a leader so that only one of several manager replicas reconciles at a time.")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", defaultLeaderElectionID,
		"Name of the Lease that holds the leadership.")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader election Lease; the manager's own namespace when empty (in a cluster).")
	fs.DurationVar(&o.gracefulShutdownTimeout, "graceful-shutdown-timeout", 30*time.Second,
		"How long running reconciles may take to finish after a termination signal; 0 waits forever.")
	fs.Float64Var(&o.kubeAPIQPS, "kube-api-qps", 50, "Sustained queries per second to the Kubernetes API server.")
	fs.IntVar(&o.kubeAPIBurst, "kube-api-burst", 100, "Burst of queries to the Kubernetes API server.")
	fs.StringVar(&o.engineImage, "engine-image", getenv("ENGINE_IMAGE"),
		"Image of the engine Jobs (holding /blis); defaults to $ENGINE_IMAGE, which the deployment sets to the manager's own image.")
	fs.StringVar(&o.enginePullPolicy, "engine-image-pull-policy", string(corev1.PullIfNotPresent),
		"Image pull policy of the engine containers: Always, IfNotPresent or Never.")
	fs.StringVar(&o.defaultExecutor, "default-executor", string(blisv1alpha1.ExecutorJob),
		"Executor of Evaluations whose spec names none: job or inProcess.")
	fs.BoolVar(&o.inProcessOnly, "in-process-only", false,
		"Run every Evaluation in the manager's worker pool, whatever its executor (for API servers without nodes).")
	fs.IntVar(&o.maxRunning, "max-running-evaluations", 64,
		"Evaluations running at once in the whole cluster; more wait with condition Queued (0 = no cap).")
	fs.IntVar(&o.maxRunningPerNamespace, "max-running-evaluations-per-namespace", 32,
		"Evaluations running at once per namespace (0 = no cap).")
	fs.IntVar(&o.inProcessWorkers, "in-process-workers", runtime.GOMAXPROCS(0),
		"Workers of the in-process executor (each runs one evaluation at a time).")
	fs.IntVar(&o.maxConcurrentReconciles, "max-concurrent-reconciles", 4,
		"Evaluations reconciled in parallel.")
	fs.DurationVar(&o.jobTTL, "job-ttl", time.Hour,
		"How long finished engine Jobs are kept (ttlSecondsAfterFinished); results live on in status and the result ConfigMap.")
	fs.DurationVar(&o.defaultTimeout, "default-timeout", 30*time.Minute,
		"Run time limit of Evaluations without execution.timeout (the engine Job's activeDeadlineSeconds).")
	// --kubeconfig, read by ctrl.GetConfig (then $KUBECONFIG, in-cluster, ~/.kube/config).
	config.RegisterFlags(fs)
	o.zap = zap.Options{}
	o.zap.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if o.metricsAddr == "" {
		o.metricsAddr = defaultInsecureMetricsAddr
		if o.metricsSecure {
			o.metricsAddr = defaultSecureMetricsAddr
		}
	}
	return o, o.validate()
}

// validate rejects option combinations the manager cannot run with.
func (o *options) validate() error {
	var errs []error
	if o.kubeAPIQPS <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps must be positive, got %v", o.kubeAPIQPS))
	}
	if o.kubeAPIBurst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-burst must be at least 1, got %d", o.kubeAPIBurst))
	}
	if o.gracefulShutdownTimeout < 0 {
		errs = append(errs, errors.New("--graceful-shutdown-timeout must not be negative"))
	}
	if o.leaderElect && o.leaderElectionID == "" {
		errs = append(errs, errors.New("--leader-election-id must not be empty with --leader-elect"))
	}
	switch o.defaultExecutor {
	case string(blisv1alpha1.ExecutorJob), string(blisv1alpha1.ExecutorInProcess):
	default:
		errs = append(errs, fmt.Errorf("--default-executor must be job or inProcess, got %q", o.defaultExecutor))
	}
	switch corev1.PullPolicy(o.enginePullPolicy) {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		errs = append(errs, fmt.Errorf("--engine-image-pull-policy must be Always, IfNotPresent or Never, got %q", o.enginePullPolicy))
	}
	if o.maxRunning < 0 || o.maxRunningPerNamespace < 0 {
		errs = append(errs, errors.New("--max-running-evaluations and --max-running-evaluations-per-namespace must not be negative"))
	}
	if o.inProcessWorkers < 1 || o.maxConcurrentReconciles < 1 {
		errs = append(errs, errors.New("--in-process-workers and --max-concurrent-reconciles must be at least 1"))
	}
	if o.jobTTL < time.Second || o.defaultTimeout < time.Second {
		errs = append(errs, errors.New("--job-ttl and --default-timeout must be at least 1s"))
	}
	if o.metricsCertPath != "" && !o.metricsSecure {
		errs = append(errs, errors.New("--metrics-cert-path needs --metrics-secure"))
	}
	return errors.Join(errs...)
}

// newScheme returns the scheme of every kind the manager reads or writes: the built-in
// Kubernetes kinds and the blis custom resources.
func newScheme() (*kruntime.Scheme, error) {
	s := kruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := blisv1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// restConfig applies the client tuning options to cfg.
func (o *options) restConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = float32(o.kubeAPIQPS)
	cfg.Burst = o.kubeAPIBurst
	cfg.UserAgent = "blis-operator/" + version
	return cfg
}

// tlsOptions are the TLS settings of the metrics server: HTTP/1.1 only unless HTTP/2 is enabled.
func (o *options) tlsOptions() []func(*tls.Config) {
	if o.enableHTTP2 {
		return nil
	}
	return []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
}

// The secure metrics filter authenticates each caller with a TokenReview and authorizes it with
// a SubjectAccessReview:
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// managerOptions builds the controller-runtime manager options. With secure metrics, callers are
// authenticated and authorized by the API server (TokenReview and SubjectAccessReview), which is
// why the manager's role may create both; watcher is set when certificates come from files.
func (o *options) managerOptions(scheme *kruntime.Scheme) (ctrl.Options, *certwatcher.CertWatcher, error) {
	metrics := metricsserver.Options{
		BindAddress:   o.metricsAddr,
		SecureServing: o.metricsSecure,
		TLSOpts:       o.tlsOptions(),
	}
	if o.metricsSecure {
		metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	var watcher *certwatcher.CertWatcher
	if o.metricsCertPath != "" {
		var err error
		watcher, err = certwatcher.New(
			filepath.Join(o.metricsCertPath, o.metricsCertName),
			filepath.Join(o.metricsCertPath, o.metricsCertKey))
		if err != nil {
			return ctrl.Options{}, nil, fmt.Errorf("metrics certificate: %w", err)
		}
		metrics.TLSOpts = append(metrics.TLSOpts, func(c *tls.Config) { c.GetCertificate = watcher.GetCertificate })
	}
	timeout := o.gracefulShutdownTimeout
	return ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metrics,
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        o.leaderElectionID,
		LeaderElectionNamespace: o.leaderElectionNamespace,
		// The process exits as soon as the manager stops, so releasing the Lease on the way out is
		// safe and lets the next leader start without waiting for the Lease to expire.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &timeout,
		// The manager caches only the Jobs and ConfigMaps it creates.
		Cache: cache.Options{ByObject: controller.CacheOptions()},
	}, watcher, nil
}

// reconcilerConfig is what the reconcilers take from the command line.
type reconcilerConfig struct {
	// EngineImage is the image engine Jobs run (the image that holds /blis).
	EngineImage string
	// Controller is the configuration of the blis reconcilers.
	Controller controller.Config
}

// reconcilerConfig returns the reconcilers' configuration from the command line.
func (o *options) reconcilerConfig() reconcilerConfig {
	return reconcilerConfig{
		EngineImage: o.engineImage,
		Controller: controller.Config{
			EngineImage:             o.engineImage,
			EnginePullPolicy:        corev1.PullPolicy(o.enginePullPolicy),
			DefaultExecutor:         blisv1alpha1.Executor(o.defaultExecutor),
			InProcessOnly:           o.inProcessOnly,
			MaxRunning:              o.maxRunning,
			MaxRunningPerNamespace:  o.maxRunningPerNamespace,
			InProcessWorkers:        o.inProcessWorkers,
			MaxConcurrentReconciles: o.maxConcurrentReconciles,
			JobTTLSeconds:           int32(o.jobTTL / time.Second),
			DefaultTimeout:          o.defaultTimeout,
		},
	}
}

// setupReconcilers registers the reconcilers of the blis custom resources with mgr. It is the
// one place where controllers join the manager; a manager without any still serves probes and
// metrics and keeps its caches, so the deployment can be verified on its own.
func setupReconcilers(mgr ctrl.Manager, cfg reconcilerConfig) error {
	for _, setup := range reconcilerSetups {
		if err := setup(mgr, cfg); err != nil {
			return err
		}
	}
	return nil
}

// reconcilerSetups lists, in start order, the functions that add reconcilers.
var reconcilerSetups = []func(ctrl.Manager, reconcilerConfig) error{
	// SimulatedCluster, PolicyBundle, WorkloadSpec and Evaluation, with the in-process pool.
	func(mgr ctrl.Manager, cfg reconcilerConfig) error {
		return controller.SetupWithManager(mgr, cfg.Controller)
	},
	// PolicyStudy: searches that create Evaluations.
	func(mgr ctrl.Manager, _ reconcilerConfig) error {
		return controller.SetupPolicyStudyWithManager(mgr)
	},
	// Promotion: annotated PolicyBundles and Evaluations into llm-d ConfigMaps.
	func(mgr ctrl.Manager, _ reconcilerConfig) error {
		return controller.SetupPromotionWithManager(mgr)
	},
}

// cacheSyncedCheck is a readiness check that passes once the manager's informer caches have
// synced, so the manager reports ready only when its reconcilers see the cluster.
func cacheSyncedCheck(mgr ctrl.Manager) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("informer caches have not synced")
		}
		return nil
	}
}

// buildVersion describes the binary for the startup log.
func buildVersion() string {
	v := version
	if bi, ok := debug.ReadBuildInfo(); ok {
		v += " " + bi.GoVersion
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v += " " + s.Value
			}
		}
	}
	return v
}

// run starts the manager configured by o against the cluster of cfg and blocks until ctx is
// cancelled (a termination signal) or the manager fails.
func run(ctx context.Context, o *options, cfg *rest.Config) error {
	log := ctrl.Log.WithName("setup")
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	mgrOpts, watcher, err := o.managerOptions(scheme)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(o.restConfig(cfg), mgrOpts)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if watcher != nil {
		if err := mgr.Add(watcher); err != nil {
			return fmt.Errorf("adding the metrics certificate watcher: %w", err)
		}
	}
	if err := setupReconcilers(mgr, o.reconcilerConfig()); err != nil {
		return fmt.Errorf("setting up the reconcilers: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	if err := mgr.AddReadyzCheck("informers", cacheSyncedCheck(mgr)); err != nil {
		return fmt.Errorf("adding the cache readiness check: %w", err)
	}
	log.Info("starting the manager", "version", buildVersion(), "metrics", o.metricsAddr,
		"metricsSecure", o.metricsSecure, "probes", o.probeAddr, "leaderElection", o.leaderElect,
		"engineImage", o.engineImage, "defaultExecutor", o.defaultExecutor, "inProcessOnly", o.inProcessOnly,
		"maxRunning", o.maxRunning, "maxRunningPerNamespace", o.maxRunningPerNamespace,
		"inProcessWorkers", o.inProcessWorkers, "maxConcurrentReconciles", o.maxConcurrentReconciles)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the manager: %w", err)
	}
	log.Info("manager stopped")
	return nil
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Getenv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(2)
	}
	logger := zap.New(zap.UseFlagOptions(&o.zap))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger.WithName("client-go"))
	ctx := ctrl.SetupSignalHandler()
	cfg, err := ctrl.GetConfig()
	if err != nil {
		ctrl.Log.Error(err, "no Kubernetes configuration (in-cluster, --kubeconfig or $KUBECONFIG)")
		os.Exit(1)
	}
	if err := run(ctx, o, cfg); err != nil {
		ctrl.Log.Error(err, "manager failed")
		os.Exit(1)
	}
}
