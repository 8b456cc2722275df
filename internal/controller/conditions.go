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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// Short names of two of the API's Evaluation condition types, used throughout the controllers.
const (
	// ConditionAccepted is the API's Accepted condition.
	ConditionAccepted = blisv1alpha1.ConditionAccepted
	// ConditionSucceeded is the API's Succeeded condition.
	ConditionSucceeded = blisv1alpha1.ConditionSucceeded
)

// Condition reasons (CamelCase, stable: tools match on them).
const (
	// ReasonResolved: every input resolved and validated.
	ReasonResolved = "Resolved"
	// ReasonReferenceNotFound: a referenced object (or ConfigMap key) does not exist.
	ReasonReferenceNotFound = "ReferenceNotFound"
	// ReasonReferenceNotReady: a referenced object exists but is not Ready.
	ReasonReferenceNotReady = "ReferenceNotReady"
	// ReasonReferenceDeleted: a referenced object was deleted after the run started; the run
	// goes on with its snapshotted input.
	ReasonReferenceDeleted = "ReferenceDeleted"
	// ReasonInvalidSpec: a field fails the engine's validation.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonInvalidReference: a referenced object fails validation in this combination.
	ReasonInvalidReference = "InvalidReference"
	// ReasonUnsupported: a field asks for something the engine does not simulate.
	ReasonUnsupported = "Unsupported"
	// ReasonNoEngineImage: the manager has no engine image for the job executor.
	ReasonNoEngineImage = "NoEngineImage"
	// ReasonInputTooLarge: the resolved input does not fit in a ConfigMap.
	ReasonInputTooLarge = "InputTooLarge"

	// ReasonGlobalLimitReached: the global parallelism cap is full.
	ReasonGlobalLimitReached = "GlobalLimitReached"
	// ReasonNamespaceLimitReached: the namespace's parallelism cap is full.
	ReasonNamespaceLimitReached = "NamespaceLimitReached"
	// ReasonWaitingForTurn: a slot is free but Evaluations ahead in admission order take it.
	ReasonWaitingForTurn = "WaitingForTurn"
	// ReasonAdmitted: the Evaluation got a parallelism slot.
	ReasonAdmitted = "Admitted"
	// ReasonWaitingForIdenticalRun: an Evaluation of the same input hash is running; its
	// result is reused when it succeeds.
	ReasonWaitingForIdenticalRun = "WaitingForIdenticalRun"

	// ReasonJobCreated: the engine Job was created.
	ReasonJobCreated = "JobCreated"
	// ReasonJobSuspended: the engine Job is suspended, waiting for Kueue to admit it.
	ReasonJobSuspended = "JobSuspended"
	// ReasonJobRunning: the engine Job has a pod running.
	ReasonJobRunning = "JobRunning"
	// ReasonRetrying: an engine pod failed and the Job retries within its budget.
	ReasonRetrying = "Retrying"
	// ReasonInProcess: the run is in the manager's worker pool.
	ReasonInProcess = "InProcess"
	// ReasonRestarted: an in-process run was interrupted by a manager restart and runs again.
	ReasonRestarted = "Restarted"

	// ReasonCompleted: the engine ran and the results are in status.
	ReasonCompleted = "Completed"
	// ReasonCacheHit: the results were copied from a Succeeded Evaluation of the same input.
	ReasonCacheHit = "CacheHit"
	// ReasonBackoffLimitExceeded: the engine Job failed more often than its retry budget.
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	// ReasonDeadlineExceeded: the run took longer than execution.timeout.
	ReasonDeadlineExceeded = "DeadlineExceeded"
	// ReasonOOMKilled: the engine Job failed and an engine pod ran out of memory.
	ReasonOOMKilled = "OOMKilled"
	// ReasonJobFailed: the engine Job failed for another reason.
	ReasonJobFailed = "JobFailed"
	// ReasonJobLost: the engine Job disappeared before writing a result, beyond the retries.
	ReasonJobLost = "JobLost"
	// ReasonEngineError: the in-process engine returned an error.
	ReasonEngineError = "EngineError"
	// ReasonInvalidResult: the result object failed the input-hash or digest check.
	ReasonInvalidResult = "InvalidResult"
	// ReasonResultMissing: the engine finished without writing a result.
	ReasonResultMissing = "ResultMissing"
	// ReasonInputChanged: a run interrupted by a restart could not be rerun because its
	// referenced inputs changed meanwhile.
	ReasonInputChanged = "InputChanged"

	// ReasonPending: not started yet.
	ReasonPending = "Pending"
	// ReasonNotReady: results are not available yet.
	ReasonNotReady = "NotReady"
	// ReasonValid: a SimulatedCluster, PolicyBundle or WorkloadSpec passed validation.
	ReasonValid = "Valid"
	// ReasonValidationIncomplete: the engine could not complete an object's validation.
	ReasonValidationIncomplete = "ValidationIncomplete"
)

// setCondition sets a condition with the object's generation and a bounded message. The
// transition time changes only when the status does (meta.SetStatusCondition).
func setCondition(conds *[]metav1.Condition, gen int64, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type:               typ,
		Status:             status,
		ObservedGeneration: gen,
		Reason:             reason,
		Message:            blisv1alpha1.TruncateMessage(msg),
	})
}

// isTrue reports whether condition typ is True.
func isTrue(conds []metav1.Condition, typ string) bool {
	return meta.IsStatusConditionTrue(conds, typ)
}

// terminal reports whether an Evaluation has finished (Succeeded or Failed).
func terminal(st *blisv1alpha1.EvaluationStatus) bool {
	return isTrue(st.Conditions, ConditionSucceeded) || isTrue(st.Conditions, blisv1alpha1.ConditionFailed)
}
