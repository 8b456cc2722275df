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
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/export"
	"github.com/inference-sim/blis-operator/internal/promote"
)

// blisPolicyFile is a BLIS policy file whose queue-depth scorer has weight queueWeight.
func blisPolicyFile(queueWeight int) string {
	return fmt.Sprintf(`admission:
  policy: always-admit
routing:
  policy: weighted
  scorers:
    - name: precise-prefix-cache
      weight: 2.0
    - name: queue-depth
      weight: %d.0
priority:
  policy: constant
scheduler: fcfs
`, queueWeight)
}

// updateConfigMap sets one key of a ConfigMap.
func updateConfigMap(t *testing.T, ns, name, key, value string) {
	t.Helper()
	var cm corev1.ConfigMap
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data[key] = value
	if err := env.Client.Update(context.Background(), &cm); err != nil {
		t.Fatal(err)
	}
}

// countEvents counts the events about name with reason.
func countEvents(t *testing.T, ns, name, reason string) int {
	t.Helper()
	var list eventsv1.EventList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			n++
		}
	}
	return n
}

// TestPromotionFollowsReferencedConfigMap: a promoted PolicyBundle whose policy is a BLIS file
// in a ConfigMap is exported again when that ConfigMap changes, and only when its export
// changes; a ConfigMap it does not reference is not followed.
func TestPromotionFollowsReferencedConfigMap(t *testing.T) {
	startPromotionManager(t)
	ctx := context.Background()
	ns := newNamespace(t)

	pb := &blisv1alpha1.PolicyBundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from-file", Annotations: map[string]string{
		promote.AnnotationPromote: "from-file-llm-d", promote.AnnotationCluster: "cluster"}},
		Spec: blisv1alpha1.PolicyBundleSpec{BlisConfigMapRef: &blisv1alpha1.ConfigMapKeyReference{Name: "policy-file", Key: "policy.yaml"}}}
	unrelated := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unrelated"}, Data: map[string]string{"policy.yaml": blisPolicyFile(7)}}
	create(t, testCluster(ns, "cluster"), unrelated, pb)

	// The referenced ConfigMap does not exist yet: the promotion fails, and its creation alone
	// promotes the bundle.
	eventually(t, "promote-error naming the missing ConfigMap", func() (bool, string) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pb), pb); err != nil {
			return false, err.Error()
		}
		a := pb.Annotations
		return strings.HasPrefix(a[promote.AnnotationError], ReasonPromotionFailed) && strings.Contains(a[promote.AnnotationError], "policy-file"),
			fmt.Sprintf("annotations %v", a)
	})
	create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "policy-file"}, Data: map[string]string{"policy.yaml": blisPolicyFile(1)}})
	first := promotionOf(t, pb, "from-file-llm-d", "")
	if _, failed := pb.Annotations[promote.AnnotationError]; failed {
		t.Fatalf("promote-error stayed after the promotion: %v", pb.Annotations)
	}
	if epp := first.Data[export.FileEPPConfig]; !strings.Contains(epp, "weight: 2") || strings.Contains(epp, "weight: 4") {
		t.Fatalf("%s of the first policy file:\n%s", export.FileEPPConfig, epp)
	}
	promoted := pb.Annotations[promote.AnnotationPromoted]
	eventWith(t, ns, pb.Name, ReasonPromoted, strings.TrimPrefix(promoted, "from-file-llm-d@"))

	// Every write to the export from here on is seen.
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	watchCtx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	w, err := wc.Watch(watchCtx, &corev1.ConfigMapList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": "from-file-llm-d"},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: first.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// Changes that leave the export as it is: a ConfigMap the bundle does not reference, and a
	// key of the referenced ConfigMap the bundle does not read. The referenced ConfigMap's
	// change wakes the reconciler, which finds the same export and writes nothing.
	updateConfigMap(t, ns, "unrelated", "policy.yaml", blisPolicyFile(9))
	updateConfigMap(t, ns, "policy-file", "notes.txt", "not read by the bundle")

	// The policy file changes: the export follows, with an event naming the new content.
	updateConfigMap(t, ns, "policy-file", "policy.yaml", blisPolicyFile(4))
	second := promotionOf(t, pb, "from-file-llm-d", promoted)
	if epp := second.Data[export.FileEPPConfig]; !strings.Contains(epp, "weight: 4") {
		t.Fatalf("%s after the policy file changed:\n%s", export.FileEPPConfig, epp)
	}
	eventWith(t, ns, pb.Name, ReasonPromoted, strings.TrimPrefix(pb.Annotations[promote.AnnotationPromoted], "from-file-llm-d@"))
	if n := countEvents(t, ns, pb.Name, ReasonPromoted); n != 2 {
		t.Fatalf("%d Promoted events, want 2 (the first export and the one after the policy file changed)", n)
	}

	// The export was written once since the first promotion: for the policy file's change.
	writes := 0
	for done := false; !done; {
		e, open := <-w.ResultChan()
		if !open {
			t.Fatalf("the watch of the export ended before it showed the write of %s", second.ResourceVersion)
		}
		cm, ok := e.Object.(*corev1.ConfigMap)
		if !ok || e.Type != watch.Modified {
			t.Fatalf("unexpected watch event %s %T", e.Type, e.Object)
		}
		writes++
		done = cm.ResourceVersion == second.ResourceVersion
	}
	if writes != 1 {
		t.Fatalf("the export was written %d times after the first promotion, want 1", writes)
	}
}

// TestPolicyStudyPromotionFollowsReferencedConfigMap: a study's promoted winner whose policy is
// a BLIS file in a ConfigMap is exported again when that ConfigMap changes; the inputs are
// recorded in status.promotion, and a change that leaves them as they are writes nothing.
func TestPolicyStudyPromotionFollowsReferencedConfigMap(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	contentionInputs(t, ns)
	create(t,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "policy-file"}, Data: map[string]string{"policy.yaml": blisPolicyFile(1)}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unrelated"}, Data: map[string]string{"policy.yaml": blisPolicyFile(7)}},
		&blisv1alpha1.PolicyBundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cand"},
			Spec: blisv1alpha1.PolicyBundleSpec{BlisConfigMapRef: &blisv1alpha1.ConfigMapKeyReference{Name: "policy-file", Key: "policy.yaml"}}})
	startStudyManager(t, studyCfg())
	objectives := []blisv1alpha1.Objective{{Name: "ttftP99Ms", Direction: "minimize", Weight: 1}}
	ps := &blisv1alpha1.PolicyStudy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "board", Annotations: map[string]string{blisv1alpha1.AnnotationPromote: "1"}},
		Spec: blisv1alpha1.PolicyStudySpec{
			ClusterRef: blisv1alpha1.LocalObjectReference{Name: "small"}, WorkloadRef: blisv1alpha1.LocalObjectReference{Name: "contention"},
			Objectives: objectives,
			Budget:     blisv1alpha1.StudyBudget{MaxEvaluations: 0},
			Promotion:  &blisv1alpha1.PromotionSpec{ConfigMapName: "board-llm-d", OnCompletion: ptr.To(false)},
		},
	}
	create(t, ps, &blisv1alpha1.Evaluation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "opt", Labels: map[string]string{blisv1alpha1.LabelStudy: "board"}},
		Spec: blisv1alpha1.EvaluationSpec{
			ClusterRef: &blisv1alpha1.LocalObjectReference{Name: "small"}, WorkloadRef: &blisv1alpha1.LocalObjectReference{Name: "contention"},
			PolicyRef: &blisv1alpha1.LocalObjectReference{Name: "cand"}, Objectives: objectives,
			Execution: blisv1alpha1.ExecutionSpec{Executor: blisv1alpha1.ExecutorInProcess},
		},
	})

	first := waitStudy(t, ns, "board", blisv1alpha1.StudyConditionPromoted).Status.Promotion
	if first == nil || first.Evaluation != "opt" || first.InputHash == "" || len(first.ConfigMaps) != 1 || first.ConfigMaps[0] != "policy-file" {
		t.Fatalf("status.promotion %+v", first)
	}
	var exported corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "board-llm-d"}, &exported); err != nil {
		t.Fatal(err)
	}
	if epp := exported.Data[export.FileEPPConfig]; strings.Contains(epp, "weight: 4") {
		t.Fatalf("%s of the first policy file:\n%s", export.FileEPPConfig, epp)
	}
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	watchCtx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	w, err := wc.Watch(watchCtx, &corev1.ConfigMapList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": "board-llm-d"},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: exported.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	updateConfigMap(t, ns, "unrelated", "policy.yaml", blisPolicyFile(9))
	updateConfigMap(t, ns, "policy-file", "notes.txt", "not read by the winner")
	updateConfigMap(t, ns, "policy-file", "policy.yaml", blisPolicyFile(4))

	var cur blisv1alpha1.PolicyStudy
	eventually(t, "the winner exported again", func() (bool, string) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ps), &cur); err != nil {
			return false, err.Error()
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "board-llm-d"}, &exported); err != nil {
			return false, err.Error()
		}
		p := cur.Status.Promotion
		return p != nil && p.InputHash != first.InputHash && strings.Contains(exported.Data[export.FileEPPConfig], "weight: 4"),
			fmt.Sprintf("status.promotion %+v", p)
	})
	if p := cur.Status.Promotion; p.Evaluation != "opt" || p.Request != "1" || !p.Time.After(first.Time.Time) && !p.Time.Equal(first.Time) {
		t.Errorf("status.promotion %+v after %+v", p, first)
	}
	eventWith(t, ns, "board", blisv1alpha1.StudyReasonPromoted, "written again", short(cur.Status.Promotion.InputHash))

	writes := 0
	for done := false; !done; {
		e, open := <-w.ResultChan()
		if !open {
			t.Fatalf("the watch of the export ended before it showed the write of %s", exported.ResourceVersion)
		}
		cm, ok := e.Object.(*corev1.ConfigMap)
		if !ok || e.Type != watch.Modified {
			t.Fatalf("unexpected watch event %s %T", e.Type, e.Object)
		}
		writes++
		done = cm.ResourceVersion == exported.ResourceVersion
	}
	if writes != 1 {
		t.Fatalf("the export was written %d times after the first promotion, want 1", writes)
	}
}
