package evaluation

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
)

// ConfigMapNames lists, sorted, the ConfigMaps an Evaluation's inputs reference: the BLIS
// policy file of its bundle, the BLIS workload file and the trace data and header of its
// workload. A client gathering Inputs from a cluster reads exactly these.
func ConfigMapNames(in *Inputs) []string {
	seen := map[string]bool{}
	add := func(r *blisv1alpha1.ConfigMapKeyReference) {
		if r != nil && r.Name != "" {
			seen[r.Name] = true
		}
	}
	pol := in.Spec.Policy
	if in.Policy != nil {
		pol = &in.Policy.Spec
	}
	if pol != nil {
		add(pol.BlisConfigMapRef)
	}
	wl := in.Spec.Workload
	if in.Workload != nil {
		wl = &in.Workload.Spec
	}
	if wl != nil {
		add(wl.BlisConfigMapRef)
		if wl.Trace != nil {
			add(wl.Trace.ConfigMapRef)
			add(wl.Trace.HeaderConfigMapRef)
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// HashAs is the input hash r's document would have had if engine version engineVersion had
// resolved it (the engine version is part of the hashed document). Comparing it with an
// Evaluation's status.inputHash tells whether the inputs are still the ones it ran with, even
// when this engine is another build. An empty version is r's own.
func HashAs(r *Resolved, engineVersion string) (string, error) {
	if engineVersion == "" || engineVersion == r.Document.EngineVersion {
		return r.Hash, nil
	}
	doc := r.Document
	doc.EngineVersion = engineVersion
	c, err := Canonical(doc)
	if err != nil {
		return "", err
	}
	return Hash(c), nil
}

// ReadConfigMaps reads the named ConfigMaps of namespace ns as Inputs.ConfigMaps holds them
// (data and binary data by key). A missing one is left out: Resolve reports it with the field
// that names it. The operator and the kubectl plugin read them with this one function.
func ReadConfigMaps(ctx context.Context, c client.Reader, ns string, names []string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for _, n := range names {
		var cm corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, &cm); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		data := make(map[string]string, len(cm.Data)+len(cm.BinaryData))
		for k, v := range cm.Data {
			data[k] = v
		}
		for k, v := range cm.BinaryData {
			data[k] = string(v)
		}
		out[n] = data
	}
	return out, nil
}
