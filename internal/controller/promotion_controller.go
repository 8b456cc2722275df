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
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/export"
	"github.com/inference-sim/blis-operator/internal/evaluation"
	"github.com/inference-sim/blis-operator/internal/promote"
)

// Event reasons of promotion.
const (
	// ReasonPromoted: the llm-d configuration was written to the ConfigMap.
	ReasonPromoted = "Promoted"
	// ReasonPromotionFailed: the object could not be resolved or exported.
	ReasonPromotionFailed = "PromotionFailed"
	// ReasonPromotionConflict: the ConfigMap exists and the promoted object does not own it.
	ReasonPromotionConflict = "PromotionConflict"
)

// maxPromoteError bounds the promote-error annotation.
const maxPromoteError = 1024

// PromotionReconciler writes the llm-d configuration of a PolicyBundle or an Evaluation
// annotated with promote.AnnotationPromote into the ConfigMap the annotation names: the files
// of an export (epp-config.yaml for the endpoint picker's --config-file, ...). The ConfigMap is
// owned by the promoted object; one it does not own is never overwritten. The outcome is an
// event and the annotations promote.AnnotationPromoted or promote.AnnotationError on the object:
// neither its spec nor its status, which other reconcilers write, is touched.
//
// A PolicyBundle is exported for the SimulatedCluster promote.AnnotationCluster names, and
// again whenever the bundle, that cluster or a ConfigMap the bundle references changes (the
// ConfigMaps are watched through a metadata-only cache: see newConfigMapMetadataCache). An Evaluation is exported once it
// Succeeded, with the policy and cluster it ran (its inputs resolved again must give its
// status.inputHash, so edits to the referenced objects after the run are not exported).
type PromotionReconciler struct {
	client.Client
	// APIReader reads ConfigMaps the manager does not cache (a foreign ConfigMap of the
	// promotion's name, ConfigMaps the inputs reference).
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  recorder.EventRecorder
	// Kind is evaluation.KindPolicyBundle or evaluation.KindEvaluation.
	Kind string
}

// promotable passes objects that carry the promote annotation.
var promotable = predicate.NewPredicateFuncs(func(o client.Object) bool {
	_, ok := o.GetAnnotations()[promote.AnnotationPromote]
	return ok
})

// promotionConfigMap passes ConfigMaps written by promotion.
var promotionConfigMap = predicate.NewPredicateFuncs(func(o client.Object) bool {
	_, ok := o.GetLabels()[promote.LabelSourceKind]
	return ok
})

// SetupPromotionWithManager registers the promotion reconcilers of PolicyBundles and
// Evaluations with mgr. They watch only annotated objects and the ConfigMaps they own; a
// changed SimulatedCluster, or a changed ConfigMap a promoted PolicyBundle references, wakes
// the PolicyBundles promoted with it (an Evaluation exports only the inputs it ran, so its
// references are not followed).
func SetupPromotionWithManager(mgr ctrl.Manager) error {
	newReconciler := func(kind string) *PromotionReconciler {
		return &PromotionReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(),
			Recorder: mgr.GetEventRecorder("promotion-controller"), Kind: kind}
	}
	if err := setupPromotionIndexes(context.Background(), mgr); err != nil {
		return err
	}
	refs, err := configMapMetadataCacheOf(mgr)
	if err != nil {
		return err
	}
	pb := newReconciler(evaluation.KindPolicyBundle)
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("promotion-policybundle").
		For(&blisv1alpha1.PolicyBundle{}, builder.WithPredicates(promotable)).
		Owns(&corev1.ConfigMap{}, builder.WithPredicates(promotionConfigMap)).
		Watches(&blisv1alpha1.SimulatedCluster{}, handler.EnqueueRequestsFromMapFunc(pb.bundlesOfCluster),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Kind(refs.Cache, configMapMetadata(),
			handler.TypedEnqueueRequestsFromMapFunc(pb.bundlesOfConfigMap),
			predicate.TypedResourceVersionChangedPredicate[*metav1.PartialObjectMetadata]{})).
		Complete(pb); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("promotion-evaluation").
		For(&blisv1alpha1.Evaluation{}, builder.WithPredicates(promotable)).
		Owns(&corev1.ConfigMap{}, builder.WithPredicates(promotionConfigMap)).
		Complete(newReconciler(evaluation.KindEvaluation))
}

// bundlesOfCluster maps a SimulatedCluster to the promoted PolicyBundles of its namespace that
// name it, through the field index.
func (r *PromotionReconciler) bundlesOfCluster(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.bundlesBy(ctx, IndexPromoteCluster, obj)
}

// bundlesOfConfigMap maps a ConfigMap (its metadata) to the promoted PolicyBundles of its
// namespace that reference it, through the field index.
func (r *PromotionReconciler) bundlesOfConfigMap(ctx context.Context, obj *metav1.PartialObjectMetadata) []reconcile.Request {
	return r.bundlesBy(ctx, IndexPromoteConfigMap, obj)
}

// bundlesBy lists the PolicyBundles of obj's namespace whose index entry is obj's name.
func (r *PromotionReconciler) bundlesBy(ctx context.Context, index string, obj client.Object) []reconcile.Request {
	var list blisv1alpha1.PolicyBundleList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{index: obj.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// +kubebuilder:rbac:groups=blis.inference-sim.io,resources=policybundles,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=blis.inference-sim.io,resources=evaluations,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=blis.inference-sim.io,resources=simulatedclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=blis.inference-sim.io,resources=workloadspecs,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile exports one annotated object into its promotion ConfigMap.
func (r *PromotionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj, err := r.get(ctx, req.NamespacedName)
	if obj == nil || err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cmName, ok := obj.GetAnnotations()[promote.AnnotationPromote]
	if !ok || obj.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil
	}
	if errs := k8svalidation.IsDNS1123Subdomain(cmName); len(errs) > 0 {
		return ctrl.Result{}, r.refuse(ctx, obj, ReasonPromotionFailed,
			fmt.Sprintf("annotation %s: %q is not a ConfigMap name: %s", promote.AnnotationPromote, cmName, strings.Join(errs, "; ")))
	}
	res, msg, err := r.export(ctx, obj)
	if err != nil || (res == nil && msg == "") {
		return ctrl.Result{}, err
	}
	if msg != "" {
		return ctrl.Result{}, r.refuse(ctx, obj, ReasonPromotionFailed, msg)
	}
	data := res.ConfigMapData()
	hash := contentHash(data)
	changed, conflict, err := r.writeConfigMap(ctx, obj, cmName, res.Target.Name, data)
	if err != nil {
		return ctrl.Result{}, err
	}
	if conflict != "" {
		return ctrl.Result{}, r.refuse(ctx, obj, ReasonPromotionConflict, conflict)
	}
	value := cmName + "@" + hash
	recorded, err := r.annotate(ctx, obj, value, "")
	if err != nil {
		return ctrl.Result{}, err
	}
	if changed || recorded {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, ReasonPromoted, "Promote", "%s",
			blisv1alpha1.TruncateMessage(promotedMessage(cmName, hash, res)))
	}
	return ctrl.Result{}, nil
}

// get reads the promoted object; nil when it no longer exists.
func (r *PromotionReconciler) get(ctx context.Context, key client.ObjectKey) (client.Object, error) {
	var obj client.Object = &blisv1alpha1.Evaluation{}
	if r.Kind == evaluation.KindPolicyBundle {
		obj = &blisv1alpha1.PolicyBundle{}
	}
	if err := r.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return obj, nil
}

// promotedMessage describes a promotion and lists the export's warnings.
func promotedMessage(cm, hash string, res *export.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "llm-d configuration for %s written to ConfigMap %s (content %s; %s is the endpoint picker's --config-file)",
		res.Target.Name, cm, hash, export.FileEPPConfig)
	if len(res.Warnings) > 0 {
		fmt.Fprintf(&b, "; %d warning(s), also in %s:", len(res.Warnings), export.FileWarnings)
		for _, w := range res.Warnings {
			b.WriteString(" " + w.String() + ";")
		}
	}
	return strings.TrimSuffix(b.String(), ";")
}

// export resolves and exports the object. A problem of the inputs is returned as a message;
// (nil, "", nil) means there is nothing to do yet (an Evaluation that has not finished).
func (r *PromotionReconciler) export(ctx context.Context, obj client.Object) (*export.Result, string, error) {
	opts := export.Options{Target: obj.GetAnnotations()[promote.AnnotationTarget]}
	switch o := obj.(type) {
	case *blisv1alpha1.PolicyBundle:
		res, cluster, msg, err := r.resolveBundle(ctx, o)
		if res == nil {
			return nil, msg, err
		}
		out, err := promote.Export(res, cluster, opts)
		if err != nil {
			return nil, "exporting PolicyBundle " + o.Name + ": " + err.Error(), nil
		}
		return out, "", nil
	case *blisv1alpha1.Evaluation:
		res, cluster, msg, err := r.resolveEvaluation(ctx, o)
		if res == nil {
			return nil, msg, err
		}
		out, err := promote.Export(res, cluster, opts)
		if err != nil {
			return nil, "exporting Evaluation " + o.Name + ": " + err.Error(), nil
		}
		return out, "", nil
	}
	return nil, "", fmt.Errorf("promotion of %T is not handled", obj)
}

// resolveBundle resolves a PolicyBundle on the SimulatedCluster its annotation names.
func (r *PromotionReconciler) resolveBundle(ctx context.Context, pb *blisv1alpha1.PolicyBundle) (*evaluation.Resolved, *blisv1alpha1.SimulatedClusterSpec, string, error) {
	name := pb.Annotations[promote.AnnotationCluster]
	if name == "" {
		return nil, nil, fmt.Sprintf("a PolicyBundle is exported for a SimulatedCluster (its model, engine settings and pools): set the annotation %s", promote.AnnotationCluster), nil
	}
	var cl blisv1alpha1.SimulatedCluster
	if err := r.Get(ctx, client.ObjectKey{Namespace: pb.Namespace, Name: name}, &cl); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, fmt.Sprintf("SimulatedCluster %q (annotation %s) does not exist", name, promote.AnnotationCluster), nil
		}
		return nil, nil, "", err
	}
	in := evaluation.Inputs{Spec: blisv1alpha1.EvaluationSpec{Policy: &pb.Spec}}
	cms, err := evaluation.ReadConfigMaps(ctx, r.APIReader, pb.Namespace, evaluation.ConfigMapNames(&in))
	if err != nil {
		return nil, nil, "", err
	}
	res, err := promote.ResolveBundle(promote.Bundle{Policy: pb, Cluster: &cl, ConfigMaps: cms})
	if err != nil {
		return nil, nil, "resolving PolicyBundle " + pb.Name + " on SimulatedCluster " + name + ": " + err.Error(), nil
	}
	return res, &cl.Spec, "", nil
}

// resolveEvaluation resolves a Succeeded Evaluation's inputs again and checks that they are
// the ones it ran.
func (r *PromotionReconciler) resolveEvaluation(ctx context.Context, ev *blisv1alpha1.Evaluation) (*evaluation.Resolved, *blisv1alpha1.SimulatedClusterSpec, string, error) {
	if !isTrue(ev.Status.Conditions, ConditionSucceeded) {
		if terminal(&ev.Status) {
			return nil, nil, fmt.Sprintf("only a Succeeded Evaluation is promoted; this one ended in phase %s", ev.Status.Phase), nil
		}
		return nil, nil, "", nil
	}
	in := evaluation.Inputs{Name: ev.Name, Spec: ev.Spec}
	refs := []struct {
		kind string
		ref  *blisv1alpha1.LocalObjectReference
		obj  client.Object
	}{
		{evaluation.KindSimulatedCluster, ev.Spec.ClusterRef, &blisv1alpha1.SimulatedCluster{}},
		{evaluation.KindPolicyBundle, ev.Spec.PolicyRef, &blisv1alpha1.PolicyBundle{}},
		{evaluation.KindWorkloadSpec, ev.Spec.WorkloadRef, &blisv1alpha1.WorkloadSpec{}},
	}
	for _, rf := range refs {
		if rf.ref == nil {
			continue
		}
		if err := r.Get(ctx, client.ObjectKey{Namespace: ev.Namespace, Name: rf.ref.Name}, rf.obj); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil, fmt.Sprintf("%s %q, which the Evaluation ran with, no longer exists", rf.kind, rf.ref.Name), nil
			}
			return nil, nil, "", err
		}
		switch o := rf.obj.(type) {
		case *blisv1alpha1.SimulatedCluster:
			in.Cluster = o
		case *blisv1alpha1.PolicyBundle:
			in.Policy = o
		case *blisv1alpha1.WorkloadSpec:
			in.Workload = o
		}
	}
	cms, err := evaluation.ReadConfigMaps(ctx, r.APIReader, ev.Namespace, evaluation.ConfigMapNames(&in))
	if err != nil {
		return nil, nil, "", err
	}
	in.ConfigMaps = cms
	res, err := evaluation.Resolve(in)
	if err != nil {
		return nil, nil, "resolving Evaluation " + ev.Name + ": " + err.Error(), nil
	}
	if h, err := evaluation.HashAs(res, ev.Status.EngineVersion); err != nil {
		return nil, nil, "", err
	} else if h != ev.Status.InputHash {
		return nil, nil, fmt.Sprintf("the objects Evaluation %s references changed after it ran (input hash %s, status.inputHash %s); "+
			"promote a new Evaluation of them", ev.Name, short(h), short(ev.Status.InputHash)), nil
	}
	cluster := ev.Spec.Cluster
	if in.Cluster != nil {
		cluster = &in.Cluster.Spec
	}
	return res, cluster, "", nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// contentHash identifies ConfigMap data: the hex SHA-256 of its keys and values in key order,
// cut to 16 characters.
func contentHash(data map[string]string) string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%d:%s%d:%s", len(k), k, len(data[k]), data[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// promotionLabels are the labels of a promotion ConfigMap naming its source.
func promotionLabels(obj client.Object, kind string) map[string]string {
	l := map[string]string{LabelManagedBy: ManagedByValue, promote.LabelSourceKind: kind}
	if len(k8svalidation.IsValidLabelValue(obj.GetName())) == 0 {
		l[promote.LabelSourceName] = obj.GetName()
	}
	return l
}

// writeConfigMap creates or updates the promotion ConfigMap. It reports whether it wrote, and
// a conflict message when a ConfigMap of that name exists that obj does not control.
func (r *PromotionReconciler) writeConfigMap(ctx context.Context, obj client.Object, name, target string, data map[string]string) (bool, string, error) {
	labels := promotionLabels(obj, r.Kind)
	annotations := map[string]string{promote.AnnotationSource: r.Kind + "/" + obj.GetName(), promote.AnnotationTarget: target}
	var cur corev1.ConfigMap
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}, &cur)
	switch {
	case apierrors.IsNotFound(err):
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: name, Labels: labels, Annotations: annotations}, Data: data}
		if err := controllerutil.SetControllerReference(obj, cm, r.Scheme); err != nil {
			return false, "", err
		}
		if err := r.Create(ctx, cm); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return false, "", fmt.Errorf("ConfigMap %s appeared while it was being created", name)
			}
			return false, "", err
		}
		return true, "", nil
	case err != nil:
		return false, "", err
	}
	if !metav1.IsControlledBy(&cur, obj) {
		owner := "no owner"
		if c := metav1.GetControllerOf(&cur); c != nil {
			owner = "the controller " + c.Kind + " " + c.Name
		}
		return false, fmt.Sprintf("ConfigMap %s exists and is not owned by %s %s (it has %s); it was not overwritten: choose another name in %s or delete it",
			name, r.Kind, obj.GetName(), owner, promote.AnnotationPromote), nil
	}
	same := mapsEqual(cur.Data, data) && len(cur.BinaryData) == 0
	for k, v := range labels {
		same = same && cur.Labels[k] == v
	}
	for k, v := range annotations {
		same = same && cur.Annotations[k] == v
	}
	if same {
		return false, "", nil
	}
	cur.Data, cur.BinaryData = data, nil
	if cur.Labels == nil {
		cur.Labels = map[string]string{}
	}
	for k, v := range labels {
		cur.Labels[k] = v
	}
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	for k, v := range annotations {
		cur.Annotations[k] = v
	}
	return true, "", r.Update(ctx, &cur)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// refuse records a failed or refused promotion: the promote-error annotation and, when it
// changed, a Warning event.
func (r *PromotionReconciler) refuse(ctx context.Context, obj client.Object, reason, msg string) error {
	changed, err := r.annotate(ctx, obj, "", reason+": "+msg)
	if err != nil {
		return err
	}
	if changed {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, "Promote", "%s", blisv1alpha1.TruncateMessage(msg))
	}
	return nil
}

// annotate sets the outcome annotations with a merge patch of metadata only: promoted (when
// not empty) and promote-error (removed when empty). It reports whether anything changed.
func (r *PromotionReconciler) annotate(ctx context.Context, obj client.Object, promoted, failure string) (bool, error) {
	if len(failure) > maxPromoteError {
		failure = truncateUTF8(failure, maxPromoteError)
	}
	a := obj.GetAnnotations()
	_, hasErr := a[promote.AnnotationError]
	switch {
	case failure == "" && !hasErr && a[promote.AnnotationPromoted] == promoted:
		return false, nil
	case failure != "" && a[promote.AnnotationError] == failure:
		return false, nil
	}
	var base client.Object
	switch o := obj.(type) {
	case *blisv1alpha1.PolicyBundle:
		base = o.DeepCopy()
	case *blisv1alpha1.Evaluation:
		base = o.DeepCopy()
	default:
		return false, errors.New("annotating an object of an unexpected kind")
	}
	next := map[string]string{}
	for k, v := range a {
		next[k] = v
	}
	if promoted != "" {
		next[promote.AnnotationPromoted] = promoted
	}
	if failure == "" {
		delete(next, promote.AnnotationError)
	} else {
		next[promote.AnnotationError] = failure
	}
	obj.SetAnnotations(next)
	if err := r.Patch(ctx, obj, client.MergeFrom(base)); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return true, nil
}
