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

	"github.com/inference-sim/blis-operator/internal/engine/export"
	"github.com/inference-sim/blis-operator/internal/engine/export/llmd"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

func init() {
	subcommands = append(subcommands, newExportCommand)
}

// exportFlags are the flags of `blis export`.
type exportFlags struct {
	bundle, cluster, outDir string
	opts                    export.Options

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
		Use:   "export --bundle FILE -o DIR",
		Short: "Export a policy bundle and its cluster as llm-d configuration",
		Long: `Export writes the llm-d configuration that runs a simulated policy bundle: the
EndpointPickerConfig (` + export.FileEPPConfig + `, the endpoint picker's --config-file),
InferenceObjectives per SLO class, the vLLM arguments of each model-server pool, a KEDA
ScaledObject when the bundle autoscales, and with --inference-pool an InferencePool.

--bundle is a BLIS policy-config or this project's bundle YAML. The cluster comes from
--cluster (YAML: model, gpu, engine, pools, disaggregation, kvOffload, autoscaling, sloClasses)
and/or the flags of blis run, which override it. Whatever llm-d cannot express exactly is
printed as a warning on standard error (and written to ` + export.FileWarnings + `); a policy with
nothing close in llm-d is an error. The generated configuration is decoded strictly and
validated against the target router before it is written.

Targets: ` + strings.Join(llmd.TargetNames(), ", ") + ` (default ` + llmd.DefaultTarget + `).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, c, err := exportInputs(cmd.Flags(), f)
			if err != nil {
				return err
			}
			return exportBundle(b, c, f.opts, f.outDir, cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.bundle, "bundle", "", "policy bundle file (BLIS policy-config or bundle YAML); empty = every default")
	fl.StringVar(&f.cluster, "cluster", "", "cluster input file (YAML)")
	fl.StringVar(&f.opts.Target, "target", llmd.DefaultTarget, "router release to write for: "+strings.Join(llmd.TargetNames(), ", "))
	fl.StringVarP(&f.outDir, "output", "o", "", "directory to write the files to (required)")
	fl.BoolVar(&f.opts.AllowExperimental, "allow-experimental-plugins", false, "permit Alpha llm-d plugins (the endpoint picker then needs the same flag)")
	fl.BoolVar(&f.opts.Strict, "strict", false, "refuse every approximation instead of warning")
	fl.BoolVar(&f.opts.InferencePool, "inference-pool", false, "also write an InferencePool")
	fl.StringVar(&f.opts.Name, "name", export.DefaultName, "InferencePool name, endpoint picker Service prefix and the pods' app label")
	fl.StringVarP(&f.opts.Namespace, "namespace", "n", "", "namespace of the generated objects (default: none)")
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

// exportBundle is the core of `blis export`: export b on c, print the warnings to stderr and
// write the files to dir (files of an earlier export that this one does not produce are
// removed, so the directory never mixes two exports).
func exportBundle(b *policy.Bundle, c *export.Cluster, opts export.Options, dir string, stderr io.Writer) error {
	res, err := export.Export(export.Input{Bundle: b, Cluster: *c}, opts)
	if err != nil {
		return err
	}
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
