package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/inference-sim/blis-operator/internal/blisfile"
)

func init() {
	subcommands = append(subcommands, newConvertCommand)
}

// convertOptions are the flags of `blis convert`.
type convertOptions struct {
	file      string
	output    string
	name      string
	namespace string
	to        string
}

func newConvertCommand() *cobra.Command {
	o := &convertOptions{}
	cmd := &cobra.Command{
		Use:   "convert -f FILE",
		Short: "Convert a BLIS workload or policy file to a blis-operator resource, or back",
		Long: `Convert a BLIS workload spec into a WorkloadSpec, or a BLIS policy config into a
PolicyBundle (the kind is detected from the file's keys). Keys are renamed mechanically from
snake_case to camelCase; unknown keys are errors. With --to blis, FILE is a WorkloadSpec or
PolicyBundle manifest and the BLIS file it stands for is printed. FILE - reads standard input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runConvert(o, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "BLIS file (or manifest with --to blis) to convert; - for standard input")
	f.StringVarP(&o.output, "output", "o", "yaml", "output format of the resource: yaml or json")
	f.StringVar(&o.name, "name", "", "name of the resource (default: derived from the file name)")
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace of the resource (default: none)")
	f.StringVar(&o.to, "to", "resource", "direction: resource (BLIS file to resource) or blis (resource to BLIS file)")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

func runConvert(o *convertOptions, stdin io.Reader, stdout io.Writer) error {
	data, err := readInput(stdin, o.file)
	if err != nil {
		return err
	}
	var out []byte
	switch o.to {
	case "resource":
		name := o.name
		if name == "" {
			name = blisfile.NameFromPath(o.file)
			if o.file == "-" {
				name = "blis"
			}
		}
		obj, err := blisfile.Convert(data, name, o.namespace)
		if err != nil {
			return fmt.Errorf("%s: %w", o.file, err)
		}
		if out, err = blisfile.Manifest(obj, o.output); err != nil {
			return err
		}
	case "blis":
		if out, err = blisfile.ToBLIS(data); err != nil {
			return fmt.Errorf("%s: %w", o.file, err)
		}
	default:
		return fmt.Errorf("--to must be resource or blis, not %q", o.to)
	}
	_, err = stdout.Write(out)
	return err
}
