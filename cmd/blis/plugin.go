package main

import (
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// pluginBinary is the file name kubectl looks up on PATH for `kubectl blis`.
const pluginBinary = "kubectl-blis"

// commandName is how the user invoked the binary: "kubectl blis" when it runs as kubectl's
// plugin (installed or linked as kubectl-blis), else "blis", so help and errors read as what
// the user typed.
func commandName(arg0 string) string {
	base := strings.TrimSuffix(filepath.Base(arg0), ".exe")
	if base == pluginBinary {
		return "kubectl blis"
	}
	return "blis"
}

// setDisplayName makes help and usage name the root command as the user invoked it.
func setDisplayName(root *cobra.Command, name string) {
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations[cobra.CommandDisplayNameAnnotation] = name
}

// clusterCommands are the commands that read objects from a cluster with the user's
// kubeconfig. get defines its flags itself; the others get them added here so that their own
// files need not know about clusters.
var clusterCommands = []string{"report", "compare", "export"}

// clusterOpts holds the connection flags of the command being run. Cluster sources of report and
// compare are called with only a context and an argument, so they read the flags here.
var clusterOpts = &clusterFlags{}

// clusterFlags are the flags of the commands that read a cluster.
type clusterFlags struct {
	kube kubeOptions
	// statusOnly makes report and compare use an Evaluation's status as stored instead of
	// re-running it locally.
	statusOnly bool
}

// addClusterFlags gives the cluster commands their connection flags (and report and compare
// --status-only), and every command --quiet, which turns the progress bar off. It binds a
// fresh set of flags each time so that commands built in tests do not share state.
func addClusterFlags(root *cobra.Command) {
	clusterOpts = &clusterFlags{}
	progressQuiet = false
	root.PersistentFlags().BoolVarP(&progressQuiet, "quiet", "q", false, "no progress bar on standard error")
	for _, c := range root.Commands() {
		name := c.Name()
		if !stringIn(clusterCommands, name) {
			continue
		}
		clusterOpts.kube.addFlags(c.Flags())
		if (name == "report" || name == "compare") && c.Flags().Lookup("status-only") == nil {
			c.Flags().BoolVar(&clusterOpts.statusOnly, "status-only", false,
				"for Evaluations in the cluster: report their stored status instead of re-running them locally (no distributions or time series)")
		}
	}
}

func stringIn(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
