package evaluation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// Exit codes of `blis engine` and reasons of a failed EngineResult.
const (
	// ExitOK: the run succeeded and the result was written.
	ExitOK = 0
	// ExitUsage: bad flags (cobra's usage errors).
	ExitUsage = 1
	// ExitIO: the input could not be read or parsed as an envelope, or the output could not be
	// written.
	ExitIO = 2
	// ExitHashMismatch: the document does not have the envelope's hash.
	ExitHashMismatch = 3
	// ExitInvalidInput: the document fails validation, or was resolved by another engine
	// version.
	ExitInvalidInput = 4
	// ExitRunFailed: a simulation failed.
	ExitRunFailed = 5

	// ReasonHashMismatch is the reason of a result whose input failed the hash check.
	ReasonHashMismatch = "InputHashMismatch"
	// ReasonEngineVersionMismatch is the reason of a document resolved by another engine.
	ReasonEngineVersionMismatch = "EngineVersionMismatch"
	// ReasonInvalidInput is the reason of a document that fails validation.
	ReasonInvalidInput = "InvalidInput"
	// ReasonRunFailed is the reason of a failed simulation.
	ReasonRunFailed = "RunFailed"
	// ReasonInputUnreadable is the reason of an input that is not an envelope.
	ReasonInputUnreadable = "InputUnreadable"
)

// EngineResult is the file `blis engine` writes: the status fields of a successful run (as
// ApplyTo writes them), or the reason and message of a failure, with the input hash. Its size
// is bounded by the status bounds.
type EngineResult struct {
	// InputHash is the hash of the input document.
	InputHash string `json:"inputHash,omitempty"`
	// EngineVersion is the version of the engine that ran (or refused) the document.
	EngineVersion string `json:"engineVersion"`
	// Status holds the fields ApplyTo writes (nil on failure).
	Status *blisv1alpha1.EvaluationStatus `json:"status,omitempty"`
	// Reason is one of the Reason constants on failure.
	Reason string `json:"reason,omitempty"`
	// Message says what failed (at most MaxConditionMessageLength bytes).
	Message string `json:"message,omitempty"`
}

// EngineError is a failed engine run: the exit code and the result describing it.
type EngineError struct {
	// Code is the process exit code.
	Code int
	// Result is the result to write.
	Result EngineResult
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *EngineError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *EngineError) Unwrap() error { return e.Err }

// RunEnvelope is the engine entrypoint: it checks the envelope's hash and the engine version,
// loads the document, runs it and returns the result. Failures are *EngineError carrying the
// exit code and a result to write.
func RunEnvelope(ctx context.Context, input []byte, opts Options) (*EngineResult, error) {
	version := EngineVersion()
	fail := func(code int, reason, hash string, err error) (*EngineResult, error) {
		return nil, &EngineError{Code: code, Err: err, Result: EngineResult{
			InputHash: hash, EngineVersion: version, Reason: reason,
			Message: blisv1alpha1.TruncateMessage(err.Error()),
		}}
	}
	doc, hash, err := ParseEnvelope(input)
	switch {
	case errors.Is(err, ErrHashMismatch):
		return fail(ExitHashMismatch, ReasonHashMismatch, hash, err)
	case err != nil && hash != "":
		return fail(ExitInvalidInput, ReasonInvalidInput, hash, err)
	case err != nil:
		return fail(ExitIO, ReasonInputUnreadable, "", err)
	}
	if doc.EngineVersion != version {
		return fail(ExitInvalidInput, ReasonEngineVersionMismatch, hash,
			fmt.Errorf("the document was resolved by engine %s; this is engine %s", doc.EngineVersion, version))
	}
	r, err := Load(doc)
	if err != nil {
		return fail(ExitInvalidInput, ReasonInvalidInput, hash, err)
	}
	if r.Hash != hash {
		return fail(ExitHashMismatch, ReasonHashMismatch, hash, fmt.Errorf("%w: the decoded document hashes to %s", ErrHashMismatch, r.Hash))
	}
	res, err := RunWithOptions(ctx, r, opts)
	if err != nil {
		return fail(ExitRunFailed, ReasonRunFailed, hash, err)
	}
	var st blisv1alpha1.EvaluationStatus
	res.ApplyTo(&st)
	return &EngineResult{InputHash: hash, EngineVersion: version, Status: &st}, nil
}

// ApplyTo copies a successful engine result into status: the fields Result.ApplyTo wrote in
// the engine (inputHash, engineVersion, metrics, replicates, fitness, fitnessScore, anomalies,
// traceSummary), so that a
// Job's result and an in-process run give the same status. It returns false, leaving status
// alone, for a failed result.
func (r *EngineResult) ApplyTo(status *blisv1alpha1.EvaluationStatus) bool {
	if r.Status == nil {
		return false
	}
	s := r.Status
	status.InputHash = s.InputHash
	status.EngineVersion = s.EngineVersion
	status.Metrics = s.Metrics
	status.Replicates = s.Replicates
	status.Fitness = s.Fitness
	status.FitnessScore = s.FitnessScore
	status.Anomalies = s.Anomalies
	status.TraceSummary = s.TraceSummary
	return true
}

// ParseEngineResult decodes the file `blis engine` wrote.
func ParseEngineResult(data []byte) (*EngineResult, error) {
	var r EngineResult
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("reading the engine result: %w", err)
	}
	return &r, nil
}
