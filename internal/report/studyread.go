package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// ReadStudy reads study report data in any of the forms a study's results come in:
//
//   - StudyData JSON (the output of --report-data), whose version must be StudyDataVersion;
//   - a PolicyStudy object in YAML or JSON (kubectl get -o yaml), reported from its status;
//   - a PolicyStudy together with its Evaluations, as a multi-document YAML stream or a List,
//     reported from every candidate (see StudyFromEvaluations);
//   - the status `blis study` prints (YAML or JSON), reported from the status without the
//     spec, so objective directions and the search space are unknown.
func ReadStudy(r io.Reader) (*StudyData, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("study data: the input is empty")
	}
	docs, err := studyDocuments(data)
	if err != nil {
		return nil, err
	}
	if len(docs) == 1 {
		var probe struct {
			Version string `json:"version"`
		}
		if err := json.Unmarshal(docs[0], &probe); err == nil && probe.Version != "" {
			if probe.Version != StudyDataVersion {
				return nil, fmt.Errorf("study data version %q is not %q", probe.Version, StudyDataVersion)
			}
			var sd StudyData
			dec := json.NewDecoder(bytes.NewReader(docs[0]))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&sd); err != nil {
				return nil, fmt.Errorf("study data: %w", err)
			}
			return &sd, nil
		}
	}
	var studies []*blisv1alpha1.PolicyStudy
	var evs []blisv1alpha1.Evaluation
	var status *blisv1alpha1.PolicyStudyStatus
	for i, doc := range docs {
		var tm metav1.TypeMeta
		if err := json.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		switch tm.Kind {
		case "PolicyStudy":
			var ps blisv1alpha1.PolicyStudy
			if err := json.Unmarshal(doc, &ps); err != nil {
				return nil, fmt.Errorf("document %d: PolicyStudy: %w", i+1, err)
			}
			studies = append(studies, &ps)
		case "Evaluation":
			var ev blisv1alpha1.Evaluation
			if err := json.Unmarshal(doc, &ev); err != nil {
				return nil, fmt.Errorf("document %d: Evaluation: %w", i+1, err)
			}
			evs = append(evs, ev)
		case "":
			var st blisv1alpha1.PolicyStudyStatus
			if err := yaml.UnmarshalStrict(doc, &st); err != nil {
				return nil, fmt.Errorf("document %d is neither study report data, a PolicyStudy nor `blis study` output: %w", i+1, err)
			}
			status = &st
		default:
			// Other objects of a kubectl listing (PolicyBundles, ConfigMaps) say nothing
			// about the study's results.
		}
	}
	switch {
	case len(studies) > 1:
		return nil, fmt.Errorf("the input holds %d PolicyStudies; give one at a time", len(studies))
	case len(studies) == 1 && len(evs) > 0:
		return StudyFromEvaluations(studies[0], evs), nil
	case len(studies) == 1:
		return StudyFromStatus(studies[0]), nil
	case status != nil:
		return StudyFromStatus(&blisv1alpha1.PolicyStudy{ObjectMeta: metav1.ObjectMeta{Name: studyNameOf(status)}, Status: *status}), nil
	}
	return nil, errors.New("the input holds no PolicyStudy, study status or study report data")
}

// studyDocuments splits a YAML or JSON stream into JSON documents, expanding Lists.
func studyDocuments(data []byte) ([][]byte, error) {
	rd := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(bytes.NewReader(data)), 4096)
	var out [][]byte
	for {
		var raw json.RawMessage
		if err := rd.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("study data: %w", err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
			continue
		}
		var list struct {
			Kind  string            `json:"kind"`
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(raw, &list); err == nil && (list.Kind == "List" || list.Kind == "EvaluationList" || list.Kind == "PolicyStudyList") {
			for _, it := range list.Items {
				if list.Kind == "EvaluationList" || list.Kind == "PolicyStudyList" {
					// Typed lists leave kind off their items.
					kind := list.Kind[:len(list.Kind)-len("List")]
					it = withKind(it, kind)
				}
				out = append(out, it)
			}
			continue
		}
		out = append(out, raw)
	}
	return out, nil
}

// withKind sets the kind of a JSON object that has none.
func withKind(doc json.RawMessage, kind string) json.RawMessage {
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(doc, &m); err != nil {
		return doc
	}
	if _, ok := m["kind"]; ok {
		return doc
	}
	k, _ := json.Marshal(kind)
	m["kind"] = k
	out, err := json.Marshal(m)
	if err != nil {
		return doc
	}
	return out
}

// studyNameOf guesses a study's name from its candidates' names (<study>-gNNN-NNN), for a
// status read without its object.
func studyNameOf(st *blisv1alpha1.PolicyStudyStatus) string {
	name := ""
	if st.Best != nil {
		name = st.Best.Evaluation
	} else if len(st.ParetoFront) > 0 {
		name = st.ParetoFront[0].Evaluation
	}
	// Candidate names end in -gNNN-NNN (study.Name).
	if n := len(name); n > 9 && name[n-9] == '-' && name[n-8] == 'g' && name[n-4] == '-' {
		return name[:n-9]
	}
	if name == "" {
		return "study"
	}
	return name
}
