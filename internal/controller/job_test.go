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
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation"
	"github.com/inference-sim/blis-operator/internal/resultstore"
)

const testImage = "example.com/blis-operator:test"

// engineClient is a client acting as the engine pod's service account of ev.
func engineClient(t *testing.T, ev *blisv1alpha1.Evaluation) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ev.Namespace + ":" + engineName(ev)}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runningJob waits until ev runs in a Job and returns the Evaluation and its Job.
func runningJob(t *testing.T, ns, name string) (*blisv1alpha1.Evaluation, *batchv1.Job) {
	t.Helper()
	ev := waitCondition(t, ns, name, blisv1alpha1.ConditionRunning, metav1.ConditionTrue, ReasonJobCreated)
	var job batchv1.Job
	eventually(t, "the engine Job", func() (bool, string) {
		err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: runName(ev)}, &job)
		return err == nil, describeEval(ev)
	})
	return ev, &job
}

// TestJobExecutor: an Evaluation with the job executor gets a Job as specified (owner,
// deterministic name, retries, deadline, TTL, resources, Kueue queue, non-root, read-only root
// filesystem, its own service account), the engine's service account may update only its
// result ConfigMap, and the result it writes there becomes the status after the hash check.
func TestJobExecutor(t *testing.T) {
	ns := newNamespace(t)
	startManager(t, Config{EngineImage: testImage, JobTTLSeconds: 600})
	createInputs(t, ns)
	ctx := context.Background()

	spec := testEval(ns, "in-a-job", blisv1alpha1.ExecutorJob, 4, 5)
	spec.Spec.Execution.Timeout = &metav1.Duration{Duration: 5 * time.Minute}
	spec.Spec.Execution.MaxRetries = ptr.To[int32](3)
	spec.Spec.Execution.QueueName = "team-a"
	spec.Spec.Execution.Resources = &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
	}
	create(t, spec)
	ev, job := runningJob(t, ns, "in-a-job")

	// The Job.
	if owner := metav1.GetControllerOf(job); owner == nil || owner.UID != ev.UID || owner.Kind != "Evaluation" {
		t.Fatalf("controller owner %+v", owner)
	}
	if job.Labels[LabelKueueQueue] != "team-a" || job.Labels[LabelEvaluationUID] != string(ev.UID) {
		t.Fatalf("labels %v", job.Labels)
	}
	js := job.Spec
	if *js.BackoffLimit != 3 || *js.ActiveDeadlineSeconds != 300 || *js.TTLSecondsAfterFinished != 600 || js.PodFailurePolicy == nil {
		t.Fatalf("backoff %d deadline %d ttl %d pod failure policy %v", *js.BackoffLimit, *js.ActiveDeadlineSeconds, *js.TTLSecondsAfterFinished, js.PodFailurePolicy)
	}
	pod := js.Template.Spec
	if pod.ServiceAccountName != engineName(ev) || pod.RestartPolicy != corev1.RestartPolicyNever ||
		!*pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Fatalf("pod spec %+v", pod)
	}
	c := pod.Containers[0]
	if c.Image != testImage || !*c.SecurityContext.ReadOnlyRootFilesystem || *c.SecurityContext.AllowPrivilegeEscalation ||
		!slices.Equal(c.SecurityContext.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Fatalf("container %+v", c)
	}
	if c.Resources.Requests.Cpu().String() != "250m" || c.Resources.Limits.Memory().String() != "512Mi" {
		t.Fatalf("resources %+v", c.Resources)
	}
	if !slices.Contains(c.Args, "--result-configmap") || !slices.Contains(c.Args, resultName(ev)) || c.Command[0] != "/blis" {
		t.Fatalf("command %v %v", c.Command, c.Args)
	}

	// The input ConfigMap holds the envelope of the status's input hash.
	var input corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: inputName(ev)}, &input); err != nil {
		t.Fatal(err)
	}
	if _, hash, err := evaluation.ParseEnvelope([]byte(input.Data[KeyInput])); err != nil || hash != ev.Status.InputHash {
		t.Fatalf("input envelope hash %q (%v), status %q", hash, err, ev.Status.InputHash)
	}

	// The engine runs the mounted input and writes its result as its own service account.
	res, err := evaluation.RunEnvelope(ctx, []byte(input.Data[KeyInput]), evaluation.Options{})
	if err != nil {
		t.Fatal(err)
	}
	engine := engineClient(t, ev)
	if err := resultstore.Write(ctx, engine, ns, resultName(ev), res, []byte("{\"event\":\"arrival\"}\n")); err != nil {
		t.Fatalf("the engine cannot write its result: %v", err)
	}
	// ... and nothing else.
	input.Data["x"] = "y"
	if err := engine.Update(ctx, &input); !apierrors.IsForbidden(err) {
		t.Fatalf("updating the input ConfigMap as the engine: %v, want Forbidden", err)
	}
	stray := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stray"}}
	if err := engine.Create(ctx, stray); !apierrors.IsForbidden(err) {
		t.Fatalf("creating a ConfigMap as the engine: %v, want Forbidden", err)
	}
	var evs blisv1alpha1.EvaluationList
	if err := engine.List(ctx, &evs, client.InNamespace(ns)); !apierrors.IsForbidden(err) {
		t.Fatalf("listing Evaluations as the engine: %v, want Forbidden", err)
	}

	done := waitCondition(t, ns, "in-a-job", ConditionSucceeded, metav1.ConditionTrue, ReasonCompleted)
	ref := done.Status.ResultRef
	if ref == nil || ref.Kind != "ConfigMap" || ref.Name != resultName(ev) || ref.Key != resultstore.KeyResult || len(ref.Digest) != 64 || ref.SizeBytes == 0 {
		t.Fatalf("result reference %+v", ref)
	}
	if done.Status.Replicates == nil || done.Status.Replicates.Count != 2 {
		t.Fatalf("replicates %+v", done.Status.Replicates)
	}
	// The Job's status numbers equal an in-process run's.
	var want blisv1alpha1.EvaluationStatus
	res.ApplyTo(&want)
	if !equalJSON(t, want.Metrics, done.Status.Metrics) || !equalJSON(t, want.FitnessScore, done.Status.FitnessScore) {
		t.Fatal("the Job result in status differs from the engine's result")
	}
	// The run's auxiliary objects are cleaned up; the result stays.
	eventually(t, "the input ConfigMap and engine RBAC to go", func() (bool, string) {
		for _, o := range []client.Object{&corev1.ConfigMap{}, &corev1.ServiceAccount{}} {
			name := engineName(ev)
			if _, ok := o.(*corev1.ConfigMap); ok {
				name = inputName(ev)
			}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o); !apierrors.IsNotFound(err) {
				return false, name + " still there"
			}
		}
		return true, ""
	})
	var cm corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: resultName(ev)}, &cm); err != nil {
		t.Fatal(err)
	}
	if tr, err := resultstore.Trace(&cm, 1<<20); err != nil || !strings.Contains(string(tr), "arrival") {
		t.Fatalf("trace %q (%v)", tr, err)
	}
}

// TestJobResultChecks: a result for another input is refused (InvalidResult); an engine that
// reports a failure fails the Evaluation with its reason; a Job that fails beyond its retries
// fails the Evaluation with the Job's reason.
func TestJobResultChecks(t *testing.T) {
	ns := newNamespace(t)
	startManager(t, Config{EngineImage: testImage})
	createInputs(t, ns)
	ctx := context.Background()

	// A forged result of another input, written as an administrator.
	create(t, testEval(ns, "forged", blisv1alpha1.ExecutorJob, 11))
	ev, _ := runningJob(t, ns, "forged")
	forged := &evaluation.EngineResult{InputHash: strings.Repeat("0", 64), EngineVersion: "x",
		Status: &blisv1alpha1.EvaluationStatus{InputHash: strings.Repeat("0", 64)}}
	data, _, ann, err := resultstore.Encode(forged, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: resultName(ev)}, &cm); err != nil {
		t.Fatal(err)
	}
	if err := resultstore.Write(ctx, env.Client, ns, resultName(ev), forged, nil); err == nil {
		t.Fatal("Write accepted a result for another input")
	}
	cm.Data = data
	cm.Annotations[resultstore.AnnotationDigest] = ann[resultstore.AnnotationDigest]
	if err := env.Client.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	failed := waitCondition(t, ns, "forged", blisv1alpha1.ConditionFailed, metav1.ConditionTrue, ReasonInvalidResult)
	if c := meta.FindStatusCondition(failed.Status.Conditions, blisv1alpha1.ConditionFailed); !strings.Contains(c.Message, "mismatch") {
		t.Fatalf("message %q", c.Message)
	}

	// The engine reports a failure.
	create(t, testEval(ns, "refused", blisv1alpha1.ExecutorJob, 12))
	ev, _ = runningJob(t, ns, "refused")
	refusal := &evaluation.EngineResult{InputHash: ev.Status.InputHash, EngineVersion: "other",
		Reason: evaluation.ReasonEngineVersionMismatch, Message: "the document was resolved by engine a; this is engine b"}
	if err := resultstore.Write(ctx, engineClient(t, ev), ns, resultName(ev), refusal, nil); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, ns, "refused", blisv1alpha1.ConditionFailed, metav1.ConditionTrue, evaluation.ReasonEngineVersionMismatch)

	// The Job fails beyond its retries (after waiting suspended, as Kueue would hold it).
	create(t, testEval(ns, "crashing", blisv1alpha1.ExecutorJob, 13))
	_, job := runningJob(t, ns, "crashing")
	job.Spec.Suspend = ptr.To(true)
	if err := env.Client.Update(ctx, job); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, ns, "crashing", blisv1alpha1.ConditionRunning, metav1.ConditionTrue, ReasonJobSuspended)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	job.Status.StartTime = &now
	job.Status.Failed = 3
	job.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonBackoffLimitExceeded, Message: "Job has reached the specified backoff limit", LastTransitionTime: now, LastProbeTime: now},
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonBackoffLimitExceeded, Message: "Job has reached the specified backoff limit", LastTransitionTime: now, LastProbeTime: now},
	}
	if err := env.Client.Status().Update(ctx, job); err != nil {
		t.Fatal(err)
	}
	crashed := waitCondition(t, ns, "crashing", blisv1alpha1.ConditionFailed, metav1.ConditionTrue, ReasonBackoffLimitExceeded)
	if crashed.Status.Attempts != 4 || crashed.Status.Phase != blisv1alpha1.PhaseFailed || crashed.Status.CompletionTime == nil {
		t.Fatalf("attempts %d phase %s completion %v", crashed.Status.Attempts, crashed.Status.Phase, crashed.Status.CompletionTime)
	}
}

// TestJobRecreatedWhenLost: a Job deleted before it wrote a result is created again (same
// name, same input) and counted as an attempt.
func TestJobRecreatedWhenLost(t *testing.T) {
	ns := newNamespace(t)
	startManager(t, Config{EngineImage: testImage})
	createInputs(t, ns)
	ctx := context.Background()
	create(t, testEval(ns, "lost", blisv1alpha1.ExecutorJob, 21))
	ev, job := runningJob(t, ns, "lost")
	if err := env.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a second attempt", func() (bool, string) {
		e := &blisv1alpha1.Evaluation{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ev), e); err != nil {
			return false, err.Error()
		}
		var j batchv1.Job
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: runName(ev)}, &j)
		return e.Status.Attempts == 2 && err == nil && j.UID != job.UID, describeEval(e)
	})
}

// TestJobOOMKilled: a Job that failed after its engine pod was OOM-killed fails the Evaluation
// with reason OOMKilled and advice on the memory limit.
func TestJobOOMKilled(t *testing.T) {
	ns := newNamespace(t)
	startManager(t, Config{EngineImage: testImage})
	createInputs(t, ns)
	ctx := context.Background()
	create(t, testEval(ns, "hungry", blisv1alpha1.ExecutorJob, 31))
	ev, job := runningJob(t, ns, "hungry")

	// The pod the Job controller would have made, OOM-killed (no kubelet here: status by hand).
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: runName(ev) + "-x1", Labels: job.Spec.Template.Labels},
		Spec:       *job.Spec.Template.Spec.DeepCopy(),
	}
	create(t, pod)
	now := metav1.Now()
	pod.Status.Phase = corev1.PodFailed
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "engine", Image: testImage,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", StartedAt: now, FinishedAt: now}},
	}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	job.Status.StartTime = &now
	job.Status.Failed = 3
	job.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonBackoffLimitExceeded, Message: "Job has reached the specified backoff limit", LastTransitionTime: now, LastProbeTime: now},
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonBackoffLimitExceeded, Message: "Job has reached the specified backoff limit", LastTransitionTime: now, LastProbeTime: now},
	}
	if err := env.Client.Status().Update(ctx, job); err != nil {
		t.Fatal(err)
	}
	failed := waitCondition(t, ns, "hungry", blisv1alpha1.ConditionFailed, metav1.ConditionTrue, ReasonOOMKilled)
	if c := meta.FindStatusCondition(failed.Status.Conditions, blisv1alpha1.ConditionFailed); !strings.Contains(c.Message, "limits.memory") {
		t.Fatalf("message %q", c.Message)
	}
}
