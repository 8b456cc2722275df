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
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"sigs.k8s.io/yaml"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation"
	"github.com/inference-sim/blis-operator/internal/study"
	"github.com/inference-sim/blis-operator/internal/study/binding"
)

// studyInputsResync is how often a study waiting for its base bundle looks again.
const studyInputsResync = 30 * time.Second

// LabelStudyComponent marks the kind of object a study created (candidate or winner).
const LabelStudyComponent = LabelComponent

// FileWinnerBundle is the key of the promoted PolicyBundle manifest in the promotion ConfigMap,
// next to the llm-d export files.
const FileWinnerBundle = "policybundle.yaml"

// PolicyStudyReconciler runs PolicyStudies: it proposes candidates with the study's algorithm,
// creates one PolicyBundle and one Evaluation per candidate (deterministic names, owned by
// the study), reads their results back, writes the bounded leaderboard into status and
// promotes the winner. The search state is the set of children, so a restarted manager
// continues where it stopped.
type PolicyStudyReconciler struct {
	client.Client
	// APIReader reads objects the manager does not cache (ConfigMaps it did not create).
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  recorder.EventRecorder
}

// SetupPolicyStudyWithManager registers the PolicyStudy reconciler with mgr. Evaluations
// with the study label (created by the study or by any other client) wake their study; a
// changed ConfigMap the export of a study's winner read wakes that study (through the field
// index on status.promotion.configMaps and the ConfigMap metadata cache), and so does a spec
// change of the SimulatedCluster or WorkloadSpec a study with spec.promotion references
// (through their field indexes), so that its promoted winner follows them.
func SetupPolicyStudyWithManager(mgr ctrl.Manager) error {
	r := &PolicyStudyReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(),
		Recorder: mgr.GetEventRecorder("policystudy-controller")}
	if err := setupStudyIndexes(context.Background(), mgr); err != nil {
		return err
	}
	refs, err := configMapMetadataCacheOf(mgr)
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&blisv1alpha1.PolicyStudy{}).
		Named("policystudy").
		Watches(&blisv1alpha1.Evaluation{}, handler.EnqueueRequestsFromMapFunc(studyOf)).
		Watches(&blisv1alpha1.PolicyBundle{}, handler.EnqueueRequestsFromMapFunc(r.studiesOfBase)).
		Watches(&blisv1alpha1.SimulatedCluster{}, handler.EnqueueRequestsFromMapFunc(r.studiesBy(IndexStudyPromotionCluster)),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&blisv1alpha1.WorkloadSpec{}, handler.EnqueueRequestsFromMapFunc(r.studiesBy(IndexStudyPromotionWorkload)),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Kind(refs.Cache, configMapMetadata(),
			handler.TypedEnqueueRequestsFromMapFunc(r.studiesOfConfigMap),
			predicate.TypedResourceVersionChangedPredicate[*metav1.PartialObjectMetadata]{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Complete(r)
}

// studiesOfConfigMap maps a ConfigMap (its metadata) to the studies of its namespace whose
// winner's export read it.
func (r *PolicyStudyReconciler) studiesOfConfigMap(ctx context.Context, obj *metav1.PartialObjectMetadata) []reconcile.Request {
	return r.studiesBy(IndexStudyPromotionConfigMap)(ctx, obj)
}

// studiesBy maps an object to the studies of its namespace whose index entry is its name.
func (r *PolicyStudyReconciler) studiesBy(index string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list blisv1alpha1.PolicyStudyList
		if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{index: obj.GetName()}); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
		return out
	}
}

// studyOf maps an Evaluation to the study its label names.
func studyOf(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[blisv1alpha1.LabelStudy]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}

// studiesOfBase maps a PolicyBundle to the studies of its namespace that use it as their base
// (the study's own candidates, which carry the generation label, are skipped).
func (r *PolicyStudyReconciler) studiesOfBase(ctx context.Context, obj client.Object) []reconcile.Request {
	if _, child := obj.GetLabels()[blisv1alpha1.LabelStudyGeneration]; child {
		return nil
	}
	var list blisv1alpha1.PolicyStudyList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if ref := list.Items[i].Spec.BasePolicyRef; ref != nil && ref.Name == obj.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// +kubebuilder:rbac:groups=blis.inference-sim.io,resources=policystudies,verbs=get;list;watch
// +kubebuilder:rbac:groups=blis.inference-sim.io,resources=policystudies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=blis.inference-sim.io,resources=evaluations,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=blis.inference-sim.io,resources=evaluations/status,verbs=get;patch
// +kubebuilder:rbac:groups=blis.inference-sim.io,resources=policybundles,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update

// Reconcile moves one PolicyStudy forward and writes its status at most once.
func (r *PolicyStudyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var ps blisv1alpha1.PolicyStudy
	if err := r.Get(ctx, req.NamespacedName, &ps); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ps.DeletionTimestamp != nil {
		// Children go with the study (owner references).
		return ctrl.Result{}, nil
	}
	desired := ps.Status.DeepCopy()
	desired.ObservedGeneration = ps.Generation
	post := &postWrite{}
	result, err := r.reconcile(ctx, &ps, desired, post)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !equality.Semantic.DeepEqual(&ps.Status, desired) {
		ps.Status = *desired
		if err := r.Status().Update(ctx, &ps); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
			}
			return ctrl.Result{}, err
		}
	}
	for _, e := range post.events {
		r.Recorder.Eventf(&ps, nil, e.typ, e.reason, "Reconcile", "%s", blisv1alpha1.TruncateMessage(e.msg))
	}
	return result, nil
}

// studyCondition sets a condition of a study, recording an event when its status changes.
func studyCondition(st *blisv1alpha1.PolicyStudyStatus, gen int64, post *postWrite, typ string, status metav1.ConditionStatus, reason, msg string) {
	old := meta.FindStatusCondition(st.Conditions, typ)
	if status == metav1.ConditionTrue && (old == nil || old.Status != status || old.Reason != reason) {
		evType := corev1.EventTypeNormal
		if typ == blisv1alpha1.StudyConditionFailed || reason == blisv1alpha1.StudyReasonPromotionFailed || reason == blisv1alpha1.StudyReasonConflict {
			evType = corev1.EventTypeWarning
		}
		post.event(evType, reason, "%s", msg)
	}
	setCondition(&st.Conditions, gen, typ, status, reason, msg)
}

// failStudy stops a study for a reason that needs a spec or input change.
func failStudy(st *blisv1alpha1.PolicyStudyStatus, gen int64, post *postWrite, reason, msg string) {
	studyCondition(st, gen, post, blisv1alpha1.StudyConditionFailed, metav1.ConditionTrue, reason, msg)
	setCondition(&st.Conditions, gen, blisv1alpha1.StudyConditionProgressing, metav1.ConditionFalse, reason, msg)
	setCondition(&st.Conditions, gen, blisv1alpha1.StudyConditionCompleted, metav1.ConditionFalse, reason, "the search cannot go on")
}

// reconcile computes the desired status of ps, creating children and promoting as needed.
func (r *PolicyStudyReconciler) reconcile(ctx context.Context, ps *blisv1alpha1.PolicyStudy, st *blisv1alpha1.PolicyStudyStatus, post *postWrite) (ctrl.Result, error) {
	gen := ps.Generation
	cfg, err := binding.Config(ps)
	if err != nil {
		failStudy(st, gen, post, blisv1alpha1.StudyReasonInvalidSearchSpace, err.Error())
		return ctrl.Result{}, nil
	}
	base, waiting, err := r.baseBundle(ctx, ps)
	if err != nil {
		return ctrl.Result{}, err
	}
	if waiting != "" {
		setCondition(&st.Conditions, gen, blisv1alpha1.StudyConditionProgressing, metav1.ConditionFalse, blisv1alpha1.StudyReasonWaitingForInputs, waiting)
		return ctrl.Result{RequeueAfter: studyInputsResync}, nil
	}
	hash := binding.SearchHash(&ps.Spec, base)
	// The hash locks once children exist; before that a fixed base or spec just starts over.
	firstTime := st.SearchHash == "" || (st.SearchHash != hash && st.Evaluations.Created == 0)
	if firstTime {
		st.SearchHash = hash
	} else if st.SearchHash != hash {
		failStudy(st, gen, post, blisv1alpha1.StudyReasonSpecChanged,
			"the search-defining part of the spec (references, base, space, objectives, algorithm, seeds) or the content of the base PolicyBundle changed after the study started; create a new PolicyStudy")
		return ctrl.Result{}, nil
	}
	if c := meta.FindStatusCondition(st.Conditions, blisv1alpha1.StudyConditionFailed); firstTime || (c != nil && c.Reason == blisv1alpha1.StudyReasonInvalidSearchSpace) {
		if err := binding.CheckSpace(base, cfg.Space); err != nil {
			failStudy(st, gen, post, blisv1alpha1.StudyReasonInvalidSearchSpace, err.Error())
			return ctrl.Result{}, nil
		}
	}

	ev := &clusterEvaluator{r: r, ps: ps, base: base, space: cfg.Space}
	trials, err := ev.Results(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	d, err := study.Plan(cfg, trials)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(d.Submit) > 0 {
		if err := ev.Submit(ctx, d.Submit); err != nil {
			return ctrl.Result{}, err
		}
		for _, c := range d.Submit {
			name := study.Name(ps.Name, c.Generation, c.Index)
			trials = append(trials, study.Trial{Name: name, Generation: c.Generation, Index: c.Index, Values: c.Values, Ref: name})
		}
		if d, err = study.Plan(cfg, trials); err != nil {
			return ctrl.Result{}, err
		}
		d.Outcome = study.Running
	}
	binding.ApplyDecision(st, &ps.Spec, cfg.Space, &d)
	switch d.Outcome {
	case study.Running:
		meta.RemoveStatusCondition(&st.Conditions, blisv1alpha1.StudyConditionFailed)
		binding.SetConditions(st, gen, &d)
	case study.Completed:
		studyCondition(st, gen, post, blisv1alpha1.StudyConditionCompleted, metav1.ConditionTrue, d.Reason, d.Message)
		binding.SetConditions(st, gen, &d)
		if err := ev.writeParetoRanks(ctx, trials); err != nil {
			return ctrl.Result{}, err
		}
	case study.FailedOutcome:
		failStudy(st, gen, post, d.Reason, d.Message)
		// A failed study stops its unfinished Evaluations (they would only use capacity).
		if err := ev.deletePending(ctx, trials); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.promote(ctx, ps, st, post, &d, ev); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// baseBundle returns the study's base bundle spec, or a message saying what it waits for.
func (r *PolicyStudyReconciler) baseBundle(ctx context.Context, ps *blisv1alpha1.PolicyStudy) (*blisv1alpha1.PolicyBundleSpec, string, error) {
	if ps.Spec.BasePolicy != nil {
		return ps.Spec.BasePolicy, "", nil
	}
	ref := ps.Spec.BasePolicyRef
	if ref == nil {
		return &blisv1alpha1.PolicyBundleSpec{}, "", nil
	}
	var pb blisv1alpha1.PolicyBundle
	if err := r.Get(ctx, client.ObjectKey{Namespace: ps.Namespace, Name: ref.Name}, &pb); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("PolicyBundle %q does not exist; waiting for it", ref.Name), nil
		}
		return nil, "", err
	}
	if msg, ready := readiness(&pb); !ready {
		return nil, fmt.Sprintf("PolicyBundle %q is not Ready: %s", ref.Name, msg), nil
	}
	return &pb.Spec, "", nil
}

// clusterEvaluator is the study.Evaluator of the operator: trials are Evaluations.
type clusterEvaluator struct {
	r     *PolicyStudyReconciler
	ps    *blisv1alpha1.PolicyStudy
	base  *blisv1alpha1.PolicyBundleSpec
	space study.Space
	// evals keeps the Evaluations Results read, by name.
	evals map[string]*blisv1alpha1.Evaluation
}

// Results lists the Evaluations with the study label: those the study controls are its own
// trials (generation and index from their label and annotation), the others external.
func (e *clusterEvaluator) Results(ctx context.Context) ([]study.Trial, error) {
	var list blisv1alpha1.EvaluationList
	if err := e.r.List(ctx, &list, client.InNamespace(e.ps.Namespace), client.MatchingLabels{blisv1alpha1.LabelStudy: e.ps.Name}); err != nil {
		return nil, err
	}
	e.evals = make(map[string]*blisv1alpha1.Evaluation, len(list.Items))
	out := make([]study.Trial, 0, len(list.Items))
	for i := range list.Items {
		ev := &list.Items[i]
		if ev.DeletionTimestamp != nil {
			continue
		}
		e.evals[ev.Name] = ev
		out = append(out, e.trialOf(ev))
	}
	return out, nil
}

// trialOf reads one Evaluation as a trial.
func (e *clusterEvaluator) trialOf(ev *blisv1alpha1.Evaluation) study.Trial {
	t := study.Trial{Name: ev.Name, Generation: study.External, Index: -1}
	if ev.Spec.PolicyRef != nil {
		t.Ref = ev.Spec.PolicyRef.Name
	}
	owned := metav1.IsControlledBy(ev, e.ps)
	g, gErr := strconv.Atoi(ev.Labels[blisv1alpha1.LabelStudyGeneration])
	k, kErr := strconv.Atoi(ev.Annotations[blisv1alpha1.AnnotationStudyIndex])
	if owned && gErr == nil && kErr == nil && g >= 0 && k >= 0 {
		t.Generation, t.Index = g, k
	}
	if raw, ok := ev.Annotations[blisv1alpha1.AnnotationStudyParameters]; ok {
		if vals, err := binding.ParseParameters(e.space, raw); err == nil {
			t.Values = vals
		}
	}
	binding.ResultOf(&t, e.ps.Spec.Objectives, &ev.Status)
	return t
}

// Submit creates a PolicyBundle and an Evaluation per candidate; what exists already is kept.
func (e *clusterEvaluator) Submit(ctx context.Context, cands []study.Candidate) error {
	log := logf.FromContext(ctx)
	for _, c := range cands {
		name := study.Name(e.ps.Name, c.Generation, c.Index)
		spec, err := binding.CandidateBundle(e.base, e.space, c.Values)
		if err != nil {
			return fmt.Errorf("candidate %s: %w", name, err)
		}
		params := binding.ParametersJSON(e.space, c.Values)
		labels := map[string]string{
			blisv1alpha1.LabelStudy:           e.ps.Name,
			blisv1alpha1.LabelStudyGeneration: strconv.Itoa(c.Generation),
		}
		annotations := map[string]string{
			blisv1alpha1.AnnotationStudyIndex:      strconv.Itoa(c.Index),
			blisv1alpha1.AnnotationStudyParameters: params,
		}
		spec.Lineage = &blisv1alpha1.Lineage{Generation: int64(c.Generation), ParentID: e.parentID(),
			Mutations: binding.Mutations(e.space, c.Values)}
		pb := &blisv1alpha1.PolicyBundle{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ps.Namespace, Labels: labels, Annotations: annotations},
			Spec:       *spec,
		}
		if err := e.create(ctx, pb); err != nil {
			return err
		}
		ev := &blisv1alpha1.Evaluation{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ps.Namespace, Labels: labels, Annotations: annotations},
			Spec:       binding.EvaluationSpec(&e.ps.Spec, name, nil),
		}
		if err := e.create(ctx, ev); err != nil {
			return err
		}
		log.V(1).Info("candidate created", "name", name, "parameters", params)
	}
	return nil
}

// parentID is the lineage parent of the study's candidates: the base bundle, else the study.
func (e *clusterEvaluator) parentID() string {
	if ref := e.ps.Spec.BasePolicyRef; ref != nil {
		return ref.Name
	}
	return e.ps.Name
}

// create creates obj owned by the study; an object that exists already is fine (a restart or
// a cache that has not seen it yet).
func (e *clusterEvaluator) create(ctx context.Context, obj client.Object) error {
	if err := controllerutil.SetControllerReference(e.ps, obj, e.r.Scheme); err != nil {
		return err
	}
	if err := e.r.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// deletePending deletes the study's own unfinished Evaluations.
func (e *clusterEvaluator) deletePending(ctx context.Context, trials []study.Trial) error {
	for _, t := range trials {
		ev := e.evals[t.Name]
		if t.Generation < 0 || t.State != study.Pending || ev == nil {
			continue
		}
		if err := e.r.Delete(ctx, ev); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// writeParetoRanks writes each succeeded Evaluation's non-domination rank within the study
// into its status.paretoRank, once the study has completed (so each child is written about
// once, not on every result).
func (e *clusterEvaluator) writeParetoRanks(ctx context.Context, trials []study.Trial) error {
	var done []study.Trial
	for _, t := range trials {
		if t.State == study.Succeeded && e.evals[t.Name] != nil {
			done = append(done, t)
		}
	}
	ranks := study.ParetoRanks(done)
	for i, t := range done {
		ev := e.evals[t.Name]
		rank := int32(ranks[i])
		if ev.Status.ParetoRank != nil && *ev.Status.ParetoRank == rank {
			continue
		}
		patch := client.MergeFrom(ev.DeepCopy())
		ev.Status.ParetoRank = &rank
		if err := e.r.Status().Patch(ctx, ev, patch); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// winnerSpec returns the bundle spec of the best trial: a candidate of the study is the base
// patched with its values; an external Evaluation's is its referenced or inline bundle.
func (e *clusterEvaluator) winnerSpec(ctx context.Context, t *study.Trial) (*blisv1alpha1.PolicyBundleSpec, error) {
	if t.Generation >= 0 && t.Values != nil {
		return binding.CandidateBundle(e.base, e.space, t.Values)
	}
	ev := e.evals[t.Name]
	if ev == nil {
		return nil, fmt.Errorf("the Evaluation %s of the winner is gone", t.Name)
	}
	if ev.Spec.Policy != nil {
		return ev.Spec.Policy.DeepCopy(), nil
	}
	if ev.Spec.PolicyRef == nil {
		return nil, fmt.Errorf("the Evaluation %s has no policy", t.Name)
	}
	var pb blisv1alpha1.PolicyBundle
	if err := e.r.Get(ctx, client.ObjectKey{Namespace: ev.Namespace, Name: ev.Spec.PolicyRef.Name}, &pb); err != nil {
		return nil, fmt.Errorf("PolicyBundle %s of the winner: %w", ev.Spec.PolicyRef.Name, err)
	}
	return pb.Spec.DeepCopy(), nil
}

// promotionRequest is the value of the promote annotation when it asks for a promotion that
// has not been answered yet.
func promotionRequest(ps *blisv1alpha1.PolicyStudy) string {
	v := ps.Annotations[blisv1alpha1.AnnotationPromote]
	if v == "" || (ps.Status.Promotion != nil && ps.Status.Promotion.Request == v) {
		return ""
	}
	return v
}

// promote writes the winner when the study completed (promotion.onCompletion) or the promote
// annotation asks for it.
func (r *PolicyStudyReconciler) promote(ctx context.Context, ps *blisv1alpha1.PolicyStudy, st *blisv1alpha1.PolicyStudyStatus,
	post *postWrite, d *study.Decision, ev *clusterEvaluator) error {
	p := ps.Spec.Promotion
	if p == nil {
		return nil
	}
	gen := ps.Generation
	request := promotionRequest(ps)
	onCompletion := (p.OnCompletion == nil || *p.OnCompletion) && d.Outcome == study.Completed
	best := d.Summary.Best
	bundleName := p.PolicyBundleName
	if bundleName == "" {
		bundleName = ps.Name + "-winner"
	}
	// A winner already promoted is followed: its export is checked against its inputs (the
	// ConfigMaps it references among them) and written again when they changed, also after an
	// edit made it fail (so fixing the input recovers it).
	prev := st.Promotion
	promoted := meta.FindStatusCondition(st.Conditions, blisv1alpha1.StudyConditionPromoted)
	follow := request == "" && prev != nil && best != nil && prev.Evaluation == best.Name && prev.PolicyBundle == bundleName &&
		prev.ConfigMap == p.ConfigMapName && promoted != nil &&
		(promoted.Status == metav1.ConditionTrue || promoted.Reason == blisv1alpha1.StudyReasonPromotionFailed)
	if request == "" && !onCompletion && !follow {
		return nil
	}
	if best == nil {
		studyCondition(st, gen, post, blisv1alpha1.StudyConditionPromoted, metav1.ConditionFalse, blisv1alpha1.StudyReasonNoWinner, "no Evaluation of the study has succeeded yet")
		return nil
	}
	fail := func(reason, msg string) {
		studyCondition(st, gen, post, blisv1alpha1.StudyConditionPromoted, metav1.ConditionFalse, reason, msg)
	}
	spec, err := ev.winnerSpec(ctx, best)
	if err != nil {
		fail(blisv1alpha1.StudyReasonPromotionFailed, err.Error())
		return nil
	}
	pb := binding.WinnerBundle(ps, bundleName, spec, st.Best)
	manifest, err := yaml.Marshal(pb)
	if err != nil {
		return err
	}
	data, inputs, msg, err := r.exportWinner(ctx, ps, best.Name, spec, p.Target)
	if err != nil {
		return err
	}
	if msg != "" {
		fail(blisv1alpha1.StudyReasonPromotionFailed, msg)
		return nil
	}
	inputs.hash = winnerInputHash(inputs.resolvedHash, inputs.cluster, p.Target, manifest)
	if follow && prev.InputHash == inputs.hash && promoted.Status == metav1.ConditionTrue {
		return nil
	}
	data[FileWinnerBundle] = string(manifest)
	if conflict, err := r.writeWinnerBundle(ctx, ps, pb); err != nil || conflict != "" {
		if err == nil {
			fail(blisv1alpha1.StudyReasonConflict, conflict)
		}
		return err
	}
	written, conflict, err := r.writeWinnerConfigMap(ctx, ps, p.ConfigMapName, data)
	if err != nil || conflict != "" {
		if err == nil {
			fail(blisv1alpha1.StudyReasonConflict, conflict)
		}
		return err
	}
	msg = fmt.Sprintf("the winner %s was written to PolicyBundle %s and its llm-d configuration to ConfigMap %s", best.Name, bundleName, p.ConfigMapName)
	if follow {
		// The inputs changed: the status records them; the time only when the export itself
		// changed, with an event (studyCondition records one when the condition recovers).
		next := prev.DeepCopy()
		next.InputHash, next.ConfigMaps = inputs.hash, inputs.configMaps
		if written {
			now := metav1.Now()
			next.Time = &now
			if promoted.Status == metav1.ConditionTrue {
				post.event(corev1.EventTypeNormal, blisv1alpha1.StudyReasonPromoted,
					"the inputs of the winner %s changed (input hash %s): its llm-d configuration was written again to ConfigMap %s",
					best.Name, short(inputs.hash), p.ConfigMapName)
			}
		}
		st.Promotion = next
		studyCondition(st, gen, post, blisv1alpha1.StudyConditionPromoted, metav1.ConditionTrue, blisv1alpha1.StudyReasonPromoted, msg)
		return nil
	}
	now := metav1.Now()
	st.Promotion = &blisv1alpha1.PromotionStatus{Evaluation: best.Name, PolicyBundle: bundleName, ConfigMap: p.ConfigMapName,
		Request: ps.Annotations[blisv1alpha1.AnnotationPromote], Time: &now, InputHash: inputs.hash, ConfigMaps: inputs.configMaps}
	studyCondition(st, gen, post, blisv1alpha1.StudyConditionPromoted, metav1.ConditionTrue, blisv1alpha1.StudyReasonPromoted, msg)
	return nil
}

// winnerInputs are the inputs of a winner's export.
type winnerInputs struct {
	// resolvedHash is the input hash of the winner's resolved document.
	resolvedHash string
	// cluster is the SimulatedCluster spec the export takes the topology from.
	cluster *blisv1alpha1.SimulatedClusterSpec
	// configMaps are the ConfigMaps the resolution read, sorted.
	configMaps []string
	// hash is winnerInputHash of them.
	hash string
}

// winnerInputHash identifies a winner's export inputs: the hex SHA-256 of the resolved
// document's hash, the cluster spec (its JSON: struct fields in declaration order, map keys
// sorted), the target and the winner PolicyBundle manifest.
func winnerInputHash(resolvedHash string, cluster *blisv1alpha1.SimulatedClusterSpec, target string, manifest []byte) string {
	cl, err := json.Marshal(cluster)
	if err != nil {
		cl = []byte(err.Error())
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(resolvedHash), cl, []byte(target), manifest} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// exportWinner resolves the winner against the study's cluster and workload and renders it as
// llm-d files, with the inputs the export used. A problem with the inputs or the export is
// returned as a message.
func (r *PolicyStudyReconciler) exportWinner(ctx context.Context, ps *blisv1alpha1.PolicyStudy, name string,
	spec *blisv1alpha1.PolicyBundleSpec, target string) (map[string]string, winnerInputs, string, error) {
	var none winnerInputs
	var cl blisv1alpha1.SimulatedCluster
	var wl blisv1alpha1.WorkloadSpec
	for _, o := range []struct {
		kind, name string
		obj        client.Object
	}{{evaluation.KindSimulatedCluster, ps.Spec.ClusterRef.Name, &cl}, {evaluation.KindWorkloadSpec, ps.Spec.WorkloadRef.Name, &wl}} {
		if err := r.Get(ctx, client.ObjectKey{Namespace: ps.Namespace, Name: o.name}, o.obj); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, none, fmt.Sprintf("%s %q does not exist", o.kind, o.name), nil
			}
			return nil, none, "", err
		}
	}
	in := evaluation.Inputs{Name: name, Spec: binding.EvaluationSpec(&ps.Spec, "", spec), Cluster: &cl, Workload: &wl}
	names := evaluation.ConfigMapNames(&in)
	cms, err := evaluation.ReadConfigMaps(ctx, r.APIReader, ps.Namespace, names)
	if err != nil {
		return nil, none, "", err
	}
	in.ConfigMaps = cms
	res, err := evaluation.Resolve(in)
	if err != nil {
		return nil, none, "resolving the winner: " + err.Error(), nil
	}
	out, err := binding.Export(res, &cl.Spec, target)
	if err != nil {
		return nil, none, "exporting the winner as llm-d configuration: " + err.Error(), nil
	}
	return out.ConfigMapData(), winnerInputs{resolvedHash: res.Hash, cluster: &cl.Spec, configMaps: names}, "", nil
}

// writeWinnerBundle creates or updates the winner PolicyBundle; one the study does not own is
// a conflict.
func (r *PolicyStudyReconciler) writeWinnerBundle(ctx context.Context, ps *blisv1alpha1.PolicyStudy, pb *blisv1alpha1.PolicyBundle) (string, error) {
	var cur blisv1alpha1.PolicyBundle
	err := r.Get(ctx, client.ObjectKeyFromObject(pb), &cur)
	switch {
	case apierrors.IsNotFound(err):
		if err := controllerutil.SetControllerReference(ps, pb, r.Scheme); err != nil {
			return "", err
		}
		pb.Labels[LabelStudyComponent] = "winner"
		if err := r.Create(ctx, pb); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return "", fmt.Errorf("PolicyBundle %s appeared while it was being created", pb.Name)
			}
			return "", err
		}
		return "", nil
	case err != nil:
		return "", err
	}
	if !metav1.IsControlledBy(&cur, ps) {
		return fmt.Sprintf("PolicyBundle %s exists and is not owned by the study; choose another promotion.policyBundleName", pb.Name), nil
	}
	if equality.Semantic.DeepEqual(cur.Spec, pb.Spec) {
		return "", nil
	}
	cur.Spec = pb.Spec
	return "", r.Update(ctx, &cur)
}

// writeWinnerConfigMap creates or updates the promotion ConfigMap and reports whether it wrote;
// one the study does not own is a conflict. It carries the operator's managed-by label so the
// manager caches it.
func (r *PolicyStudyReconciler) writeWinnerConfigMap(ctx context.Context, ps *blisv1alpha1.PolicyStudy, name string, data map[string]string) (bool, string, error) {
	var cur corev1.ConfigMap
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ps.Namespace, Name: name}, &cur)
	switch {
	case apierrors.IsNotFound(err):
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ps.Namespace, Labels: map[string]string{
				LabelManagedBy: ManagedByValue, blisv1alpha1.LabelStudy: ps.Name, LabelStudyComponent: "promotion"}},
			Data: data,
		}
		if err := controllerutil.SetControllerReference(ps, cm, r.Scheme); err != nil {
			return false, "", err
		}
		return true, "", r.Create(ctx, cm)
	case err != nil:
		return false, "", err
	}
	if !metav1.IsControlledBy(&cur, ps) {
		return false, fmt.Sprintf("ConfigMap %s exists and is not owned by the study; choose another promotion.configMapName", name), nil
	}
	if equality.Semantic.DeepEqual(cur.Data, data) {
		return false, "", nil
	}
	cur.Data = data
	return true, "", r.Update(ctx, &cur)
}
