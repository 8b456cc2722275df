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
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/export"
	"github.com/inference-sim/blis-operator/internal/evaluation"
	"github.com/inference-sim/blis-operator/internal/promote"
)

// startPromotionManager runs a manager with every reconciler (Evaluations run in-process)
// plus the promotion reconcilers, until the test ends.
func startPromotionManager(t *testing.T) {
	t.Helper()
	startManagerWith(t, env.Config, Config{DefaultExecutor: blisv1alpha1.ExecutorInProcess, InProcessWorkers: 2}, SetupPromotionWithManager)
}

// promotionOf waits until the object's promoted annotation names cm and the ConfigMap holds
// the content it names, and returns the ConfigMap.
func promotionOf(t *testing.T, obj client.Object, cm string, differentFrom string) *corev1.ConfigMap {
	t.Helper()
	var out corev1.ConfigMap
	eventually(t, fmt.Sprintf("%s promoted to %s", obj.GetName(), cm), func() (bool, string) {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err.Error()
		}
		a := obj.GetAnnotations()
		v := a[promote.AnnotationPromoted]
		if !strings.HasPrefix(v, cm+"@") || v == differentFrom {
			return false, fmt.Sprintf("annotations %v", a)
		}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: obj.GetNamespace(), Name: cm}, &out); err != nil {
			return false, err.Error()
		}
		return contentHash(out.Data) == strings.TrimPrefix(v, cm+"@"), "ConfigMap content differs from " + v
	})
	return &out
}

// eventWith waits for an event about name with reason whose note contains every part.
func eventWith(t *testing.T, ns, name, reason string, parts ...string) {
	t.Helper()
	eventually(t, fmt.Sprintf("event %s on %s", reason, name), func() (bool, string) {
		var list eventsv1.EventList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Name != name || e.Reason != reason {
				continue
			}
			seen = append(seen, e.Note)
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(e.Note, p)
			}
			if ok {
				return true, ""
			}
		}
		return false, fmt.Sprintf("events: %q", seen)
	})
}

func TestPromotion(t *testing.T) {
	startPromotionManager(t)
	ctx := context.Background()

	t.Run("PolicyBundle", func(t *testing.T) {
		ns := newNamespace(t)
		cl := testCluster(ns, "cluster")
		pb := testPolicy(ns, "winner")
		pb.Spec.Routing = &blisv1alpha1.RoutingPolicy{Policy: "weighted", Scorers: []blisv1alpha1.Scorer{
			{Name: "prefix-cache-scorer", Weight: 3}, {Name: "queue-scorer", Weight: 2}}}
		pb.Annotations = map[string]string{promote.AnnotationPromote: "winner-llm-d", promote.AnnotationCluster: "cluster",
			promote.AnnotationTarget: "llm-d-v0.9"}
		create(t, cl, pb)

		cm := promotionOf(t, pb, "winner-llm-d", "")
		epp := cm.Data[export.FileEPPConfig]
		if !strings.Contains(epp, "kind: EndpointPickerConfig") || !strings.Contains(epp, "weight: 3") || !strings.Contains(epp, "apiVersion: llm-d.ai/v1alpha1") {
			t.Fatalf("%s:\n%s", export.FileEPPConfig, epp)
		}
		if !strings.Contains(cm.Data[export.FileModelServers], "replicas: 2") {
			t.Fatalf("%s does not have the cluster's pool:\n%s", export.FileModelServers, cm.Data[export.FileModelServers])
		}
		if owner := metav1.GetControllerOf(cm); owner == nil || owner.Kind != "PolicyBundle" || owner.UID != pb.UID {
			t.Fatalf("owner %+v", owner)
		}
		if cm.Labels[promote.LabelSourceKind] != "PolicyBundle" || cm.Labels[promote.LabelSourceName] != "winner" ||
			cm.Labels[LabelManagedBy] != ManagedByValue || cm.Annotations[promote.AnnotationTarget] != "llm-d-v0.9" {
			t.Fatalf("labels %v annotations %v", cm.Labels, cm.Annotations)
		}
		if _, warned := cm.Data[export.FileWarnings]; warned {
			t.Fatalf("an exact bundle has warnings: %s", cm.Data[export.FileWarnings])
		}
		eventWith(t, ns, "winner", ReasonPromoted, "winner-llm-d", "llm-d-v0.9")

		// Nothing changed: a reconcile writes nothing and records nothing.
		first := pb.Annotations[promote.AnnotationPromoted]
		rec := events.NewFakeRecorder(8)
		r := &PromotionReconciler{Client: env.Client, APIReader: env.Client, Scheme: env.Scheme, Recorder: rec, Kind: evaluation.KindPolicyBundle}
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pb)}); err != nil {
			t.Fatal(err)
		}
		var again corev1.ConfigMap
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &again); err != nil {
			t.Fatal(err)
		}
		if again.ResourceVersion != cm.ResourceVersion || len(rec.Events) != 0 {
			t.Fatalf("an unchanged promotion wrote the ConfigMap (%s -> %s) or recorded %d events", cm.ResourceVersion, again.ResourceVersion, len(rec.Events))
		}

		// The bundle changes: a new export.
		updateFresh(t, pb, func(p *blisv1alpha1.PolicyBundle) { p.Spec.Routing.Scorers[0].Weight = 5 })
		cm = promotionOf(t, pb, "winner-llm-d", first)
		if !strings.Contains(cm.Data[export.FileEPPConfig], "weight: 5") {
			t.Fatalf("the new weight is not exported:\n%s", cm.Data[export.FileEPPConfig])
		}

		// The cluster changes: a new export with its engine settings.
		second := pb.Annotations[promote.AnnotationPromoted]
		updateFresh(t, cl, func(c *blisv1alpha1.SimulatedCluster) { c.Spec.Engine.MaxNumSeqs = 96 })
		cm = promotionOf(t, pb, "winner-llm-d", second)
		if !strings.Contains(cm.Data[export.FileModelServers], "--max-num-seqs=96") {
			t.Fatalf("the cluster change is not exported:\n%s", cm.Data[export.FileModelServers])
		}
	})

	t.Run("DisaggregatedCluster", func(t *testing.T) {
		ns := newNamespace(t)
		cl := testCluster(ns, "pd")
		cl.Spec.Pools = []blisv1alpha1.ReplicaPoolSpec{
			{Name: "prefill", Role: blisv1alpha1.PoolPrefill, Replicas: 1},
			{Name: "decode", Role: blisv1alpha1.PoolDecode, Replicas: 3},
		}
		cl.Spec.KVTransfer = &blisv1alpha1.KVTransferSpec{BandwidthGBps: 25, Decider: "prefix-threshold", DirectDecodeThreshold: 31}
		pb := testPolicy(ns, "pd-bundle")
		pb.Spec.Routing = &blisv1alpha1.RoutingPolicy{Policy: "weighted", Scorers: []blisv1alpha1.Scorer{{Name: "prefix-cache-scorer", Weight: 1}}}
		pb.Annotations = map[string]string{promote.AnnotationPromote: "pd-llm-d", promote.AnnotationCluster: "pd"}
		create(t, cl, pb)
		cm := promotionOf(t, pb, "pd-llm-d", "")
		for _, s := range []string{"disagg-profile-handler", "prefix-based-pd-decider", "nonCachedTokens: 32"} {
			if !strings.Contains(cm.Data[export.FileEPPConfig], s) {
				t.Fatalf("%s lacks %q:\n%s", export.FileEPPConfig, s, cm.Data[export.FileEPPConfig])
			}
		}
		if !strings.Contains(cm.Data[export.FileModelServers], "llm-d.ai/role: decode") {
			t.Fatalf("%s:\n%s", export.FileModelServers, cm.Data[export.FileModelServers])
		}
	})

	t.Run("SucceededEvaluation", func(t *testing.T) {
		ns := newNamespace(t)
		createInputs(t, ns)
		ev := testEval(ns, "run", blisv1alpha1.ExecutorInProcess)
		ev.Annotations = map[string]string{promote.AnnotationPromote: "run-llm-d"}
		create(t, ev)
		waitCondition(t, ns, "run", ConditionSucceeded, metav1.ConditionTrue, "")

		cm := promotionOf(t, ev, "run-llm-d", "")
		if owner := metav1.GetControllerOf(cm); owner == nil || owner.Kind != "Evaluation" || owner.UID != ev.UID {
			t.Fatalf("owner %+v", owner)
		}
		if cm.Labels[promote.LabelSourceKind] != "Evaluation" || cm.Annotations[promote.AnnotationSource] != "Evaluation/run" {
			t.Fatalf("labels %v annotations %v", cm.Labels, cm.Annotations)
		}
		// The default policy routes round-robin: llm-d has a random picker instead.
		warnings := cm.Data[export.FileWarnings]
		if !strings.Contains(warnings, "routing (approximation): round-robin") {
			t.Fatalf("%s: %q", export.FileWarnings, warnings)
		}
		if !strings.Contains(cm.Data[export.FileModelServers], "replicas: 2") {
			t.Fatalf("%s:\n%s", export.FileModelServers, cm.Data[export.FileModelServers])
		}
		eventWith(t, ns, "run", ReasonPromoted, "run-llm-d", "routing (approximation): round-robin")

		// The referenced bundle changes after the run: its new content was not simulated, so
		// the promotion is refused and the ConfigMap keeps what ran.
		pb := &blisv1alpha1.PolicyBundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "policy"}}
		updateFresh(t, pb, func(p *blisv1alpha1.PolicyBundle) {
			p.Spec.Routing = &blisv1alpha1.RoutingPolicy{Policy: "weighted", Scorers: []blisv1alpha1.Scorer{{Name: "queue-scorer", Weight: 1}}}
		})
		updateFresh(t, ev, func(e *blisv1alpha1.Evaluation) { e.Annotations["touch"] = "1" })
		waitAnnotation(t, ev, promote.AnnotationError, "changed after it ran")
		var kept corev1.ConfigMap
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &kept); err != nil {
			t.Fatal(err)
		}
		if kept.ResourceVersion != cm.ResourceVersion {
			t.Fatal("the ConfigMap was rewritten from inputs the Evaluation did not run")
		}
	})

	t.Run("Refusals", func(t *testing.T) {
		ns := newNamespace(t)
		foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team-epp"}, Data: map[string]string{"epp-config.yaml": "hand written"}}
		pb := testPolicy(ns, "bundle")
		pb.Annotations = map[string]string{promote.AnnotationPromote: "team-epp", promote.AnnotationCluster: "cluster"}
		lone := testPolicy(ns, "lone")
		lone.Annotations = map[string]string{promote.AnnotationPromote: "lone-llm-d"}
		create(t, testCluster(ns, "cluster"), foreign, pb, lone)

		waitAnnotation(t, pb, promote.AnnotationError, "ConfigMap team-epp exists and is not owned by PolicyBundle bundle")
		eventWith(t, ns, "bundle", ReasonPromotionConflict, "team-epp", "not overwritten")
		var cur corev1.ConfigMap
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(foreign), &cur); err != nil {
			t.Fatal(err)
		}
		if cur.Data["epp-config.yaml"] != "hand written" || len(cur.OwnerReferences) != 0 {
			t.Fatalf("the foreign ConfigMap was changed: %+v", cur)
		}
		waitAnnotation(t, lone, promote.AnnotationError, promote.AnnotationCluster)
		eventWith(t, ns, "lone", ReasonPromotionFailed, promote.AnnotationCluster)

		// Choosing a free name promotes, and the error annotation goes away.
		updateFresh(t, pb, func(p *blisv1alpha1.PolicyBundle) { p.Annotations[promote.AnnotationPromote] = "bundle-llm-d" })
		promotionOf(t, pb, "bundle-llm-d", "")
		eventually(t, "the error annotation removed", func() (bool, string) {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pb), pb); err != nil {
				return false, err.Error()
			}
			_, has := pb.Annotations[promote.AnnotationError]
			return !has, fmt.Sprintf("%v", pb.Annotations)
		})
	})
}

// waitAnnotation waits until annotation key of obj contains part.
func waitAnnotation(t *testing.T, obj client.Object, key, part string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s of %s containing %q", key, obj.GetName(), part), func() (bool, string) {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err.Error()
		}
		return strings.Contains(obj.GetAnnotations()[key], part), fmt.Sprintf("%v", obj.GetAnnotations())
	})
}
