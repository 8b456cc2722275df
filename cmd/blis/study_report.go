package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"sync"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/report"
	"github.com/inference-sim/blis-operator/internal/study/binding"
)

// studyStatuses collects the Evaluation status of each candidate of a local study run, so the
// report can show metric values next to the normalised fitness.
type studyStatuses struct {
	mu sync.Mutex
	m  map[string]*blisv1alpha1.EvaluationStatus
}

// observe records one candidate's status; workers call it concurrently.
func (s *studyStatuses) observe(name string, st *blisv1alpha1.EvaluationStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*blisv1alpha1.EvaluationStatus{}
	}
	s.m[name] = st
}

// wantsStudyReport reports whether --report or --report-data was given.
func (f *studyFlags) wantsStudyReport() bool {
	return f.report != "" || f.reportData != ""
}

// writeStudyReport writes --report (HTML) and --report-data (StudyData JSON) after a local
// study run, from every candidate the run evaluated.
func writeStudyReport(ctx context.Context, ps *blisv1alpha1.PolicyStudy, l *binding.Local, statuses *studyStatuses, f *studyFlags) error {
	trials, err := l.Results(ctx)
	if err != nil {
		return err
	}
	in := make([]report.StudyTrial, len(trials))
	for i, t := range trials {
		in[i] = report.StudyTrial{Trial: t, Parameters: binding.ParameterValues(l.Space, t.Values), Status: statuses.m[t.Name]}
	}
	sd := report.StudyFromTrials(ps, in)
	if f.reportData != "" {
		js, err := json.MarshalIndent(sd, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.reportData, append(js, '\n'), 0o644); err != nil {
			return err
		}
	}
	if f.report != "" {
		var buf bytes.Buffer
		if err := report.StudyHTML(&buf, sd); err != nil {
			return err
		}
		if err := os.WriteFile(f.report, buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}
