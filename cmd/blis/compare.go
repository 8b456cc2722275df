package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation"
	"github.com/inference-sim/blis-operator/internal/report"
)

func init() {
	subcommands = append(subcommands, newCompareCommand)
}

// compareFlags are the flags of `blis compare`.
type compareFlags struct {
	eval    evaluateFlags
	bundles []string
	output  string
	pngDir  string
}

func newCompareCommand() *cobra.Command {
	f := &compareFlags{}
	cmd := &cobra.Command{
		Use:   "compare [SOURCE...]",
		Short: "Compare evaluations or policy bundles: a delta table and overlaid charts",
		Long: `Compare puts several evaluations side by side. The first is the baseline: for every
headline and per-class metric it prints each evaluation's value, the difference from the baseline
(and the relative difference), whether that is better or worse, and whether it exceeds the
replicate confidence intervals ("yes" when the 95% intervals of the two means do not overlap,
"n/a (single seed)" without several seeds). It also writes an HTML page with the table and the
CDFs, time series (per-instance series as each evaluation's mean over its instances), SLO
attainment and fitness overlaid, one colour per evaluation.

The evaluations, in order:
  each SOURCE argument: a file in any form blis report reads (report data, engine result,
    Evaluation status or object), or a reference the kubectl plugin resolves;
  then, with -f, the Evaluations of the manifests: every Evaluation in the files (or the one
    --evaluation names, or the one built over the only cluster, workload and bundle);
  or, with --bundle (repeatable), one evaluation per policy bundle file on the cluster and
    workload of -f (the Evaluation --evaluation names or the only one, else one built over the
    only cluster and workload): policy A vs policy B on the same traffic.
Evaluations run from manifests have the trace level raised to at least decisions, as in blis
report, so their time series exist.

Example:
  blis compare --bundle baseline.yaml --bundle candidate.yaml -f cluster.yaml -f workload.yaml --seeds 1,2,3`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(cmd.Context(), cmd, args, f)
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVarP(&f.output, "output", "o", "compare.html", "HTML file to write")
	fl.StringVar(&f.pngDir, "png-dir", "", "also write every chart as a PNG in this directory")
	fl.StringArrayVar(&f.bundles, "bundle", nil, "policy bundle file to evaluate on the -f cluster and workload (repeatable)")
	addEvaluationInputFlags(fl, &f.eval)
	return cmd
}

// runCompare is `blis compare`.
func runCompare(ctx context.Context, cmd *cobra.Command, args []string, f *compareFlags) error {
	if ctx == nil {
		ctx = context.Background()
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	fromManifests := len(f.bundles) > 0 || len(f.eval.files) > 0
	if changed := changedInputFlags(cmd); changed != "" && !fromManifests {
		return fmt.Errorf("--%s adjusts evaluations run from manifests; give -f or --bundle too", changed)
	}
	var ds []*report.Data
	for _, a := range args {
		d, err := loadSource(ctx, cmd.InOrStdin(), a)
		if err != nil {
			return err
		}
		ds = append(ds, d)
	}
	if fromManifests {
		evaluated, err := evaluateForCompare(ctx, cmd, f)
		if err != nil {
			return err
		}
		ds = append(ds, evaluated...)
	}
	if len(ds) < 2 {
		return fmt.Errorf("compare needs at least two evaluations, got %d", len(ds))
	}
	var page bytes.Buffer
	if err := report.CompareHTML(&page, ds); err != nil {
		return err
	}
	if err := os.WriteFile(f.output, page.Bytes(), 0o644); err != nil {
		return err
	}
	written := []string{f.output}
	if f.pngDir != "" {
		paths, err := report.ComparePNGs(f.pngDir, ds)
		if err != nil {
			return err
		}
		written = append(written, paths...)
	}
	if err := report.Compare(ds).WriteText(stdout); err != nil {
		return err
	}
	for _, p := range written {
		fmt.Fprintln(stderr, "wrote", p)
	}
	return nil
}

// evaluateForCompare runs the evaluations -f and --bundle describe.
func evaluateForCompare(ctx context.Context, cmd *cobra.Command, f *compareFlags) ([]*report.Data, error) {
	stderr := cmd.ErrOrStderr()
	if len(f.bundles) == 0 {
		m, err := readManifests(cmd.InOrStdin(), f.eval.files)
		if err != nil {
			return nil, err
		}
		names := []string{f.eval.evaluation}
		if f.eval.evaluation == "" && len(m.Evaluations) > 1 {
			names = names[:0]
			for _, ev := range m.Evaluations {
				names = append(names, ev.Name)
			}
		}
		if len(names) > 1 && slices.Contains(f.eval.files, "-") {
			return nil, errors.New("-f - (standard input) can be read only once; comparing several Evaluations needs files")
		}
		var out []*report.Data
		for _, n := range names {
			d, err := evaluateForReport(ctx, cmd, &f.eval, n, stderr, nil)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
		return out, nil
	}
	if slices.Contains(f.eval.files, "-") && len(f.bundles) > 1 {
		return nil, errors.New("-f - (standard input) can be read only once; comparing bundles needs files")
	}
	var out []*report.Data
	for _, file := range f.bundles {
		b, err := readBundle(file)
		if err != nil {
			return nil, err
		}
		d, err := evaluateForReport(ctx, cmd, &f.eval, "", stderr, func(m *evaluation.Manifests, ev *blisv1alpha1.Evaluation) error {
			useBundle(m, ev, b)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("--bundle %s: %w", file, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// readBundle reads a policy bundle file: a PolicyBundle manifest or a BLIS policy file (named
// after the file), holding exactly one bundle.
func readBundle(file string) (blisv1alpha1.PolicyBundle, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return blisv1alpha1.PolicyBundle{}, err
	}
	var m evaluation.Manifests
	if err := m.Add(file, data); err != nil {
		return blisv1alpha1.PolicyBundle{}, err
	}
	if len(m.Policies) != 1 || len(m.Clusters)+len(m.Workloads)+len(m.Evaluations) > 0 {
		return blisv1alpha1.PolicyBundle{}, fmt.Errorf("--bundle %s must hold exactly one PolicyBundle (or BLIS policy file) and nothing else", file)
	}
	return m.Policies[0], nil
}

// useBundle makes ev run bundle b: b joins the manifests in ev's namespace (replacing a bundle
// of the same name) and ev, renamed after b so that the comparison names each evaluation by
// its bundle, references it instead of its own policy.
func useBundle(m *evaluation.Manifests, ev *blisv1alpha1.Evaluation, b blisv1alpha1.PolicyBundle) {
	ns := ev.Namespace
	if ns == "" {
		ns = evaluation.DefaultNamespace
	}
	b.Namespace = ns
	kept := m.Policies[:0]
	for _, p := range m.Policies {
		pns := p.Namespace
		if pns == "" {
			pns = evaluation.DefaultNamespace
		}
		if p.Name != b.Name || pns != ns {
			kept = append(kept, p)
		}
	}
	m.Policies = append(kept, b)
	ev.Spec.Policy = nil
	ev.Spec.PolicyRef = &blisv1alpha1.LocalObjectReference{Name: b.Name}
	ev.Name = b.Name
}
