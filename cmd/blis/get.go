package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

func init() {
	subcommands = append(subcommands, newGetCommand)
}

// kubeResource is one kind of the project's resources as `blis get` lists it.
type kubeResource struct {
	// plural is the canonical name (evaluations); kind the Kind (Evaluation).
	plural, kind string
	// aliases are the other names accepted for it: singular, kubectl's short names, and the
	// short names of this command.
	aliases []string
	// newObject and newList make empty typed objects for the client.
	newObject func() client.Object
	newList   func() client.ObjectList
	// items returns the objects of a list.
	items func(client.ObjectList) []client.Object
	// columns are the table's columns between NAME and AGE; wide ones only with -o wide.
	columns []tableColumn
}

// tableColumn is one table column.
type tableColumn struct {
	header string
	wide   bool
	value  func(client.Object) string
}

// kubeResources are the kinds `blis get` knows, in the order help lists them.
var kubeResources = []*kubeResource{
	{
		plural: "evaluations", kind: "Evaluation",
		aliases:   []string{"evaluation", "ev", "eval", "evals"},
		newObject: func() client.Object { return &blisv1alpha1.Evaluation{} },
		newList:   func() client.ObjectList { return &blisv1alpha1.EvaluationList{} },
		items: func(l client.ObjectList) []client.Object {
			return itemsOf(l.(*blisv1alpha1.EvaluationList).Items)
		},
		columns: evaluationColumns,
	},
	{
		plural: "policystudies", kind: "PolicyStudy",
		aliases:   []string{"policystudy", "studies", "study", "ps", "pstudy"},
		newObject: func() client.Object { return &blisv1alpha1.PolicyStudy{} },
		newList:   func() client.ObjectList { return &blisv1alpha1.PolicyStudyList{} },
		items: func(l client.ObjectList) []client.Object {
			return itemsOf(l.(*blisv1alpha1.PolicyStudyList).Items)
		},
		columns: studyColumns,
	},
	{
		plural: "policybundles", kind: "PolicyBundle",
		aliases:   []string{"policybundle", "bundles", "bundle", "pb", "pbundle"},
		newObject: func() client.Object { return &blisv1alpha1.PolicyBundle{} },
		newList:   func() client.ObjectList { return &blisv1alpha1.PolicyBundleList{} },
		items: func(l client.ObjectList) []client.Object {
			return itemsOf(l.(*blisv1alpha1.PolicyBundleList).Items)
		},
		columns: bundleColumns,
	},
	{
		plural: "simulatedclusters", kind: "SimulatedCluster",
		aliases:   []string{"simulatedcluster", "clusters", "cluster", "sc", "simc", "simcluster"},
		newObject: func() client.Object { return &blisv1alpha1.SimulatedCluster{} },
		newList:   func() client.ObjectList { return &blisv1alpha1.SimulatedClusterList{} },
		items: func(l client.ObjectList) []client.Object {
			return itemsOf(l.(*blisv1alpha1.SimulatedClusterList).Items)
		},
		columns: clusterColumns,
	},
	{
		plural: "workloadspecs", kind: "WorkloadSpec",
		aliases:   []string{"workloadspec", "workloads", "workload", "ws", "wl", "wls"},
		newObject: func() client.Object { return &blisv1alpha1.WorkloadSpec{} },
		newList:   func() client.ObjectList { return &blisv1alpha1.WorkloadSpecList{} },
		items: func(l client.ObjectList) []client.Object {
			return itemsOf(l.(*blisv1alpha1.WorkloadSpecList).Items)
		},
		columns: workloadColumns,
	},
}

// itemsOf returns pointers to the items of a typed list.
func itemsOf[T any, PT interface {
	*T
	client.Object
}](items []T) []client.Object {
	out := make([]client.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}

// lookupResource finds a resource by any of its names (case-insensitive).
func lookupResource(name string) *kubeResource {
	name = strings.ToLower(name)
	for _, r := range kubeResources {
		if r.plural == name || stringIn(r.aliases, name) {
			return r
		}
	}
	return nil
}

// resourceNames lists the names `blis get` accepts, for messages.
func resourceNames() string {
	names := make([]string, 0, len(kubeResources))
	for _, r := range kubeResources {
		names = append(names, r.plural+" ("+strings.Join(r.aliases, ", ")+")")
	}
	return strings.Join(names, "; ")
}

// The -o values of `blis get`.
const (
	getWide = "wide"
	getYAML = "yaml"
	getJSON = "json"
)

// getFlags are the flags of `blis get`.
type getFlags struct {
	kube          kubeOptions
	output        string
	allNamespaces bool
}

// getClock is the time AGE is measured from (a variable so tests fix it).
var getClock = time.Now

func newGetCommand() *cobra.Command {
	f := &getFlags{}
	cmd := &cobra.Command{
		Use:   "get TYPE [NAME...]",
		Short: "List Evaluations, studies, bundles, clusters or workloads of a cluster, like kubectl get",
		Long: `Get lists the project's resources in a cluster, read with your kubeconfig ($KUBECONFIG or
~/.kube/config, --kubeconfig, --context, -n/--namespace as in kubectl), as a table with the
columns that matter for each kind: for Evaluations the phase, readiness, fitness and tail
latencies, and with -o wide the throughput, SLO attainment, cache hit rate, attempts, engine
version and input hash. Rows are sorted by namespace and name. -o yaml and -o json print the
objects.

TYPE is one of: ` + resourceNames() + `.`,
		Example: `  blis get evaluations
  blis get ev quickstart -o wide
  kubectl blis get studies -A
  kubectl blis get bundle my-bundle -o yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGet(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f, args, getClock())
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVarP(&f.output, "output", "o", "", "output: wide, yaml or json (default: the table)")
	fl.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "list the objects of every namespace")
	f.kube.addFlags(fl)
	return cmd
}

// runGet is `blis get`; now is the time ages are measured from.
func runGet(ctx context.Context, stdout, stderr io.Writer, f *getFlags, args []string, now time.Time) error {
	if ctx == nil {
		ctx = context.Background()
	}
	switch f.output {
	case "", getWide, getYAML, getJSON:
	default:
		return fmt.Errorf("-o %q is not an output (wide, yaml, json)", f.output)
	}
	r := lookupResource(args[0])
	if r == nil {
		return fmt.Errorf("unknown resource type %q; known: %s", args[0], resourceNames())
	}
	names := args[1:]
	if f.allNamespaces && len(names) > 0 {
		return fmt.Errorf("a name (%s) is looked up in one namespace; drop -A", strings.Join(names, ", "))
	}
	k, err := f.kube.connect()
	if err != nil {
		return err
	}
	var objs []client.Object
	if len(names) > 0 {
		for _, n := range names {
			o := r.newObject()
			if err := k.client.Get(ctx, client.ObjectKey{Namespace: k.namespace, Name: n}, o); err != nil {
				return err
			}
			objs = append(objs, o)
		}
	} else {
		l := r.newList()
		var opts []client.ListOption
		if !f.allNamespaces {
			opts = append(opts, client.InNamespace(k.namespace))
		}
		if err := k.client.List(ctx, l, opts...); err != nil {
			return err
		}
		objs = r.items(l)
		sort.Slice(objs, func(i, j int) bool {
			if objs[i].GetNamespace() != objs[j].GetNamespace() {
				return objs[i].GetNamespace() < objs[j].GetNamespace()
			}
			return objs[i].GetName() < objs[j].GetName()
		})
	}
	switch f.output {
	case getYAML, getJSON:
		return writeObjects(stdout, r, objs, len(names) == 1, f.output)
	}
	if len(objs) == 0 {
		if f.allNamespaces {
			fmt.Fprintln(stderr, "No resources found")
		} else {
			fmt.Fprintf(stderr, "No resources found in %s namespace.\n", k.namespace)
		}
		return nil
	}
	return writeTable(stdout, r, objs, f.output == getWide, f.allNamespaces, now)
}

// writeTable writes objs as kubectl's aligned table.
func writeTable(w io.Writer, r *kubeResource, objs []client.Object, wide, withNamespace bool, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	var header []string
	if withNamespace {
		header = append(header, "NAMESPACE")
	}
	header = append(header, "NAME")
	for _, c := range r.columns {
		if !c.wide || wide {
			header = append(header, c.header)
		}
	}
	header = append(header, "AGE")
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, o := range objs {
		var row []string
		if withNamespace {
			row = append(row, o.GetNamespace())
		}
		row = append(row, o.GetName())
		for _, c := range r.columns {
			if !c.wide || wide {
				row = append(row, c.value(o))
			}
		}
		row = append(row, objectAge(o.GetCreationTimestamp(), now))
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// writeObjects prints the objects as YAML or JSON: one object when one name was asked for,
// else a v1 List, as kubectl does. Managed fields are left out, as kubectl leaves them out.
func writeObjects(w io.Writer, r *kubeResource, objs []client.Object, single bool, format string) error {
	items := make([]any, len(objs))
	for i, o := range objs {
		o.SetManagedFields(nil)
		gvk := blisv1alpha1.GroupVersion.WithKind(r.kind)
		o.GetObjectKind().SetGroupVersionKind(gvk)
		items[i] = o
	}
	var v any = map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": items}
	if single {
		v = items[0]
	}
	js, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return err
	}
	if format == getJSON {
		_, err = w.Write(append(js, '\n'))
		return err
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		return err
	}
	_, err = w.Write(y)
	return err
}

// age is kubectl's AGE column.
func objectAge(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// cellNone is the value of a column whose field is not set.
const cellNone = "<none>"

// num formats a status number (already rounded to a few significant digits) as kubectl
// prints a number column.
func cellNum(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// optNum formats an optional number.
func cellOptNum(v *float64) string {
	if v == nil {
		return cellNone
	}
	return cellNum(*v)
}

// orNone returns s, or <none> when s is empty.
func cellOrNone(s string) string {
	if s == "" {
		return cellNone
	}
	return s
}

// conditionStatus is the status of condition typ ("" when absent), as kubectl's READY column.
func conditionStatus(conds []metav1.Condition, typ string) string {
	for _, c := range conds {
		if c.Type == typ {
			return string(c.Status)
		}
	}
	return cellNone
}

// shortHash is the first 12 characters of an input hash: enough to tell runs apart in a
// table; -o yaml shows the whole hash.
func cellHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return cellOrNone(h)
}

var evaluationColumns = []tableColumn{
	{header: "PHASE", value: func(o client.Object) string { return cellOrNone(string(o.(*blisv1alpha1.Evaluation).Status.Phase)) }},
	{header: "READY", value: func(o client.Object) string {
		return conditionStatus(o.(*blisv1alpha1.Evaluation).Status.Conditions, blisv1alpha1.ConditionReady)
	}},
	{header: "FITNESS", value: func(o client.Object) string { return cellOptNum(o.(*blisv1alpha1.Evaluation).Status.FitnessScore) }},
	{header: "TTFT-P99-MS", value: evalMetric(func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.TtftP99Ms })},
	{header: "E2E-P99-MS", value: evalMetric(func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.E2eP99Ms })},
	{header: "RPS", wide: true, value: evalMetric(func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.ResponsesPerSec })},
	{header: "SLO-ATTAINMENT", wide: true, value: evalMetric(func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.SloAttainment })},
	{header: "CACHE-HIT-RATE", wide: true, value: evalMetric(func(m *blisv1alpha1.EvaluationMetrics) float64 { return m.CacheHitRate })},
	{header: "SEEDS", wide: true, value: func(o client.Object) string {
		return strconv.Itoa(max(1, len(o.(*blisv1alpha1.Evaluation).Spec.Seeds)))
	}},
	{header: "ATTEMPTS", wide: true, value: func(o client.Object) string {
		return strconv.Itoa(int(o.(*blisv1alpha1.Evaluation).Status.Attempts))
	}},
	{header: "CACHED-FROM", wide: true, value: func(o client.Object) string { return cellOrNone(o.(*blisv1alpha1.Evaluation).Status.CachedFrom) }},
	{header: "ENGINE", wide: true, value: func(o client.Object) string { return cellOrNone(o.(*blisv1alpha1.Evaluation).Status.EngineVersion) }},
	{header: "INPUT-HASH", wide: true, value: func(o client.Object) string { return cellHash(o.(*blisv1alpha1.Evaluation).Status.InputHash) }},
}

// evalMetric is a column of one headline metric (<none> until the Evaluation has results).
func evalMetric(f func(*blisv1alpha1.EvaluationMetrics) float64) func(client.Object) string {
	return func(o client.Object) string {
		m := o.(*blisv1alpha1.Evaluation).Status.Metrics
		if m == nil {
			return cellNone
		}
		return cellNum(f(m))
	}
}

var studyColumns = []tableColumn{
	{header: "ALGORITHM", value: func(o client.Object) string {
		return cellOrNone(string(o.(*blisv1alpha1.PolicyStudy).Spec.Algorithm.Name))
	}},
	{header: "CREATED", value: func(o client.Object) string {
		return strconv.Itoa(int(o.(*blisv1alpha1.PolicyStudy).Status.Evaluations.Created))
	}},
	{header: "SUCCEEDED", value: func(o client.Object) string {
		return strconv.Itoa(int(o.(*blisv1alpha1.PolicyStudy).Status.Evaluations.Succeeded))
	}},
	{header: "FAILED", value: func(o client.Object) string {
		return strconv.Itoa(int(o.(*blisv1alpha1.PolicyStudy).Status.Evaluations.Failed))
	}},
	{header: "BEST", value: func(o client.Object) string {
		if b := o.(*blisv1alpha1.PolicyStudy).Status.Best; b != nil {
			return cellOptNum(b.FitnessScore)
		}
		return cellNone
	}},
	{header: "COMPLETED", value: func(o client.Object) string {
		return conditionStatus(o.(*blisv1alpha1.PolicyStudy).Status.Conditions, blisv1alpha1.StudyConditionCompleted)
	}},
	{header: "RUNNING", wide: true, value: func(o client.Object) string {
		return strconv.Itoa(int(o.(*blisv1alpha1.PolicyStudy).Status.Evaluations.Running))
	}},
	{header: "BUDGET", wide: true, value: func(o client.Object) string {
		return strconv.Itoa(int(o.(*blisv1alpha1.PolicyStudy).Spec.Budget.MaxEvaluations))
	}},
	{header: "GENERATION", wide: true, value: func(o client.Object) string {
		return strconv.Itoa(int(o.(*blisv1alpha1.PolicyStudy).Status.Generation))
	}},
	{header: "FRONT", wide: true, value: func(o client.Object) string {
		return strconv.Itoa(int(o.(*blisv1alpha1.PolicyStudy).Status.ParetoFrontSize))
	}},
	{header: "WINNER", wide: true, value: func(o client.Object) string {
		if b := o.(*blisv1alpha1.PolicyStudy).Status.Best; b != nil {
			return b.Evaluation
		}
		return cellNone
	}},
}

var bundleColumns = []tableColumn{
	{header: "ADMISSION", value: func(o client.Object) string {
		if a := o.(*blisv1alpha1.PolicyBundle).Spec.Admission; a != nil {
			return cellOrNone(a.Policy)
		}
		return cellNone
	}},
	{header: "ROUTING", value: func(o client.Object) string {
		if r := o.(*blisv1alpha1.PolicyBundle).Spec.Routing; r != nil {
			return cellOrNone(r.Policy)
		}
		return cellNone
	}},
	{header: "SCHEDULER", value: func(o client.Object) string { return cellOrNone(o.(*blisv1alpha1.PolicyBundle).Spec.Scheduler) }},
	{header: "READY", value: func(o client.Object) string {
		return conditionStatus(o.(*blisv1alpha1.PolicyBundle).Status.Conditions, blisv1alpha1.ConditionReady)
	}},
	{header: "PRIORITY", wide: true, value: func(o client.Object) string {
		if p := o.(*blisv1alpha1.PolicyBundle).Spec.Priority; p != nil {
			return cellOrNone(p.Policy)
		}
		return cellNone
	}},
	{header: "PREEMPTION", wide: true, value: func(o client.Object) string {
		if p := o.(*blisv1alpha1.PolicyBundle).Spec.Preemption; p != nil {
			return cellOrNone(p.Policy)
		}
		return cellNone
	}},
	{header: "AUTOSCALER", wide: true, value: func(o client.Object) string {
		if a := o.(*blisv1alpha1.PolicyBundle).Spec.Autoscaler; a != nil {
			return cellOrNone(a.Policy)
		}
		return cellNone
	}},
	{header: "BLIS-FILE", wide: true, value: func(o client.Object) string {
		if r := o.(*blisv1alpha1.PolicyBundle).Spec.BlisConfigMapRef; r != nil {
			return r.Name + "/" + r.Key
		}
		return cellNone
	}},
	{header: "LINEAGE-GEN", wide: true, value: func(o client.Object) string {
		if l := o.(*blisv1alpha1.PolicyBundle).Spec.Lineage; l != nil {
			return strconv.FormatInt(l.Generation, 10)
		}
		return cellNone
	}},
}

var clusterColumns = []tableColumn{
	{header: "MODEL", value: func(o client.Object) string { return cellOrNone(o.(*blisv1alpha1.SimulatedCluster).Spec.Model.Name) }},
	{header: "GPU", value: func(o client.Object) string { return cellOrNone(o.(*blisv1alpha1.SimulatedCluster).Spec.GPU) }},
	{header: "TP", value: func(o client.Object) string {
		if tp := o.(*blisv1alpha1.SimulatedCluster).Spec.Engine.TensorParallelSize; tp > 0 {
			return strconv.Itoa(int(tp))
		}
		return cellNone
	}},
	{header: "REPLICAS", value: func(o client.Object) string {
		n := 0
		for _, p := range o.(*blisv1alpha1.SimulatedCluster).Spec.Pools {
			n += int(p.Replicas)
		}
		return strconv.Itoa(n)
	}},
	{header: "READY", value: func(o client.Object) string {
		return conditionStatus(o.(*blisv1alpha1.SimulatedCluster).Status.Conditions, blisv1alpha1.ConditionReady)
	}},
	{header: "LATENCY", wide: true, value: func(o client.Object) string {
		return cellOrNone(string(o.(*blisv1alpha1.SimulatedCluster).Spec.LatencyModel.Backend))
	}},
	{header: "POOLS", wide: true, value: func(o client.Object) string {
		pools := o.(*blisv1alpha1.SimulatedCluster).Spec.Pools
		parts := make([]string, 0, len(pools))
		for _, p := range pools {
			role := string(p.Role)
			if role == "" {
				role = string(blisv1alpha1.PoolMonolithic)
			}
			parts = append(parts, fmt.Sprintf("%s:%s=%d", p.Name, role, p.Replicas))
		}
		return cellOrNone(strings.Join(parts, ","))
	}},
	{header: "AUTOSCALING", wide: true, value: func(o client.Object) string {
		if a := o.(*blisv1alpha1.SimulatedCluster).Spec.Autoscaling; a != nil {
			return fmt.Sprintf("%d-%d", a.MinReplicas, a.MaxReplicas)
		}
		return cellNone
	}},
	{header: "KV-TIERS", wide: true, value: func(o client.Object) string {
		return strconv.Itoa(len(o.(*blisv1alpha1.SimulatedCluster).Spec.KVTiers))
	}},
}

var workloadColumns = []tableColumn{
	{header: "CATEGORY", value: func(o client.Object) string { return cellOrNone(o.(*blisv1alpha1.WorkloadSpec).Spec.Category) }},
	{header: "RATE", value: func(o client.Object) string { return cellOptNum(o.(*blisv1alpha1.WorkloadSpec).Spec.AggregateRate) }},
	{header: "REQUESTS", value: func(o client.Object) string {
		if n := o.(*blisv1alpha1.WorkloadSpec).Spec.NumRequests; n != nil {
			return strconv.FormatInt(*n, 10)
		}
		return cellNone
	}},
	{header: "READY", value: func(o client.Object) string {
		return conditionStatus(o.(*blisv1alpha1.WorkloadSpec).Status.Conditions, blisv1alpha1.ConditionReady)
	}},
	{header: "SOURCE", wide: true, value: func(o client.Object) string { return workloadSource(&o.(*blisv1alpha1.WorkloadSpec).Spec) }},
	{header: "HORIZON-S", wide: true, value: func(o client.Object) string {
		if h := o.(*blisv1alpha1.WorkloadSpec).Spec.Horizon; h != nil {
			return cellNum(float64(*h) / 1e6)
		}
		return cellNone
	}},
	{header: "SLO-CLASSES", wide: true, value: func(o client.Object) string {
		t := o.(*blisv1alpha1.WorkloadSpec).Spec.GoodputSloTargets
		names := make([]string, 0, len(t))
		for n := range t {
			names = append(names, n)
		}
		sort.Strings(names)
		return cellOrNone(strings.Join(names, ","))
	}},
}

// workloadSource names where a workload's requests come from.
func workloadSource(s *blisv1alpha1.WorkloadSpecSpec) string {
	switch {
	case s.BlisConfigMapRef != nil:
		return "blis-file"
	case s.Trace != nil:
		return "trace"
	case s.Scenario != "":
		return "scenario:" + s.Scenario
	case s.ServegenData != nil:
		return "servegen"
	case s.InferencePerf != nil:
		return "inference-perf"
	case len(s.Cohorts) > 0 && len(s.Clients) > 0:
		return fmt.Sprintf("clients:%d,cohorts:%d", len(s.Clients), len(s.Cohorts))
	case len(s.Cohorts) > 0:
		return fmt.Sprintf("cohorts:%d", len(s.Cohorts))
	case len(s.Clients) > 0:
		return fmt.Sprintf("clients:%d", len(s.Clients))
	}
	return cellNone
}
