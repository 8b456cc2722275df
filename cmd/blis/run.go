package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/inference-sim/blis-operator/internal/engine/metrics"
	"github.com/inference-sim/blis-operator/internal/engine/model"
	"github.com/inference-sim/blis-operator/internal/engine/sim"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

func init() {
	subcommands = append(subcommands, newRunCommand)
}

// runFlags are the flags of `blis run`, named and defaulted as in upstream BLIS.
type runFlags struct {
	// Model, hardware and latency model.
	model, hardware, vllmVersion, latencyModel string
	tp                                         int
	alphaCoeffs, betaCoeffs                    []float64

	// vLLM engine.
	maxNumSeqs, maxNumBatchedTokens, longPrefillThreshold int64
	maxNumPartialPrefills, maxLongPartialPrefills         int64
	blockSize, totalKVBlocks, maxModelLen                 int64
	gpuMemoryUtilization                                  float64
	enablePrefixCaching, enableChunkedPrefill             bool

	// Cluster and control plane.
	numInstances  int
	pol           policyFlags
	scale         autoscaleFlags
	tier          tierFlags
	pd            pdFlags
	seed, horizon int64

	// Workload (BLIS's default "distribution" workload).
	workloadType, arrival   string
	workloadSpec            string
	numRequests             int64
	rate                    float64
	prefixTokens            int
	promptMean, promptStdev float64
	promptMin, promptMax    int
	outputMean, outputStdev float64
	outputMin, outputMax    int

	// Output.
	metricsPath, logLevel string
	// saturationThresholdMs (> 0) adds BLIS's saturation block to the cluster output.
	saturationThresholdMs float64
	// bar shows progress on a terminal (nil: none).
	bar *progressBar
}

// flagAliases maps BLIS's older or alternative flag names to this command's names, so scripts
// written for upstream BLIS keep working.
var flagAliases = map[string]string{
	"max-num-running-reqs":     "max-num-seqs",
	"max-num-scheduled-tokens": "max-num-batched-tokens",
	"max-prompts":              "num-requests",
	"block-size":               "block-size-in-tokens",
	"tensor-parallel-size":     "tp",
}

func newRunCommand() *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Simulate vLLM instances serving a synthetic workload and print BLIS metrics",
		Long: `Run simulates a cluster of vLLM v1 instances serving BLIS's default "distribution"
workload (constant or Poisson arrivals, clamped Gaussian prompt and output lengths, an optional
shared prefix) and prints the metrics in upstream BLIS's format: one JSON block per instance,
then the cluster block, each after a "=== Simulation Metrics ===" line. --metrics-path also
writes the cluster block with one row per request.

The control plane is a policy bundle: --policy-config loads BLIS's policy-config YAML (with this
project's templates, decision trees, CEL expressions and snapshot observability), and the
--admission-policy, --priority-policy, --routing-policy, --routing-scorers, --scheduler,
--preemption-policy, --admission-latency, --routing-latency and --token-bucket-* flags override
it. Without any of them the run uses BLIS's defaults: always-admit, constant priority,
round-robin, fcfs scheduling and fcfs preemption.

The flags are upstream BLIS's; --max-num-running-reqs, --max-num-scheduled-tokens,
--max-prompts, --block-size and --tensor-parallel-size are accepted as aliases of
--max-num-seqs, --max-num-batched-tokens, --num-requests, --block-size-in-tokens and --tp.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.bar = startProgress(cmd.ErrOrStderr())
			return runSimulation(cmd.OutOrStdout(), cmd.Flags(), f)
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false

	fl.StringVar(&f.model, "model", "", "model name from the catalog, e.g. meta-llama/llama-3.1-8b-instruct (required)")
	fl.StringVar(&f.hardware, "hardware", "", "GPU type, e.g. H100, A100-80, L40S (default: the model's default GPU)")
	fl.IntVar(&f.tp, "tp", 0, "tensor parallelism (default: the model's default TP)")
	fl.StringVar(&f.vllmVersion, "vllm-version", "", "vLLM version of the blackbox coefficients (default: the model's)")
	fl.StringVar(&f.latencyModel, "latency-model", model.LatencyTrainedPhysics, "latency model: "+strings.Join(model.LatencyKinds(), ", "))
	fl.Float64SliceVar(&f.alphaCoeffs, "alpha-coeffs", nil, "alpha coefficients of the latency model (comma-separated; default: the model's)")
	fl.Float64SliceVar(&f.betaCoeffs, "beta-coeffs", nil, "beta coefficients of the latency model (comma-separated; default: the model's)")

	fl.Int64Var(&f.maxNumSeqs, "max-num-seqs", model.DefaultMaxNumSeqs, "maximum requests in a running batch")
	fl.Int64Var(&f.maxNumBatchedTokens, "max-num-batched-tokens", model.DefaultMaxNumBatchedTokens, "token budget of one engine step")
	fl.Int64Var(&f.longPrefillThreshold, "long-prefill-token-threshold", 0, "largest prefill chunk of one request per step (0 = no cap)")
	fl.Int64Var(&f.maxNumPartialPrefills, "max-num-partial-prefills", model.DefaultMaxNumPartialPrefills, "requests that may be partially prefilled at once, sharing the token budget (1 = no limit)")
	fl.Int64Var(&f.maxLongPartialPrefills, "max-long-partial-prefills", model.DefaultMaxLongPartialPrefills, "partial prefills whose prompt is above the long-prefill threshold (at most --max-num-partial-prefills)")
	fl.Int64Var(&f.blockSize, "block-size-in-tokens", model.DefaultBlockSize, "tokens per KV-cache block")
	fl.Int64Var(&f.totalKVBlocks, "total-kv-blocks", 0, "KV-cache size in blocks (0 = derive from model, GPU, TP and --gpu-memory-utilization)")
	fl.Float64Var(&f.gpuMemoryUtilization, "gpu-memory-utilization", model.DefaultGPUMemoryUtilization, "fraction of GPU memory vLLM may use, in (0, 1]")
	fl.Int64Var(&f.maxModelLen, "max-model-len", 0, "maximum prompt + output length (0 = derive from the model and the KV cache)")
	fl.BoolVar(&f.enablePrefixCaching, "enable-prefix-caching", true, "reuse cached prompt blocks across requests")
	fl.BoolVar(&f.enableChunkedPrefill, "enable-chunked-prefill", true, "split long prompts across steps")

	fl.IntVar(&f.numInstances, "num-instances", 1, "number of instances")
	addPolicyFlags(fl, &f.pol)
	addAutoscaleFlags(fl, &f.scale)
	addTierFlags(fl, &f.tier)
	addPDFlags(fl, &f.pd)
	fl.Int64Var(&f.seed, "seed", 42, "master random seed")
	fl.Int64Var(&f.horizon, "horizon", 0, "stop the simulation at this time in microseconds (0 = run until all requests finish)")

	fl.StringVar(&f.workloadType, "workload", "distribution", "workload: distribution, a BLIS preset ("+strings.Join(workload.PresetNames(), ", ")+") whose lengths and prefix replace the defaults, or a built-in scenario ("+strings.Join(workload.ScenarioNames(), ", ")+")")
	fl.StringVar(&f.workloadSpec, "workload-spec", "", "YAML workload specification (BLIS workload spec v2); replaces --workload, and --rate, --num-requests, --horizon and --seed override its values when given")
	fl.StringVar(&f.arrival, "arrival", "constant", "arrival process of the distribution workload: constant or poisson")
	fl.Int64Var(&f.numRequests, "num-requests", 100, "number of requests")
	fl.Float64Var(&f.rate, "rate", 1.0, "arrival rate in requests per second")
	fl.IntVar(&f.prefixTokens, "prefix-tokens", 0, "length of a prefix shared by every request")
	fl.Float64Var(&f.promptMean, "prompt-tokens", 512, "mean prompt length")
	fl.Float64Var(&f.promptStdev, "prompt-tokens-stdev", 256, "standard deviation of the prompt length")
	fl.IntVar(&f.promptMin, "prompt-tokens-min", 2, "minimum prompt length")
	fl.IntVar(&f.promptMax, "prompt-tokens-max", 7000, "maximum prompt length")
	fl.Float64Var(&f.outputMean, "output-tokens", 512, "mean output length")
	fl.Float64Var(&f.outputStdev, "output-tokens-stdev", 256, "standard deviation of the output length")
	fl.IntVar(&f.outputMin, "output-tokens-min", 2, "minimum output length")
	fl.IntVar(&f.outputMax, "output-tokens-max", 7000, "maximum output length")

	fl.StringVar(&f.metricsPath, "metrics-path", "", "also write the cluster metrics with per-request rows to this JSON file")
	fl.Float64Var(&f.saturationThresholdMs, "saturation-threshold-ms", 0, "add BLIS's saturation classification (threshold detector: OVERLOADED when the mean E2E reaches this many ms; BLIS's default is 5000) to the cluster output (0 = none)")
	fl.StringVar(&f.logLevel, "log", "warn", "log level, accepted for compatibility: trace, debug, info, warn, error, fatal, panic")

	fl.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if to, ok := flagAliases[name]; ok {
			name = to
		}
		return pflag.NormalizedName(name)
	})
	return cmd
}

// maxInstances bounds --num-instances: each instance owns a KV cache of its own, so absurd
// counts would exhaust memory instead of failing clearly.
const maxInstances = 10_000

// checkFlags rejects values that the resolvers would otherwise silently replace by a default
// (an explicit 0 where 0 means "default") and values outside any meaningful range.
func checkFlags(fl *pflag.FlagSet, f *runFlags) error {
	positive := []struct {
		name string
		v    int64
	}{
		{"max-num-seqs", f.maxNumSeqs},
		{"max-num-batched-tokens", f.maxNumBatchedTokens},
		{"block-size-in-tokens", f.blockSize},
		{"max-num-partial-prefills", f.maxNumPartialPrefills},
		{"max-long-partial-prefills", f.maxLongPartialPrefills},
		{"num-requests", f.numRequests},
		{"num-instances", int64(f.numInstances)},
	}
	for _, p := range positive {
		if p.v <= 0 {
			return fmt.Errorf("--%s must be > 0, got %d", p.name, p.v)
		}
	}
	nonNegative := []struct {
		name string
		v    int64
	}{
		{"long-prefill-token-threshold", f.longPrefillThreshold},
		{"total-kv-blocks", f.totalKVBlocks},
		{"max-model-len", f.maxModelLen},
		{"tp", int64(f.tp)},
		{"admission-latency", f.pol.admissionLatency},
		{"routing-latency", f.pol.routingLatency},
		{"horizon", f.horizon},
		{"prefix-tokens", int64(f.prefixTokens)},
	}
	for _, p := range nonNegative {
		if p.v < 0 {
			return fmt.Errorf("--%s must be >= 0, got %d", p.name, p.v)
		}
	}
	for _, p := range []struct {
		name string
		v    int64
	}{{"max-num-seqs", f.maxNumSeqs}, {"max-num-batched-tokens", f.maxNumBatchedTokens}, {"block-size-in-tokens", f.blockSize},
		{"long-prefill-token-threshold", f.longPrefillThreshold}, {"total-kv-blocks", f.totalKVBlocks}, {"max-model-len", f.maxModelLen},
		{"max-num-partial-prefills", f.maxNumPartialPrefills}} {
		if p.v > math.MaxInt32 {
			return fmt.Errorf("--%s must be <= %d, got %d", p.name, math.MaxInt32, p.v)
		}
	}
	if fl.Changed("tp") && f.tp == 0 {
		return errors.New("--tp must be > 0, got 0")
	}
	if u := f.gpuMemoryUtilization; math.IsNaN(u) || u <= 0 || u > 1 {
		return fmt.Errorf("--gpu-memory-utilization must be in (0, 1], got %g", u)
	}
	if f.numInstances > maxInstances {
		return fmt.Errorf("--num-instances must be <= %d, got %d", maxInstances, f.numInstances)
	}
	if f.workloadType != "distribution" {
		_, presetErr := workload.Preset(f.workloadType)
		_, scenarioErr := workload.Scenario(f.workloadType)
		if presetErr != nil && scenarioErr != nil {
			return fmt.Errorf("--workload %q is not known (known: distribution; presets %s; scenarios %s)", f.workloadType,
				strings.Join(workload.PresetNames(), ", "), strings.Join(workload.ScenarioNames(), ", "))
		}
	}
	switch strings.ToLower(f.logLevel) {
	case "trace", "debug", "info", "warn", "warning", "error", "fatal", "panic":
	default:
		return fmt.Errorf("--log %q is not a log level (known: trace, debug, info, warn, error, fatal, panic)", f.logLevel)
	}
	return nil
}

// instanceSpec turns the flags into the model package's instance specification.
func instanceSpec(fl *pflag.FlagSet, f *runFlags) model.InstanceSpec {
	prefix, chunked := f.enablePrefixCaching, f.enableChunkedPrefill
	spec := model.InstanceSpec{
		Model:        f.model,
		GPU:          f.hardware,
		LatencyModel: f.latencyModel,
		Engine: model.EngineSettings{
			TensorParallelSize:        f.tp,
			MaxNumSeqs:                f.maxNumSeqs,
			MaxNumBatchedTokens:       f.maxNumBatchedTokens,
			LongPrefillTokenThreshold: f.longPrefillThreshold,
			MaxNumPartialPrefills:     f.maxNumPartialPrefills,
			MaxLongPartialPrefills:    f.maxLongPartialPrefills,
			BlockSize:                 f.blockSize,
			GPUMemoryUtilization:      f.gpuMemoryUtilization,
			TotalKVBlocks:             f.totalKVBlocks,
			MaxModelLen:               f.maxModelLen,
			EnablePrefixCaching:       &prefix,
			EnableChunkedPrefill:      &chunked,
			VLLMVersion:               f.vllmVersion,
		},
	}
	if fl.Changed("alpha-coeffs") {
		spec.AlphaCoeffs = f.alphaCoeffs
	}
	if fl.Changed("beta-coeffs") {
		spec.BetaCoeffs = f.betaCoeffs
	}
	return spec
}

// runInput is a resolved `blis run`: the simulation, its workload and the SLO targets of the
// metrics report.
type runInput struct {
	cfg     *sim.Config
	src     workload.Source
	targets map[string]workload.SLOTargets
}

// buildWorkload builds the workload source: a workload spec file, or the distribution workload
// (possibly from a BLIS preset) configured by the flags. It may adjust the seed and horizon of
// cfg to the spec's.
func buildWorkload(fl *pflag.FlagSet, f *runFlags, cfg *sim.Config) (workload.Source, map[string]workload.SLOTargets, error) {
	var spec *workload.Spec
	switch {
	case f.workloadSpec != "":
		var err error
		if spec, err = workload.LoadSpecFile(f.workloadSpec); err != nil {
			return nil, nil, err
		}
	case f.workloadType != "distribution":
		if _, err := workload.Preset(f.workloadType); err != nil {
			// Not a BLIS preset: a built-in scenario (validated with the flags).
			if spec, err = workload.Scenario(f.workloadType); err != nil {
				return nil, nil, err
			}
		}
	}
	if spec != nil {
		// Flags given explicitly win over the file, as in BLIS.
		if fl.Changed("rate") {
			spec.AggregateRate = f.rate
		}
		if fl.Changed("num-requests") {
			spec.NumRequests = f.numRequests
		}
		if fl.Changed("horizon") {
			spec.Horizon = f.horizon
		}
		if !fl.Changed("seed") && spec.Seed != 0 {
			cfg.Seed = spec.Seed
		}
		cfg.Horizon = spec.Horizon
		src, err := spec.Source(cfg.Seed)
		if err != nil {
			return nil, nil, err
		}
		return src, spec.GoodputSLOTargets, nil
	}
	poisson, err := workload.ParseArrival(f.arrival)
	if err != nil {
		return nil, nil, err
	}
	dc := workload.DefaultDistributionConfig()
	preset := f.workloadType != "distribution"
	if preset {
		if dc, err = workload.Preset(f.workloadType); err != nil {
			return nil, nil, err
		}
	}
	// With a preset, its lengths and prefix stand unless the flags are given explicitly.
	if !preset || fl.Changed("prefix-tokens") {
		dc.PrefixTokens = f.prefixTokens
	}
	setLen := func(l *workload.LengthConfig, name string, mean, stdev float64, lo, hi int) {
		if !preset || fl.Changed(name) {
			l.Mean = mean
		}
		if !preset || fl.Changed(name+"-stdev") {
			l.Stdev = stdev
		}
		if !preset || fl.Changed(name+"-min") {
			l.Min = lo
		}
		if !preset || fl.Changed(name+"-max") {
			l.Max = hi
		}
	}
	setLen(&dc.Input, "prompt-tokens", f.promptMean, f.promptStdev, f.promptMin, f.promptMax)
	setLen(&dc.Output, "output-tokens", f.outputMean, f.outputStdev, f.outputMin, f.outputMax)
	dc.Rate, dc.NumRequests, dc.Poisson, dc.Horizon = f.rate, f.numRequests, poisson, f.horizon
	src, err := workload.NewDistribution(dc, cfg.Seed)
	return src, nil, err
}

// sloTargets maps a workload's per-class goodput targets (ms) to the report's per-class-index
// targets (µs).
func sloTargets(targets map[string]workload.SLOTargets, names *workload.Tables) []metrics.SLOTarget {
	if len(targets) == 0 || names == nil {
		return nil
	}
	out := make([]metrics.SLOTarget, len(names.SLOClasses))
	for i, class := range names.SLOClasses {
		if t, ok := targets[class]; ok {
			out[i] = metrics.SLOTarget{TTFT: int64(t.TTFT * 1000), ITL: int64(t.ITL * 1000), E2E: int64(t.E2E * 1000)}
		}
	}
	return out
}

// buildRun resolves the flags into a simulation configuration and its workload.
func buildRun(fl *pflag.FlagSet, f *runFlags) (*runInput, error) {
	if err := checkFlags(fl, f); err != nil {
		return nil, err
	}
	cat, err := model.DefaultCatalog()
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(f.model) == "" {
		_, err := cat.LookupModel("")
		return nil, fmt.Errorf("--model is required: %w", err)
	}
	resolved, err := cat.Resolve(instanceSpec(fl, f))
	if err != nil {
		return nil, err
	}
	inst, err := sim.InstanceFromResolved(resolved)
	if err != nil {
		return nil, err
	}
	if inst.CPUTier, err = cpuTier(fl, &f.tier, resolved); err != nil {
		return nil, err
	}
	bundle, err := policyBundle(fl, &f.pol)
	if err != nil {
		return nil, err
	}
	cfg := &sim.Config{
		Policy:           bundle,
		Seed:             f.seed,
		Horizon:          f.horizon,
		AdmissionLatency: f.pol.admissionLatency,
		RoutingLatency:   f.pol.routingLatency,
		Options:          sim.Options{RequestRecords: f.metricsPath != ""},
	}
	if err := clusterDynamics(fl, f, cfg, inst, resolved, bundle); err != nil {
		return nil, err
	}
	src, targets, err := buildWorkload(fl, f, cfg)
	if err != nil {
		return nil, err
	}
	if e := &resolved.Engine; e.MaxNumPartialPrefills > 1 {
		// Every replica, the pools' included, runs the engine's partial prefill limits.
		for i := range cfg.Instances {
			cfg.Instances[i].MaxNumPartialPrefills = int32(e.MaxNumPartialPrefills)
			cfg.Instances[i].MaxLongPartialPrefills = int32(e.MaxLongPartialPrefills)
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &runInput{cfg: cfg, src: src, targets: targets}, nil
}

// runSimulation is `blis run`: resolve, simulate, print the metrics, write the metrics file.
func runSimulation(stdout io.Writer, fl *pflag.FlagSet, f *runFlags) error {
	if f.saturationThresholdMs < 0 || math.IsNaN(f.saturationThresholdMs) || math.IsInf(f.saturationThresholdMs, 0) {
		return fmt.Errorf("--saturation-threshold-ms must be a finite value >= 0, got %v", f.saturationThresholdMs)
	}
	in, err := buildRun(fl, f)
	if err != nil {
		return err
	}
	in.cfg.Options.Progress = f.bar.simFunc(in.cfg.Seed)
	res, err := sim.Run(in.cfg, in.src)
	f.bar.stop()
	if err != nil {
		return err
	}
	names := in.src.Tables()
	mopts := metrics.Options{Targets: sloTargets(in.targets, names), SaturationThresholdMs: f.saturationThresholdMs}
	report := res.Report(names, mopts)
	if err := report.WriteBLIS(stdout); err != nil {
		return err
	}
	if err := writePools(stdout, res, names, mopts); err != nil {
		return err
	}
	if err := writeAutoscale(stdout, res.Autoscale); err != nil {
		return err
	}
	if f.metricsPath == "" {
		return nil
	}
	data, err := json.MarshalIndent(report.Cluster, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(f.metricsPath, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing --metrics-path: %w", err)
	}
	return nil
}
