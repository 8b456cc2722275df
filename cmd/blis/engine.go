package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/inference-sim/blis-operator/internal/evaluation"
	"github.com/inference-sim/blis-operator/internal/resultstore"
)

func init() {
	subcommands = append(subcommands, newEngineCommand)
}

func newEngineCommand() *cobra.Command {
	var input, output, resultConfigMap string
	var parallelism int
	cmd := &cobra.Command{
		Use:   "engine",
		Short: "Run a resolved Evaluation input (the operator's Job entrypoint)",
		Long: `Engine reads a resolved Evaluation input (the envelope blis evaluate --write-input writes
and the operator mounts from a ConfigMap), checks the document's SHA-256 against the envelope's
inputHash and the engine version, runs one simulation per seed and writes the result JSON:
inputHash, engineVersion and the status fields, or reason and message on failure.

Exit codes: 0 success; 1 bad flags; 2 the input cannot be read or the output cannot be written;
3 input hash mismatch; 4 invalid document or another engine version; 5 a simulation failed.
On codes 3 to 5 the output file holds the reason and message.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if resultConfigMap != "" && (output == "" || output == "-") {
				return errors.New("--result-configmap needs --output FILE")
			}
			code, err := runEngine(cmd.Context(), input, output, parallelism)
			if resultConfigMap != "" && code != evaluation.ExitUsage {
				// The operator's result object, written on failure too (the result names the reason).
				if perr := resultstore.PublishFile(cmd.Context(), output, resultConfigMap); perr != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), "blis engine:", perr)
					if err == nil {
						code, err = evaluation.ExitIO, perr
					}
				}
			}
			if err == nil {
				return nil
			}
			if code == evaluation.ExitUsage {
				return err
			}
			fmt.Fprintln(cmd.ErrOrStderr(), "blis engine:", err)
			os.Exit(code)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&input, "input", "", "resolved input envelope (JSON; - reads standard input)")
	fl.StringVar(&output, "output", "", "result file (JSON; - or empty writes standard output)")
	fl.IntVar(&parallelism, "parallelism", 0, "seeds simulated at once (0 = number of CPUs)")
	fl.StringVar(&resultConfigMap, "result-configmap", "", "also write the result into this ConfigMap of the pod's namespace, prepared by the operator (in-cluster credentials)")
	return cmd
}

// runEngine is `blis engine`; it returns the exit code with the error.
func runEngine(ctx context.Context, input, output string, parallelism int) (int, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if input == "" {
		return evaluation.ExitUsage, errors.New("--input is required")
	}
	data, err := readInput(os.Stdin, input)
	if err != nil {
		return evaluation.ExitIO, err
	}
	res, runErr := evaluation.RunEnvelope(ctx, data, evaluation.Options{Parallelism: parallelism})
	code := evaluation.ExitOK
	var ee *evaluation.EngineError
	switch {
	case errors.As(runErr, &ee):
		res, code = &ee.Result, ee.Code
	case runErr != nil:
		return evaluation.ExitRunFailed, runErr
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return evaluation.ExitIO, err
	}
	js = append(js, '\n')
	if output == "" || output == "-" {
		_, err = os.Stdout.Write(js)
	} else {
		err = os.WriteFile(output, js, 0o644)
	}
	if err != nil {
		return evaluation.ExitIO, fmt.Errorf("writing the result: %w", err)
	}
	return code, runErr
}
