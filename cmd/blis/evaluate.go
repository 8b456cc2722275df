package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation"
)

func init() {
	subcommands = append(subcommands, newEvaluateCommand)
}

// evaluateFlags are the flags of `blis evaluate`.
type evaluateFlags struct {
	files                []string
	evaluation           string
	output, format       string
	model, hardware      string
	tp, numInstances     int
	seeds                []int64
	numRequests, horizon int64
	writeInput           string
	parallelism          int
	traceLevel, strategy string
	summaryTokens        int32
	traceOutput          string
}

func newEvaluateCommand() *cobra.Command {
	f := &evaluateFlags{}
	cmd := &cobra.Command{
		Use:   "evaluate",
		Short: "Run an Evaluation from manifests and print the status the operator would write",
		Long: `Evaluate reads SimulatedCluster, PolicyBundle, WorkloadSpec, Evaluation and ConfigMap
manifests (multi-document YAML, -f may be repeated), resolves the Evaluation's references by name
in its namespace, runs one simulation per seed and prints the Evaluation's status: the same
metrics, replicate statistics, fitness, input hash and engine version the operator writes.
Conditions, times and attempts are the operator's and are not printed.

A file without apiVersion and kind is read as a BLIS workload or policy file. Without an
Evaluation in the files, one is built over the only cluster, workload and policy bundle (the
default policies when there is none). --model (with --hardware, --tp, --num-instances) gives the
cluster instead of a SimulatedCluster; with an Evaluation it replaces the Evaluation's cluster.
--seeds, --num-requests and --horizon override the Evaluation's (and so change the input hash).

Without -f it evaluates the embedded quick-start example (config/samples/quickstart.yaml).

--trace-level, --summary-strategy and --summary-max-tokens replace the Evaluation's trace
settings (spec.trace), which shape status.anomalies and status.traceSummary; --trace-output
writes the records the trace kept (counters, sampled and worst decisions, rejections,
preemptions and, at level full, batch formations) for every seed as JSON.

--format gepa prints {"score", "reflection"}: the score an optimizer maximises and the text for
its reflection step (the trace summary). --format openevolve prints a flat metrics dict with
combined_score.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEvaluate(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	addEvaluationInputFlags(fl, f)
	fl.StringVarP(&f.output, "output", "o", "yaml", "output encoding: yaml or json")
	fl.StringVar(&f.format, "format", "status", "output: status, gepa ({score, reflection}) or openevolve (flat metrics)")
	fl.StringVar(&f.writeInput, "write-input", "", "also write the resolved input (the file blis engine reads) here")
	fl.StringVar(&f.traceOutput, "trace-output", "", "also write every seed's kept trace records (JSON) here")
	return cmd
}

// addEvaluationInputFlags registers the flags that choose and adjust the Evaluation to run
// (files, cluster from flags, seeds, request count, horizon, parallelism, trace settings):
// blis evaluate, report and compare share them, and loadEvaluation reads them.
func addEvaluationInputFlags(fl *pflag.FlagSet, f *evaluateFlags) {
	fl.StringArrayVarP(&f.files, "filename", "f", nil, "manifest or BLIS file (repeatable; - reads standard input)")
	fl.StringVar(&f.evaluation, "evaluation", "", "name of the Evaluation to run when the files hold several")
	fl.StringVar(&f.model, "model", "", "model of a cluster built from flags (catalog name)")
	fl.StringVar(&f.hardware, "hardware", "", "GPU of the cluster built from flags")
	fl.IntVar(&f.tp, "tp", 0, "tensor parallelism of the cluster built from flags")
	fl.IntVar(&f.numInstances, "num-instances", 1, "replicas of the cluster built from flags")
	fl.Int64SliceVar(&f.seeds, "seeds", nil, "seeds (comma-separated), replacing the Evaluation's")
	fl.Int64Var(&f.numRequests, "num-requests", 0, "request count, replacing the Evaluation's and the workload's")
	fl.Int64Var(&f.horizon, "horizon", 0, "simulated duration in µs, replacing the Evaluation's and the workload's")
	fl.IntVar(&f.parallelism, "parallelism", 0, "seeds simulated at once (0 = number of CPUs)")
	fl.StringVar(&f.traceLevel, "trace-level", "", "trace level (none, decisions, full), replacing the Evaluation's")
	fl.StringVar(&f.strategy, "summary-strategy", "", "trace summary strategy (issue_focused, decision_audit, counterfactual, pattern_mining)")
	fl.Int32Var(&f.summaryTokens, "summary-max-tokens", 0, "trace summary budget in estimated tokens (100-4000)")
}

// loadEvaluation reads the files (or the embedded default) and resolves the chosen Evaluation.
func loadEvaluation(stdin io.Reader, cmd *cobra.Command, f *evaluateFlags) (string, *evaluation.Resolved, error) {
	return loadEvaluationWith(stdin, cmd, f, nil)
}

// readManifests reads the files (- is stdin), or the embedded default when there are none.
func readManifests(stdin io.Reader, files []string) (evaluation.Manifests, error) {
	var m evaluation.Manifests
	if len(files) == 0 {
		if err := m.Add(evaluation.DefaultManifestName, evaluation.DefaultManifests()); err != nil {
			return m, err
		}
	}
	for _, name := range files {
		data, err := readInput(stdin, name)
		if err != nil {
			return m, err
		}
		if err := m.Add(name, data); err != nil {
			return m, err
		}
	}
	return m, nil
}

// readInput reads the file name, or stdin when name is "-" (the commands' convention).
func readInput(stdin io.Reader, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(name)
}

// loadEvaluationWith is loadEvaluation with edit (when not nil) applied to the manifests and
// the chosen Evaluation after the flags' overrides and before its inputs are gathered: blis
// report raises the trace level there, and blis compare puts each bundle in.
func loadEvaluationWith(stdin io.Reader, cmd *cobra.Command, f *evaluateFlags,
	edit func(m *evaluation.Manifests, ev *blisv1alpha1.Evaluation) error) (string, *evaluation.Resolved, error) {
	m, err := readManifests(stdin, f.files)
	if err != nil {
		return "", nil, err
	}
	fl := cmd.Flags()
	if f.model == "" && (fl.Changed("hardware") || fl.Changed("tp") || fl.Changed("num-instances")) {
		return "", nil, errors.New("--hardware, --tp and --num-instances describe a cluster built with --model; give --model too")
	}
	ev, err := m.Select(f.evaluation, f.model != "")
	if err != nil {
		return "", nil, err
	}
	if f.model != "" {
		if f.numInstances < 1 {
			return "", nil, fmt.Errorf("--num-instances must be >= 1, got %d", f.numInstances)
		}
		if f.tp < 0 || (fl.Changed("tp") && f.tp == 0) {
			return "", nil, fmt.Errorf("--tp must be >= 1, got %d", f.tp)
		}
		ev.Spec.ClusterRef = nil
		ev.Spec.Cluster = &blisv1alpha1.SimulatedClusterSpec{
			Model:  blisv1alpha1.ModelSpec{Name: f.model},
			GPU:    f.hardware,
			Engine: blisv1alpha1.VLLMEngineSpec{TensorParallelSize: int32(f.tp)},
			Pools:  []blisv1alpha1.ReplicaPoolSpec{{Name: "main", Role: blisv1alpha1.PoolMonolithic, Replicas: int32(f.numInstances)}},
		}
	}
	if fl.Changed("seeds") {
		ev.Spec.Seeds = f.seeds
	}
	if fl.Changed("num-requests") {
		n := f.numRequests
		ev.Spec.NumRequests = &n
	}
	if fl.Changed("horizon") {
		h := f.horizon
		ev.Spec.Horizon = &h
	}
	if fl.Changed("trace-level") {
		ev.Spec.Trace.Level = blisv1alpha1.TraceLevel(f.traceLevel)
	}
	if fl.Changed("summary-strategy") {
		ev.Spec.Trace.SummaryStrategy = f.strategy
	}
	if fl.Changed("summary-max-tokens") {
		ev.Spec.Trace.SummaryMaxTokens = f.summaryTokens
	}
	if edit != nil {
		if err := edit(&m, &ev); err != nil {
			return "", nil, err
		}
	}
	in, err := m.Inputs(ev, os.ReadFile)
	if err != nil {
		return "", nil, err
	}
	r, err := evaluation.Resolve(in)
	if err != nil {
		return "", nil, err
	}
	return ev.Name, r, nil
}

// runEvaluate is `blis evaluate`.
func runEvaluate(ctx context.Context, stdout, stderr io.Writer, cmd *cobra.Command, f *evaluateFlags) error {
	if ctx == nil {
		ctx = context.Background()
	}
	switch f.output {
	case "yaml", "json":
	default:
		return fmt.Errorf("-o %q is not an output encoding (yaml, json)", f.output)
	}
	switch f.format {
	case "status", "gepa", "openevolve":
	default:
		return fmt.Errorf("--format %q is not known (status, gepa, openevolve)", f.format)
	}
	name, r, err := loadEvaluation(cmd.InOrStdin(), cmd, f)
	if err != nil {
		return err
	}
	for _, n := range r.Notes {
		fmt.Fprintln(stderr, "blis evaluate: not simulated:", n)
	}
	if f.writeInput != "" {
		env, err := r.MarshalEnvelope()
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.writeInput, append(env, '\n'), 0o644); err != nil {
			return fmt.Errorf("writing --write-input: %w", err)
		}
	}
	bar := startProgress(stderr)
	bar.setSeeds(len(r.Document.Seeds))
	res, err := evaluation.RunWithOptions(ctx, r, evaluation.Options{Parallelism: f.parallelism, Progress: bar.evalFunc()})
	bar.stop()
	if err != nil {
		return err
	}
	if f.traceOutput != "" {
		js, err := json.MarshalIndent(map[string]any{"seeds": res.Traces()}, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.traceOutput, append(js, '\n'), 0o644); err != nil {
			return fmt.Errorf("writing --trace-output: %w", err)
		}
	}
	st := res.Status()
	var out any = st
	switch f.format {
	case "gepa":
		out = gepaResult{Score: evaluation.Score(&st), Reflection: evaluation.Reflection(name, &st, r.Notes)}
	case "openevolve":
		out = evaluation.FlatMetrics(&st)
	}
	return writeEncoded(stdout, out, f.output)
}

// gepaResult is the --format gepa output.
type gepaResult struct {
	// Score is the number GEPA maximises.
	Score float64 `json:"score"`
	// Reflection is the text GEPA's reflection step reads.
	Reflection string `json:"reflection"`
}

// writeEncoded writes v as indented JSON or as YAML.
func writeEncoded(w io.Writer, v any, format string) error {
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if format == "json" {
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
