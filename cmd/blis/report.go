package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation"
	"github.com/inference-sim/blis-operator/internal/report"
)

func init() {
	subcommands = append(subcommands, newReportCommand)
}

// reportFlags are the flags of `blis report`.
type reportFlags struct {
	eval       evaluateFlags
	output     string
	pngDir     string
	dataOutput string
}

func newReportCommand() *cobra.Command {
	f := &reportFlags{}
	cmd := &cobra.Command{
		Use:   "report [SOURCE]",
		Short: "Write an HTML report with charts (and PNGs) of an evaluation or a study",
		Long: `Report writes a self-contained HTML page (charts inlined as SVG: no network needed to
view it) about one evaluation: headline metrics, SLO classes and their attainment, TTFT/ITL/E2E
CDFs per SLO class, arrivals, completions, queue depth, batch size, KV utilization and cache hit
rate over time, replicate confidence intervals, fitness, anomalies and the trace summary.

SOURCE is a file (- reads standard input) holding any of:
  report data (--data-output of an earlier report),
  an engine result (blis engine output, or an operator result ConfigMap or its result.json),
  an Evaluation status (blis evaluate -o json or -o yaml),
  an Evaluation object (kubectl get evaluation NAME -o yaml),
  a PolicyStudy (object, status, with its Evaluations, or study report data): a study report.
A status carries no latency distributions or time series, so such a report lists them as
missing; re-run the evaluation from its manifests with -f to get them.

With -f (and the other input flags of blis evaluate) it runs the Evaluation from manifests, with
the trace level raised to at least decisions (the engine records time series only when tracing),
and reports it in full. With neither SOURCE nor -f it runs the embedded quick-start example.

--png-dir also writes every chart as a PNG (ttft-cdf.png, queue-depth.png, ...), and
--data-output the report data as JSON, which blis report and blis compare read back. The paths
written are printed.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd.Context(), cmd, args, f)
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVarP(&f.output, "output", "o", "report.html", "HTML file to write (- writes standard output)")
	fl.StringVar(&f.pngDir, "png-dir", "", "also write every chart as a PNG in this directory")
	fl.StringVar(&f.dataOutput, "data-output", "", "also write the report data (JSON) here")
	addEvaluationInputFlags(fl, &f.eval)
	return cmd
}

// runReport is `blis report`.
func runReport(ctx context.Context, cmd *cobra.Command, args []string, f *reportFlags) error {
	if ctx == nil {
		ctx = context.Background()
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	var d *report.Data
	var sd *report.StudyData
	var err error
	if len(args) == 1 {
		if changed := changedInputFlags(cmd); changed != "" {
			return fmt.Errorf("--%s runs an evaluation from manifests; give it or a SOURCE, not both", changed)
		}
		d, sd, err = loadReportSource(ctx, cmd.InOrStdin(), args[0])
	} else {
		d, err = evaluateForReport(ctx, cmd, &f.eval, "", stderr, nil)
	}
	if err != nil {
		return err
	}
	var written []string
	out := func(path string, write func(w io.Writer) error) error {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			return err
		}
		if path == "-" {
			_, err := stdout.Write(buf.Bytes())
			return err
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			return err
		}
		written = append(written, path)
		return nil
	}
	if sd != nil {
		err = writeStudyOutputs(sd, f, out, &written)
	} else {
		err = writeReportOutputs(d, f, out, &written)
	}
	if err != nil {
		return err
	}
	list := stdout
	if f.output == "-" {
		list = stderr
	}
	for _, p := range written {
		fmt.Fprintln(list, p)
	}
	return nil
}

// writeReportOutputs writes an evaluation's data JSON, HTML and PNGs.
func writeReportOutputs(d *report.Data, f *reportFlags, out func(string, func(io.Writer) error) error, written *[]string) error {
	if f.dataOutput != "" {
		if err := out(f.dataOutput, func(w io.Writer) error { return report.WriteJSON(w, d) }); err != nil {
			return fmt.Errorf("writing --data-output: %w", err)
		}
	}
	if err := out(f.output, func(w io.Writer) error { return report.HTML(w, d) }); err != nil {
		return err
	}
	if f.pngDir != "" {
		paths, err := report.PNGs(f.pngDir, d)
		if err != nil {
			return err
		}
		*written = append(*written, paths...)
	}
	return nil
}

// writeStudyOutputs writes a study's data JSON, HTML and PNGs.
func writeStudyOutputs(sd *report.StudyData, f *reportFlags, out func(string, func(io.Writer) error) error, written *[]string) error {
	if f.dataOutput != "" {
		if err := out(f.dataOutput, func(w io.Writer) error { return writeEncoded(w, sd, "json") }); err != nil {
			return fmt.Errorf("writing --data-output: %w", err)
		}
	}
	if err := out(f.output, func(w io.Writer) error { return report.StudyHTML(w, sd) }); err != nil {
		return err
	}
	if f.pngDir != "" {
		paths, err := report.StudyPNGs(f.pngDir, sd)
		if err != nil {
			return err
		}
		*written = append(*written, paths...)
	}
	return nil
}

// changedInputFlags names one evaluation input flag given on the command line ("" for none).
func changedInputFlags(cmd *cobra.Command) string {
	for _, name := range []string{"filename", "evaluation", "model", "hardware", "tp", "num-instances", "seeds",
		"num-requests", "horizon", "parallelism", "trace-level", "summary-strategy", "summary-max-tokens"} {
		if cmd.Flags().Changed(name) {
			return name
		}
	}
	return ""
}

// atLeastDecisions raises an Evaluation's trace level to decisions when it is lower: the
// engine records the time series a report draws only when tracing. It reports whether it did.
func atLeastDecisions(ev *blisv1alpha1.Evaluation) bool {
	switch ev.Spec.Trace.Level {
	case "", blisv1alpha1.TraceNone:
		ev.Spec.Trace.Level = blisv1alpha1.TraceDecisions
		return true
	}
	return false
}

// evaluateForReport runs the Evaluation the input flags choose (evaluation names it when not
// empty), with the trace level at least decisions, and returns its report data. edit, when not
// nil, changes the manifests and Evaluation first (blis compare puts a bundle in).
func evaluateForReport(ctx context.Context, cmd *cobra.Command, f *evaluateFlags, evaluationName string, stderr io.Writer,
	edit func(m *evaluation.Manifests, ev *blisv1alpha1.Evaluation) error) (*report.Data, error) {
	fe := *f
	if evaluationName != "" {
		fe.evaluation = evaluationName
	}
	if fe.traceLevel == string(blisv1alpha1.TraceNone) && cmd.Flags().Changed("trace-level") {
		return nil, errors.New("--trace-level none records no time series for a report; use decisions or full")
	}
	name, r, err := loadEvaluationWith(cmd.InOrStdin(), cmd, &fe, func(m *evaluation.Manifests, ev *blisv1alpha1.Evaluation) error {
		if edit != nil {
			if err := edit(m, ev); err != nil {
				return err
			}
		}
		atLeastDecisions(ev)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, n := range r.Notes {
		fmt.Fprintf(stderr, "blis %s: %s: not simulated: %s\n", cmd.Name(), name, n)
	}
	bar := startProgress(stderr)
	bar.setSeeds(len(r.Document.Seeds))
	res, err := evaluation.RunWithOptions(ctx, r, evaluation.Options{Parallelism: fe.parallelism, Progress: bar.evalFunc()})
	bar.stop()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return res.ReportData(name), nil
}
