// Command blis runs blis-operator's simulator from the command line: the same engine, inputs and
// results as the operator, with no cluster needed.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// subcommands is filled by the files of this package (one file per subcommand), each
// registering its constructor in an init function, so subcommands stay independent.
var subcommands []func() *cobra.Command

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "blis",
		Short:         "Simulate LLM inference clusters and evaluate serving policies",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, mk := range subcommands {
		root.AddCommand(mk())
	}
	addClusterFlags(root)
	return root
}

func main() {
	root := newRootCommand()
	name := commandName(os.Args[0])
	setDisplayName(root, name)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}
