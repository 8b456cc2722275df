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

package resultstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation"
)

var hash = strings.Repeat("ab", 32)

func success() *evaluation.EngineResult {
	score := 0.75
	return &evaluation.EngineResult{
		InputHash: hash, EngineVersion: "devel",
		Status: &blisv1alpha1.EvaluationStatus{
			InputHash: hash, EngineVersion: "devel",
			// Operator-owned fields are dropped from a result.
			Phase:        blisv1alpha1.PhaseSucceeded,
			Attempts:     3,
			Conditions:   []metav1.Condition{{Type: "Ready"}},
			Metrics:      &blisv1alpha1.EvaluationMetrics{CompletedRequests: 40, TtftP99Ms: 12.5},
			FitnessScore: &score,
			TraceSummary: "p99 driven by one replica",
		},
	}
}

// configMap is the result ConfigMap as the operator prepares it, filled as Write would.
func configMap(t *testing.T, res *evaluation.EngineResult, trace []byte) *corev1.ConfigMap {
	t.Helper()
	data, bin, ann, err := Encode(res, trace)
	if err != nil {
		t.Fatal(err)
	}
	ann[AnnotationInputHash] = hash
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "r", Annotations: ann}, Data: data, BinaryData: bin}
}

func TestRoundTrip(t *testing.T) {
	cm := configMap(t, success(), []byte("line 1\nline 2\n"))
	p, err := Decode(cm, hash)
	if err != nil {
		t.Fatal(err)
	}
	st := p.Result.Status
	if st == nil || st.Metrics.CompletedRequests != 40 || *st.FitnessScore != 0.75 || st.TraceSummary == "" {
		t.Fatalf("decoded %+v", st)
	}
	if st.Phase != "" || st.Attempts != 0 || st.Conditions != nil {
		t.Fatalf("operator fields leaked into the result: %+v", st)
	}
	if len(p.Digest) != 64 || p.Size == 0 || p.TraceTruncated {
		t.Fatalf("digest %q size %d truncated %v", p.Digest, p.Size, p.TraceTruncated)
	}
	tr, err := Trace(cm, 1<<20)
	if err != nil || string(tr) != "line 1\nline 2\n" {
		t.Fatalf("trace %q (%v)", tr, err)
	}
}

func TestDecodeRefuses(t *testing.T) {
	if _, err := Decode(configMap(t, success(), nil), strings.Repeat("cd", 32)); !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("another run's ConfigMap: %v", err)
	}
	tampered := configMap(t, success(), nil)
	tampered.Data[KeyResult] = strings.Replace(tampered.Data[KeyResult], "40", "41", 1)
	if _, err := Decode(tampered, hash); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Fatalf("tampered result: %v", err)
	}
	other := success()
	other.InputHash = strings.Repeat("cd", 32)
	other.Status.InputHash = other.InputHash
	forged := configMap(t, other, nil)
	if _, err := Decode(forged, hash); !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("a result of another input in this run's ConfigMap: %v", err)
	}
	empty := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationInputHash: hash}}}
	if _, err := Decode(empty, hash); !errors.Is(err, ErrNoResult) {
		t.Fatalf("empty ConfigMap: %v", err)
	}
	if _, _, _, err := Encode(&evaluation.EngineResult{InputHash: hash, Status: &blisv1alpha1.EvaluationStatus{}}, nil); err == nil {
		t.Fatal("a status without the input hash was encoded")
	}
}

func TestFailureResult(t *testing.T) {
	res := &evaluation.EngineResult{InputHash: hash, EngineVersion: "devel", Reason: evaluation.ReasonHashMismatch, Message: strings.Repeat("x", 5000)}
	p, err := Decode(configMap(t, res, nil), hash)
	if err != nil {
		t.Fatal(err)
	}
	if p.Result.Status != nil || p.Result.Reason != evaluation.ReasonHashMismatch || len(p.Result.Message) > blisv1alpha1.MaxConditionMessageLength {
		t.Fatalf("failure result %+v", p.Result)
	}
}

func TestTraceCapped(t *testing.T) {
	// Incompressible lines well above the cap.
	var b strings.Builder
	buf := make([]byte, 64)
	for b.Len() < 3*MaxTraceBytes {
		_, _ = rand.Read(buf)
		b.WriteString(hex.EncodeToString(buf) + "\n")
	}
	cm := configMap(t, success(), []byte(b.String()))
	if n := len(cm.BinaryData[KeyTrace]); n > MaxTraceBytes {
		t.Fatalf("compressed trace %d bytes above the cap", n)
	}
	p, err := Decode(cm, hash)
	if err != nil || !p.TraceTruncated {
		t.Fatalf("truncated %v (%v)", p != nil && p.TraceTruncated, err)
	}
	tr, err := Trace(cm, 1<<30)
	if err != nil || len(tr) == 0 || !strings.HasSuffix(string(tr), "\n") || !strings.HasPrefix(b.String(), string(tr)) {
		t.Fatalf("the kept trace must be a prefix cut at a line end (%d bytes, %v)", len(tr), err)
	}
}

// TestWriteFillsPreparedConfigMap: Write fills the ConfigMap the operator prepared, refuses one
// prepared for another input and never creates one.
func TestWriteFillsPreparedConfigMap(t *testing.T) {
	prepared := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "run-result",
		Annotations: map[string]string{AnnotationInputHash: hash}}}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other-result",
		Annotations: map[string]string{AnnotationInputHash: strings.Repeat("cd", 32)}}}
	c := fake.NewClientBuilder().WithObjects(prepared, other).Build()
	ctx := context.Background()

	path := filepath.Join(t.TempDir(), "result.json")
	js, err := json.Marshal(success())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, js, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := readResultFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(ctx, c, "ns", "run-result", res, nil); err != nil {
		t.Fatal(err)
	}
	var got corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKeyFromObject(prepared), &got); err != nil {
		t.Fatal(err)
	}
	if p, err := Decode(&got, hash); err != nil || p.Result.Status.Metrics.CompletedRequests != 40 {
		t.Fatalf("decoded %+v (%v)", p, err)
	}
	if err := Write(ctx, c, "ns", "other-result", res, nil); !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("writing into another run's ConfigMap: %v", err)
	}
	if err := Write(ctx, c, "ns", "absent", res, nil); err == nil {
		t.Fatal("Write created a ConfigMap")
	}
	if _, err := readResultFile(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("a missing result file was read")
	}
}

// TestWriteRetriesTransientFailures: a conflict is retried; a refusal is not.
func TestWriteRetriesTransientFailures(t *testing.T) {
	prepared := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "run-result",
		Annotations: map[string]string{AnnotationInputHash: hash}}}
	failures := 2
	calls := 0
	c := interceptor.NewClient(fake.NewClientBuilder().WithObjects(prepared).Build(), interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			calls++
			if calls <= failures {
				return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, obj.GetName(), errors.New("changed"))
			}
			return c.Update(ctx, obj, opts...)
		},
	})
	if err := writeWithRetries(context.Background(), c, "ns", "run-result", success(), nil, time.Millisecond); err != nil || calls != 3 {
		t.Fatalf("err %v after %d calls, want success on the third", err, calls)
	}
	calls = 0
	if err := writeWithRetries(context.Background(), c, "ns", "absent", success(), nil, time.Millisecond); err == nil || calls != 0 {
		t.Fatalf("a missing ConfigMap must fail at once: %v, %d updates", err, calls)
	}
}
