package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/inference-sim/blis-operator/internal/report"
)

// sourceResolvers turn a `blis report` or `blis compare` argument that is not a file into
// report data. Other files of this package register resolvers in their init functions (the
// kubectl plugin adds cluster references such as evaluation/NAME), so the report commands need
// no change to learn a new kind of source.
//
// A resolver returns ok=false, and no error, for an argument it does not recognise. Resolvers
// are tried in registration order and the first that recognises the argument decides (its
// error is the argument's error); only when none does is the argument read as a file ("-" is
// standard input) with report.Read.
var sourceResolvers []func(ctx context.Context, arg string) (*report.Data, bool, error)

// loadSource resolves one report argument: registered resolvers first, then a file. Data
// without a name is named after the file (its base name without extension).
func loadSource(ctx context.Context, stdin io.Reader, arg string) (*report.Data, error) {
	for _, resolve := range sourceResolvers {
		d, ok, err := resolve(ctx, arg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", arg, err)
		}
		if ok {
			return d, nil
		}
	}
	var r io.Reader = stdin
	if arg != "-" {
		f, err := os.Open(arg)
		if err != nil {
			return nil, err
		}
		defer func() { _ = f.Close() }()
		r = f
	}
	d, err := report.Read(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", arg, err)
	}
	if d.Name == "" {
		d.Name = sourceName(arg)
	}
	return d, nil
}

// sourceName names data read from a file after the file: its base name without extension
// ("stdin" for -).
func sourceName(arg string) string {
	if arg == "-" {
		return "stdin"
	}
	base := filepath.Base(arg)
	return strings.TrimSuffix(base, filepath.Ext(base))
}
