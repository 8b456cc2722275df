package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/inference-sim/blis-operator/internal/engine/export"
)

func init() {
	subcommands = append(subcommands, newImportCommand)
}

// importFlags are the flags of `blis import`.
type importFlags struct {
	epp, output, clusterOut string
	objectives              []string
}

func newImportCommand() *cobra.Command {
	f := &importFlags{}
	cmd := &cobra.Command{
		Use:   "import --epp FILE -o FILE",
		Short: "Import an llm-d EndpointPickerConfig as a policy bundle",
		Long: `Import reads an llm-d EndpointPickerConfig (and the InferenceObjectives requests select)
and writes the policy bundle that simulates it, so a deployment's current configuration can be
the baseline of an evaluation. The configuration is checked the way the router of its
apiVersion checks it; everything the simulator does not model is listed on standard error.
--cluster-out also writes what the configuration says about the deployment (prefill and
decode pools with their decider, SLO classes, the precise producer's block size) as a cluster
input for blis export; the model and replica counts are the deployment's.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return importEPP(f, cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.epp, "epp", "", "EndpointPickerConfig file (required)")
	fl.StringSliceVar(&f.objectives, "objectives", nil, "InferenceObjective file(s), several documents each allowed (repeatable)")
	fl.StringVarP(&f.output, "output", "o", "", "bundle file to write (required)")
	fl.StringVar(&f.clusterOut, "cluster-out", "", "also write the cluster input to this file")
	_ = cmd.MarkFlagRequired("epp")
	_ = cmd.MarkFlagRequired("output")
	return cmd
}

// importEPP is `blis import`.
func importEPP(f *importFlags, stderr io.Writer) error {
	data, err := os.ReadFile(f.epp)
	if err != nil {
		return err
	}
	var objs [][]byte
	for _, p := range f.objectives {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		objs = append(objs, b)
	}
	im, err := export.Import(data, objs...)
	if err != nil {
		return fmt.Errorf("%s: %w", f.epp, err)
	}
	for _, u := range im.Unsupported {
		fmt.Fprintln(stderr, "not simulated:", u)
	}
	out, err := export.BundleYAML(im.Bundle)
	if err != nil {
		return err
	}
	if err := os.WriteFile(f.output, out, 0o644); err != nil {
		return err
	}
	if f.clusterOut != "" {
		c, err := export.ClusterYAML(&im.Cluster)
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.clusterOut, c, 0o644); err != nil {
			return err
		}
	}
	return nil
}
