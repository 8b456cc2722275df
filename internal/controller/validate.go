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
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/model"
	"github.com/inference-sim/blis-operator/internal/evaluation"
)

// The companion inputs an object is validated with when it is checked on its own: the engine
// validates whole evaluations, so a SimulatedCluster is resolved with a default policy and a
// built-in workload, and so on. Only errors that name the object under validation count;
// combinations are judged per Evaluation.
var (
	probeCluster = blisv1alpha1.SimulatedClusterSpec{
		Model: blisv1alpha1.ModelSpec{Name: "meta-llama/llama-3.1-8b-instruct"},
		GPU:   "H100",
		Pools: []blisv1alpha1.ReplicaPoolSpec{{Name: "probe", Replicas: 1}},
	}
	probePolicy   = blisv1alpha1.PolicyBundleSpec{}
	probeWorkload = blisv1alpha1.WorkloadSpecSpec{Scenario: "bursty-traffic"}
)

// validation is the outcome of validating one object.
type validation struct {
	ok bool
	// unknown is set when the validation could not complete.
	unknown  bool
	reason   string
	message  string
	resolved *evaluation.Resolved
}

// validateAlone resolves the object (one of cluster, policy, workload) with probe companions.
func validateAlone(name string, cluster *blisv1alpha1.SimulatedCluster, policy *blisv1alpha1.PolicyBundle,
	workload *blisv1alpha1.WorkloadSpec, cms map[string]map[string]string) validation {
	in := evaluation.Inputs{Name: "validation", ConfigMaps: cms}
	kind := ""
	switch {
	case cluster != nil:
		kind = evaluation.KindSimulatedCluster
		in.Cluster = cluster
		in.Spec.ClusterRef = &blisv1alpha1.LocalObjectReference{Name: name}
		in.Spec.Policy, in.Spec.Workload = probePolicy.DeepCopy(), probeWorkload.DeepCopy()
	case policy != nil:
		kind = evaluation.KindPolicyBundle
		in.Policy = policy
		in.Spec.PolicyRef = &blisv1alpha1.LocalObjectReference{Name: name}
		in.Spec.Cluster, in.Spec.Workload = probeCluster.DeepCopy(), probeWorkload.DeepCopy()
	case workload != nil:
		kind = evaluation.KindWorkloadSpec
		in.Workload = workload
		in.Spec.WorkloadRef = &blisv1alpha1.LocalObjectReference{Name: name}
		in.Spec.Cluster, in.Spec.Policy = probeCluster.DeepCopy(), probePolicy.DeepCopy()
	}
	res, err := evaluation.Resolve(in)
	if err == nil {
		return validation{ok: true, reason: ReasonValid, message: "passed the engine's validation", resolved: res}
	}
	var re *evaluation.Error
	if errors.As(err, &re) {
		if re.Kind != kind && re.Kind != evaluation.KindConfigMap {
			// A probe companion failed before the object was fully checked: say so rather than
			// claim the object valid.
			return validation{unknown: true, reason: ReasonValidationIncomplete,
				message: "the engine could not complete the validation of " + kind + " " + name + ": " + re.Error()}
		}
		reason := ReasonInvalidSpec
		switch re.Reason {
		case evaluation.ReasonReferenceNotFound:
			reason = ReasonReferenceNotFound
		case evaluation.ReasonUnsupported:
			reason = ReasonUnsupported
		}
		return validation{reason: reason, message: re.Error()}
	}
	return validation{reason: ReasonInvalidSpec, message: fmt.Sprintf("%s %s: %v", kind, name, err)}
}

// readyStatus sets the Ready condition from v.
func readyStatus(conds *[]metav1.Condition, gen int64, v validation) {
	status := metav1.ConditionFalse
	switch {
	case v.ok:
		status = metav1.ConditionTrue
	case v.unknown:
		status = metav1.ConditionUnknown
	}
	setCondition(conds, gen, blisv1alpha1.ConditionReady, status, v.reason, v.message)
}

// SimulatedClusterReconciler validates SimulatedClusters with the engine's validation and
// reports Ready, the total GPUs and the KV blocks per replica.
type SimulatedClusterReconciler struct {
	client.Client
	Recorder recorder.EventRecorder
}

// Reconcile validates one SimulatedCluster.
func (r *SimulatedClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var obj blisv1alpha1.SimulatedCluster
	if err := r.Get(ctx, req.NamespacedName, &obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	v := validateAlone(obj.Name, &obj, nil, nil, nil)
	st := obj.Status.DeepCopy()
	st.ObservedGeneration = obj.Generation
	readyStatus(&st.Conditions, obj.Generation, v)
	st.TotalGPUs, st.KVBlocksPerReplica = 0, 0
	if v.resolved != nil {
		if mr, err := model.Resolve(v.resolved.Document.Cluster.Instance); err == nil {
			st.KVBlocksPerReplica = mr.Engine.TotalKVBlocks
		}
		if n, err := v.resolved.Document.Cluster.TotalGPUs(); err == nil {
			st.TotalGPUs = int32(n)
		}
	}
	return ctrl.Result{}, writeValidated(ctx, r.Client, r.Recorder, &obj, &obj.Status, st, v)
}

// PolicyBundleReconciler validates PolicyBundles (and the BLIS policy files they reference)
// and reports Ready and the content hash of the resolved bundle.
type PolicyBundleReconciler struct {
	client.Client
	APIReader client.Reader
	Recorder  recorder.EventRecorder
}

// Reconcile validates one PolicyBundle.
func (r *PolicyBundleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var obj blisv1alpha1.PolicyBundle
	if err := r.Get(ctx, req.NamespacedName, &obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var names []string
	if ref := obj.Spec.BlisConfigMapRef; ref != nil {
		names = append(names, ref.Name)
	}
	cms, err := evaluation.ReadConfigMaps(ctx, r.APIReader, obj.Namespace, names)
	if err != nil {
		return ctrl.Result{}, err
	}
	v := validateAlone(obj.Name, nil, &obj, nil, cms)
	st := obj.Status.DeepCopy()
	st.ObservedGeneration = obj.Generation
	readyStatus(&st.Conditions, obj.Generation, v)
	st.ContentHash = ""
	if v.resolved != nil {
		st.ContentHash = partHash(v.resolved.Document.Policy)
	}
	res := ctrl.Result{}
	if v.reason == ReasonReferenceNotFound {
		res.RequeueAfter = missingResyncDefault
	}
	return res, writeValidated(ctx, r.Client, r.Recorder, &obj, &obj.Status, st, v)
}

// WorkloadSpecReconciler validates WorkloadSpecs (and the BLIS files and traces they
// reference) and reports Ready and the content hash of the resolved workload.
type WorkloadSpecReconciler struct {
	client.Client
	APIReader client.Reader
	Recorder  recorder.EventRecorder
}

// Reconcile validates one WorkloadSpec.
func (r *WorkloadSpecReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var obj blisv1alpha1.WorkloadSpec
	if err := r.Get(ctx, req.NamespacedName, &obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var names []string
	if ref := obj.Spec.BlisConfigMapRef; ref != nil {
		names = append(names, ref.Name)
	}
	if t := obj.Spec.Trace; t != nil {
		if t.ConfigMapRef != nil {
			names = append(names, t.ConfigMapRef.Name)
		}
		if t.HeaderConfigMapRef != nil {
			names = append(names, t.HeaderConfigMapRef.Name)
		}
	}
	cms, err := evaluation.ReadConfigMaps(ctx, r.APIReader, obj.Namespace, names)
	if err != nil {
		return ctrl.Result{}, err
	}
	v := validateAlone(obj.Name, nil, nil, &obj, cms)
	st := obj.Status.DeepCopy()
	st.ObservedGeneration = obj.Generation
	readyStatus(&st.Conditions, obj.Generation, v)
	st.ContentHash = ""
	if v.resolved != nil {
		if b, err := evaluation.Canonical(v.resolved.Document.Workload); err == nil {
			st.ContentHash = evaluation.Hash(b)
		}
	}
	res := ctrl.Result{}
	if v.reason == ReasonReferenceNotFound {
		res.RequeueAfter = missingResyncDefault
	}
	return res, writeValidated(ctx, r.Client, r.Recorder, &obj, &obj.Status, st, v)
}

func partHash(s string) string {
	return evaluation.Hash([]byte(s))
}

// writeValidated writes the new status of a validated object when it changed (one write per
// reconcile) and emits an event when Ready changed.
func writeValidated[S any](ctx context.Context, c client.Client, rec recorder.EventRecorder, obj client.Object, cur *S, desired *S, v validation) error {
	if equality.Semantic.DeepEqual(cur, desired) {
		return nil
	}
	old := *cur
	wasReady := readyOf(any(&old))
	*cur = *desired
	if err := c.Status().Update(ctx, obj); err != nil {
		*cur = old
		return client.IgnoreNotFound(err)
	}
	if wasReady != v.ok || !hasReady(any(&old)) {
		typ := corev1.EventTypeNormal
		if !v.ok {
			typ = corev1.EventTypeWarning
		}
		rec.Eventf(obj, nil, typ, v.reason, "Validate", "%s", blisv1alpha1.TruncateMessage(v.message))
	}
	return nil
}

func conditionsOf(st any) []metav1.Condition {
	switch s := st.(type) {
	case *blisv1alpha1.SimulatedClusterStatus:
		return s.Conditions
	case *blisv1alpha1.PolicyBundleStatus:
		return s.Conditions
	case *blisv1alpha1.WorkloadSpecStatus:
		return s.Conditions
	}
	return nil
}

func readyOf(st any) bool { return isTrue(conditionsOf(st), blisv1alpha1.ConditionReady) }

func hasReady(st any) bool {
	return findCondition(conditionsOf(st), blisv1alpha1.ConditionReady) != nil
}
