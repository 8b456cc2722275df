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
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation"
	"github.com/inference-sim/blis-operator/internal/resultstore"
)

// Labels and names of the objects the operator creates for an Evaluation.
const (
	// LabelManagedBy marks every object the operator creates (the manager caches only those
	// ConfigMaps and Jobs).
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is LabelManagedBy's value.
	ManagedByValue = "blis-operator"
	// LabelEvaluationUID is the UID of the Evaluation an object belongs to.
	LabelEvaluationUID = "blis.inference-sim.io/evaluation-uid"
	// LabelComponent is input, result or engine.
	LabelComponent = "blis.inference-sim.io/component"
	// LabelKueueQueue is Kueue's queue label, set from execution.queueName.
	LabelKueueQueue = "kueue.x-k8s.io/queue-name"
	// AnnotationAttempt on a Job is the Evaluation's attempt number of its first pod; the
	// attempts of a run are this plus the Job's failed pods.
	AnnotationAttempt = "blis.inference-sim.io/attempt"
	// KeyInput is the input ConfigMap's key holding the envelope.
	KeyInput = "input.json"
	// engineUID is the non-root user of the engine container.
	engineUID   = 65532
	inputMount  = "/input"
	scratchPath = "/scratch"
)

// runName is the deterministic base name of an Evaluation's Job and its objects: a DNS label
// made of the Evaluation's name (cut to fit) and a digest of its UID, so that a recreated
// Evaluation of the same name never adopts its predecessor's Job.
func runName(ev *blisv1alpha1.Evaluation) string {
	sum := sha256.Sum256([]byte(ev.UID))
	suffix := hex.EncodeToString(sum[:])[:8]
	base := strings.ToLower(strings.ReplaceAll(ev.Name, ".", "-"))
	// Leave room for "-" + suffix and the longest object suffix ("-engine", "-result").
	const maxBase = 63 - 1 - 8 - len("-result")
	if len(base) > maxBase {
		base = base[:maxBase]
	}
	base = strings.TrimRight(base, "-")
	return base + "-" + suffix
}

func inputName(ev *blisv1alpha1.Evaluation) string  { return runName(ev) + "-input" }
func resultName(ev *blisv1alpha1.Evaluation) string { return runName(ev) + "-result" }
func engineName(ev *blisv1alpha1.Evaluation) string { return runName(ev) + "-engine" }

func runLabels(ev *blisv1alpha1.Evaluation, component string) map[string]string {
	return map[string]string{
		LabelManagedBy:     ManagedByValue,
		LabelEvaluationUID: string(ev.UID),
		LabelComponent:     component,
	}
}

// create makes the run's objects: the input ConfigMap, the empty result ConfigMap (annotated
// with the input hash), a service account with a Role that may only get and update that result
// ConfigMap, and the Job. Each has a deterministic name and the Evaluation as controlling owner,
// so a repeated call after a conflict or restart adopts what exists instead of duplicating it.
func (r *EvaluationReconciler) createJobRun(ctx context.Context, ev *blisv1alpha1.Evaluation, hash string, envelope []byte, attempt int32) error {
	objs := []client.Object{
		&corev1.ConfigMap{
			ObjectMeta: r.runMeta(ev, inputName(ev), "input"),
			Data:       map[string]string{KeyInput: string(envelope)},
		},
		r.resultConfigMap(ev, hash),
		&corev1.ServiceAccount{
			ObjectMeta:                   r.runMeta(ev, engineName(ev), "engine"),
			AutomountServiceAccountToken: ptr.To(false),
		},
		&rbacv1.Role{
			ObjectMeta: r.runMeta(ev, engineName(ev), "engine"),
			Rules: []rbacv1.PolicyRule{{
				APIGroups:     []string{""},
				Resources:     []string{"configmaps"},
				ResourceNames: []string{resultName(ev)},
				Verbs:         []string{"get", "update", "patch"},
			}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: r.runMeta(ev, engineName(ev), "engine"),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: engineName(ev)},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: engineName(ev), Namespace: ev.Namespace}},
		},
		r.engineJob(ev, hash, attempt),
	}
	for _, o := range objs {
		if err := controllerutil.SetControllerReference(ev, o, r.Scheme); err != nil {
			return err
		}
		if err := r.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

func (r *EvaluationReconciler) runMeta(ev *blisv1alpha1.Evaluation, name, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ev.Namespace, Name: name, Labels: runLabels(ev, component)}
}

func (r *EvaluationReconciler) resultConfigMap(ev *blisv1alpha1.Evaluation, hash string) *corev1.ConfigMap {
	m := r.runMeta(ev, resultName(ev), "result")
	m.Annotations = map[string]string{resultstore.AnnotationInputHash: hash}
	return &corev1.ConfigMap{ObjectMeta: m}
}

// engineJob is the batch/v1 Job running `blis engine` on the mounted input.
func (r *EvaluationReconciler) engineJob(ev *blisv1alpha1.Evaluation, hash string, attempt int32) *batchv1.Job {
	ex := ev.Spec.Execution
	timeout := r.Config.DefaultTimeout
	if ex.Timeout != nil && ex.Timeout.Duration > 0 {
		timeout = ex.Timeout.Duration
	}
	backoff := int32(2)
	if ex.MaxRetries != nil {
		backoff = *ex.MaxRetries
	}
	meta := r.runMeta(ev, runName(ev), "engine")
	meta.Annotations = map[string]string{resultstore.AnnotationInputHash: hash, AnnotationAttempt: strconv.Itoa(int(attempt))}
	if ex.QueueName != "" {
		meta.Labels[LabelKueueQueue] = ex.QueueName
	}
	podLabels := runLabels(ev, "engine")
	resources := corev1.ResourceRequirements{}
	if ex.Resources != nil {
		resources = *ex.Resources.DeepCopy()
	}
	args := []string{"engine", "--input", inputMount + "/" + KeyInput, "--output", scratchPath + "/result.json",
		"--result-configmap", resultName(ev)}
	job := &batchv1.Job{
		ObjectMeta: meta,
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To(backoff),
			ActiveDeadlineSeconds:   ptr.To(int64(timeout / time.Second)),
			TTLSecondsAfterFinished: ptr.To(r.Config.JobTTLSeconds),
			// A hash mismatch or an invalid input fails the same way on every try: no retry.
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action: batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
					ContainerName: ptr.To("engine"),
					Operator:      batchv1.PodFailurePolicyOnExitCodesOpIn,
					Values:        []int32{int32(evaluation.ExitHashMismatch), int32(evaluation.ExitInvalidInput)},
				},
			}}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					ServiceAccountName:           engineName(ev),
					AutomountServiceAccountToken: ptr.To(true),
					PriorityClassName:            ex.PriorityClassName,
					EnableServiceLinks:           ptr.To(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To[int64](engineUID),
						RunAsGroup:     ptr.To[int64](engineUID),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:            "engine",
						Image:           r.Config.EngineImage,
						ImagePullPolicy: r.Config.EnginePullPolicy,
						Command:         []string{"/blis"},
						Args:            args,
						Env: []corev1.EnvVar{{
							Name:      "POD_NAMESPACE",
							ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
						}},
						Resources: resources,
						SecurityContext: &corev1.SecurityContext{
							ReadOnlyRootFilesystem:   ptr.To(true),
							AllowPrivilegeEscalation: ptr.To(false),
							RunAsNonRoot:             ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "input", MountPath: inputMount, ReadOnly: true},
							{Name: "scratch", MountPath: scratchPath},
						},
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
					Volumes: []corev1.Volume{
						{Name: "input", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: inputName(ev)},
						}}},
						{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
							SizeLimit: ptr.To(resource.MustParse("64Mi")),
						}}},
					},
				},
			},
		},
	}
	return job
}

// jobView is what the controller needs of a Job.
type jobView struct {
	exists    bool
	complete  bool
	failed    bool
	reason    string
	message   string
	active    int32
	failures  int32
	finished  time.Time
	startTime *metav1.Time
	// attempt is the attempt number of the Job's first pod.
	attempt int32
	// suspended is set while the Job waits for admission (Kueue).
	suspended bool
}

func viewJob(job *batchv1.Job) jobView {
	v := jobView{exists: true, active: job.Status.Active, failures: job.Status.Failed, startTime: job.Status.StartTime, attempt: 1}
	v.suspended = job.Spec.Suspend != nil && *job.Spec.Suspend
	if n, err := strconv.Atoi(job.Annotations[AnnotationAttempt]); err == nil && n > 0 {
		v.attempt = int32(n)
	}
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete, batchv1.JobSuccessCriteriaMet:
			v.complete = true
			v.finished = c.LastTransitionTime.Time
		case batchv1.JobFailed, batchv1.JobFailureTarget:
			v.failed = true
			v.reason, v.message = c.Reason, c.Message
			v.finished = c.LastTransitionTime.Time
		}
	}
	return v
}

// failureReason maps a Job failure onto an Evaluation condition reason.
func failureReason(jobReason string) string {
	switch jobReason {
	case batchv1.JobReasonBackoffLimitExceeded:
		return ReasonBackoffLimitExceeded
	case batchv1.JobReasonDeadlineExceeded:
		return ReasonDeadlineExceeded
	case batchv1.JobReasonPodFailurePolicy:
		return ReasonEngineError
	default:
		return ReasonJobFailed
	}
}
