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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/export"
)

// watchFrom watches the objects of list's kind named name in ns, from resourceVersion rv on,
// until the test ends.
func watchFrom(t *testing.T, list client.ObjectList, ns, name, rv string) watch.Interface {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	w, err := wc.Watch(ctx, list, client.InNamespace(ns), client.MatchingFields{"metadata.name": name},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// writesUntil counts the modifications w shows up to and including the one that gives its
// object resourceVersion rv.
func writesUntil(t *testing.T, w watch.Interface, rv string) int {
	t.Helper()
	writes := 0
	for {
		e, open := <-w.ResultChan()
		if !open {
			t.Fatalf("the watch ended before it showed the write of %s", rv)
		}
		o, ok := e.Object.(client.Object)
		if !ok || e.Type != watch.Modified {
			t.Fatalf("unexpected watch event %s %T", e.Type, e.Object)
		}
		writes++
		if o.GetResourceVersion() == rv {
			return writes
		}
	}
}

// TestPolicyStudyPromotionFollowsClusterAndWorkload: the promoted winner of a completed study
// follows its SimulatedCluster and WorkloadSpec. An edit of another cluster changes nothing; an
// edit of the workload changes status.promotion.inputHash but not the export, which is not
// rewritten; an edit of the cluster's replicas rewrites the export once, with a Promoted event
// naming the new hash. Each edit writes the study's status once. A deleted workload fails the
// promotion until it is created again.
func TestPolicyStudyPromotionFollowsClusterAndWorkload(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	contentionInputs(t, ns)
	create(t, testCluster(ns, "other"))
	startStudyManager(t, studyCfg())
	ps := &blisv1alpha1.PolicyStudy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "follow"},
		Spec: blisv1alpha1.PolicyStudySpec{
			ClusterRef: blisv1alpha1.LocalObjectReference{Name: "small"}, WorkloadRef: blisv1alpha1.LocalObjectReference{Name: "contention"},
			BasePolicy: prefixOnlyBase(),
			SearchSpace: []blisv1alpha1.SearchParameter{
				{Path: "scheduler", Type: blisv1alpha1.ParameterChoice, Values: []string{"fcfs", "sjf"}},
			},
			Objectives: []blisv1alpha1.Objective{{Name: "ttftP99Ms", Direction: "minimize", Weight: 1}},
			Algorithm:  blisv1alpha1.StudyAlgorithm{Name: blisv1alpha1.AlgorithmGrid},
			Budget:     blisv1alpha1.StudyBudget{MaxEvaluations: 2},
			Promotion:  &blisv1alpha1.PromotionSpec{ConfigMapName: "follow-llm-d"},
		},
	}
	create(t, ps)
	waitStudy(t, ns, "follow", blisv1alpha1.StudyConditionCompleted)
	done := waitStudy(t, ns, "follow", blisv1alpha1.StudyConditionPromoted)
	first := done.Status.Promotion
	if first == nil || first.InputHash == "" || first.Time == nil {
		t.Fatalf("status.promotion %+v", first)
	}
	var exported corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "follow-llm-d"}, &exported); err != nil {
		t.Fatal(err)
	}
	if servers := exported.Data[export.FileModelServers]; !strings.Contains(servers, "replicas: 3") {
		t.Fatalf("%s of the 3-replica cluster:\n%s", export.FileModelServers, servers)
	}
	eventWith(t, ns, "follow", blisv1alpha1.StudyReasonPromoted)
	if n := countEvents(t, ns, "follow", blisv1alpha1.StudyReasonPromoted); n != 1 {
		t.Fatalf("%d Promoted events after the first promotion, want 1", n)
	}
	cmWatch := watchFrom(t, &corev1.ConfigMapList{}, ns, "follow-llm-d", exported.ResourceVersion)
	studyWatch := watchFrom(t, &blisv1alpha1.PolicyStudyList{}, ns, "follow", done.ResourceVersion)

	// Another cluster of the namespace: the study does not reference it.
	other := testCluster(ns, "other")
	updateFresh(t, other, func(c *blisv1alpha1.SimulatedCluster) { c.Spec.Pools[0].Replicas = 5 })

	// The workload: the winner's resolved input changes, its llm-d configuration does not.
	var cur blisv1alpha1.PolicyStudy
	updateFresh(t, contentionWorkload(t, ns), func(wl *blisv1alpha1.WorkloadSpec) { wl.Spec.Seed = ptr.To[int64](12) })
	eventually(t, "status.promotion.inputHash after the workload changed", func() (bool, string) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ps), &cur); err != nil {
			return false, err.Error()
		}
		p := cur.Status.Promotion
		return p != nil && p.InputHash != first.InputHash, fmt.Sprintf("status.promotion %+v", p)
	})
	afterWorkload := cur.Status.Promotion.DeepCopy()
	if !afterWorkload.Time.Equal(first.Time) || afterWorkload.Evaluation != first.Evaluation {
		t.Errorf("status.promotion %+v after the workload changed, from %+v (the export did not change)", afterWorkload, first)
	}
	if n := writesUntil(t, studyWatch, cur.ResourceVersion); n != 1 {
		t.Errorf("the study was written %d times for the workload's change, want 1", n)
	}

	// The cluster: its replicas are exported, so the ConfigMap is rewritten.
	updateFresh(t, &blisv1alpha1.SimulatedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "small"}},
		func(c *blisv1alpha1.SimulatedCluster) { c.Spec.Pools[0].Replicas = 4 })
	eventually(t, "the winner exported again after the cluster changed", func() (bool, string) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ps), &cur); err != nil {
			return false, err.Error()
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "follow-llm-d"}, &exported); err != nil {
			return false, err.Error()
		}
		p := cur.Status.Promotion
		return p != nil && p.InputHash != afterWorkload.InputHash && strings.Contains(exported.Data[export.FileModelServers], "replicas: 4"),
			fmt.Sprintf("status.promotion %+v", p)
	})
	if p := cur.Status.Promotion; p.Evaluation != first.Evaluation || p.Time.Before(first.Time) {
		t.Errorf("status.promotion %+v after %+v", p, first)
	}
	eventWith(t, ns, "follow", blisv1alpha1.StudyReasonPromoted, "written again", short(cur.Status.Promotion.InputHash))
	if n := countEvents(t, ns, "follow", blisv1alpha1.StudyReasonPromoted); n != 2 {
		t.Errorf("%d Promoted events, want 2 (the first promotion and the cluster's change)", n)
	}
	if n := writesUntil(t, studyWatch, cur.ResourceVersion); n != 1 {
		t.Errorf("the study was written %d times for the cluster's change, want 1", n)
	}
	if n := writesUntil(t, cmWatch, exported.ResourceVersion); n != 1 {
		t.Errorf("the export was written %d times after the first promotion, want 1", n)
	}

	// The workload deleted: the promotion fails; created again, the winner is promoted again.
	wl := contentionWorkload(t, ns)
	if err := env.Client.Delete(ctx, wl); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Promoted=False PromotionFailed after the workload was deleted", func() (bool, string) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ps), &cur); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, blisv1alpha1.StudyConditionPromoted)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == blisv1alpha1.StudyReasonPromotionFailed &&
			strings.Contains(c.Message, "contention"), describeStudy(&cur)
	})
	wl = contentionWorkload(t, ns)
	wl.Spec.Seed = ptr.To[int64](12)
	create(t, wl)
	waitStudy(t, ns, "follow", blisv1alpha1.StudyConditionPromoted)
}
