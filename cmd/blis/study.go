package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation"
	"github.com/inference-sim/blis-operator/internal/study"
	"github.com/inference-sim/blis-operator/internal/study/binding"
)

func init() {
	subcommands = append(subcommands, newStudyCommand)
}

// studyFlags are the flags of `blis study`.
type studyFlags struct {
	files    []string
	study    string
	output   string
	workers  int
	winner   string
	exportTo string
	target   string
	progress bool
	// report and reportData are the study report files (see study_report.go).
	report, reportData string
}

func newStudyCommand() *cobra.Command {
	f := &studyFlags{}
	cmd := &cobra.Command{
		Use:   "study -f study.yaml",
		Short: "Run a PolicyStudy locally and print the status the operator would write",
		Long: `Study reads a PolicyStudy and the SimulatedCluster, WorkloadSpec, base PolicyBundle and
ConfigMaps it references (multi-document YAML, -f may be repeated), runs the whole search
in-process with the same engine, algorithms and candidate names as the operator, and prints the
PolicyStudy's status: counters, best candidate, Pareto front, convergence and the Completed or
Failed condition.

--winner writes the best candidate as a PolicyBundle manifest; --export writes its llm-d
configuration (the files promotion puts into a ConfigMap) into a directory.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStudy(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringArrayVarP(&f.files, "filename", "f", nil, "manifest file (repeatable; - reads standard input)")
	fl.StringVar(&f.study, "study", "", "name of the PolicyStudy to run when the files hold several")
	fl.StringVarP(&f.output, "output", "o", "yaml", "output encoding: yaml or json")
	fl.IntVar(&f.workers, "workers", 0, "candidates simulated at once (0 = the study's parallelism, at most the number of CPUs)")
	fl.StringVar(&f.winner, "winner", "", "write the best candidate as a PolicyBundle manifest to this file")
	fl.StringVar(&f.exportTo, "export", "", "write the best candidate's llm-d configuration into this directory")
	fl.StringVar(&f.target, "target", "", "llm-d router release of --export (default: the promotion's target, else the exporter's default)")
	fl.BoolVar(&f.progress, "progress", false, "print each finished candidate on standard error")
	fl.StringVar(&f.report, "report", "", "write an HTML study report (Pareto fronts, convergence, top bundles) to this file")
	fl.StringVar(&f.reportData, "report-data", "", "write the study report's data (JSON, for blis report) to this file")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// studyInputs are the documents of the files: the studies and everything else.
type studyInputs struct {
	studies   []*blisv1alpha1.PolicyStudy
	manifests evaluation.Manifests
}

// readStudyFiles splits the files into PolicyStudies and the other manifests.
func readStudyFiles(stdin io.Reader, files []string) (*studyInputs, error) {
	in := &studyInputs{}
	for _, name := range files {
		data, err := readInput(stdin, name)
		if err != nil {
			return nil, err
		}
		rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for i := 1; ; i++ {
			chunk, err := rd.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(chunk, &tm); err != nil {
				return nil, fmt.Errorf("%s (document %d): %w", name, i, err)
			}
			if tm.Kind == binding.KindPolicyStudy && tm.APIVersion == blisv1alpha1.GroupVersion.String() {
				ps, err := binding.ParseStudy(chunk)
				if err != nil {
					return nil, fmt.Errorf("%s (document %d): %w", name, i, err)
				}
				in.studies = append(in.studies, ps)
				continue
			}
			if err := in.manifests.Add(fmt.Sprintf("%s (document %d)", name, i), chunk); err != nil {
				return nil, err
			}
		}
	}
	return in, nil
}

// selectStudy picks the study named name, else the only one.
func (in *studyInputs) selectStudy(name string) (*blisv1alpha1.PolicyStudy, error) {
	names := make([]string, 0, len(in.studies))
	for _, s := range in.studies {
		if name != "" && s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	sort.Strings(names)
	switch {
	case name != "":
		return nil, fmt.Errorf("no PolicyStudy %q in the files (found: %s)", name, strings.Join(names, ", "))
	case len(in.studies) == 0:
		return nil, errors.New("no PolicyStudy in the files")
	case len(in.studies) > 1:
		return nil, fmt.Errorf("the files hold %d PolicyStudies (%s); choose one with --study", len(names), strings.Join(names, ", "))
	}
	return in.studies[0], nil
}

// localStudy prepares the in-process run of ps.
func localStudy(ps *blisv1alpha1.PolicyStudy, m *evaluation.Manifests) (*binding.Local, error) {
	if ps.Namespace == "" {
		ps.Namespace = evaluation.DefaultNamespace
	}
	ev := blisv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Name: ps.Name, Namespace: ps.Namespace}}
	ev.Spec.ClusterRef = &ps.Spec.ClusterRef
	ev.Spec.WorkloadRef = &ps.Spec.WorkloadRef
	in, err := m.Inputs(ev, os.ReadFile)
	if err != nil {
		return nil, err
	}
	if in.Cluster == nil {
		return nil, fmt.Errorf("no SimulatedCluster %q in namespace %s of the files", ps.Spec.ClusterRef.Name, ps.Namespace)
	}
	if in.Workload == nil {
		return nil, fmt.Errorf("no WorkloadSpec %q in namespace %s of the files", ps.Spec.WorkloadRef.Name, ps.Namespace)
	}
	base := ps.Spec.BasePolicy
	if ref := ps.Spec.BasePolicyRef; ref != nil {
		for i := range m.Policies {
			p := &m.Policies[i]
			ns := p.Namespace
			if ns == "" {
				ns = evaluation.DefaultNamespace
			}
			if p.Name == ref.Name && ns == ps.Namespace {
				base = &p.Spec
			}
		}
		if base == nil {
			return nil, fmt.Errorf("no PolicyBundle %q in namespace %s of the files", ref.Name, ps.Namespace)
		}
	}
	return &binding.Local{Study: ps, Base: base, Inputs: in}, nil
}

// runStudy is `blis study`.
func runStudy(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, f *studyFlags) error {
	if ctx == nil {
		ctx = context.Background()
	}
	switch f.output {
	case "yaml", "json":
	default:
		return fmt.Errorf("-o %q is not an output encoding (yaml, json)", f.output)
	}
	in, err := readStudyFiles(stdin, f.files)
	if err != nil {
		return err
	}
	ps, err := in.selectStudy(f.study)
	if err != nil {
		return err
	}
	l, err := localStudy(ps, &in.manifests)
	if err != nil {
		return err
	}
	l.Workers = f.workers
	if l.Workers <= 0 {
		l.Workers = int(ps.Spec.Parallelism)
	}
	if f.progress {
		var mu sync.Mutex
		start := time.Now()
		l.Progress = func(t study.Trial) {
			mu.Lock()
			defer mu.Unlock()
			state := "succeeded"
			if t.State == study.Failed {
				state = "failed"
			}
			fmt.Fprintf(stderr, "%8s %s %s score %.6g %s\n", time.Since(start).Round(time.Millisecond), t.Name, state, t.Score,
				binding.ParametersJSON(l.Space, t.Values))
		}
	}
	var bar *progressBar
	if !f.progress {
		bar = startProgress(stderr)
		bar.setTrials(int(ps.Spec.Budget.MaxEvaluations))
		l.Progress = bar.trialFunc()
	}
	statuses := &studyStatuses{}
	if f.wantsStudyReport() {
		l.Observe = statuses.observe
	}
	st, best, err := binding.RunLocal(ctx, l)
	bar.stop()
	if err != nil {
		return err
	}
	if f.wantsStudyReport() {
		if err := writeStudyReport(ctx, ps, l, statuses, f); err != nil {
			return err
		}
	}
	if best != nil && (f.winner != "" || f.exportTo != "") {
		if err := writeWinner(ps, l, st, best, f); err != nil {
			return err
		}
	}
	return writeEncoded(stdout, st, f.output)
}

// writeWinner writes --winner and --export for the best candidate.
func writeWinner(ps *blisv1alpha1.PolicyStudy, l *binding.Local, st *blisv1alpha1.PolicyStudyStatus, best *blisv1alpha1.PolicyBundleSpec, f *studyFlags) error {
	name := ps.Name + "-winner"
	if p := ps.Spec.Promotion; p != nil && p.PolicyBundleName != "" {
		name = p.PolicyBundleName
	}
	if f.winner != "" {
		pb := binding.WinnerBundle(ps, name, best, st.Best)
		js, err := yaml.Marshal(pb)
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.winner, js, 0o644); err != nil {
			return err
		}
	}
	if f.exportTo == "" {
		return nil
	}
	target := f.target
	if target == "" && ps.Spec.Promotion != nil {
		target = ps.Spec.Promotion.Target
	}
	in := l.Inputs
	in.Name = st.Best.Evaluation
	in.Spec = binding.EvaluationSpec(&ps.Spec, "", best)
	res, err := evaluation.Resolve(in)
	if err != nil {
		return err
	}
	out, err := binding.Export(res, &l.Inputs.Cluster.Spec, target)
	if err != nil {
		return fmt.Errorf("exporting the winner: %w", err)
	}
	if err := os.MkdirAll(f.exportTo, 0o755); err != nil {
		return err
	}
	for _, file := range out.Files() {
		if err := os.WriteFile(filepath.Join(f.exportTo, file.Name), file.Content, 0o644); err != nil {
			return err
		}
	}
	return nil
}
