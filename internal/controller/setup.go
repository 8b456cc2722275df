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

// Package controller holds the reconcilers of blis-operator: SimulatedCluster, PolicyBundle and
// WorkloadSpec are validated with the engine's own validation and report Ready; Evaluations are
// resolved, reused from an identical Succeeded Evaluation, admitted under global and
// per-namespace parallelism caps, run in an engine Job or in the manager's worker pool, and
// their results written into status once per reconcile.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation"
	"github.com/inference-sim/blis-operator/internal/promote"
)

// Field index keys.
const (
	// IndexClusterRef indexes Evaluations by spec.clusterRef.name.
	IndexClusterRef = "spec.clusterRef.name"
	// IndexPolicyRef indexes Evaluations by spec.policyRef.name.
	IndexPolicyRef = "spec.policyRef.name"
	// IndexWorkloadRef indexes Evaluations by spec.workloadRef.name.
	IndexWorkloadRef = "spec.workloadRef.name"
	// IndexSucceededHash indexes Succeeded Evaluations by status.inputHash (cache hits).
	IndexSucceededHash = "status.succeededInputHash"
	// IndexPhase indexes Evaluations by status.phase.
	IndexPhase = "status.phase"
	// IndexOwnerUID indexes Jobs by the UID of their controlling Evaluation.
	IndexOwnerUID = "metadata.ownerReferences.evaluationUID"
	// IndexPromoteCluster indexes promoted PolicyBundles by the SimulatedCluster their
	// promote-cluster annotation names.
	IndexPromoteCluster = "promotion.cluster"
	// IndexPromoteConfigMap indexes promoted PolicyBundles by the ConfigMaps they reference.
	IndexPromoteConfigMap = "promotion.configMap"
	// IndexStudyPromotionConfigMap indexes PolicyStudies by status.promotion.configMaps (the
	// ConfigMaps their winner's export read).
	IndexStudyPromotionConfigMap = "status.promotion.configMaps"
	// IndexStudyPromotionCluster indexes PolicyStudies with spec.promotion by
	// spec.clusterRef.name (the SimulatedCluster their winner's export takes the topology from).
	IndexStudyPromotionCluster = "promotion.clusterRef.name"
	// IndexStudyPromotionWorkload indexes PolicyStudies with spec.promotion by
	// spec.workloadRef.name (the WorkloadSpec their winner is resolved with).
	IndexStudyPromotionWorkload = "promotion.workloadRef.name"
)

// missingResyncDefault is how often an object waiting for a ConfigMap (which the manager does
// not watch) looks again.
const missingResyncDefault = 30 * time.Second

// Config is the reconcilers' configuration (the manager's flags).
type Config struct {
	// EngineImage is the image of engine Jobs (it holds /blis).
	EngineImage string
	// EnginePullPolicy is the engine container's image pull policy.
	EnginePullPolicy corev1.PullPolicy
	// DefaultExecutor runs Evaluations that name no executor.
	DefaultExecutor blisv1alpha1.Executor
	// InProcessOnly runs every Evaluation in the worker pool (clusters without nodes).
	InProcessOnly bool
	// MaxRunning caps the Evaluations running at once in the whole cluster (0 = no cap).
	MaxRunning int
	// MaxRunningPerNamespace caps them per namespace (0 = no cap).
	MaxRunningPerNamespace int
	// InProcessWorkers is the size of the in-process worker pool.
	InProcessWorkers int
	// MaxConcurrentReconciles is the number of parallel Evaluation reconciles.
	MaxConcurrentReconciles int
	// JobTTLSeconds is the engine Jobs' ttlSecondsAfterFinished.
	JobTTLSeconds int32
	// DefaultTimeout bounds a run without execution.timeout (activeDeadlineSeconds).
	DefaultTimeout time.Duration
	// QueuedResync is how often a queued Evaluation looks again for a slot, in case a wake-up
	// was missed.
	QueuedResync time.Duration
	// MissingResync is how often an Evaluation waiting for a missing ConfigMap looks again.
	MissingResync time.Duration
	// RunningResync is how often an Evaluation whose engine Job runs looks at the Job again,
	// in case an event about it (a deletion, a finished pod) was missed.
	RunningResync time.Duration
	// Run replaces the in-process engine (tests); nil runs the real engine.
	Run RunFunc
}

// Defaults fills in unset fields.
func (c *Config) Defaults() {
	if c.DefaultExecutor == "" {
		c.DefaultExecutor = blisv1alpha1.ExecutorJob
	}
	if c.InProcessWorkers <= 0 {
		c.InProcessWorkers = 2
	}
	if c.MaxConcurrentReconciles <= 0 {
		c.MaxConcurrentReconciles = 4
	}
	if c.JobTTLSeconds <= 0 {
		c.JobTTLSeconds = 3600
	}
	if c.DefaultTimeout <= 0 {
		c.DefaultTimeout = 30 * time.Minute
	}
	if c.QueuedResync <= 0 {
		c.QueuedResync = 5 * time.Minute
	}
	if c.MissingResync <= 0 {
		c.MissingResync = missingResyncDefault
	}
	if c.RunningResync <= 0 {
		c.RunningResync = 20 * time.Second
	}
	if c.EnginePullPolicy == "" {
		c.EnginePullPolicy = corev1.PullIfNotPresent
	}
	if c.Run == nil {
		c.Run = DefaultRun
	}
}

// Validate rejects configurations the reconcilers cannot run with.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxRunning < 0 || c.MaxRunningPerNamespace < 0 {
		errs = append(errs, errors.New("parallelism caps must not be negative"))
	}
	switch c.DefaultExecutor {
	case "", blisv1alpha1.ExecutorJob, blisv1alpha1.ExecutorInProcess:
	default:
		errs = append(errs, fmt.Errorf("unknown executor %q; valid: job, inProcess", c.DefaultExecutor))
	}
	return errors.Join(errs...)
}

// CacheOptions returns the manager cache settings the reconcilers expect: Jobs and ConfigMaps
// are cached only when the operator made them, so the manager's memory does not grow with the
// cluster's other workloads. Merge them into the manager's cache.Options.
func CacheOptions() map[client.Object]cache.ByObject {
	own := labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedByValue})
	return map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {Label: own},
		&batchv1.Job{}:      {Label: own},
	}
}

// SetupWithManager registers the four reconcilers, their field indexes and the in-process
// worker pool with mgr.
func SetupWithManager(mgr ctrl.Manager, cfg Config) error {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	registerMetrics()
	if err := setupIndexes(context.Background(), mgr); err != nil {
		return err
	}
	rec := mgr.GetEventRecorder

	if err := ctrl.NewControllerManagedBy(mgr).For(&blisv1alpha1.SimulatedCluster{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("simulatedcluster").
		Complete(&SimulatedClusterReconciler{Client: mgr.GetClient(), Recorder: rec("simulatedcluster-controller")}); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).For(&blisv1alpha1.PolicyBundle{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("policybundle").
		Complete(&PolicyBundleReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: rec("policybundle-controller")}); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).For(&blisv1alpha1.WorkloadSpec{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("workloadspec").
		Complete(&WorkloadSpecReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: rec("workloadspec-controller")}); err != nil {
		return err
	}

	r := newEvaluationReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetScheme(), rec("evaluation-controller"), cfg)
	if err := mgr.Add(r.pool); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&blisv1alpha1.Evaluation{}).
		Named("evaluation").
		Owns(&batchv1.Job{}).
		Owns(&corev1.ConfigMap{}).
		Watches(&blisv1alpha1.SimulatedCluster{}, handler.EnqueueRequestsFromMapFunc(r.users(IndexClusterRef))).
		Watches(&blisv1alpha1.PolicyBundle{}, handler.EnqueueRequestsFromMapFunc(r.users(IndexPolicyRef))).
		Watches(&blisv1alpha1.WorkloadSpec{}, handler.EnqueueRequestsFromMapFunc(r.users(IndexWorkloadRef))).
		WatchesRawSource(source.Channel(r.wakeups, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: cfg.MaxConcurrentReconciles}).
		Complete(r)
}

// newEvaluationReconciler returns the Evaluation reconciler with its in-memory state: the
// in-process pool (to be started), the admission ledger and the registry of runs in progress.
// Wake-ups go through r.wakeups, which the controller watches.
func newEvaluationReconciler(c client.Client, apiReader client.Reader, scheme *runtime.Scheme, rec recorder.EventRecorder, cfg Config) *EvaluationReconciler {
	r := &EvaluationReconciler{
		Client: c, APIReader: apiReader, Scheme: scheme, Recorder: rec, Config: cfg,
		resolved: map[types.UID]resolvedEntry{},
		phases:   newPhaseTracker(),
		wakeups:  make(chan event.GenericEvent, 1024),
		writes:   newOwnWrites(),
	}
	wake := func(key types.NamespacedName) {
		ev := &blisv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		r.wakeups <- event.GenericEvent{Object: ev}
	}
	capacity := cfg.MaxRunning
	if capacity <= 0 {
		capacity = 4096
	}
	r.pool = newPool(cfg.Run, cfg.InProcessWorkers, capacity, func(k types.NamespacedName) { go wake(k) },
		func(busy, workers int) { workersBusy.Set(float64(busy)); workersTotal.Set(float64(workers)) })
	workersTotal.Set(float64(cfg.InProcessWorkers))
	r.ledger = newLedger(cfg.MaxRunning, cfg.MaxRunningPerNamespace, func(k types.NamespacedName) { go wake(k) },
		func(running, queued int) { runningSlots.Set(float64(running)); queueDepth.Set(float64(queued)) })
	r.runs = newIdenticalRuns(func(k types.NamespacedName) { go wake(k) })
	return r
}

// users maps a changed SimulatedCluster, PolicyBundle or WorkloadSpec to the unfinished
// Evaluations of its namespace that reference it, through the field index.
func (r *EvaluationReconciler) users(index string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list blisv1alpha1.EvaluationList
		if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{index: obj.GetName()}); err != nil {
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			ev := &list.Items[i]
			if terminal(&ev.Status) {
				continue
			}
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(ev)})
		}
		return out
	}
}

// setupIndexes registers the field indexes.
func setupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	idx := mgr.GetFieldIndexer()
	evIndex := func(key string, f func(*blisv1alpha1.Evaluation) string) error {
		return idx.IndexField(ctx, &blisv1alpha1.Evaluation{}, key, func(o client.Object) []string {
			if v := f(o.(*blisv1alpha1.Evaluation)); v != "" {
				return []string{v}
			}
			return nil
		})
	}
	if err := evIndex(IndexClusterRef, func(e *blisv1alpha1.Evaluation) string {
		if e.Spec.ClusterRef != nil {
			return e.Spec.ClusterRef.Name
		}
		return ""
	}); err != nil {
		return err
	}
	if err := evIndex(IndexPolicyRef, func(e *blisv1alpha1.Evaluation) string {
		if e.Spec.PolicyRef != nil {
			return e.Spec.PolicyRef.Name
		}
		return ""
	}); err != nil {
		return err
	}
	if err := evIndex(IndexWorkloadRef, func(e *blisv1alpha1.Evaluation) string {
		if e.Spec.WorkloadRef != nil {
			return e.Spec.WorkloadRef.Name
		}
		return ""
	}); err != nil {
		return err
	}
	if err := evIndex(IndexSucceededHash, func(e *blisv1alpha1.Evaluation) string {
		if isTrue(e.Status.Conditions, ConditionSucceeded) {
			return e.Status.InputHash
		}
		return ""
	}); err != nil {
		return err
	}
	if err := evIndex(IndexPhase, func(e *blisv1alpha1.Evaluation) string { return string(e.Status.Phase) }); err != nil {
		return err
	}
	return idx.IndexField(ctx, &batchv1.Job{}, IndexOwnerUID, func(o client.Object) []string {
		owner := metav1.GetControllerOf(o)
		if owner == nil || owner.Kind != "Evaluation" || owner.APIVersion != blisv1alpha1.GroupVersion.String() {
			return nil
		}
		return []string{string(owner.UID)}
	})
}

// setupPromotionIndexes registers the field indexes of promotion: promoted PolicyBundles by
// the SimulatedCluster they are exported for and by the ConfigMaps they reference.
func setupPromotionIndexes(ctx context.Context, mgr ctrl.Manager) error {
	idx := mgr.GetFieldIndexer()
	promoted := func(o client.Object) (*blisv1alpha1.PolicyBundle, bool) {
		pb := o.(*blisv1alpha1.PolicyBundle)
		_, ok := pb.Annotations[promote.AnnotationPromote]
		return pb, ok
	}
	if err := idx.IndexField(ctx, &blisv1alpha1.PolicyBundle{}, IndexPromoteCluster, func(o client.Object) []string {
		if pb, ok := promoted(o); ok && pb.Annotations[promote.AnnotationCluster] != "" {
			return []string{pb.Annotations[promote.AnnotationCluster]}
		}
		return nil
	}); err != nil {
		return err
	}
	return idx.IndexField(ctx, &blisv1alpha1.PolicyBundle{}, IndexPromoteConfigMap, func(o client.Object) []string {
		pb, ok := promoted(o)
		if !ok {
			return nil
		}
		return evaluation.ConfigMapNames(&evaluation.Inputs{Spec: blisv1alpha1.EvaluationSpec{Policy: &pb.Spec}})
	})
}

// setupStudyIndexes registers the field indexes of PolicyStudies: by the ConfigMaps their
// winner's export read, and, for studies that promote, by the SimulatedCluster and the
// WorkloadSpec they reference.
func setupStudyIndexes(ctx context.Context, mgr ctrl.Manager) error {
	idx := mgr.GetFieldIndexer()
	promoting := func(key string, f func(*blisv1alpha1.PolicyStudy) string) error {
		return idx.IndexField(ctx, &blisv1alpha1.PolicyStudy{}, key, func(o client.Object) []string {
			ps := o.(*blisv1alpha1.PolicyStudy)
			if ps.Spec.Promotion == nil {
				return nil
			}
			if v := f(ps); v != "" {
				return []string{v}
			}
			return nil
		})
	}
	if err := promoting(IndexStudyPromotionCluster, func(ps *blisv1alpha1.PolicyStudy) string { return ps.Spec.ClusterRef.Name }); err != nil {
		return err
	}
	if err := promoting(IndexStudyPromotionWorkload, func(ps *blisv1alpha1.PolicyStudy) string { return ps.Spec.WorkloadRef.Name }); err != nil {
		return err
	}
	return idx.IndexField(ctx, &blisv1alpha1.PolicyStudy{}, IndexStudyPromotionConfigMap, func(o client.Object) []string {
		if p := o.(*blisv1alpha1.PolicyStudy).Status.Promotion; p != nil {
			return p.ConfigMaps
		}
		return nil
	})
}

// configMapMetadataCache is a cache of ConfigMap metadata, started with the manager's caches.
type configMapMetadataCache struct {
	cache.Cache
}

// GetCache makes the manager start the cache with its own caches and wait for it to sync.
func (c configMapMetadataCache) GetCache() cache.Cache { return c.Cache }

// configMapMetadata is the watched type of configMapMetadataCache.
func configMapMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	return m
}

// metadataCaches holds the ConfigMap metadata cache of each manager, shared by the reconcilers
// that follow user ConfigMaps so that a manager watches them once.
var metadataCaches = struct {
	sync.Mutex
	of map[ctrl.Manager]configMapMetadataCache
}{of: map[ctrl.Manager]configMapMetadataCache{}}

// configMapMetadataCacheOf returns mgr's ConfigMap metadata cache, creating it and adding it
// to mgr the first time.
func configMapMetadataCacheOf(mgr ctrl.Manager) (configMapMetadataCache, error) {
	metadataCaches.Lock()
	defer metadataCaches.Unlock()
	if c, ok := metadataCaches.of[mgr]; ok {
		return c, nil
	}
	c, err := newConfigMapMetadataCache(mgr)
	if err != nil {
		return c, err
	}
	if err := mgr.Add(c); err != nil {
		return c, err
	}
	metadataCaches.of[mgr] = c
	return c, nil
}

// newConfigMapMetadataCache returns the cache through which promotion sees changes to the
// ConfigMaps users create. The manager's own cache holds only the operator's ConfigMaps
// (CacheOptions), and watching every ConfigMap there would hold all their data. This cache
// watches the metadata of every ConfigMap (the same list and watch permission the manager
// already has) and keeps of each only its namespace, name, UID and resourceVersion, which
// changes with every write to the data: memory grows by a few hundred bytes per ConfigMap,
// and users mark nothing. The contents are read with the APIReader when a reconcile needs them.
func newConfigMapMetadataCache(mgr ctrl.Manager) (configMapMetadataCache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(),
		Scheme:     mgr.GetScheme(),
		Mapper:     mgr.GetRESTMapper(),
		DefaultTransform: func(in any) (any, error) {
			m, ok := in.(*metav1.PartialObjectMetadata)
			if !ok {
				return in, nil
			}
			return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
				Namespace: m.Namespace, Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion}}, nil
		},
	})
	return configMapMetadataCache{Cache: c}, err
}
