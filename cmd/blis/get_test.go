package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// getNow is the clock of the get tests; objects are created relative to it.
var getNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// getObjects are a small cluster: two Evaluations in default (one done, one queued), one in
// team-b, a study, a bundle, a cluster and a workload.
func getObjects() []client.Object {
	created := func(ago time.Duration) metav1.Time { return metav1.NewTime(getNow.Add(-ago)) }
	done := &blisv1alpha1.Evaluation{
		ObjectMeta: metav1.ObjectMeta{Name: "quickstart", Namespace: "default", CreationTimestamp: created(3 * time.Hour)},
		Spec:       blisv1alpha1.EvaluationSpec{Seeds: []int64{1, 2, 3}},
		Status: blisv1alpha1.EvaluationStatus{
			Phase:         blisv1alpha1.PhaseSucceeded,
			Conditions:    []metav1.Condition{{Type: blisv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Completed", LastTransitionTime: created(time.Hour)}},
			Attempts:      1,
			InputHash:     "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			EngineVersion: "v0.3.0",
			FitnessScore:  ptr.To(0.8125),
			Metrics: &blisv1alpha1.EvaluationMetrics{TtftP99Ms: 212.5, E2eP99Ms: 4180.25, ResponsesPerSec: 59.75,
				SloAttainment: 0.97, CacheHitRate: 0.4375},
		},
	}
	queued := &blisv1alpha1.Evaluation{
		ObjectMeta: metav1.ObjectMeta{Name: "big-run", Namespace: "default", CreationTimestamp: created(90 * time.Second)},
		Status:     blisv1alpha1.EvaluationStatus{Phase: blisv1alpha1.PhaseQueued},
	}
	other := &blisv1alpha1.Evaluation{
		ObjectMeta: metav1.ObjectMeta{Name: "a-run", Namespace: "team-b", CreationTimestamp: created(50 * time.Hour)},
		Status: blisv1alpha1.EvaluationStatus{Phase: blisv1alpha1.PhaseFailed, Attempts: 2,
			Conditions: []metav1.Condition{{Type: blisv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Failed", LastTransitionTime: created(time.Hour)}}},
	}
	study := &blisv1alpha1.PolicyStudy{
		ObjectMeta: metav1.ObjectMeta{Name: "routing-sweep", Namespace: "default", CreationTimestamp: created(20 * time.Minute)},
		Spec: blisv1alpha1.PolicyStudySpec{Algorithm: blisv1alpha1.StudyAlgorithm{Name: "grid"},
			Budget: blisv1alpha1.StudyBudget{MaxEvaluations: 12}},
		Status: blisv1alpha1.PolicyStudyStatus{
			Generation:      1,
			Evaluations:     blisv1alpha1.StudyCounters{Created: 12, Succeeded: 11, Failed: 1},
			Best:            &blisv1alpha1.StudyCandidate{Evaluation: "routing-sweep-g0-c0007", FitnessScore: ptr.To(0.91)},
			ParetoFrontSize: 3,
			Conditions:      []metav1.Condition{{Type: blisv1alpha1.StudyConditionCompleted, Status: metav1.ConditionTrue, Reason: "BudgetExhausted", LastTransitionTime: created(time.Minute)}},
		},
	}
	bundle := &blisv1alpha1.PolicyBundle{
		ObjectMeta: metav1.ObjectMeta{Name: "llm-d-default", Namespace: "default", CreationTimestamp: created(48 * time.Hour)},
		Spec: blisv1alpha1.PolicyBundleSpec{
			Admission: &blisv1alpha1.AdmissionPolicy{Policy: "always-admit"},
			Routing:   &blisv1alpha1.RoutingPolicy{Policy: "weighted"},
			Scheduler: "priority-fcfs",
		},
	}
	rate := 60.0
	n := int64(3000)
	cl := &blisv1alpha1.SimulatedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "llama8b-h100", Namespace: "default", CreationTimestamp: created(48 * time.Hour)},
		Spec: blisv1alpha1.SimulatedClusterSpec{
			Model: blisv1alpha1.ModelSpec{Name: "meta-llama/llama-3.1-8b-instruct"}, GPU: "H100",
			Engine: blisv1alpha1.VLLMEngineSpec{TensorParallelSize: 1},
			Pools: []blisv1alpha1.ReplicaPoolSpec{{Name: "prefill", Role: blisv1alpha1.PoolPrefill, Replicas: 2},
				{Name: "decode", Role: blisv1alpha1.PoolDecode, Replicas: 4}},
		},
	}
	wl := &blisv1alpha1.WorkloadSpec{
		ObjectMeta: metav1.ObjectMeta{Name: "two-tenants", Namespace: "default", CreationTimestamp: created(48 * time.Hour)},
		Spec: blisv1alpha1.WorkloadSpecSpec{Category: "language", AggregateRate: &rate, NumRequests: &n,
			Clients:           []blisv1alpha1.ClientSpec{{ID: "a"}, {ID: "b"}},
			GoodputSloTargets: map[string]blisv1alpha1.SLODimTargets{"critical": {TTFT: 200}, "batch": {E2E: 60000}}},
	}
	return []client.Object{done, queued, other, study, bundle, cl, wl}
}

// getCLI runs `blis get args...` against the fake cluster at getNow.
func getCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	saved := getClock
	getClock = func() time.Time { return getNow }
	defer func() { getClock = saved }()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"get"}, args...))
	err := root.Execute()
	return out.String(), errOut.String(), err
}

func TestGetTables(t *testing.T) {
	fakeCluster(t, getObjects()...)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"evaluations"}, `
NAME         PHASE       READY    FITNESS   TTFT-P99-MS   E2E-P99-MS   AGE
big-run      Queued      <none>   <none>    <none>        <none>       90s
quickstart   Succeeded   True     0.8125    212.5         4180.25      3h
`},
		{[]string{"ev", "-o", "wide"}, `
NAME         PHASE       READY    FITNESS   TTFT-P99-MS   E2E-P99-MS   RPS      SLO-ATTAINMENT   CACHE-HIT-RATE   SEEDS   ATTEMPTS   CACHED-FROM   ENGINE   INPUT-HASH     AGE
big-run      Queued      <none>   <none>    <none>        <none>       <none>   <none>           <none>           1       0          <none>        <none>   <none>         90s
quickstart   Succeeded   True     0.8125    212.5         4180.25      59.75    0.97             0.4375           3       1          <none>        v0.3.0   0123456789ab   3h
`},
		{[]string{"evaluation", "-A"}, `
NAMESPACE   NAME         PHASE       READY    FITNESS   TTFT-P99-MS   E2E-P99-MS   AGE
default     big-run      Queued      <none>   <none>    <none>        <none>       90s
default     quickstart   Succeeded   True     0.8125    212.5         4180.25      3h
team-b      a-run        Failed      False    <none>    <none>        <none>       2d2h
`},
		{[]string{"ev", "-n", "team-b"}, `
NAME    PHASE    READY   FITNESS   TTFT-P99-MS   E2E-P99-MS   AGE
a-run   Failed   False   <none>    <none>        <none>       2d2h
`},
		{[]string{"studies", "-o", "wide"}, `
NAME            ALGORITHM   CREATED   SUCCEEDED   FAILED   BEST   COMPLETED   RUNNING   BUDGET   GENERATION   FRONT   WINNER                   AGE
routing-sweep   grid        12        11          1        0.91   True        0         12       1            3       routing-sweep-g0-c0007   20m
`},
		{[]string{"pb"}, `
NAME            ADMISSION      ROUTING    SCHEDULER       READY    AGE
llm-d-default   always-admit   weighted   priority-fcfs   <none>   2d
`},
		{[]string{"sc", "-o", "wide"}, `
NAME           MODEL                              GPU    TP   REPLICAS   READY    LATENCY   POOLS                               AUTOSCALING   KV-TIERS   AGE
llama8b-h100   meta-llama/llama-3.1-8b-instruct   H100   1    6          <none>   <none>    prefill:prefill=2,decode:decode=4   <none>        0          2d
`},
		{[]string{"ws", "-o", "wide"}, `
NAME          CATEGORY   RATE   REQUESTS   READY    SOURCE      HORIZON-S   SLO-CLASSES      AGE
two-tenants   language   60     3000       <none>   clients:2   <none>      batch,critical   2d
`},
		{[]string{"ev", "quickstart"}, `
NAME         PHASE       READY   FITNESS   TTFT-P99-MS   E2E-P99-MS   AGE
quickstart   Succeeded   True    0.8125    212.5         4180.25      3h
`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, _, err := getCLI(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.TrimPrefix(tc.want, "\n"); out != want {
				t.Errorf("got:\n%s\nwant:\n%s", out, want)
			}
		})
	}
}

func TestGetEmptyAndErrors(t *testing.T) {
	fakeCluster(t, getObjects()...)
	out, errOut, err := getCLI(t, "studies", "-n", "team-b")
	if err != nil || out != "" || errOut != "No resources found in team-b namespace.\n" {
		t.Errorf("empty list: %q %q %v", out, errOut, err)
	}
	if _, _, err := getCLI(t, "pods"); err == nil || !strings.Contains(err.Error(), `unknown resource type "pods"`) {
		t.Errorf("unknown type: %v", err)
	}
	if _, _, err := getCLI(t, "ev", "missing"); err == nil || !strings.Contains(err.Error(), `"missing" not found`) {
		t.Errorf("missing object: %v", err)
	}
	if _, _, err := getCLI(t, "ev", "-o", "table"); err == nil {
		t.Error("-o table accepted")
	}
	if _, _, err := getCLI(t, "ev", "quickstart", "-A"); err == nil {
		t.Error("a name with -A accepted")
	}
}

func TestGetYAMLAndJSON(t *testing.T) {
	fakeCluster(t, getObjects()...)
	out, _, err := getCLI(t, "ev", "quickstart", "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ev blisv1alpha1.Evaluation
	if err := yaml.UnmarshalStrict([]byte(out), &ev); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if ev.Kind != "Evaluation" || ev.APIVersion != blisv1alpha1.GroupVersion.String() || ev.Name != "quickstart" ||
		ev.Status.InputHash != getObjects()[0].(*blisv1alpha1.Evaluation).Status.InputHash || len(ev.ManagedFields) != 0 {
		t.Errorf("object read back: %+v", ev)
	}
	out, _, err = getCLI(t, "evaluations", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Kind  string                    `json:"kind"`
		Items []blisv1alpha1.Evaluation `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "List" || len(list.Items) != 2 || list.Items[0].Name != "big-run" || list.Items[1].Name != "quickstart" ||
		list.Items[0].Kind != "Evaluation" {
		t.Errorf("list: %+v", list)
	}
}
