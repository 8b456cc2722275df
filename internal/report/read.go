package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// ErrPolicyStudy is returned (wrapped) by Read for a PolicyStudy object or status and for
// study report data: a study is not an evaluation and has a report of its own (ReadStudy).
var ErrPolicyStudy = errors.New("the input is a PolicyStudy, not an evaluation")

// resultConfigMapKey is the data key of an operator result ConfigMap that holds the engine
// result JSON (resultstore.KeyResult; repeated here because that package imports the engine).
const resultConfigMapKey = "result.json"

// engineResult mirrors the JSON of evaluation.EngineResult (the file `blis engine` writes):
// report cannot import the evaluation package, which builds Data and so imports report.
type engineResult struct {
	InputHash     string                         `json:"inputHash,omitempty"`
	EngineVersion string                         `json:"engineVersion"`
	Status        *blisv1alpha1.EvaluationStatus `json:"status,omitempty"`
	Reason        string                         `json:"reason,omitempty"`
	Message       string                         `json:"message,omitempty"`
}

// Read decodes report input in any of the forms results are kept in, as JSON or YAML:
//
//   - report Data (what `blis report --data-output` writes), refused when its version is not
//     DataVersion;
//   - an engine result (the file `blis engine` writes, or the result.json of an operator result
//     ConfigMap), or that ConfigMap itself;
//   - an Evaluation status (`blis evaluate -o json` or `-o yaml`);
//   - an Evaluation object (`kubectl get evaluation NAME -o yaml`), or a List holding exactly
//     one.
//
// Everything but Data carries only the status, so the result is FromStatus's: headline
// numbers, classes, anomalies and the trace summary, with Missing saying the distributions and
// time series need a re-run. Name is left empty when the input does not name the evaluation.
// A study (PolicyStudy object or status, StudyData) gives an error wrapping ErrPolicyStudy.
func Read(r io.Reader) (*Data, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("neither JSON nor YAML: %w", err)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(js, &probe); err != nil || probe == nil {
		return nil, errors.New("the input is not a JSON or YAML object")
	}
	str := func(key string) string {
		var s string
		if v, ok := probe[key]; ok {
			_ = json.Unmarshal(v, &s)
		}
		return s
	}
	studyKeys := probe["searchHash"] != nil || probe["paretoFront"] != nil || probe["best"] != nil ||
		probe["convergence"] != nil || probe["generation"] != nil
	switch {
	case str("version") == StudyDataVersion:
		return nil, fmt.Errorf("%w: study report data", ErrPolicyStudy)
	case str("version") != "":
		return readData(js, str("version"))
	case str("kind") != "":
		return readObject(js, str("apiVersion"), str("kind"))
	case probe["engineVersion"] != nil && (probe["status"] != nil || probe["reason"] != nil):
		return readEngineResult(js)
	case studyKeys && probe["metrics"] == nil:
		return nil, fmt.Errorf("%w: a PolicyStudy status", ErrPolicyStudy)
	case probe["metrics"] != nil || probe["inputHash"] != nil || probe["engineVersion"] != nil ||
		probe["traceSummary"] != nil || probe["phase"] != nil:
		var st blisv1alpha1.EvaluationStatus
		if err := json.Unmarshal(js, &st); err != nil {
			return nil, fmt.Errorf("reading the Evaluation status: %w", err)
		}
		return FromStatus("", &st), nil
	}
	return nil, errors.New("not a report input: expected report data (version), an engine result (engineVersion and status), " +
		"an Evaluation status (metrics, inputHash) or an Evaluation object (kind)")
}

// readData decodes report Data of the given version.
func readData(js []byte, version string) (*Data, error) {
	if version != DataVersion {
		return nil, fmt.Errorf("report data version %q is not supported (this blis reads %q)", version, DataVersion)
	}
	var d Data
	if err := json.Unmarshal(js, &d); err != nil {
		return nil, fmt.Errorf("reading report data: %w", err)
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return &d, nil
}

// readEngineResult decodes an engine result; a failed run is an error carrying its reason.
func readEngineResult(js []byte) (*Data, error) {
	var er engineResult
	if err := json.Unmarshal(js, &er); err != nil {
		return nil, fmt.Errorf("reading the engine result: %w", err)
	}
	if er.Status == nil {
		return nil, fmt.Errorf("the engine run failed (%s): %s", er.Reason, er.Message)
	}
	st := er.Status.DeepCopy()
	if st.InputHash == "" {
		st.InputHash = er.InputHash
	}
	if st.EngineVersion == "" {
		st.EngineVersion = er.EngineVersion
	}
	return FromStatus("", st), nil
}

// readObject decodes a Kubernetes object: an Evaluation, a List of one, or a result ConfigMap.
func readObject(js []byte, apiVersion, kind string) (*Data, error) {
	group := blisv1alpha1.GroupVersion.Group
	switch {
	case kind == "List" || strings.HasSuffix(kind, "List"):
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(js, &list); err != nil {
			return nil, fmt.Errorf("reading the list: %w", err)
		}
		if len(list.Items) != 1 {
			return nil, fmt.Errorf("the list holds %d items; a report reads one Evaluation", len(list.Items))
		}
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := json.Unmarshal(list.Items[0], &tm); err != nil {
			return nil, err
		}
		if tm.Kind == "" && strings.HasSuffix(kind, "List") {
			tm.Kind = strings.TrimSuffix(kind, "List")
			tm.APIVersion = apiVersion
		}
		if tm.Kind == "" || strings.HasSuffix(tm.Kind, "List") {
			return nil, errors.New("the list's item is not an object with a kind")
		}
		return readObject(list.Items[0], tm.APIVersion, tm.Kind)
	case apiVersion == "v1" && kind == "ConfigMap":
		var cm struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Data map[string]string `json:"data"`
		}
		if err := json.Unmarshal(js, &cm); err != nil {
			return nil, fmt.Errorf("reading the ConfigMap: %w", err)
		}
		res, ok := cm.Data[resultConfigMapKey]
		if !ok {
			return nil, fmt.Errorf("ConfigMap %s has no %s key: it is not an evaluation result", cm.Metadata.Name, resultConfigMapKey)
		}
		return readEngineResult([]byte(res))
	case !strings.HasPrefix(apiVersion, group+"/"):
		return nil, fmt.Errorf("%s %s is not a report input (Evaluation objects of %s)", apiVersion, kind, group)
	case kind == "PolicyStudy":
		return nil, fmt.Errorf("%w: use its study report", ErrPolicyStudy)
	case kind != "Evaluation":
		return nil, fmt.Errorf("kind %s is not a report input (an Evaluation is)", kind)
	}
	var ev blisv1alpha1.Evaluation
	if err := json.Unmarshal(js, &ev); err != nil {
		return nil, fmt.Errorf("reading the Evaluation: %w", err)
	}
	name := ev.Name
	if ev.Namespace != "" {
		name = ev.Namespace + "/" + ev.Name
	}
	d := FromStatus(name, &ev.Status)
	d.Description = DescribeSpec(&ev.Spec)
	return d, nil
}

// DescribeSpec says in one line what an Evaluation runs: its cluster, workload and policy
// bundle (by reference name, or "inline"), and its seeds.
func DescribeSpec(spec *blisv1alpha1.EvaluationSpec) string {
	ref := func(r *blisv1alpha1.LocalObjectReference, inline bool, none string) string {
		switch {
		case r != nil:
			return r.Name
		case inline:
			return "inline"
		default:
			return none
		}
	}
	s := fmt.Sprintf("cluster %s, workload %s, policy bundle %s",
		ref(spec.ClusterRef, spec.Cluster != nil, "none"),
		ref(spec.WorkloadRef, spec.Workload != nil, "none"),
		ref(spec.PolicyRef, spec.Policy != nil, "default"))
	if n := len(spec.Seeds); n > 1 {
		s += fmt.Sprintf(", %d seeds", n)
	}
	return s
}

// FromStatus builds the Data of an Evaluation status alone: headline numbers, classes,
// replicate statistics, fitness, anomalies and the trace summary. A status keeps no latency
// distributions or time series, so Missing says those need a re-run from the inputs, and it
// names whatever else the status lacks.
func FromStatus(name string, st *blisv1alpha1.EvaluationStatus) *Data {
	d := &Data{Version: DataVersion, Name: name}
	if st != nil {
		d.Status = *st.DeepCopy()
	}
	if d.Status.Metrics == nil {
		phase := string(d.Status.Phase)
		if phase == "" {
			phase = "unknown"
		}
		d.Missing = append(d.Missing, fmt.Sprintf("The status has no metrics (phase %s): the evaluation has not succeeded, so there is nothing to chart.", phase))
	}
	d.Missing = append(d.Missing,
		"Latency distributions (the TTFT, ITL and E2E CDFs) are not kept in an Evaluation's status: re-run the evaluation from its inputs (blis report -f MANIFESTS) to draw them.",
		"Time series (arrivals, completions, queue depth, batch size, KV utilization, cache hit rate) are not kept in an Evaluation's status: re-run the evaluation from its inputs (blis report -f MANIFESTS) to draw them.")
	if d.Status.Metrics != nil && d.Status.TraceSummary == "" {
		d.Missing = append(d.Missing, "The status has no trace summary.")
	}
	return d
}

// Validate checks what the renderers rely on: the version, known metrics, CDF points in
// increasing probability within [0, 1], and series whose slices all have one value per bucket.
func (d *Data) Validate() error {
	if d.Version != DataVersion {
		return fmt.Errorf("report data version %q is not supported (this blis reads %q)", d.Version, DataVersion)
	}
	for _, dist := range d.Distributions {
		switch dist.Metric {
		case MetricTTFT, MetricITL, MetricE2E:
		default:
			return fmt.Errorf("distribution of unknown metric %q", dist.Metric)
		}
		prev := -1.0
		for _, pt := range dist.Points {
			if pt.P < 0 || pt.P > 1 || pt.P < prev {
				return fmt.Errorf("distribution %s/%s: probabilities must increase within [0, 1]", dist.Metric, dist.Class)
			}
			prev = pt.P
		}
	}
	if s := d.Series; s != nil {
		n := len(s.Cluster.ArrivalsPerSec)
		if s.BucketUs <= 0 && n > 0 {
			return errors.New("series: bucketUs must be > 0")
		}
		check := func(what string, v []float64, optional bool) error {
			if len(v) != n && (!optional || len(v) != 0) {
				return fmt.Errorf("series %s has %d values for %d buckets", what, len(v), n)
			}
			return nil
		}
		if err := check("completionsPerSec", s.Cluster.CompletionsPerSec, false); err != nil {
			return err
		}
		if err := check("readyInstances", s.Cluster.ReadyInstances, true); err != nil {
			return err
		}
		for _, in := range s.Instances {
			for i, v := range [][]float64{in.QueueDepth, in.BatchSize, in.KVUtilization, in.CacheHitRate} {
				if err := check(in.Name+" "+instanceMetricKeys[i], v, false); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// instanceMetricKeys are the JSON names of InstanceSeries' slices, in field order.
var instanceMetricKeys = []string{"queueDepth", "batchSize", "kvUtilization", "cacheHitRate"}

// WriteJSON writes d as indented JSON (the file Read takes back).
func WriteJSON(w io.Writer, d *Data) error {
	js, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(js, '\n'))
	return err
}
