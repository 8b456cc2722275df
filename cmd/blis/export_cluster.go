package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/export"
	"github.com/inference-sim/blis-operator/internal/evaluation"
	"github.com/inference-sim/blis-operator/internal/promote"
)

// exportFromCluster is `blis export TYPE/NAME`: the llm-d configuration of an Evaluation or a
// PolicyBundle read from the cluster, through the same code as the manifest mode and the
// operator's promotion. The namespace is -n (which also names the namespace of the generated
// objects), else the kubeconfig context's.
func exportFromCluster(ctx context.Context, fl *pflag.FlagSet, f *exportFlags, arg string) (*export.Result, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	r, name, ok := clusterRef(arg)
	if !ok || (r.plural != "evaluations" && r.plural != "policybundles") {
		return nil, fmt.Errorf("%q is not evaluation/NAME or bundle/NAME (an object in the cluster to export)", arg)
	}
	if len(f.files) > 0 || f.evaluation != "" || f.bundleName != "" || f.bundle != "" {
		return nil, fmt.Errorf("%s names the object to export from the cluster; -f, --evaluation, --bundle-name and --bundle choose objects of files", arg)
	}
	for _, n := range clusterFlagNames {
		if fl.Changed(n) {
			return nil, fmt.Errorf("--%s describes a cluster of the file mode; %s reads its SimulatedCluster from the cluster", n, arg)
		}
	}
	opts := clusterOpts.kube
	opts.namespace = f.opts.Namespace
	k, err := opts.connect()
	if err != nil {
		return nil, err
	}
	if r.plural == "evaluations" {
		if f.cluster != "" || f.clusterName != "" || f.workloadName != "" {
			return nil, errors.New("an Evaluation is exported with the cluster and workload it references; --cluster, --cluster-name and --workload-name are for a bundle")
		}
		return exportClusterEvaluation(ctx, k.client, k.namespace, name, f.opts)
	}
	if f.cluster != "" && f.clusterName != "" && f.cluster != f.clusterName {
		return nil, errors.New("--cluster and --cluster-name both name the SimulatedCluster; give one")
	}
	clusterName := f.cluster
	if clusterName == "" {
		clusterName = f.clusterName
	}
	return exportClusterBundle(ctx, k.client, k.namespace, name, clusterName, f.workloadName, f.opts)
}

// exportClusterEvaluation exports Evaluation ns/name: its resolved policy on its cluster. An
// Evaluation that has resolved its inputs is exported only while they are unchanged (as the
// operator's promotion checks), so the export is the configuration that was evaluated.
func exportClusterEvaluation(ctx context.Context, c client.Reader, ns, name string, opts export.Options) (*export.Result, error) {
	var ev blisv1alpha1.Evaluation
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ev); err != nil {
		return nil, err
	}
	in, err := fetchInputs(ctx, c, &ev)
	if err != nil {
		return nil, err
	}
	res, err := evaluation.Resolve(in)
	if err != nil {
		return nil, fmt.Errorf("resolving Evaluation %s/%s: %w", ns, name, err)
	}
	if ev.Status.InputHash != "" {
		h, err := evaluation.HashAs(res, ev.Status.EngineVersion)
		if err != nil {
			return nil, err
		}
		if h != ev.Status.InputHash {
			return nil, fmt.Errorf("the objects Evaluation %s/%s references changed after it resolved them (input hash now %s, status.inputHash %s): the export would not be what it evaluated; export a new Evaluation of them",
				ns, name, cellHash(h), cellHash(ev.Status.InputHash))
		}
	}
	spec := ev.Spec.Cluster
	if in.Cluster != nil {
		spec = &in.Cluster.Spec
	}
	return promote.Export(res, spec, opts)
}

// exportClusterBundle exports PolicyBundle ns/name for SimulatedCluster clusterName (empty:
// the bundle's promote.AnnotationCluster annotation, as its promotion reads it), with the SLO
// classes of WorkloadSpec workloadName when given.
func exportClusterBundle(ctx context.Context, c client.Reader, ns, name, clusterName, workloadName string, opts export.Options) (*export.Result, error) {
	var pb blisv1alpha1.PolicyBundle
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pb); err != nil {
		return nil, err
	}
	if clusterName == "" {
		clusterName = pb.Annotations[promote.AnnotationCluster]
	}
	if clusterName == "" {
		return nil, fmt.Errorf("a PolicyBundle is exported for a SimulatedCluster: give --cluster NAME (or annotate the bundle with %s)", promote.AnnotationCluster)
	}
	b := promote.Bundle{Policy: &pb, Cluster: &blisv1alpha1.SimulatedCluster{}}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: clusterName}, b.Cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("SimulatedCluster %q does not exist in namespace %s", clusterName, ns)
		}
		return nil, err
	}
	if workloadName != "" {
		b.Workload = &blisv1alpha1.WorkloadSpec{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: workloadName}, b.Workload); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("WorkloadSpec %q does not exist in namespace %s", workloadName, ns)
			}
			return nil, err
		}
	}
	in := evaluation.Inputs{Policy: b.Policy, Workload: b.Workload}
	cms, err := evaluation.ReadConfigMaps(ctx, c, ns, evaluation.ConfigMapNames(&in))
	if err != nil {
		return nil, err
	}
	b.ConfigMaps = cms
	res, err := promote.ResolveBundle(b)
	if err != nil {
		return nil, fmt.Errorf("resolving PolicyBundle %s on SimulatedCluster %s: %w", name, clusterName, err)
	}
	return promote.Export(res, &b.Cluster.Spec, opts)
}
