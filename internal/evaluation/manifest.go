package evaluation

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/blisfile"
)

// DefaultNamespace is the namespace of manifests that name none.
const DefaultNamespace = "default"

// Manifests are the objects read from manifest files (and BLIS files converted to objects),
// for resolving Evaluations without a cluster.
type Manifests struct {
	Clusters    []blisv1alpha1.SimulatedCluster
	Policies    []blisv1alpha1.PolicyBundle
	Workloads   []blisv1alpha1.WorkloadSpec
	Evaluations []blisv1alpha1.Evaluation
	ConfigMaps  []corev1.ConfigMap
}

// Add reads one file: a multi-document YAML (or JSON) stream of the project's resources and
// ConfigMaps, or a BLIS workload or policy file (detected by its keys), which becomes a
// WorkloadSpec or PolicyBundle named after the file. Documents of other kinds are errors.
func (m *Manifests) Add(file string, data []byte) error {
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; i++ {
		chunk, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if len(bytes.TrimSpace(stripComments(chunk))) == 0 {
			continue
		}
		if err := m.addDocument(file, chunk); err != nil {
			return fmt.Errorf("%s (document %d): %w", file, i+1, err)
		}
	}
}

// stripComments drops comment-only lines, to tell empty documents apart.
func stripComments(b []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}

func (m *Manifests) addDocument(file string, doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	if tm.APIVersion == "" && tm.Kind == "" {
		return m.addBLIS(file, doc)
	}
	group := blisv1alpha1.GroupVersion.String()
	switch {
	case tm.APIVersion == "v1" && tm.Kind == "ConfigMap":
		var cm corev1.ConfigMap
		if err := yaml.UnmarshalStrict(doc, &cm); err != nil {
			return err
		}
		m.ConfigMaps = append(m.ConfigMaps, cm)
	case tm.APIVersion != group:
		return fmt.Errorf("%s %s is not a resource blis evaluate reads (%s kinds and v1 ConfigMaps)", tm.APIVersion, tm.Kind, group)
	case tm.Kind == KindSimulatedCluster:
		var o blisv1alpha1.SimulatedCluster
		if err := yaml.UnmarshalStrict(doc, &o); err != nil {
			return err
		}
		m.Clusters = append(m.Clusters, o)
	case tm.Kind == KindPolicyBundle:
		var o blisv1alpha1.PolicyBundle
		if err := yaml.UnmarshalStrict(doc, &o); err != nil {
			return err
		}
		m.Policies = append(m.Policies, o)
	case tm.Kind == KindWorkloadSpec:
		var o blisv1alpha1.WorkloadSpec
		if err := yaml.UnmarshalStrict(doc, &o); err != nil {
			return err
		}
		m.Workloads = append(m.Workloads, o)
	case tm.Kind == KindEvaluation:
		var o blisv1alpha1.Evaluation
		if err := yaml.UnmarshalStrict(doc, &o); err != nil {
			return err
		}
		if err := defaultObjectiveWeights(doc, &o); err != nil {
			return err
		}
		m.Evaluations = append(m.Evaluations, o)
	default:
		return fmt.Errorf("kind %s of %s is not read by blis evaluate", tm.Kind, group)
	}
	return nil
}

// defaultObjectiveWeights gives objectives without a weight the weight 1, as the API server's
// defaulting does (an explicit 0 stays 0).
func defaultObjectiveWeights(doc []byte, ev *blisv1alpha1.Evaluation) error {
	var raw struct {
		Spec struct {
			Objectives []map[string]any `json:"objectives"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(doc, &raw); err != nil {
		return err
	}
	for i, o := range raw.Spec.Objectives {
		if _, ok := o["weight"]; !ok && i < len(ev.Spec.Objectives) {
			ev.Spec.Objectives[i].Weight = 1
		}
	}
	return nil
}

// addBLIS converts a BLIS workload or policy file into a resource named after the file.
func (m *Manifests) addBLIS(file string, doc []byte) error {
	kind, err := blisfile.Detect(doc)
	if err != nil {
		return fmt.Errorf("neither a resource (no apiVersion and kind) nor a BLIS file: %w", err)
	}
	name := blisfile.NameFromPath(file)
	switch kind {
	case blisfile.KindWorkload:
		spec, err := blisfile.ParseWorkload(doc)
		if err != nil {
			return err
		}
		m.Workloads = append(m.Workloads, blisv1alpha1.WorkloadSpec{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: DefaultNamespace}, Spec: *spec})
	case blisfile.KindPolicy:
		spec, err := blisfile.ParsePolicy(doc)
		if err != nil {
			return err
		}
		m.Policies = append(m.Policies, blisv1alpha1.PolicyBundle{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: DefaultNamespace}, Spec: *spec})
	}
	return nil
}

func nsOf(ns string) string {
	if ns == "" {
		return DefaultNamespace
	}
	return ns
}

// SyntheticEvaluationName names the Evaluation Select builds when the files have none.
const SyntheticEvaluationName = "blis-evaluate"

// Select picks the Evaluation to run: the one named name, else the only one. With no
// Evaluation in the files it builds one (SyntheticEvaluationName) over the only cluster, the
// only workload and the only policy bundle (the default policies when there is none); a cluster
// in the files is not needed when the caller supplies one with Evaluation.Spec.Cluster later.
func (m *Manifests) Select(name string, haveCluster bool) (blisv1alpha1.Evaluation, error) {
	names := make([]string, 0, len(m.Evaluations))
	for _, e := range m.Evaluations {
		names = append(names, e.Name)
	}
	sort.Strings(names)
	if name != "" {
		for _, e := range m.Evaluations {
			if e.Name == name {
				return e, nil
			}
		}
		return blisv1alpha1.Evaluation{}, fmt.Errorf("no Evaluation %q in the files (found: %s)", name, listOrNone(names))
	}
	switch len(m.Evaluations) {
	case 1:
		return m.Evaluations[0], nil
	case 0:
	default:
		return blisv1alpha1.Evaluation{}, fmt.Errorf("the files hold %d Evaluations (%s); choose one with --evaluation", len(names), strings.Join(names, ", "))
	}
	ev := blisv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Name: SyntheticEvaluationName, Namespace: DefaultNamespace}}
	switch len(m.Clusters) {
	case 0:
		if !haveCluster {
			return ev, errors.New("no SimulatedCluster in the files; add one or give --model")
		}
	case 1:
		ev.Spec.ClusterRef = &blisv1alpha1.LocalObjectReference{Name: m.Clusters[0].Name}
		ev.Namespace = nsOf(m.Clusters[0].Namespace)
	default:
		return ev, fmt.Errorf("the files hold %d SimulatedClusters and no Evaluation to choose between them", len(m.Clusters))
	}
	switch len(m.Workloads) {
	case 0:
		return ev, errors.New("no WorkloadSpec (or BLIS workload file) in the files")
	case 1:
		ev.Spec.WorkloadRef = &blisv1alpha1.LocalObjectReference{Name: m.Workloads[0].Name}
	default:
		return ev, fmt.Errorf("the files hold %d WorkloadSpecs and no Evaluation to choose between them", len(m.Workloads))
	}
	switch len(m.Policies) {
	case 0:
		ev.Spec.Policy = &blisv1alpha1.PolicyBundleSpec{}
	case 1:
		ev.Spec.PolicyRef = &blisv1alpha1.LocalObjectReference{Name: m.Policies[0].Name}
	default:
		return ev, fmt.Errorf("the files hold %d PolicyBundles and no Evaluation to choose between them", len(m.Policies))
	}
	return ev, nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Inputs gathers what ev references from the manifests, by name in ev's namespace. Trace
// files named by path are read with readFile (nil: left as paths for the engine to read).
func (m *Manifests) Inputs(ev blisv1alpha1.Evaluation, readFile func(path string) ([]byte, error)) (Inputs, error) {
	ns := nsOf(ev.Namespace)
	in := Inputs{Name: ev.Name, Spec: ev.Spec, ConfigMaps: map[string]map[string]string{}, Files: map[string][]byte{}}
	if ref := ev.Spec.ClusterRef; ref != nil {
		for i := range m.Clusters {
			if c := &m.Clusters[i]; c.Name == ref.Name && nsOf(c.Namespace) == ns {
				in.Cluster = c
			}
		}
	}
	if ref := ev.Spec.PolicyRef; ref != nil {
		for i := range m.Policies {
			if p := &m.Policies[i]; p.Name == ref.Name && nsOf(p.Namespace) == ns {
				in.Policy = p
			}
		}
	}
	wl := ev.Spec.Workload
	if ref := ev.Spec.WorkloadRef; ref != nil {
		for i := range m.Workloads {
			if w := &m.Workloads[i]; w.Name == ref.Name && nsOf(w.Namespace) == ns {
				in.Workload = w
				wl = &w.Spec
			}
		}
	}
	for _, cm := range m.ConfigMaps {
		if nsOf(cm.Namespace) == ns {
			in.ConfigMaps[cm.Name] = cm.Data
		}
	}
	if readFile != nil && wl != nil && wl.Trace != nil {
		for _, p := range []string{wl.Trace.Path, wl.Trace.HeaderPath} {
			if p == "" {
				continue
			}
			data, err := readFile(p)
			if err != nil {
				return in, fmt.Errorf("WorkloadSpec trace file: %w", err)
			}
			in.Files[p] = data
		}
	}
	return in, nil
}
