package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation"
)

// kubeOptions are the connection flags of the commands that read a cluster, named and
// resolved as kubectl's: $KUBECONFIG or ~/.kube/config, the current context, its namespace.
type kubeOptions struct {
	kubeconfig, context, namespace string
}

// addFlags adds --kubeconfig, --context and -n/--namespace to fs. A flag the command already
// has is left alone (export's -n names the namespace of the generated objects, and it is also
// where export reads the cluster's objects).
func (o *kubeOptions) addFlags(fs *pflag.FlagSet) {
	if fs.Lookup("kubeconfig") == nil {
		fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file of the cluster (default: $KUBECONFIG, else ~/.kube/config)")
	}
	if fs.Lookup("context") == nil {
		fs.StringVar(&o.context, "context", "", "kubeconfig context to use (default: the current context)")
	}
	if fs.Lookup("namespace") == nil && fs.ShorthandLookup("n") == nil {
		fs.StringVarP(&o.namespace, "namespace", "n", "", "namespace in the cluster (default: the context's namespace)")
	}
}

// kubeConn is a client of the cluster and the namespace commands use when none is given.
type kubeConn struct {
	client    client.Client
	namespace string
}

// kubeScheme knows client-go's built-in types (ConfigMaps) and the project's resources.
func kubeScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := blisv1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// connectKube builds the cluster client from the user's kubeconfig. It is a variable so that
// tests can substitute a fake client.
var connectKube = func(o *kubeOptions) (*kubeConn, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.context}
	overrides.Context.Namespace = o.namespace
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	scheme, err := kubeScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return &kubeConn{client: c, namespace: ns}, nil
}

// connect connects with o, the namespace flag (when given) replacing the context's.
func (o *kubeOptions) connect() (*kubeConn, error) {
	k, err := connectKube(o)
	if err != nil {
		return nil, err
	}
	if o.namespace != "" {
		k.namespace = o.namespace
	}
	if k.namespace == "" {
		k.namespace = evaluation.DefaultNamespace
	}
	return k, nil
}

// fetchInputs reads what ev references in its namespace, as the operator does before it runs
// ev: the SimulatedCluster, PolicyBundle and WorkloadSpec its refs name and the ConfigMaps of
// their BLIS files and traces. Unlike the operator it does not wait for the objects to be
// Ready; the caller compares the resolved input hash with the one the Evaluation ran with.
func fetchInputs(ctx context.Context, c client.Reader, ev *blisv1alpha1.Evaluation) (evaluation.Inputs, error) {
	in := evaluation.Inputs{Name: ev.Name, Spec: ev.Spec, ConfigMaps: map[string]map[string]string{}}
	get := func(kind string, ref *blisv1alpha1.LocalObjectReference, obj client.Object) (bool, error) {
		if ref == nil {
			return false, nil
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ev.Namespace, Name: ref.Name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return false, fmt.Errorf("%s %q, which Evaluation %s references, does not exist in namespace %s", kind, ref.Name, ev.Name, ev.Namespace)
			}
			return false, err
		}
		return true, nil
	}
	cl, pb, ws := &blisv1alpha1.SimulatedCluster{}, &blisv1alpha1.PolicyBundle{}, &blisv1alpha1.WorkloadSpec{}
	if ok, err := get(evaluation.KindSimulatedCluster, ev.Spec.ClusterRef, cl); err != nil {
		return in, err
	} else if ok {
		in.Cluster = cl
	}
	if ok, err := get(evaluation.KindPolicyBundle, ev.Spec.PolicyRef, pb); err != nil {
		return in, err
	} else if ok {
		in.Policy = pb
	}
	if ok, err := get(evaluation.KindWorkloadSpec, ev.Spec.WorkloadRef, ws); err != nil {
		return in, err
	} else if ok {
		in.Workload = ws
	}
	cms, err := evaluation.ReadConfigMaps(ctx, c, ev.Namespace, evaluation.ConfigMapNames(&in))
	if err != nil {
		return in, err
	}
	in.ConfigMaps = cms
	return in, nil
}
