package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
// error is the argument's error); only when none does (and no studySourceResolvers entry
// does) is the argument read as a file ("-" is standard input) with report.Read.
var sourceResolvers []func(ctx context.Context, arg string) (*report.Data, bool, error)

// studySourceResolvers are sourceResolvers for studies (the kubectl plugin's study/NAME):
// `blis report` renders what they return as a study report. They are tried after
// sourceResolvers, with the same rules.
var studySourceResolvers []func(ctx context.Context, arg string) (*report.StudyData, bool, error)

// loadReportSource resolves one `blis report` argument into an evaluation's data or a study's:
// registered resolvers first, then a file. A file holding a study (a PolicyStudy object,
// status or stream with its Evaluations, or study report data) is read with report.ReadStudy.
// Evaluation data without a name is named after the file (base name without extension).
func loadReportSource(ctx context.Context, stdin io.Reader, arg string) (*report.Data, *report.StudyData, error) {
	for _, resolve := range sourceResolvers {
		d, ok, err := resolve(ctx, arg)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", arg, err)
		}
		if ok {
			return d, nil, nil
		}
	}
	for _, resolve := range studySourceResolvers {
		sd, ok, err := resolve(ctx, arg)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", arg, err)
		}
		if ok {
			return nil, sd, nil
		}
	}
	raw, err := readInput(stdin, arg)
	if err != nil {
		return nil, nil, err
	}
	d, err := report.Read(bytes.NewReader(raw))
	if errors.Is(err, report.ErrPolicyStudy) {
		sd, err := report.ReadStudy(bytes.NewReader(raw))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", arg, err)
		}
		return nil, sd, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", arg, err)
	}
	if d.Name == "" {
		d.Name = sourceName(arg)
	}
	return d, nil, nil
}

// loadSource resolves one argument that must be an evaluation (blis compare).
func loadSource(ctx context.Context, stdin io.Reader, arg string) (*report.Data, error) {
	d, sd, err := loadReportSource(ctx, stdin, arg)
	if err != nil {
		return nil, err
	}
	if sd != nil {
		return nil, fmt.Errorf("%s is a study, not an evaluation: blis report renders it", arg)
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
