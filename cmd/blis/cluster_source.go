package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation"
	"github.com/inference-sim/blis-operator/internal/report"
)

func init() {
	sourceResolvers = append(sourceResolvers, resolveClusterEvaluation)
	studySourceResolvers = append(studySourceResolvers, resolveClusterStudy)
}

// clusterRef parses a TYPE/NAME argument naming an object in the cluster (TYPE as `blis get`
// accepts it: evaluation/NAME, ev/NAME, study/NAME, ...). An existing file of that path is
// not a reference: a file wins, so `blis report ev/result.json` still reads the file.
func clusterRef(arg string) (*kubeResource, string, bool) {
	typ, name, ok := strings.Cut(arg, "/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return nil, "", false
	}
	r := lookupResource(typ)
	if r == nil {
		return nil, "", false
	}
	if _, err := os.Stat(arg); err == nil {
		return nil, "", false
	}
	return r, name, true
}

// resolveClusterEvaluation is the report source evaluation/NAME: the Evaluation in the
// cluster, re-run locally from its inputs (or its stored status with --status-only).
func resolveClusterEvaluation(ctx context.Context, arg string) (*report.Data, bool, error) {
	r, name, ok := clusterRef(arg)
	if !ok || r.plural != "evaluations" {
		return nil, false, nil
	}
	k, err := clusterOpts.kube.connect()
	if err != nil {
		return nil, true, err
	}
	var ev blisv1alpha1.Evaluation
	if err := k.client.Get(ctx, client.ObjectKey{Namespace: k.namespace, Name: name}, &ev); err != nil {
		return nil, true, err
	}
	d, err := evaluationReport(ctx, k.client, &ev, clusterOpts.statusOnly, startProgress(os.Stderr))
	return d, true, err
}

// resolveClusterStudy is the report source study/NAME: the PolicyStudy and the Evaluations
// with its study label, as its study report.
func resolveClusterStudy(ctx context.Context, arg string) (*report.StudyData, bool, error) {
	r, name, ok := clusterRef(arg)
	if !ok || r.plural != "policystudies" {
		return nil, false, nil
	}
	k, err := clusterOpts.kube.connect()
	if err != nil {
		return nil, true, err
	}
	sd, err := studyReport(ctx, k.client, k.namespace, name)
	return sd, true, err
}

// studyReport reads PolicyStudy ns/name and its Evaluations (by the study label, which the
// study's own children and joined external Evaluations carry) into study report data.
func studyReport(ctx context.Context, c client.Reader, ns, name string) (*report.StudyData, error) {
	var ps blisv1alpha1.PolicyStudy
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ps); err != nil {
		return nil, err
	}
	var evs blisv1alpha1.EvaluationList
	if err := c.List(ctx, &evs, client.InNamespace(ns), client.MatchingLabels{blisv1alpha1.LabelStudy: name}); err != nil {
		return nil, err
	}
	sort.Slice(evs.Items, func(i, j int) bool { return evs.Items[i].Name < evs.Items[j].Name })
	return report.StudyFromEvaluations(&ps, evs.Items), nil
}

// evaluationReport builds the report data of Evaluation ev from the cluster.
//
// With statusOnly, or when ev has not succeeded, it is ev's stored status (report.FromStatus):
// headline numbers without distributions or time series. Otherwise ev is re-run locally from
// its inputs as they are in the cluster now, which is the run it reports only if those inputs
// are unchanged: the resolved input hash (under the engine version ev ran with) must equal
// status.inputHash, and this blis must be that engine version, else it refuses and suggests
// --status-only. The engine records time series only when tracing, and the trace level is part
// of the hashed document; an Evaluation that ran at level none is checked at level none and
// re-run at level decisions (tracing never changes simulated behaviour), which the
// description says. The re-run's headline metrics must equal the stored ones.
func evaluationReport(ctx context.Context, c client.Reader, ev *blisv1alpha1.Evaluation, statusOnly bool, bar *progressBar) (*report.Data, error) {
	name := ev.Namespace + "/" + ev.Name
	if statusOnly || ev.Status.Phase != blisv1alpha1.PhaseSucceeded {
		d := report.FromStatus(name, &ev.Status)
		d.Description = report.DescribeSpec(&ev.Spec)
		return d, nil
	}
	in, err := fetchInputs(ctx, c, ev)
	if err != nil {
		return nil, fmt.Errorf("%w; --status-only reports the stored status", err)
	}
	res, err := evaluation.Resolve(in)
	if err != nil {
		return nil, fmt.Errorf("resolving the inputs of Evaluation %s as they are now: %w; --status-only reports the stored status", name, err)
	}
	hash, err := evaluation.HashAs(res, ev.Status.EngineVersion)
	if err != nil {
		return nil, err
	}
	if hash != ev.Status.InputHash {
		return nil, fmt.Errorf("the inputs of Evaluation %s changed since it ran (input hash now %s, status.inputHash %s), so a re-run would not be the run it reports; --status-only reports the stored status",
			name, cellHash(hash), cellHash(ev.Status.InputHash))
	}
	if v := ev.Status.EngineVersion; v != "" && v != res.Document.EngineVersion {
		return nil, fmt.Errorf("the Evaluation %s ran on engine %s and this blis is engine %s, whose re-run may differ; use a blis of engine %s, or --status-only for the stored status",
			name, v, res.Document.EngineVersion, v)
	}
	raised := false
	if lvl := ev.Spec.Trace.Level; lvl == "" || lvl == blisv1alpha1.TraceNone {
		in.Spec.Trace.Level = blisv1alpha1.TraceDecisions
		if res, err = evaluation.Resolve(in); err != nil {
			return nil, err
		}
		raised = true
	}
	bar.setSeeds(len(res.Document.Seeds))
	out, err := evaluation.RunWithOptions(ctx, res, evaluation.Options{Progress: bar.evalFunc()})
	bar.stop()
	if err != nil {
		return nil, fmt.Errorf("re-running Evaluation %s: %w", name, err)
	}
	d := out.ReportData(name)
	if err := sameMetrics(d.Status.Metrics, ev.Status.Metrics); err != nil {
		return nil, fmt.Errorf("re-running Evaluation %s locally: %w; --status-only reports the stored status", name, err)
	}
	if raised {
		d.Description += fmt.Sprintf("; re-run at trace level decisions for the time series (the Evaluation ran at level none, input hash %s; its metrics are reproduced exactly)",
			cellHash(ev.Status.InputHash))
	}
	return d, nil
}

// sameMetrics checks that a re-run reproduced the stored headline metrics (both are rounded
// by the same status code, so equal runs give equal JSON).
func sameMetrics(got, stored *blisv1alpha1.EvaluationMetrics) error {
	a, err := json.Marshal(got)
	if err != nil {
		return err
	}
	b, err := json.Marshal(stored)
	if err != nil {
		return err
	}
	if !bytes.Equal(a, b) {
		return fmt.Errorf("its metrics differ from the Evaluation's status (re-run %s, status %s)", a, b)
	}
	return nil
}
