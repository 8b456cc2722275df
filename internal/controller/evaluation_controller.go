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

package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation"
	"github.com/inference-sim/blis-operator/internal/resultstore"
)

// maxInputBytes bounds the input envelope of a Job run: it is mounted from a ConfigMap, which
// the API server limits to about 1 MiB.
const maxInputBytes = 900 << 10

// maxStatusBytes is the bound the operator keeps an Evaluation's status under, whatever the
// workload; the trace summary is cut first when a result would exceed it.
const maxStatusBytes = 60 << 10

// resultGrace is how long a Job that completed may take to show its result before the
// Evaluation fails with ResultMissing (the engine writes before exiting; this covers cache lag).
const resultGrace = 30 * time.Second

// EvaluationReconciler runs Evaluations: it resolves their inputs, reuses the result of an
// identical Succeeded Evaluation, admits them under the parallelism caps, runs the engine in a
// Job or in the manager's worker pool, and writes the result into status, once per reconcile.
type EvaluationReconciler struct {
	client.Client
	// APIReader reads objects the manager does not cache (referenced ConfigMaps).
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  recorder.EventRecorder
	Config    Config

	pool    *pool
	ledger  *ledger
	phases  *phaseTracker
	wakeups chan event.GenericEvent
	// runs holds the runs in progress by input hash, for Evaluations of the same input to
	// wait for.
	runs *identicalRuns
	// writes holds the resource versions of this reconciler's own status writes until the
	// cache shows them.
	writes *ownWrites

	// resolved caches the resolved input of Evaluations that wait for a slot, so a queued
	// Evaluation is not resolved again on every wake-up; keyed by UID with a fingerprint of
	// the referenced objects' resource versions.
	mu       sync.Mutex
	resolved map[types.UID]resolvedEntry
	// seeded is set once the slots of runs that were in progress before a restart are held.
	seedMu sync.Mutex
	seeded bool
}

type resolvedEntry struct {
	fingerprint string
	resolved    *evaluation.Resolved
}

// pendingEvent is an event to emit after the status write succeeded.
type pendingEvent struct {
	typ, reason, msg string
}

// postWrite is what a reconcile does once its status write succeeded.
type postWrite struct {
	events  []pendingEvent
	release bool
	forget  bool
	// cleanup deletes a finished Job run's auxiliary objects (only when the run ended).
	cleanup bool
	// observe records a finished run's duration.
	observe func()
}

func (p *postWrite) event(typ, reason, format string, args ...any) {
	p.events = append(p.events, pendingEvent{typ, reason, fmt.Sprintf(format, args...)})
}

// +kubebuilder:rbac:groups=blis.inference-sim.io,resources=evaluations,verbs=get;list;watch
// +kubebuilder:rbac:groups=blis.inference-sim.io,resources=evaluations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=blis.inference-sim.io,resources=evaluations/finalizers,verbs=update
// +kubebuilder:rbac:groups=blis.inference-sim.io,resources=simulatedclusters;policybundles;workloadspecs,verbs=get;list;watch
// +kubebuilder:rbac:groups=blis.inference-sim.io,resources=simulatedclusters/status;policybundles/status;workloadspecs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile moves one Evaluation forward and writes its status at most once.
func (r *EvaluationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	if err := r.seedSlots(ctx); err != nil {
		return ctrl.Result{}, err
	}
	var ev blisv1alpha1.Evaluation
	if err := r.Get(ctx, req.NamespacedName, &ev); err != nil {
		if apierrors.IsNotFound(err) {
			r.forgetKey(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if ev.DeletionTimestamp != nil {
		// Owned Jobs, ConfigMaps and RBAC objects go with the Evaluation (garbage collection);
		// an in-process run is cancelled here.
		r.forget(&ev)
		return ctrl.Result{}, nil
	}
	if r.writes.stale(req.NamespacedName, ev.UID, ev.ResourceVersion) {
		// The cache has not yet seen this reconciler's last status write: acting on the older
		// status would repeat steps already taken (start a run again after its outcome was
		// written, recreate a deleted Job as a first attempt). The watch event of that write
		// enqueues the Evaluation again.
		log.V(1).Info("cache behind the last status write; waiting for it", "resourceVersion", ev.ResourceVersion)
		return ctrl.Result{}, nil
	}
	if terminal(&ev.Status) && ev.Status.ObservedGeneration == ev.Generation {
		r.ledger.release(ev.UID)
		r.pool.forget(ev.UID)
		r.dropResolved(ev.UID)
		r.phases.set(client.ObjectKeyFromObject(&ev), ev.Status.Phase)
		// The cache (and its index of succeeded input hashes) now shows the outcome: the
		// Evaluations waiting for this run look again.
		r.runs.finish(ev.UID)
		return ctrl.Result{}, nil
	}

	desired := ev.Status.DeepCopy()
	desired.ObservedGeneration = ev.Generation
	post := &postWrite{}
	result, err := r.reconcile(ctx, log, &ev, desired, post)
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		// The namespace is going away with the Evaluation: nothing left to do.
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.writeStatus(ctx, &ev, desired); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted meanwhile: the next reconcile forgets it.
			return ctrl.Result{}, nil
		}
		if apierrors.IsConflict(err) {
			// Someone else wrote first; the watch brings the new version right away.
			return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
		}
		return ctrl.Result{}, err
	}
	r.afterWrite(ctx, &ev, desired, post)
	return result, nil
}

// writeStatus writes desired when it differs from the current status, after bounding its size.
func (r *EvaluationReconciler) writeStatus(ctx context.Context, ev *blisv1alpha1.Evaluation, desired *blisv1alpha1.EvaluationStatus) error {
	boundStatus(desired)
	if equality.Semantic.DeepEqual(&ev.Status, desired) {
		return nil
	}
	old := ev.Status
	ev.Status = *desired
	if err := r.Status().Update(ctx, ev); err != nil {
		ev.Status = old
		return err
	}
	r.writes.record(client.ObjectKeyFromObject(ev), ev.UID, ev.ResourceVersion)
	if old.Phase != desired.Phase && desired.Phase != "" {
		transitions.WithLabelValues(string(desired.Phase)).Inc()
	}
	return nil
}

// boundStatus keeps the status under maxStatusBytes by cutting the trace summary.
func boundStatus(st *blisv1alpha1.EvaluationStatus) {
	if len(st.TraceSummary) > blisv1alpha1.MaxTraceSummaryLength {
		st.TraceSummary = truncateUTF8(st.TraceSummary, blisv1alpha1.MaxTraceSummaryLength)
	}
	raw, err := json.Marshal(st)
	if err != nil || len(raw) <= maxStatusBytes {
		return
	}
	over := len(raw) - maxStatusBytes
	keep := max(len(st.TraceSummary)-over-16, 0)
	st.TraceSummary = truncateUTF8(st.TraceSummary, keep)
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// afterWrite runs the steps that must follow a successful status write: events, releasing the
// slot, dropping the in-memory outcome, metrics.
func (r *EvaluationReconciler) afterWrite(ctx context.Context, ev *blisv1alpha1.Evaluation, st *blisv1alpha1.EvaluationStatus, post *postWrite) {
	for _, e := range post.events {
		r.Recorder.Eventf(ev, nil, e.typ, e.reason, "Reconcile", "%s", blisv1alpha1.TruncateMessage(e.msg))
	}
	r.phases.set(client.ObjectKeyFromObject(ev), st.Phase)
	if post.observe != nil {
		post.observe()
	}
	if post.forget {
		r.pool.forget(ev.UID)
	}
	if post.release {
		r.ledger.release(ev.UID)
		r.dropResolved(ev.UID)
	}
	if post.cleanup && terminal(st) {
		r.cleanupJobRun(ctx, ev)
	}
}

// cleanupJobRun deletes the objects a finished Job run no longer needs: its input ConfigMap
// and the engine's service account, Role and RoleBinding. The Job stays until its TTL (for its
// logs) and the result ConfigMap as long as the Evaluation (status.resultRef points at it).
func (r *EvaluationReconciler) cleanupJobRun(ctx context.Context, ev *blisv1alpha1.Evaluation) {
	log := logf.FromContext(ctx)
	objs := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ev.Namespace, Name: inputName(ev)}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ev.Namespace, Name: engineName(ev)}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ev.Namespace, Name: engineName(ev)}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ev.Namespace, Name: engineName(ev)}},
	}
	for _, o := range objs {
		if err := r.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			log.Error(err, "cleaning up after the run", "object", o.GetName())
		}
	}
}

// forget drops everything held in memory for a deleted Evaluation and cancels its run.
func (r *EvaluationReconciler) forget(ev *blisv1alpha1.Evaluation) {
	r.pool.forget(ev.UID)
	r.ledger.release(ev.UID)
	r.dropResolved(ev.UID)
	r.phases.set(client.ObjectKeyFromObject(ev), "")
	r.runs.finish(ev.UID)
	r.writes.forget(client.ObjectKeyFromObject(ev))
}

func (r *EvaluationReconciler) forgetKey(key types.NamespacedName) {
	r.pool.cancelKey(key)
	r.ledger.releaseKey(key)
	r.phases.set(key, "")
	r.runs.finishKey(key)
	r.writes.forget(key)
}

// reconcile computes the desired status of ev.
func (r *EvaluationReconciler) reconcile(ctx context.Context, log logr.Logger, ev *blisv1alpha1.Evaluation,
	st *blisv1alpha1.EvaluationStatus, post *postWrite) (ctrl.Result, error) {
	gen := ev.Generation
	if st.Phase == "" {
		st.Phase = blisv1alpha1.PhasePending
		setCondition(&st.Conditions, gen, blisv1alpha1.ConditionReady, metav1.ConditionFalse, ReasonPending, "the Evaluation has not run yet")
	}
	started := isTrue(st.Conditions, blisv1alpha1.ConditionRunning) && st.InputHash != ""
	if started {
		return r.observeRun(ctx, log, ev, st, post)
	}

	// Resolve the inputs.
	in, missing, err := r.fetchInputs(ctx, ev)
	if err != nil {
		return ctrl.Result{}, err
	}
	if missing != nil {
		r.waitForInputs(ev, st, post, missing)
		return ctrl.Result{RequeueAfter: missing.retry}, nil
	}
	resolved, err := r.resolve(ev, in)
	if err != nil {
		return r.rejectInputs(ev, st, post, err), nil
	}
	if !isTrue(st.Conditions, ConditionAccepted) {
		post.event(corev1.EventTypeNormal, ReasonResolved, "inputs resolved; input hash %s", resolved.Hash)
	}
	setCondition(&st.Conditions, gen, ConditionAccepted, metav1.ConditionTrue, ReasonResolved, "inputs resolved and validated; input hash "+resolved.Hash)
	setCondition(&st.Conditions, gen, blisv1alpha1.ConditionInputsResolved, metav1.ConditionTrue, ReasonResolved, "every referenced object resolved")
	st.InputHash = resolved.Hash
	st.EngineVersion = resolved.Document.EngineVersion

	// Exact result reuse: of an identical run in progress, else of a Succeeded Evaluation. The
	// run in progress is looked up first: a leader leaves the registry only once the cache
	// shows it finished, so one that finishes in between is found by findCached.
	key := client.ObjectKeyFromObject(ev)
	rk := runKey{namespace: ev.Namespace, hash: resolved.Hash}
	reuse := ev.Spec.Execution.ReuseCachedResult == nil || *ev.Spec.Execution.ReuseCachedResult
	if reuse {
		if l, ok := r.runs.follow(rk, ev.UID, key); ok {
			return r.waitForIdentical(ev, st, post, in, resolved, l), nil
		}
		src, err := r.findCached(ctx, ev, resolved.Hash)
		if err != nil {
			return ctrl.Result{}, err
		}
		if src != nil {
			r.applyCacheHit(ev, st, src, post)
			return ctrl.Result{}, nil
		}
	}

	// Admission under the parallelism caps.
	entry := queueEntry{uid: ev.UID, key: key, priority: r.priority(ctx, ev), created: ev.CreationTimestamp.Time}
	adm := r.ledger.tryAdmit(entry)
	if !adm.admitted {
		if !isTrue(st.Conditions, blisv1alpha1.ConditionQueued) {
			post.event(corev1.EventTypeNormal, "Queued", "%s", adm.message)
		}
		st.Phase = blisv1alpha1.PhaseQueued
		setCondition(&st.Conditions, gen, blisv1alpha1.ConditionQueued, metav1.ConditionTrue, adm.reason, adm.message)
		r.keepResolved(ev.UID, in, resolved)
		return ctrl.Result{RequeueAfter: r.Config.QueuedResync}, nil
	}
	// This run leads its input hash, unless an identical run started since the lookup above
	// (another reconcile worker): then the slot goes back and this one waits for that run.
	if l, mine := r.runs.claim(rk, ev.UID, key, reuse); !mine && reuse {
		return r.waitForIdentical(ev, st, post, in, resolved, l), nil
	}
	if isTrue(st.Conditions, blisv1alpha1.ConditionQueued) {
		setCondition(&st.Conditions, gen, blisv1alpha1.ConditionQueued, metav1.ConditionFalse, ReasonAdmitted, adm.message)
	}

	// Start the run.
	now := metav1.Now()
	executor := r.executorOf(ev)
	switch executor {
	case blisv1alpha1.ExecutorInProcess:
		if err := r.pool.submit(ev.UID, client.ObjectKeyFromObject(ev), resolved); err != nil {
			// The pool is full (more admitted runs than queue places after a restart): retry.
			r.ledger.release(ev.UID)
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		setCondition(&st.Conditions, gen, blisv1alpha1.ConditionRunning, metav1.ConditionTrue, ReasonInProcess,
			fmt.Sprintf("running in the manager's worker pool (%d workers)", r.pool.workers))
	default:
		if r.Config.EngineImage == "" {
			r.fail(ev, st, post, ReasonNoEngineImage, "the job executor needs an engine image: start the manager with --engine-image (or $ENGINE_IMAGE), or use the inProcess executor")
			return ctrl.Result{}, nil
		}
		envelope, err := resolved.MarshalEnvelope()
		if err != nil {
			return ctrl.Result{}, err
		}
		if len(envelope) > maxInputBytes {
			msg := fmt.Sprintf("the resolved input is %d bytes, above the %d bytes a ConfigMap can carry; use a trace on a volume (trace.path) or the inProcess executor", len(envelope), maxInputBytes)
			r.fail(ev, st, post, ReasonInputTooLarge, msg)
			return ctrl.Result{}, nil
		}
		if err := r.createJobRun(ctx, ev, resolved.Hash, envelope, 1); err != nil {
			// Leave the slot held: the next attempt adopts what was created.
			return ctrl.Result{}, err
		}
		setCondition(&st.Conditions, gen, blisv1alpha1.ConditionRunning, metav1.ConditionTrue, ReasonJobCreated, "engine Job "+runName(ev)+" created")
	}
	st.Phase = blisv1alpha1.PhaseRunning
	st.StartTime = &now
	st.Attempts = 1
	setCondition(&st.Conditions, gen, blisv1alpha1.ConditionReady, metav1.ConditionFalse, ReasonNotReady, "the engine is running")
	post.event(corev1.EventTypeNormal, "Started", "engine run started (%s executor)", executor)
	log.V(1).Info("run started", "executor", executor, "inputHash", resolved.Hash)
	return ctrl.Result{}, nil
}

// waitForIdentical marks ev as waiting for the run of l, which has the same input: when l
// succeeds its result is reused (CacheHit); when it fails or is deleted, ev runs itself. A
// waiting Evaluation holds no slot and no queue place.
func (r *EvaluationReconciler) waitForIdentical(ev *blisv1alpha1.Evaluation, st *blisv1alpha1.EvaluationStatus, post *postWrite,
	in *evaluation.Inputs, resolved *evaluation.Resolved, l leader) ctrl.Result {
	msg := fmt.Sprintf("waiting for Evaluation %s, which runs the same input (hash %s); its result is reused when it succeeds", l.key.Name, resolved.Hash)
	if c := findCondition(st.Conditions, blisv1alpha1.ConditionQueued); c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonWaitingForIdenticalRun {
		post.event(corev1.EventTypeNormal, ReasonWaitingForIdenticalRun, "%s", msg)
	}
	st.Phase = blisv1alpha1.PhaseQueued
	setCondition(&st.Conditions, ev.Generation, blisv1alpha1.ConditionQueued, metav1.ConditionTrue, ReasonWaitingForIdenticalRun, msg)
	r.ledger.release(ev.UID)
	r.keepResolved(ev.UID, in, resolved)
	// The leader's end wakes ev; the resync only covers a missed wake-up.
	return ctrl.Result{RequeueAfter: r.Config.QueuedResync}
}

// executorOf returns the executor of ev: the spec's, else the manager's default, unless the
// manager runs everything in-process.
func (r *EvaluationReconciler) executorOf(ev *blisv1alpha1.Evaluation) blisv1alpha1.Executor {
	if r.Config.InProcessOnly {
		return blisv1alpha1.ExecutorInProcess
	}
	if e := ev.Spec.Execution.Executor; e != "" {
		return e
	}
	if r.Config.DefaultExecutor != "" {
		return r.Config.DefaultExecutor
	}
	return blisv1alpha1.ExecutorJob
}

// priority is the Evaluation's spec.execution.priority, else the value of its priority class
// (0 without one).
func (r *EvaluationReconciler) priority(ctx context.Context, ev *blisv1alpha1.Evaluation) int32 {
	if p := ev.Spec.Execution.Priority; p != nil {
		return *p
	}
	name := ev.Spec.Execution.PriorityClassName
	if name == "" {
		return 0
	}
	var pc schedulingv1.PriorityClass
	if err := r.Get(ctx, client.ObjectKey{Name: name}, &pc); err != nil {
		return 0
	}
	return pc.Value
}

// missingInputs describes inputs the Evaluation waits for.
type missingInputs struct {
	reason, message string
	retry           time.Duration
}

// fetchInputs reads the referenced objects and ConfigMaps. It returns missingInputs when a
// referenced object does not exist or is not Ready yet.
func (r *EvaluationReconciler) fetchInputs(ctx context.Context, ev *blisv1alpha1.Evaluation) (*evaluation.Inputs, *missingInputs, error) {
	in := &evaluation.Inputs{Name: ev.Name, Spec: ev.Spec, ConfigMaps: map[string]map[string]string{}}
	ns := ev.Namespace
	type ref struct {
		kind string
		name string
		obj  client.Object
		set  func()
	}
	var refs []ref
	if ev.Spec.ClusterRef != nil {
		o := &blisv1alpha1.SimulatedCluster{}
		refs = append(refs, ref{evaluation.KindSimulatedCluster, ev.Spec.ClusterRef.Name, o, func() { in.Cluster = o }})
	}
	if ev.Spec.PolicyRef != nil {
		o := &blisv1alpha1.PolicyBundle{}
		refs = append(refs, ref{evaluation.KindPolicyBundle, ev.Spec.PolicyRef.Name, o, func() { in.Policy = o }})
	}
	if ev.Spec.WorkloadRef != nil {
		o := &blisv1alpha1.WorkloadSpec{}
		refs = append(refs, ref{evaluation.KindWorkloadSpec, ev.Spec.WorkloadRef.Name, o, func() { in.Workload = o }})
	}
	for _, rf := range refs {
		if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: rf.name}, rf.obj); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, &missingInputs{ReasonReferenceNotFound,
					fmt.Sprintf("%s %q does not exist; waiting for it", rf.kind, rf.name), r.Config.MissingResync}, nil
			}
			return nil, nil, err
		}
		if msg, ready := readiness(rf.obj); !ready {
			return nil, &missingInputs{ReasonReferenceNotReady,
				fmt.Sprintf("%s %q is not Ready: %s", rf.kind, rf.name, msg), r.Config.MissingResync}, nil
		}
		rf.set()
	}
	// ConfigMaps named by the inputs, read directly (the manager caches only its own).
	for _, name := range evaluation.ConfigMapNames(in) {
		var cm corev1.ConfigMap
		if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, &missingInputs{ReasonReferenceNotFound,
					fmt.Sprintf("ConfigMap %q does not exist; waiting for it", name), r.Config.MissingResync}, nil
			}
			return nil, nil, err
		}
		data := map[string]string{}
		for k, v := range cm.Data {
			data[k] = v
		}
		for k, v := range cm.BinaryData {
			data[k] = string(v)
		}
		in.ConfigMaps[name] = data
	}
	return in, nil, nil
}

// readiness reports whether a referenced object's Ready condition is True for its current
// generation, and its message otherwise.
func readiness(o client.Object) (string, bool) {
	var conds []metav1.Condition
	switch t := o.(type) {
	case *blisv1alpha1.SimulatedCluster:
		conds = t.Status.Conditions
	case *blisv1alpha1.PolicyBundle:
		conds = t.Status.Conditions
	case *blisv1alpha1.WorkloadSpec:
		conds = t.Status.Conditions
	}
	for _, c := range conds {
		if c.Type != blisv1alpha1.ConditionReady {
			continue
		}
		if c.ObservedGeneration != o.GetGeneration() {
			return "its current generation has not been validated yet", false
		}
		if c.Status != metav1.ConditionTrue {
			return c.Message, false
		}
		return "", true
	}
	return "it has not been validated yet", false
}

// fingerprint identifies the versions of the objects an Evaluation's inputs came from.
func fingerprint(in *evaluation.Inputs) string {
	fp := ""
	if in.Cluster != nil {
		fp += "c" + in.Cluster.ResourceVersion
	}
	if in.Policy != nil {
		fp += "p" + in.Policy.ResourceVersion
	}
	if in.Workload != nil {
		fp += "w" + in.Workload.ResourceVersion
	}
	names := make([]string, 0, len(in.ConfigMaps))
	for n := range in.ConfigMaps {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b, _ := json.Marshal(in.ConfigMaps[n])
		fp += "m" + n + string(b)
	}
	return fp
}

// resolve resolves in, reusing the resolution of a queued Evaluation whose inputs did not change.
func (r *EvaluationReconciler) resolve(ev *blisv1alpha1.Evaluation, in *evaluation.Inputs) (*evaluation.Resolved, error) {
	fp := fingerprint(in)
	r.mu.Lock()
	e, ok := r.resolved[ev.UID]
	r.mu.Unlock()
	if ok && e.fingerprint == fp {
		return e.resolved, nil
	}
	return evaluation.Resolve(*in)
}

func (r *EvaluationReconciler) keepResolved(uid types.UID, in *evaluation.Inputs, res *evaluation.Resolved) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resolved[uid] = resolvedEntry{fingerprint: fingerprint(in), resolved: res}
}

func (r *EvaluationReconciler) dropResolved(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.resolved, uid)
}

// waitForInputs marks ev as waiting for a referenced object.
func (r *EvaluationReconciler) waitForInputs(ev *blisv1alpha1.Evaluation, st *blisv1alpha1.EvaluationStatus, post *postWrite, m *missingInputs) {
	gen := ev.Generation
	if c := findCondition(st.Conditions, ConditionAccepted); c == nil || c.Reason != m.reason || c.Message != blisv1alpha1.TruncateMessage(m.message) {
		post.event(corev1.EventTypeWarning, m.reason, "%s", m.message)
	}
	st.Phase = blisv1alpha1.PhasePending
	setCondition(&st.Conditions, gen, ConditionAccepted, metav1.ConditionFalse, m.reason, m.message)
	setCondition(&st.Conditions, gen, blisv1alpha1.ConditionInputsResolved, metav1.ConditionFalse, m.reason, m.message)
	// A slot held or a queue place taken earlier is given back while the input is missing,
	// and so is the lead of a run that did not start.
	post.release = true
	r.runs.finish(ev.UID)
}

// rejectInputs handles a resolution error: a fault of the Evaluation itself fails it for good
// (its spec is immutable); a fault of a referenced object leaves it waiting with
// Accepted=False until that object changes.
func (r *EvaluationReconciler) rejectInputs(ev *blisv1alpha1.Evaluation, st *blisv1alpha1.EvaluationStatus, post *postWrite, err error) ctrl.Result {
	gen := ev.Generation
	var re *evaluation.Error
	reason, msg := ReasonInvalidSpec, err.Error()
	kind := evaluation.KindEvaluation
	if errors.As(err, &re) {
		kind = re.Kind
		switch re.Reason {
		case evaluation.ReasonReferenceNotFound:
			reason = ReasonReferenceNotFound
		case evaluation.ReasonUnsupported:
			reason = ReasonUnsupported
		}
	}
	if reason == ReasonReferenceNotFound {
		r.waitForInputs(ev, st, post, &missingInputs{reason, msg, r.Config.MissingResync})
		return ctrl.Result{RequeueAfter: r.Config.MissingResync}
	}
	if kind != evaluation.KindEvaluation {
		if c := findCondition(st.Conditions, ConditionAccepted); c == nil || c.Message != blisv1alpha1.TruncateMessage(msg) {
			post.event(corev1.EventTypeWarning, ReasonInvalidReference, "%s", msg)
		}
		st.Phase = blisv1alpha1.PhasePending
		setCondition(&st.Conditions, gen, ConditionAccepted, metav1.ConditionFalse, ReasonInvalidReference, msg)
		setCondition(&st.Conditions, gen, blisv1alpha1.ConditionInputsResolved, metav1.ConditionFalse, reason, msg)
		post.release = true
		r.runs.finish(ev.UID)
		return ctrl.Result{}
	}
	setCondition(&st.Conditions, gen, ConditionAccepted, metav1.ConditionFalse, reason, msg)
	r.fail(ev, st, post, reason, msg)
	return ctrl.Result{}
}

// fail marks ev Failed for good.
func (r *EvaluationReconciler) fail(ev *blisv1alpha1.Evaluation, st *blisv1alpha1.EvaluationStatus, post *postWrite, reason, msg string) {
	gen := ev.Generation
	now := metav1.Now()
	st.Phase = blisv1alpha1.PhaseFailed
	st.CompletionTime = &now
	setCondition(&st.Conditions, gen, blisv1alpha1.ConditionFailed, metav1.ConditionTrue, reason, msg)
	setCondition(&st.Conditions, gen, ConditionSucceeded, metav1.ConditionFalse, reason, msg)
	setCondition(&st.Conditions, gen, blisv1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
	if c := findCondition(st.Conditions, blisv1alpha1.ConditionRunning); c != nil {
		setCondition(&st.Conditions, gen, blisv1alpha1.ConditionRunning, metav1.ConditionFalse, reason, "the run ended")
	}
	if c := findCondition(st.Conditions, blisv1alpha1.ConditionQueued); c != nil && c.Status == metav1.ConditionTrue {
		setCondition(&st.Conditions, gen, blisv1alpha1.ConditionQueued, metav1.ConditionFalse, reason, "no longer waiting")
	}
	post.event(corev1.EventTypeWarning, reason, "%s", msg)
	post.release, post.forget = true, true
}

// succeed writes the result fields of res into st and marks ev Succeeded.
func (r *EvaluationReconciler) succeed(ev *blisv1alpha1.Evaluation, st *blisv1alpha1.EvaluationStatus, res *blisv1alpha1.EvaluationStatus,
	reason, msg string, post *postWrite) {
	gen := ev.Generation
	copyResult(st, res)
	now := metav1.Now()
	st.Phase = blisv1alpha1.PhaseSucceeded
	st.CompletionTime = &now
	setCondition(&st.Conditions, gen, ConditionSucceeded, metav1.ConditionTrue, reason, msg)
	setCondition(&st.Conditions, gen, blisv1alpha1.ConditionReady, metav1.ConditionTrue, reason, "results are in status")
	if c := findCondition(st.Conditions, blisv1alpha1.ConditionRunning); c != nil {
		setCondition(&st.Conditions, gen, blisv1alpha1.ConditionRunning, metav1.ConditionFalse, reason, "the run ended")
	}
	if c := findCondition(st.Conditions, blisv1alpha1.ConditionQueued); c != nil && c.Status == metav1.ConditionTrue {
		setCondition(&st.Conditions, gen, blisv1alpha1.ConditionQueued, metav1.ConditionFalse, reason, "no longer waiting")
	}
	post.event(corev1.EventTypeNormal, reason, "%s", msg)
	post.release, post.forget = true, true
}

// copyResult copies the result fields (see resultstore.ResultFields) of res into st.
func copyResult(st, res *blisv1alpha1.EvaluationStatus) {
	rf := resultstore.ResultFields(res)
	st.InputHash = rf.InputHash
	st.EngineVersion = rf.EngineVersion
	st.Metrics = rf.Metrics
	st.FitnessScore = rf.FitnessScore
	st.Fitness = rf.Fitness
	st.Replicates = rf.Replicates
	st.Anomalies = rf.Anomalies
	st.TraceSummary = rf.TraceSummary
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// findCached returns a Succeeded Evaluation of the namespace with the same input hash.
func (r *EvaluationReconciler) findCached(ctx context.Context, ev *blisv1alpha1.Evaluation, hash string) (*blisv1alpha1.Evaluation, error) {
	var list blisv1alpha1.EvaluationList
	if err := r.List(ctx, &list, client.InNamespace(ev.Namespace), client.MatchingFields{IndexSucceededHash: hash}); err != nil {
		return nil, err
	}
	var best *blisv1alpha1.Evaluation
	for i := range list.Items {
		c := &list.Items[i]
		if c.UID == ev.UID || c.DeletionTimestamp != nil || c.Status.InputHash != hash || !isTrue(c.Status.Conditions, ConditionSucceeded) {
			continue
		}
		if best == nil || c.Name < best.Name {
			best = c
		}
	}
	return best, nil
}

// applyCacheHit copies the result of src into st.
func (r *EvaluationReconciler) applyCacheHit(ev *blisv1alpha1.Evaluation, st *blisv1alpha1.EvaluationStatus, src *blisv1alpha1.Evaluation, post *postWrite) {
	st.CachedFrom = src.Name
	st.ResultRef = src.Status.ResultRef.DeepCopy()
	st.Attempts = 0
	now := metav1.Now()
	st.StartTime = &now
	r.succeed(ev, st, &src.Status, ReasonCacheHit,
		fmt.Sprintf("reused the result of Evaluation %s (same input hash %s); the engine did not run", src.Name, src.Status.InputHash), post)
	post.observe = func() { cacheHits.Inc() }
}

// observeRun follows a started run.
func (r *EvaluationReconciler) observeRun(ctx context.Context, log logr.Logger, ev *blisv1alpha1.Evaluation,
	st *blisv1alpha1.EvaluationStatus, post *postWrite) (ctrl.Result, error) {
	// A Job run's auxiliary objects go once it ends, whichever way.
	post.cleanup = r.runningExecutor(st) == blisv1alpha1.ExecutorJob
	// A run in progress holds its slot, also after a restart.
	r.ledger.hold(queueEntry{uid: ev.UID, key: client.ObjectKeyFromObject(ev), created: ev.CreationTimestamp.Time})
	r.checkReferences(ctx, ev, st)
	if r.runningExecutor(st) == blisv1alpha1.ExecutorInProcess {
		return r.observeInProcess(ctx, log, ev, st, post)
	}
	return r.observeJob(ctx, log, ev, st, post)
}

// runningExecutor tells which executor a started run uses, from its Running condition.
func (r *EvaluationReconciler) runningExecutor(st *blisv1alpha1.EvaluationStatus) blisv1alpha1.Executor {
	if c := findCondition(st.Conditions, blisv1alpha1.ConditionRunning); c != nil && (c.Reason == ReasonInProcess || c.Reason == ReasonRestarted) {
		return blisv1alpha1.ExecutorInProcess
	}
	return blisv1alpha1.ExecutorJob
}

// checkReferences reports, while a run is in progress, referenced objects that were deleted.
func (r *EvaluationReconciler) checkReferences(ctx context.Context, ev *blisv1alpha1.Evaluation, st *blisv1alpha1.EvaluationStatus) {
	type ref struct {
		kind, name string
		obj        client.Object
	}
	var refs []ref
	if ev.Spec.ClusterRef != nil {
		refs = append(refs, ref{evaluation.KindSimulatedCluster, ev.Spec.ClusterRef.Name, &blisv1alpha1.SimulatedCluster{}})
	}
	if ev.Spec.PolicyRef != nil {
		refs = append(refs, ref{evaluation.KindPolicyBundle, ev.Spec.PolicyRef.Name, &blisv1alpha1.PolicyBundle{}})
	}
	if ev.Spec.WorkloadRef != nil {
		refs = append(refs, ref{evaluation.KindWorkloadSpec, ev.Spec.WorkloadRef.Name, &blisv1alpha1.WorkloadSpec{}})
	}
	for _, rf := range refs {
		if err := r.Get(ctx, client.ObjectKey{Namespace: ev.Namespace, Name: rf.name}, rf.obj); apierrors.IsNotFound(err) {
			setCondition(&st.Conditions, ev.Generation, blisv1alpha1.ConditionInputsResolved, metav1.ConditionFalse, ReasonReferenceDeleted,
				fmt.Sprintf("%s %q was deleted after the run started; the run goes on with the input snapshotted at start (hash %s)", rf.kind, rf.name, st.InputHash))
			return
		}
	}
}

// observeInProcess follows a run in the worker pool.
func (r *EvaluationReconciler) observeInProcess(ctx context.Context, log logr.Logger, ev *blisv1alpha1.Evaluation,
	st *blisv1alpha1.EvaluationStatus, post *postWrite) (ctrl.Result, error) {
	state, out := r.pool.state(ev.UID)
	switch state {
	case runWaiting, runActive:
		return ctrl.Result{}, nil
	case runDone:
		if out.hash != st.InputHash {
			r.fail(ev, st, post, ReasonInvalidResult, fmt.Sprintf("the run's input hash %s differs from status.inputHash %s", out.hash, st.InputHash))
			return ctrl.Result{}, nil
		}
		result := "succeeded"
		if out.err != nil {
			result = "failed"
			r.fail(ev, st, post, ReasonEngineError, "the engine failed: "+out.err.Error())
		} else {
			st.ResultRef = nil
			r.succeed(ev, st, out.status, ReasonCompleted, fmt.Sprintf("the engine ran %s in-process in %s", seedsText(ev), out.finished.Sub(out.started).Round(time.Millisecond)), post)
		}
		d := out.finished.Sub(out.started).Seconds()
		post.observe = func() { runDuration.WithLabelValues(string(blisv1alpha1.ExecutorInProcess), result).Observe(d) }
		return ctrl.Result{}, nil
	}
	// The pool does not know the run: the manager restarted while it was in progress. The engine
	// is deterministic, so running the same input again gives the same result; the status is
	// written once, so the result is never recorded twice.
	in, missing, err := r.fetchInputs(ctx, ev)
	if err != nil {
		return ctrl.Result{}, err
	}
	if missing != nil {
		r.fail(ev, st, post, ReasonInputChanged, "the run was interrupted by a manager restart and cannot run again: "+missing.message)
		return ctrl.Result{}, nil
	}
	resolved, err := r.resolve(ev, in)
	if err != nil || resolved.Hash != st.InputHash {
		msg := "the run was interrupted by a manager restart and its referenced inputs changed since it started"
		if err != nil {
			msg += ": " + err.Error()
		}
		r.fail(ev, st, post, ReasonInputChanged, msg)
		return ctrl.Result{}, nil
	}
	if err := r.pool.submit(ev.UID, client.ObjectKeyFromObject(ev), resolved); err != nil {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	log.Info("in-process run restarted after a manager restart", "inputHash", st.InputHash)
	setCondition(&st.Conditions, ev.Generation, blisv1alpha1.ConditionRunning, metav1.ConditionTrue, ReasonRestarted,
		"the manager restarted during the run; the run started again with the same input")
	post.event(corev1.EventTypeNormal, ReasonRestarted, "in-process run restarted after a manager restart")
	return ctrl.Result{}, nil
}

// attempts renders a number of attempts.
func attempts(n int32) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

func seedsText(ev *blisv1alpha1.Evaluation) string {
	if n := len(ev.Spec.Seeds); n > 1 {
		return fmt.Sprintf("%d seeds", n)
	}
	return "1 seed"
}

// observeJob follows a run in an engine Job: the result ConfigMap first (the Job may be gone
// after its TTL), then the Job's state.
func (r *EvaluationReconciler) observeJob(ctx context.Context, log logr.Logger, ev *blisv1alpha1.Evaluation,
	st *blisv1alpha1.EvaluationStatus, post *postWrite) (ctrl.Result, error) {
	gen := ev.Generation
	cm, jv, err := r.readJobRun(ctx, ev)
	if err != nil {
		return ctrl.Result{}, err
	}
	if jv.exists {
		st.Attempts = jv.attempt + jv.failures
	}
	if cm != nil {
		payload, err := resultstore.Decode(cm, st.InputHash)
		switch {
		case err == nil && payload.Result.Status != nil:
			st.ResultRef = &blisv1alpha1.ResultReference{Kind: "ConfigMap", Name: cm.Name, Key: resultstore.KeyResult,
				Digest: payload.Digest, SizeBytes: int64(payload.Size)}
			dur := time.Since(st.StartTime.Time)
			if jv.exists && jv.startTime != nil && !jv.finished.IsZero() {
				dur = jv.finished.Sub(jv.startTime.Time)
			}
			r.succeed(ev, st, payload.Result.Status, ReasonCompleted,
				fmt.Sprintf("the engine Job ran %s; result in ConfigMap %s (input hash verified)", seedsText(ev), cm.Name), post)
			post.observe = func() {
				runDuration.WithLabelValues(string(blisv1alpha1.ExecutorJob), "succeeded").Observe(dur.Seconds())
			}
			return ctrl.Result{}, nil
		case err == nil:
			// The engine refused or failed the run and said why: deterministic, so no retry.
			reason := payload.Result.Reason
			if reason == "" {
				reason = ReasonEngineError
			}
			r.fail(ev, st, post, reason, "the engine failed: "+payload.Result.Message)
			post.observe = func() {
				runDuration.WithLabelValues(string(blisv1alpha1.ExecutorJob), "failed").Observe(time.Since(st.StartTime.Time).Seconds())
			}
			return ctrl.Result{}, nil
		case errors.Is(err, resultstore.ErrNoResult):
		default:
			r.fail(ev, st, post, ReasonInvalidResult, "the result was refused: "+err.Error())
			return ctrl.Result{}, nil
		}
	}
	switch {
	case !jv.exists:
		// The Job is gone without a result (deleted by hand, or its objects were lost): run it
		// again while the retry budget lasts.
		budget := int32(2)
		if ev.Spec.Execution.MaxRetries != nil {
			budget = *ev.Spec.Execution.MaxRetries
		}
		if st.Attempts > budget {
			r.fail(ev, st, post, ReasonJobLost, fmt.Sprintf("the engine Job %s disappeared without a result after %s", runName(ev), attempts(st.Attempts)))
			return ctrl.Result{}, nil
		}
		in, missing, err := r.fetchInputs(ctx, ev)
		if err != nil {
			return ctrl.Result{}, err
		}
		var resolved *evaluation.Resolved
		if missing == nil {
			resolved, err = r.resolve(ev, in)
		}
		if missing != nil || err != nil || resolved.Hash != st.InputHash {
			r.fail(ev, st, post, ReasonJobLost, fmt.Sprintf("the engine Job %s disappeared without a result, and its inputs changed since the run started", runName(ev)))
			return ctrl.Result{}, nil
		}
		envelope, err := resolved.MarshalEnvelope()
		if err != nil {
			return ctrl.Result{}, err
		}
		st.Attempts++
		if err := r.createJobRun(ctx, ev, resolved.Hash, envelope, st.Attempts); err != nil {
			return ctrl.Result{}, err
		}
		setCondition(&st.Conditions, gen, blisv1alpha1.ConditionRunning, metav1.ConditionTrue, ReasonJobCreated,
			fmt.Sprintf("engine Job %s created again (attempt %d): the previous one disappeared without a result", runName(ev), st.Attempts))
		post.event(corev1.EventTypeWarning, ReasonJobLost, "engine Job disappeared without a result; created again")
		log.Info("engine Job recreated", "job", runName(ev), "attempt", st.Attempts)
		return ctrl.Result{}, nil
	case jv.failed:
		reason := failureReason(jv.reason)
		msg := fmt.Sprintf("the engine Job %s failed (%s) after %s: %s", runName(ev), jv.reason, attempts(st.Attempts), jv.message)
		if oom, err := r.oomKilled(ctx, ev); err == nil && oom != "" {
			reason = ReasonOOMKilled
			msg = fmt.Sprintf("the engine Job %s failed after %s: engine pod %s ran out of memory (OOMKilled); raise spec.execution.resources.limits.memory", runName(ev), attempts(st.Attempts), oom)
		}
		r.fail(ev, st, post, reason, msg)
		var dur float64
		if jv.startTime != nil {
			dur = jv.finished.Sub(jv.startTime.Time).Seconds()
		}
		post.observe = func() { runDuration.WithLabelValues(string(blisv1alpha1.ExecutorJob), "failed").Observe(dur) }
		return ctrl.Result{}, nil
	case jv.complete:
		if wait := resultGrace - time.Since(jv.finished); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		r.fail(ev, st, post, ReasonResultMissing, fmt.Sprintf("the engine Job %s completed without writing its result ConfigMap %s", runName(ev), resultName(ev)))
		return ctrl.Result{}, nil
	}
	reason, msg := ReasonJobCreated, "engine Job "+runName(ev)+" created; waiting for its pod"
	switch {
	case jv.failures > 0:
		reason = ReasonRetrying
		msg = fmt.Sprintf("engine pod failed %d times; the Job retries within its budget (backoffLimit)", jv.failures)
	case jv.active > 0:
		reason, msg = ReasonJobRunning, "engine Job "+runName(ev)+" is running"
	case jv.suspended:
		reason = ReasonJobSuspended
		msg = fmt.Sprintf("engine Job %s is suspended, waiting for admission (Kueue queue %q)", runName(ev), ev.Spec.Execution.QueueName)
	}
	if c := findCondition(st.Conditions, blisv1alpha1.ConditionRunning); c != nil && c.Reason != reason && reason == ReasonRetrying {
		post.event(corev1.EventTypeWarning, ReasonRetrying, "%s", msg)
	}
	setCondition(&st.Conditions, gen, blisv1alpha1.ConditionRunning, metav1.ConditionTrue, reason, msg)
	// Job and result events wake the Evaluation; the resync only covers a missed one.
	return ctrl.Result{RequeueAfter: r.Config.RunningResync}, nil
}

// readJobRun reads the result ConfigMap of ev's run (nil when there is none) and its Job from
// the cache. The cache may not have seen a Job just created (its watch and the Evaluation's are
// separate), nor a result written before the Job went: before a Job missing from the cache is
// taken as lost, and created again as a new attempt, the API server confirms both, the Job
// first.
func (r *EvaluationReconciler) readJobRun(ctx context.Context, ev *blisv1alpha1.Evaluation) (*corev1.ConfigMap, jobView, error) {
	cmKey := client.ObjectKey{Namespace: ev.Namespace, Name: resultName(ev)}
	jobKey := client.ObjectKey{Namespace: ev.Namespace, Name: runName(ev)}
	readCM := func(c client.Reader) (*corev1.ConfigMap, error) {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, cmKey, cm); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		return cm, nil
	}
	cm, err := readCM(r.Client)
	if err != nil {
		return nil, jobView{}, err
	}
	var job batchv1.Job
	err = r.Get(ctx, jobKey, &job)
	if apierrors.IsNotFound(err) {
		if err = r.APIReader.Get(ctx, jobKey, &job); apierrors.IsNotFound(err) {
			if cm, err = readCM(r.APIReader); err != nil {
				return nil, jobView{}, err
			}
			return cm, jobView{}, nil
		}
	}
	if err != nil {
		return nil, jobView{}, err
	}
	return cm, viewJob(&job), nil
}

// oomKilled returns the name of an engine pod of ev whose container was OOM-killed, if any.
// Pods are read directly (the manager does not cache them); this runs once, when a Job failed.
func (r *EvaluationReconciler) oomKilled(ctx context.Context, ev *blisv1alpha1.Evaluation) (string, error) {
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(ev.Namespace),
		client.MatchingLabels{LabelEvaluationUID: string(ev.UID)}); err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.Reason == "OOMKilled" {
				return p.Name, nil
			}
			if t := cs.LastTerminationState.Terminated; t != nil && t.Reason == "OOMKilled" {
				return p.Name, nil
			}
		}
	}
	return "", nil
}

// seedSlots holds, once, the slots of runs that were in progress when the manager (re)started
// and queues the Evaluations that were waiting, before anything new is admitted.
func (r *EvaluationReconciler) seedSlots(ctx context.Context) error {
	r.seedMu.Lock()
	defer r.seedMu.Unlock()
	if r.seeded {
		return nil
	}
	var list blisv1alpha1.EvaluationList
	if err := r.List(ctx, &list, client.MatchingFields{IndexPhase: string(blisv1alpha1.PhaseRunning)}); err != nil {
		return err
	}
	for i := range list.Items {
		ev := &list.Items[i]
		key := client.ObjectKeyFromObject(ev)
		r.ledger.hold(queueEntry{uid: ev.UID, key: key, created: ev.CreationTimestamp.Time})
		// A run in progress leads its input hash again, so that the Evaluations waiting for it
		// keep waiting.
		if ev.Status.InputHash != "" {
			r.runs.claim(runKey{namespace: ev.Namespace, hash: ev.Status.InputHash}, ev.UID, key, false)
		}
	}
	// Queued ones take their place in line before any of them is admitted.
	var queued blisv1alpha1.EvaluationList
	if err := r.List(ctx, &queued, client.MatchingFields{IndexPhase: string(blisv1alpha1.PhaseQueued)}); err != nil {
		return err
	}
	for i := range queued.Items {
		ev := &queued.Items[i]
		if c := findCondition(ev.Status.Conditions, blisv1alpha1.ConditionQueued); c != nil && c.Reason == ReasonWaitingForIdenticalRun {
			// It waits for an identical run, not for a slot.
			continue
		}
		r.ledger.enqueue(queueEntry{uid: ev.UID, key: client.ObjectKeyFromObject(ev), priority: r.priority(ctx, ev), created: ev.CreationTimestamp.Time})
	}
	r.seeded = true
	return nil
}
