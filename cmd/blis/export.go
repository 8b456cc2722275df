package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/export"
	"github.com/inference-sim/blis-operator/internal/engine/export/llmd"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
	"github.com/inference-sim/blis-operator/internal/evaluation"
	"github.com/inference-sim/blis-operator/internal/promote"
)

func init() {
	subcommands = append(subcommands, newExportCommand)
}

// exportFlags are the flags of `blis export`.
type exportFlags struct {
	bundle, cluster, outDir string
	opts                    export.Options

	// Manifest mode: the files and the objects chosen from them.
	files                               []string
	evaluation, bundleName, clusterName string
	workloadName                        string

	// Cluster flags, named as in `blis run`; they override --cluster when given.
	model, hardware                                         string
	tp, numInstances                                        int
	maxNumSeqs, maxNumBatchedTokens, blockSize, maxModelLen int64
	totalKVBlocks, longPrefillThreshold                     int64
	gpuMemoryUtilization                                    float64
	enablePrefixCaching, enableChunkedPrefill               bool
	sloClasses                                              []string
}

func newExportCommand() *cobra.Command {
	f := &exportFlags{}
	cmd := &cobra.Command{
		Use:   "export (-f FILE... | --bundle FILE | evaluation/NAME | bundle/NAME --cluster NAME) -o DIR",
		Short: "Export a policy bundle and its cluster as llm-d configuration",
		Long: `Export writes the llm-d configuration that runs a simulated policy bundle: the
EndpointPickerConfig (` + export.FileEPPConfig + `, the endpoint picker's --config-file),
InferenceObjectives per SLO class, the vLLM arguments of each model-server pool, a KEDA
ScaledObject when the bundle autoscales, and with --inference-pool an InferencePool.

With -f it reads the project's manifests as blis evaluate does (multi-document YAML, -f
repeatable, BLIS files too) and exports what the operator's promotion would write: an
Evaluation's resolved policy and cluster (--evaluation, or the only Evaluation), or a
PolicyBundle on a SimulatedCluster (--bundle-name and --cluster-name; --workload-name adds the
workload's SLO classes). The cluster's pools (with a prefill or decode pool's own GPU and
engine settings), kvTransfer, kvTiers and autoscaling bounds are exported with it.

Otherwise --bundle is a BLIS policy-config or this project's bundle YAML. The cluster comes
from --cluster (YAML: model, gpu, engine, pools, disaggregation, kvOffload, autoscaling,
sloClasses; a prefill or decode pool may set its own gpu, engine and latencyModel) and/or the
flags of blis run, which override the cluster's settings.

Whatever llm-d cannot express exactly is printed as a warning on standard error (and written
to ` + export.FileWarnings + `); a policy with nothing close in llm-d is an error. The generated configuration is decoded strictly and
validated against the target router before it is written.

With evaluation/NAME or bundle/NAME --cluster NAME (--workload-name optional) it reads the
objects from the cluster of your kubeconfig (-n is their namespace, and that of the
generated objects); see docs/kubectl-plugin.md.

Targets: ` + strings.Join(llmd.TargetNames(), ", ") + ` (default ` + llmd.DefaultTarget + `).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				res, err := exportFromCluster(cmd.Context(), cmd.Flags(), f, args[0])
				if err != nil {
					return err
				}
				return writeExport(res, f.outDir, cmd.ErrOrStderr())
			}
			if len(f.files) > 0 || f.evaluation != "" || f.bundleName != "" || f.clusterName != "" || f.workloadName != "" {
				res, err := exportManifests(cmd.InOrStdin(), cmd.Flags(), f)
				if err != nil {
					return err
				}
				return writeExport(res, f.outDir, cmd.ErrOrStderr())
			}
			b, c, err := exportInputs(cmd.Flags(), f)
			if err != nil {
				return err
			}
			return exportBundle(b, c, f.opts, f.outDir, cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringArrayVarP(&f.files, "filename", "f", nil, "manifest or BLIS file (repeatable; - reads standard input)")
	fl.StringVar(&f.evaluation, "evaluation", "", "with -f: the Evaluation to export (its resolved policy and cluster)")
	fl.StringVar(&f.bundleName, "bundle-name", "", "with -f: the PolicyBundle to export (with --cluster-name)")
	fl.StringVar(&f.clusterName, "cluster-name", "", "with -f: the SimulatedCluster the PolicyBundle is exported for")
	fl.StringVar(&f.workloadName, "workload-name", "", "with -f: the WorkloadSpec whose SLO classes get objectives (optional)")
	fl.StringVar(&f.bundle, "bundle", "", "policy bundle file (BLIS policy-config or bundle YAML); empty = every default")
	fl.StringVar(&f.cluster, "cluster", "", "cluster input file (YAML); with bundle/NAME, the SimulatedCluster's name")
	fl.StringVar(&f.opts.Target, "target", llmd.DefaultTarget, "router release to write for: "+strings.Join(llmd.TargetNames(), ", "))
	fl.StringVarP(&f.outDir, "output", "o", "", "directory to write the files to (required)")
	fl.BoolVar(&f.opts.AllowExperimental, "allow-experimental-plugins", false, "permit Alpha llm-d plugins (the endpoint picker then needs the same flag)")
	fl.BoolVar(&f.opts.Strict, "strict", false, "refuse every approximation instead of warning")
	fl.BoolVar(&f.opts.InferencePool, "inference-pool", false, "also write an InferencePool")
	fl.StringVar(&f.opts.Name, "name", export.DefaultName, "InferencePool name, endpoint picker Service prefix and the pods' app label")
	fl.StringVarP(&f.opts.Namespace, "namespace", "n", "", "namespace of the generated objects (default: none); with TYPE/NAME also where they are read")
	fl.Int32Var(&f.opts.TargetPort, "target-port", export.DefaultTargetPort, "model servers' port")
	fl.StringVar(&f.opts.PrometheusAddress, "prometheus", export.DefaultPrometheusAddress, "Prometheus server the ScaledObject queries")

	fl.StringVar(&f.model, "model", "", "model name from the catalog")
	fl.StringVar(&f.hardware, "hardware", "", "GPU type")
	fl.IntVar(&f.tp, "tp", 0, "tensor parallelism")
	fl.Int64Var(&f.maxNumSeqs, "max-num-seqs", 0, "maximum requests in a running batch")
	fl.Int64Var(&f.maxNumBatchedTokens, "max-num-batched-tokens", 0, "token budget of one engine step")
	fl.Int64Var(&f.longPrefillThreshold, "long-prefill-token-threshold", 0, "largest prefill chunk of one request per step")
	fl.Int64Var(&f.blockSize, "block-size-in-tokens", 0, "tokens per KV-cache block")
	fl.Int64Var(&f.totalKVBlocks, "total-kv-blocks", 0, "KV-cache size in blocks (written as --num-gpu-blocks-override)")
	fl.Float64Var(&f.gpuMemoryUtilization, "gpu-memory-utilization", 0, "fraction of GPU memory vLLM may use")
	fl.Int64Var(&f.maxModelLen, "max-model-len", 0, "maximum prompt + output length")
	fl.BoolVar(&f.enablePrefixCaching, "enable-prefix-caching", true, "reuse cached prompt blocks")
	fl.BoolVar(&f.enableChunkedPrefill, "enable-chunked-prefill", true, "split long prompts across steps")
	fl.IntVar(&f.numInstances, "num-instances", 0, "replicas of the single monolithic pool")
	fl.StringSliceVar(&f.sloClasses, "slo-classes", nil, "SLO classes of the workload (objectives are written for these)")
	fl.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if to, ok := flagAliases[name]; ok {
			name = to
		}
		return pflag.NormalizedName(name)
	})
	_ = cmd.MarkFlagRequired("output")
	return cmd
}

// exportInputs reads the bundle and the cluster (file, then flags).
func exportInputs(fl *pflag.FlagSet, f *exportFlags) (*policy.Bundle, *export.Cluster, error) {
	b := &policy.Bundle{}
	if f.bundle != "" {
		var err error
		if b, err = policy.Load(f.bundle); err != nil {
			return nil, nil, err
		}
	}
	c := &export.Cluster{}
	if f.cluster != "" {
		var err error
		if c, err = export.LoadCluster(f.cluster); err != nil {
			return nil, nil, err
		}
	}
	set := func(name string, apply func()) {
		if fl.Changed(name) {
			apply()
		}
	}
	set("model", func() { c.Model = f.model })
	set("hardware", func() { c.GPU = f.hardware })
	set("tp", func() { c.Engine.TensorParallelSize = f.tp })
	set("max-num-seqs", func() { c.Engine.MaxNumSeqs = f.maxNumSeqs })
	set("max-num-batched-tokens", func() { c.Engine.MaxNumBatchedTokens = f.maxNumBatchedTokens })
	set("long-prefill-token-threshold", func() { c.Engine.LongPrefillTokenThreshold = f.longPrefillThreshold })
	set("block-size-in-tokens", func() { c.Engine.BlockSize = f.blockSize })
	set("total-kv-blocks", func() { c.Engine.TotalKVBlocks = f.totalKVBlocks })
	set("gpu-memory-utilization", func() { c.Engine.GPUMemoryUtilization = f.gpuMemoryUtilization })
	set("max-model-len", func() { c.Engine.MaxModelLen = f.maxModelLen })
	set("enable-prefix-caching", func() { c.Engine.EnablePrefixCaching = &f.enablePrefixCaching })
	set("enable-chunked-prefill", func() { c.Engine.EnableChunkedPrefill = &f.enableChunkedPrefill })
	set("slo-classes", func() { c.SLOClasses = f.sloClasses })
	if fl.Changed("num-instances") {
		if len(c.Pools) > 1 || len(c.Pools) == 1 && c.Pools[0].Role != "" && c.Pools[0].Role != export.RoleMonolithic {
			return nil, nil, errors.New("--num-instances sets the single monolithic pool; set pool replicas in --cluster instead")
		}
		if f.numInstances <= 0 {
			return nil, nil, fmt.Errorf("--num-instances must be > 0, got %d", f.numInstances)
		}
		if len(c.Pools) == 0 {
			c.Pools = []export.Pool{{Name: export.DefaultPoolName, Role: export.RoleMonolithic}}
		}
		c.Pools[0].Replicas = int32(f.numInstances)
	}
	return b, c, nil
}

// exportBundle is the core of `blis export --bundle`: export b on c, print the warnings to
// stderr and write the files to dir (writeExport).
func exportBundle(b *policy.Bundle, c *export.Cluster, opts export.Options, dir string, stderr io.Writer) error {
	res, err := export.Export(export.Input{Bundle: b, Cluster: *c}, opts)
	if err != nil {
		return err
	}
	return writeExport(res, dir, stderr)
}

// writeExport prints the warnings of res to stderr and writes its files to dir (files of an
// earlier export that this one does not produce are removed, so the directory never mixes two
// exports).
func writeExport(res *export.Result, dir string, stderr io.Writer) error {
	for _, w := range res.Warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	written := map[string]bool{}
	for _, f := range res.Files() {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Content, 0o644); err != nil {
			return err
		}
		written[f.Name] = true
	}
	for _, name := range []string{export.FileEPPConfig, export.FileObjectives, export.FilePool, export.FileModelServers,
		export.FileScaledObjects, export.FileWarnings} {
		if !written[name] {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// exportManifests reads the -f files and exports the chosen Evaluation, or the chosen
// PolicyBundle on the chosen SimulatedCluster, through internal/promote.
func exportManifests(stdin io.Reader, fl *pflag.FlagSet, f *exportFlags) (*export.Result, error) {
	if len(f.files) == 0 {
		return nil, errors.New("--evaluation, --bundle-name, --cluster-name and --workload-name choose objects of the -f files; give -f")
	}
	if f.bundle != "" || f.cluster != "" {
		return nil, errors.New("-f reads the bundle and the cluster from manifests; --bundle and --cluster are the file mode")
	}
	for _, name := range clusterFlagNames {
		if fl.Changed(name) {
			return nil, fmt.Errorf("--%s describes a cluster of the file mode; with -f the SimulatedCluster gives it", name)
		}
	}
	m, err := readManifests(stdin, f.files)
	if err != nil {
		return nil, err
	}
	if f.bundleName != "" || f.clusterName != "" || f.workloadName != "" {
		if f.evaluation != "" {
			return nil, errors.New("--evaluation exports an Evaluation; --bundle-name, --cluster-name and --workload-name a PolicyBundle: give one or the other")
		}
		return exportNamedBundle(&m, f)
	}
	ev, err := m.Select(f.evaluation, false)
	if err != nil {
		return nil, err
	}
	in, err := m.Inputs(ev, os.ReadFile)
	if err != nil {
		return nil, err
	}
	res, err := evaluation.Resolve(in)
	if err != nil {
		return nil, err
	}
	cluster := ev.Spec.Cluster
	if in.Cluster != nil && ev.Spec.ClusterRef != nil {
		cluster = &in.Cluster.Spec
	}
	return promote.Export(res, cluster, f.opts)
}

// exportNamedBundle exports --bundle-name on --cluster-name (with --workload-name's classes).
func exportNamedBundle(m *evaluation.Manifests, f *exportFlags) (*export.Result, error) {
	if f.bundleName == "" || f.clusterName == "" {
		return nil, errors.New("a PolicyBundle is exported for a SimulatedCluster: give --bundle-name and --cluster-name")
	}
	b := promote.Bundle{}
	var err error
	if b.Policy, err = findNamed(evaluation.KindPolicyBundle, f.bundleName, m.Policies, func(o *blisv1alpha1.PolicyBundle) metav1.Object { return o }); err != nil {
		return nil, err
	}
	ns := b.Policy.Namespace
	if b.Cluster, err = findNamed(evaluation.KindSimulatedCluster, f.clusterName, inNamespace(m.Clusters, ns, func(o *blisv1alpha1.SimulatedCluster) string { return o.Namespace }),
		func(o *blisv1alpha1.SimulatedCluster) metav1.Object { return o }); err != nil {
		return nil, err
	}
	if f.workloadName != "" {
		if b.Workload, err = findNamed(evaluation.KindWorkloadSpec, f.workloadName, inNamespace(m.Workloads, ns, func(o *blisv1alpha1.WorkloadSpec) string { return o.Namespace }),
			func(o *blisv1alpha1.WorkloadSpec) metav1.Object { return o }); err != nil {
			return nil, err
		}
	}
	b.ConfigMaps = map[string]map[string]string{}
	for _, cm := range inNamespace(m.ConfigMaps, ns, func(o *corev1.ConfigMap) string { return o.Namespace }) {
		b.ConfigMaps[cm.Name] = cm.Data
	}
	res, err := promote.ResolveBundle(b)
	if err != nil {
		return nil, err
	}
	return promote.Export(res, &b.Cluster.Spec, f.opts)
}

// findNamed returns the only object of objs named name.
func findNamed[T any](kind, name string, objs []T, meta func(*T) metav1.Object) (*T, error) {
	var found *T
	for i := range objs {
		if meta(&objs[i]).GetName() != name {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("the files hold several %ss named %q (in different namespaces)", kind, name)
		}
		found = &objs[i]
	}
	if found == nil {
		return nil, fmt.Errorf("no %s %q in the files", kind, name)
	}
	return found, nil
}

// inNamespace keeps the objects of namespace ns (an empty namespace is the default one).
func inNamespace[T any](objs []T, ns string, nsOf func(*T) string) []T {
	norm := func(s string) string {
		if s == "" {
			return evaluation.DefaultNamespace
		}
		return s
	}
	var out []T
	for i := range objs {
		if norm(nsOf(&objs[i])) == norm(ns) {
			out = append(out, objs[i])
		}
	}
	return out
}

// clusterFlagNames are the flags of the file mode that describe the cluster.
var clusterFlagNames = []string{"model", "hardware", "tp", "max-num-seqs", "max-num-batched-tokens", "long-prefill-token-threshold",
	"block-size-in-tokens", "total-kv-blocks", "gpu-memory-utilization", "max-model-len", "enable-prefix-caching",
	"enable-chunked-prefill", "num-instances", "slo-classes"}
