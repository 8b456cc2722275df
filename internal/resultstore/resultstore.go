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

// Package resultstore is the result path between an engine Job and the operator. For each
// Evaluation run by a Job, the operator creates an empty result ConfigMap, owned by the
// Evaluation and annotated with the run's input hash, and a Role that lets the Job's service
// account get and update that one ConfigMap and nothing else. The engine, having run the
// resolved input, calls Write (or WriteInCluster) to fill it with
//
//   - result.json: the engine's result (evaluation.EngineResult): on success the result fields
//     of the Evaluation status (metrics, fitness, replicate statistics, anomaly counters,
//     trace summary, input hash and engine version), on failure the reason and message; JSON
//     of at most MaxResultBytes;
//   - trace.json.gz (binaryData): the full trace, gzip-compressed and cut at MaxTraceBytes.
//
// The operator reads it back with Decode, which refuses a payload whose input hash differs
// from the run's or whose digest does not match its content.
package resultstore

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation"
)

// Keys and annotations of a result ConfigMap.
const (
	// KeyResult is the data key holding the engine result JSON.
	KeyResult = "result.json"
	// KeyTrace is the binaryData key holding the gzip-compressed trace.
	KeyTrace = "trace.json.gz"
	// AnnotationInputHash is the input hash of the run the ConfigMap is for; the operator sets
	// it when it creates the ConfigMap, and Write refuses to write a result of another input.
	AnnotationInputHash = "blis.inference-sim.io/input-hash"
	// AnnotationDigest is the SHA-256 (hex) of the result JSON, written with it.
	AnnotationDigest = "blis.inference-sim.io/result-digest"
	// AnnotationTraceTruncated is "true" when the trace was cut at MaxTraceBytes.
	AnnotationTraceTruncated = "blis.inference-sim.io/trace-truncated"
	// AnnotationTraceBytes is the size of the uncompressed trace before any cut.
	AnnotationTraceBytes = "blis.inference-sim.io/trace-bytes"
)

// Size bounds of a result ConfigMap (the API server refuses objects above about 1.5 MiB).
const (
	// MaxResultBytes bounds the result JSON; it is far below what an Evaluation may hold.
	MaxResultBytes = 48 << 10
	// MaxTraceBytes bounds the compressed trace.
	MaxTraceBytes = 768 << 10
)

// ErrHashMismatch is returned when a result belongs to another input.
var ErrHashMismatch = errors.New("result input hash mismatch")

// ErrNoResult is returned by Decode when the ConfigMap holds no result yet.
var ErrNoResult = errors.New("no result written yet")

// Payload is a decoded result.
type Payload struct {
	// Result is the engine's result; on success its Status holds only the result fields (see
	// ResultFields).
	Result evaluation.EngineResult
	// Digest is the SHA-256 (hex) of the result JSON; Size its length in bytes.
	Digest string
	Size   int
	// TraceTruncated is true when the stored trace was cut.
	TraceTruncated bool
}

// ResultFields returns the fields of st that a run produces (input hash, engine version,
// metrics, fitness, replicate statistics, anomalies and trace summary) and nothing the
// operator owns (conditions, phase, times, attempts, references).
func ResultFields(st *blisv1alpha1.EvaluationStatus) blisv1alpha1.EvaluationStatus {
	out := blisv1alpha1.EvaluationStatus{
		InputHash:     st.InputHash,
		EngineVersion: st.EngineVersion,
		TraceSummary:  st.TraceSummary,
	}
	if st.Metrics != nil {
		out.Metrics = st.Metrics.DeepCopy()
	}
	if st.FitnessScore != nil {
		v := *st.FitnessScore
		out.FitnessScore = &v
	}
	if st.Fitness != nil {
		out.Fitness = append([]blisv1alpha1.NamedValue(nil), st.Fitness...)
	}
	if st.Replicates != nil {
		out.Replicates = st.Replicates.DeepCopy()
	}
	if st.Anomalies != nil {
		out.Anomalies = st.Anomalies.DeepCopy()
	}
	return out
}

// Encode renders a result for a ConfigMap: its data, binaryData and annotations. A successful
// result must carry the input hash the run was given; only the result fields of its status are
// kept. trace may be nil.
func Encode(res *evaluation.EngineResult, trace []byte) (map[string]string, map[string][]byte, map[string]string, error) {
	out := *res
	if res.Status != nil {
		if res.InputHash == "" || res.Status.InputHash != res.InputHash {
			return nil, nil, nil, fmt.Errorf("resultstore: the result's input hash %q and its status's %q must be set and equal", res.InputHash, res.Status.InputHash)
		}
		rf := ResultFields(res.Status)
		out.Status = &rf
	}
	out.Message = blisv1alpha1.TruncateMessage(out.Message)
	js, err := json.Marshal(&out)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("resultstore: encoding the result: %w", err)
	}
	if len(js) > MaxResultBytes {
		return nil, nil, nil, fmt.Errorf("resultstore: the result is %d bytes, above the %d-byte bound", len(js), MaxResultBytes)
	}
	sum := sha256.Sum256(js)
	ann := map[string]string{AnnotationDigest: hex.EncodeToString(sum[:])}
	data := map[string]string{KeyResult: string(js)}
	var bin map[string][]byte
	if len(trace) > 0 {
		gz, truncated, err := compress(trace, MaxTraceBytes)
		if err != nil {
			return nil, nil, nil, err
		}
		bin = map[string][]byte{KeyTrace: gz}
		ann[AnnotationTraceBytes] = strconv.Itoa(len(trace))
		if truncated {
			ann[AnnotationTraceTruncated] = "true"
		}
	}
	return data, bin, ann, nil
}

// compress gzips data; when the result exceeds limit it keeps the longest prefix (cut at a line
// end) whose compressed form fits.
func compress(data []byte, limit int) ([]byte, bool, error) {
	gz, err := gzipBytes(data)
	if err != nil {
		return nil, false, err
	}
	if len(gz) <= limit {
		return gz, false, nil
	}
	lo, hi := 0, len(data)
	best := []byte(nil)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		cut := mid
		if i := bytes.LastIndexByte(data[:mid], '\n'); i > 0 {
			cut = i + 1
		}
		c, err := gzipBytes(data[:cut])
		if err != nil {
			return nil, false, err
		}
		if len(c) <= limit {
			best, lo = c, mid
		} else {
			hi = mid - 1
		}
	}
	if best == nil {
		best, err = gzipBytes(nil)
		if err != nil {
			return nil, false, err
		}
	}
	return best, true, nil
}

func gzipBytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Decode reads the result of cm and checks it: the ConfigMap's input hash annotation and the
// result's own input hash must both equal wantHash, and the digest must match the content. It
// returns ErrNoResult when the engine has not written yet. A failed run's result is returned as
// it is (Result.Status nil, Reason and Message set).
func Decode(cm *corev1.ConfigMap, wantHash string) (*Payload, error) {
	if got := cm.Annotations[AnnotationInputHash]; got != wantHash {
		return nil, fmt.Errorf("%w: ConfigMap %s is for input %q, the run's input is %q", ErrHashMismatch, cm.Name, got, wantHash)
	}
	js, ok := cm.Data[KeyResult]
	if !ok || js == "" {
		return nil, ErrNoResult
	}
	if len(js) > MaxResultBytes {
		return nil, fmt.Errorf("resultstore: ConfigMap %s: the result is %d bytes, above the %d-byte bound", cm.Name, len(js), MaxResultBytes)
	}
	sum := sha256.Sum256([]byte(js))
	digest := hex.EncodeToString(sum[:])
	if want := cm.Annotations[AnnotationDigest]; want != digest {
		return nil, fmt.Errorf("resultstore: ConfigMap %s: the result's digest is %s, the annotation says %q", cm.Name, digest, want)
	}
	var res evaluation.EngineResult
	dec := json.NewDecoder(strings.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		return nil, fmt.Errorf("resultstore: ConfigMap %s: decoding the result: %w", cm.Name, err)
	}
	if res.Status != nil {
		if res.InputHash != wantHash || res.Status.InputHash != wantHash {
			return nil, fmt.Errorf("%w: the result in ConfigMap %s is for input %q, the run's input is %q", ErrHashMismatch, cm.Name, res.Status.InputHash, wantHash)
		}
		rf := ResultFields(res.Status)
		res.Status = &rf
	}
	return &Payload{
		Result:         res,
		Digest:         digest,
		Size:           len(js),
		TraceTruncated: cm.Annotations[AnnotationTraceTruncated] == "true",
	}, nil
}

// Trace returns the uncompressed trace of cm (nil when there is none), reading at most limit
// bytes.
func Trace(cm *corev1.ConfigMap, limit int64) ([]byte, error) {
	gz, ok := cm.BinaryData[KeyTrace]
	if !ok {
		return nil, nil
	}
	r, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(&limitedReader{r: r, n: limit}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type limitedReader struct {
	r interface{ Read([]byte) (int, error) }
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("resultstore: trace above the read limit")
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

// Write fills the result ConfigMap namespace/name, which the operator created for the run, with
// the engine's result and trace. A successful result is refused for a ConfigMap prepared for
// another input. Write never creates a ConfigMap: the engine's service account may only get
// and update the one ConfigMap of its run.
func Write(ctx context.Context, c client.Client, namespace, name string, res *evaluation.EngineResult, trace []byte) error {
	data, bin, ann, err := Encode(res, trace)
	if err != nil {
		return err
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &cm); err != nil {
		return fmt.Errorf("resultstore: reading the result ConfigMap %s/%s: %w", namespace, name, err)
	}
	if got := cm.Annotations[AnnotationInputHash]; res.Status != nil && got != res.InputHash {
		return fmt.Errorf("%w: ConfigMap %s/%s was prepared for input %q, this run's input is %q", ErrHashMismatch, namespace, name, got, res.InputHash)
	}
	cm.Data = data
	cm.BinaryData = bin
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	for k, v := range ann {
		cm.Annotations[k] = v
	}
	if err := c.Update(ctx, &cm); err != nil {
		return fmt.Errorf("resultstore: writing the result ConfigMap %s/%s: %w", namespace, name, err)
	}
	return nil
}

// namespaceFile is where a pod's service account token mount holds the pod's namespace.
const namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// PodNamespace returns the namespace the process runs in: $POD_NAMESPACE, else the service
// account mount's namespace file.
func PodNamespace() (string, error) {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns, nil
	}
	b, err := os.ReadFile(namespaceFile)
	if err != nil {
		return "", fmt.Errorf("resultstore: the pod's namespace: set POD_NAMESPACE or mount the service account token: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Bounds of the in-cluster write: each request times out, and transient failures are retried.
const (
	requestTimeout = 30 * time.Second
	writeAttempts  = 5
)

// WriteInCluster is Write from inside an engine pod: it connects with the pod's service
// account (in-cluster configuration) and writes into the pod's own namespace. Each request has
// a timeout; transient failures are retried a few times with backoff, while a refusal (hash
// mismatch, forbidden, invalid) is returned at once.
func WriteInCluster(ctx context.Context, name string, res *evaluation.EngineResult, trace []byte) error {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return fmt.Errorf("resultstore: in-cluster configuration: %w", err)
	}
	cfg.Timeout = requestTimeout
	ns, err := PodNamespace()
	if err != nil {
		return err
	}
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return fmt.Errorf("resultstore: creating a client: %w", err)
	}
	return writeWithRetries(ctx, c, ns, name, res, trace, time.Second)
}

// writeWithRetries calls Write up to writeAttempts times, doubling the pause from backoff,
// while the failure is transient (a conflict, a timeout, an unavailable server).
func writeWithRetries(ctx context.Context, c client.Client, ns, name string, res *evaluation.EngineResult, trace []byte, backoff time.Duration) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = Write(ctx, c, ns, name, res, trace)
		if err == nil || attempt == writeAttempts || !transient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(backoff):
		}
		backoff *= 2
	}
}

// transient reports whether a failed write may succeed when tried again.
func transient(err error) bool {
	if errors.Is(err, ErrHashMismatch) {
		return false
	}
	switch {
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err), apierrors.IsInvalid(err),
		apierrors.IsNotFound(err), apierrors.IsBadRequest(err), apierrors.IsRequestEntityTooLargeError(err):
		return false
	}
	return true
}

// PublishFile writes the result file `blis engine --output` wrote (success or failure) into the
// run's result ConfigMap name, from inside the engine pod (in-cluster credentials, the pod's
// namespace).
func PublishFile(ctx context.Context, path, name string) error {
	res, err := readResultFile(path)
	if err != nil {
		return err
	}
	return WriteInCluster(ctx, name, res, nil)
}

// readResultFile reads the result file of `blis engine`.
func readResultFile(path string) (*evaluation.EngineResult, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("resultstore: reading the engine result: %w", err)
	}
	return evaluation.ParseEngineResult(data)
}
