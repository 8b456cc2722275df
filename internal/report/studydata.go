package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/study"
)

// StudyDataVersion is the version of the StudyData JSON layout; a file with another version is
// refused.
const StudyDataVersion = "studyreport.blis.inference-sim.io/v1"

// StudyData is what a study report shows: every known candidate with its objective values and
// parameters, the convergence of the search and what the source could not tell.
type StudyData struct {
	// Version is StudyDataVersion.
	Version string `json:"version"`
	// Name is the study's name.
	Name string `json:"name"`
	// Description says what was searched, in one line (algorithm, parameters, evaluations).
	Description string `json:"description,omitempty"`
	// Algorithm is the search algorithm (grid, random, nsga2, evolution; empty when unknown).
	Algorithm string `json:"algorithm,omitempty"`
	// Objectives are the study's objectives, in spec order; every candidate's Fitness and Raw
	// follow this order.
	Objectives []StudyObjective `json:"objectives"`
	// Parameters are the search parameters' paths: the spec's order, then any other path a
	// candidate carries, sorted.
	Parameters []string `json:"parameters,omitempty"`
	// Evaluations counts the study's Evaluations.
	Evaluations blisv1alpha1.StudyCounters `json:"evaluations"`
	// Candidates are the succeeded candidates the source knows, best score first (ties: the
	// smaller name).
	Candidates []StudyCandidate `json:"candidates"`
	// AllCandidates is true when Candidates holds every succeeded candidate of the study (so
	// the dominated ones are drawn too); false when it holds only the top of the front.
	AllCandidates bool `json:"allCandidates"`
	// Best is the evaluation name of the candidate with the highest score ("" when none
	// succeeded).
	Best string `json:"best,omitempty"`
	// FrontSize is the number of distinct points of the whole Pareto front.
	FrontSize int `json:"frontSize"`
	// Convergence summarises the generations, oldest first.
	Convergence []StudyGeneration `json:"convergence,omitempty"`
	// Missing says, one sentence each, what this report cannot show and why.
	Missing []string `json:"missing,omitempty"`
}

// StudyObjective is one objective as the study spec defines it.
type StudyObjective struct {
	// Name is the metric (see blisv1alpha1.Objective).
	Name string `json:"name"`
	// Direction is minimize or maximize ("" when the source does not say).
	Direction string `json:"direction,omitempty"`
	// Weight is the objective's weight in the fitness score.
	Weight float64 `json:"weight,omitempty"`
}

// StudyCandidate is one succeeded candidate of a study.
type StudyCandidate struct {
	// Evaluation is the candidate's Evaluation name.
	Evaluation string `json:"evaluation"`
	// PolicyBundle is its PolicyBundle (empty for an inline policy).
	PolicyBundle string `json:"policyBundle,omitempty"`
	// Generation is its search generation; nil for an Evaluation another client created.
	Generation *int `json:"generation,omitempty"`
	// Score is the weighted fitness score (higher is better).
	Score float64 `json:"score"`
	// Fitness is the normalised value of each objective (1 is best), in objective order.
	Fitness []float64 `json:"fitness"`
	// Raw is the metric value of each objective, in objective order; nil when the source
	// does not carry metrics.
	Raw []float64 `json:"raw,omitempty"`
	// Parameters are the candidate's parameter values.
	Parameters []blisv1alpha1.ParameterValue `json:"parameters,omitempty"`
	// OnFront is true when no other candidate dominates it.
	OnFront bool `json:"onFront"`
	// ParetoRank is its non-domination rank (0 = front) when known.
	ParetoRank *int `json:"paretoRank,omitempty"`
}

// StudyGeneration summarises one generation of the search.
type StudyGeneration struct {
	// Generation is the generation number.
	Generation int `json:"generation"`
	// Evaluated and Failed count its finished candidates.
	Evaluated int `json:"evaluated"`
	Failed    int `json:"failed,omitempty"`
	// Best and Mean are the generation's best and mean score (nil when nothing succeeded).
	Best *float64 `json:"best,omitempty"`
	Mean *float64 `json:"mean,omitempty"`
	// BestSoFar is the best score of this and every earlier generation (nil while nothing
	// succeeded).
	BestSoFar *float64 `json:"bestSoFar,omitempty"`
}

// Missing-data sentences of study reports.
const (
	missingFrontOnly = "Only the top %d of the %d points of the Pareto front are in the study's status, so the scatter plots show those front points and no dominated candidates (build the report from the study's Evaluations to see every candidate)."
	missingRawStatus = "The study's status carries normalised fitness values only (1 is best), not the metrics themselves, so the scatter axes are normalised fitness."
	missingRawSome   = "Some candidates carry no metrics, so the scatter axes are normalised fitness (1 is best) instead of metric values."
	missingConvTail  = "The study's status keeps the last %d generations only; the convergence chart starts at generation %d."
	missingSpec      = "The source holds no study spec: objective directions and weights and the search space are unknown."
	missingNone      = "No candidate has succeeded yet: there is nothing to plot."
	missingOneObj    = "The study has a single objective, so there is no Pareto scatter (the front is the best candidate)."
	missingManyObj   = "The study has %d objectives; the scatter plots show the pairs of the first %d only (the front flags are over all of them)."
)

// objectivesOf converts the spec's objectives.
func objectivesOf(ps *blisv1alpha1.PolicyStudy) []StudyObjective {
	out := make([]StudyObjective, 0, len(ps.Spec.Objectives))
	for _, o := range ps.Spec.Objectives {
		out = append(out, StudyObjective{Name: o.Name, Direction: o.Direction, Weight: o.Weight})
	}
	return out
}

// newStudyData fills what every builder shares: name, algorithm, objectives, parameters order.
func newStudyData(ps *blisv1alpha1.PolicyStudy) *StudyData {
	sd := &StudyData{Version: StudyDataVersion, Name: ps.Name, Algorithm: string(ps.Spec.Algorithm.Name),
		Objectives: objectivesOf(ps), Evaluations: ps.Status.Evaluations}
	for _, p := range ps.Spec.SearchSpace {
		sd.Parameters = append(sd.Parameters, p.Path)
	}
	if len(ps.Spec.Objectives) == 0 {
		sd.Missing = append(sd.Missing, missingSpec)
	}
	return sd
}

// finish orders candidates, collects parameter paths, writes the description and the notes
// that depend on the candidates.
func (sd *StudyData) finish() {
	slices.SortFunc(sd.Candidates, func(a, b StudyCandidate) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Evaluation, b.Evaluation)
	})
	known := map[string]bool{}
	for _, p := range sd.Parameters {
		known[p] = true
	}
	var extra []string
	for _, c := range sd.Candidates {
		for _, p := range c.Parameters {
			if !known[p.Path] {
				known[p.Path] = true
				extra = append(extra, p.Path)
			}
		}
	}
	slices.Sort(extra)
	sd.Parameters = append(sd.Parameters, extra...)
	if len(sd.Candidates) == 0 {
		sd.Missing = append(sd.Missing, missingNone)
	} else if len(sd.Objectives) == 1 {
		sd.Missing = append(sd.Missing, missingOneObj)
	} else if len(sd.Objectives) > studyMaxScatterObjectives {
		sd.Missing = append(sd.Missing, fmt.Sprintf(missingManyObj, len(sd.Objectives), studyMaxScatterObjectives))
	}
	var parts []string
	if sd.Algorithm != "" {
		parts = append(parts, sd.Algorithm+" search")
	}
	if n := len(sd.Parameters); n > 0 {
		parts = append(parts, plural(n, "parameter"))
	}
	parts = append(parts, plural(len(sd.Objectives), "objective"))
	ev := sd.Evaluations
	parts = append(parts, fmt.Sprintf("%d evaluations succeeded, %d failed", ev.Succeeded, ev.Failed))
	if ev.External > 0 {
		parts = append(parts, fmt.Sprintf("%d external", ev.External))
	}
	parts = append(parts, fmt.Sprintf("Pareto front of %d", sd.FrontSize))
	sd.Description = strings.Join(parts, ", ")
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// fromAPICandidate converts a status candidate.
func fromAPICandidate(c *blisv1alpha1.StudyCandidate, objs []StudyObjective) StudyCandidate {
	out := StudyCandidate{Evaluation: c.Evaluation, PolicyBundle: c.PolicyBundle,
		Parameters: slices.Clone(c.Parameters), Fitness: make([]float64, len(objs))}
	if c.Generation != nil {
		g := int(*c.Generation)
		out.Generation = &g
	}
	if c.FitnessScore != nil {
		out.Score = *c.FitnessScore
	}
	for i, o := range objs {
		for _, f := range c.Fitness {
			if f.Name == o.Name {
				out.Fitness[i] = f.Value
			}
		}
	}
	return out
}

// StudyFromStatus builds a study report from a PolicyStudy's status alone: the best
// candidate, the listed top of the Pareto front (at most 10) and the last 20 generations'
// convergence. The scatter plots then show front points only, and the Missing notes say so.
func StudyFromStatus(ps *blisv1alpha1.PolicyStudy) *StudyData {
	sd := newStudyData(ps)
	st := &ps.Status
	if len(sd.Objectives) == 0 {
		sd.Objectives = objectivesFromFitness(st)
	}
	seen := map[string]bool{}
	zero := 0
	for i := range st.ParetoFront {
		c := fromAPICandidate(&st.ParetoFront[i], sd.Objectives)
		c.OnFront, c.ParetoRank = true, &zero
		seen[c.Evaluation] = true
		sd.Candidates = append(sd.Candidates, c)
	}
	if st.Best != nil {
		sd.Best = st.Best.Evaluation
		if !seen[st.Best.Evaluation] {
			// The best point may share its objective values with a listed front point
			// (the front lists each point once), so its rank is not known for sure.
			sd.Candidates = append(sd.Candidates, fromAPICandidate(st.Best, sd.Objectives))
		}
	}
	sd.FrontSize = int(st.ParetoFrontSize)
	if sd.FrontSize == 0 {
		sd.FrontSize = len(st.ParetoFront)
	}
	if len(sd.Candidates) > 0 {
		sd.Missing = append(sd.Missing, fmt.Sprintf(missingFrontOnly, len(st.ParetoFront), sd.FrontSize))
		if len(sd.Objectives) > 1 {
			sd.Missing = append(sd.Missing, missingRawStatus)
		}
	}
	for _, g := range st.Convergence {
		sg := StudyGeneration{Generation: int(g.Generation), Evaluated: int(g.Evaluated), Failed: int(g.Failed)}
		sg.Best, sg.Mean, sg.BestSoFar = clonePtr(g.BestScore), clonePtr(g.MeanScore), clonePtr(g.BestSoFar)
		sd.Convergence = append(sd.Convergence, sg)
	}
	if len(sd.Convergence) > 0 && sd.Convergence[0].Generation > 0 {
		sd.Missing = append(sd.Missing, fmt.Sprintf(missingConvTail, blisv1alpha1.MaxStudyConvergence, sd.Convergence[0].Generation))
	}
	sd.finish()
	return sd
}

func clonePtr(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// objectivesFromFitness recovers objective names from the fitness values of a status without
// a spec (the output of `blis study`), in the order they appear.
func objectivesFromFitness(st *blisv1alpha1.PolicyStudyStatus) []StudyObjective {
	var out []StudyObjective
	seen := map[string]bool{}
	add := func(c *blisv1alpha1.StudyCandidate) {
		for _, f := range c.Fitness {
			if !seen[f.Name] {
				seen[f.Name] = true
				out = append(out, StudyObjective{Name: f.Name})
			}
		}
	}
	if st.Best != nil {
		add(st.Best)
	}
	for i := range st.ParetoFront {
		add(&st.ParetoFront[i])
	}
	return out
}

// StudyTrial is one trial of a study with what a report adds to it: its parameter values and,
// when known, the status of its Evaluation (for the raw metric values).
type StudyTrial struct {
	// Trial is the trial as the study package sees it (Values may be nil).
	Trial study.Trial
	// Parameters are the trial's parameter values.
	Parameters []blisv1alpha1.ParameterValue
	// Status is the trial's Evaluation status (nil when unknown).
	Status *blisv1alpha1.EvaluationStatus
}

// StudyFromTrials builds a study report from every trial of a study, as the local runner of
// `blis study` has them: ranks, front, best and convergence come from the study package's
// leaderboard and Pareto ranking over all succeeded trials, so dominated candidates are drawn
// too. ps supplies the name, objectives and search space (its status supplies nothing).
func StudyFromTrials(ps *blisv1alpha1.PolicyStudy, trials []StudyTrial) *StudyData {
	sd := newStudyData(ps)
	sd.AllCandidates = true
	plain := make([]study.Trial, len(trials))
	for i := range trials {
		plain[i] = trials[i].Trial
		// The leaderboard needs outcomes only; values are carried in Parameters.
		plain[i].Values = nil
	}
	// A leaderboard-only configuration summarises the trials without proposing anything;
	// 0 bounds keep the whole front and every generation.
	d, err := study.Plan(study.Config{Study: ps.Name}, plain)
	if err == nil {
		s := d.Summary
		sd.Evaluations = blisv1alpha1.StudyCounters{Created: int32(s.Created), Running: int32(s.Running),
			Succeeded: int32(s.Succeeded), Failed: int32(s.Failed), External: int32(s.External)}
		if s.Best != nil {
			sd.Best = s.Best.Name
		}
		sd.FrontSize = s.FrontSize
		for _, g := range s.Convergence {
			sg := StudyGeneration{Generation: g.Generation, Evaluated: g.Evaluated, Failed: g.Failed}
			if g.HasScore {
				b, m := blisv1alpha1.RoundMetric(g.Best), blisv1alpha1.RoundMetric(g.Mean)
				sg.Best, sg.Mean = &b, &m
			}
			if g.HasBestSoFar {
				b := blisv1alpha1.RoundMetric(g.BestSoFar)
				sg.BestSoFar = &b
			}
			sd.Convergence = append(sd.Convergence, sg)
		}
	}
	var done []study.Trial
	var idx []int
	for i := range trials {
		if trials[i].Trial.State == study.Succeeded {
			done = append(done, plain[i])
			idx = append(idx, i)
		}
	}
	ranks := study.ParetoRanks(done)
	rawKnown := true
	for k, i := range idx {
		t := &trials[i]
		c := StudyCandidate{Evaluation: t.Trial.Name, PolicyBundle: t.Trial.Ref, Score: blisv1alpha1.RoundMetric(t.Trial.Score),
			Parameters: slices.Clone(t.Parameters), Fitness: make([]float64, len(sd.Objectives))}
		if t.Trial.Generation >= 0 {
			g := t.Trial.Generation
			c.Generation = &g
		}
		for j := range c.Fitness {
			if j < len(t.Trial.Objectives) {
				c.Fitness[j] = blisv1alpha1.RoundMetric(t.Trial.Objectives[j])
			}
		}
		r := ranks[k]
		c.ParetoRank, c.OnFront = &r, r == 0
		if raw, ok := rawValues(t.Status, sd.Objectives); ok {
			c.Raw = raw
		} else {
			rawKnown = false
		}
		sd.Candidates = append(sd.Candidates, c)
	}
	if !rawKnown && len(sd.Objectives) > 1 {
		// Mixed axes would not be comparable: draw every candidate on normalised fitness.
		for i := range sd.Candidates {
			sd.Candidates[i].Raw = nil
		}
		sd.Missing = append(sd.Missing, missingRawSome)
	}
	sd.finish()
	return sd
}

// StudyFromEvaluations builds a study report from a PolicyStudy and its Evaluations (those
// with the study label; others are ignored), as the operator reads them: the study's own
// children carry their generation label and parameter annotation, the others are external.
// Every succeeded candidate is drawn, with its metric values.
func StudyFromEvaluations(ps *blisv1alpha1.PolicyStudy, evs []blisv1alpha1.Evaluation) *StudyData {
	trials := make([]StudyTrial, 0, len(evs))
	for i := range evs {
		ev := &evs[i]
		if ev.Labels[blisv1alpha1.LabelStudy] != ps.Name || ev.DeletionTimestamp != nil {
			continue
		}
		if ps.Namespace != "" && ev.Namespace != "" && ev.Namespace != ps.Namespace {
			continue
		}
		trials = append(trials, trialOfEvaluation(ps, ev))
	}
	sd := StudyFromTrials(ps, trials)
	if ps.Status.Evaluations.Created > sd.Evaluations.Created {
		// Evaluations the study created may have been deleted since; the status still
		// counts them.
		sd.Missing = append(sd.Missing, fmt.Sprintf("The study created %d Evaluations but %d of them were found; the others are not shown.",
			ps.Status.Evaluations.Created, sd.Evaluations.Created))
	}
	return sd
}

// trialOfEvaluation reads one Evaluation as a trial, the way the study controller does.
func trialOfEvaluation(ps *blisv1alpha1.PolicyStudy, ev *blisv1alpha1.Evaluation) StudyTrial {
	t := study.Trial{Name: ev.Name, Generation: study.External, Index: -1}
	if ev.Spec.PolicyRef != nil {
		t.Ref = ev.Spec.PolicyRef.Name
	}
	// A child of the study is controlled by it; without a UID (a study read from a file)
	// the labels alone identify the children.
	owned := ps.UID == "" || metav1.IsControlledBy(ev, ps)
	g, gErr := strconv.Atoi(ev.Labels[blisv1alpha1.LabelStudyGeneration])
	k, kErr := strconv.Atoi(ev.Annotations[blisv1alpha1.AnnotationStudyIndex])
	if owned && gErr == nil && kErr == nil && g >= 0 && k >= 0 {
		t.Generation, t.Index = g, k
	}
	TrialResult(&t, ps.Spec.Objectives, &ev.Status)
	st := ev.Status
	return StudyTrial{Trial: t, Parameters: parametersOf(ps, ev.Annotations[blisv1alpha1.AnnotationStudyParameters]), Status: &st}
}

// parametersOf reads the study-parameters annotation: the spec's paths in order, then any
// other key sorted.
func parametersOf(ps *blisv1alpha1.PolicyStudy, raw string) []blisv1alpha1.ParameterValue {
	if raw == "" {
		return nil
	}
	m := map[string]string{}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil
	}
	var out []blisv1alpha1.ParameterValue
	for _, p := range ps.Spec.SearchSpace {
		if v, ok := m[p.Path]; ok {
			out = append(out, blisv1alpha1.ParameterValue{Path: p.Path, Value: v})
			delete(m, p.Path)
		}
	}
	rest := make([]string, 0, len(m))
	for k := range m {
		rest = append(rest, k)
	}
	slices.Sort(rest)
	for _, k := range rest {
		out = append(out, blisv1alpha1.ParameterValue{Path: k, Value: m[k]})
	}
	return out
}

// rawValues looks up each objective's metric in an Evaluation status (a per-class objective
// <metric>/<class> in the class's row); ok is false when any is unknown.
func rawValues(st *blisv1alpha1.EvaluationStatus, objs []StudyObjective) ([]float64, bool) {
	if st == nil || st.Metrics == nil || len(objs) == 0 {
		return nil, false
	}
	out := make([]float64, len(objs))
	for i, o := range objs {
		metric, class, perClass := strings.Cut(o.Name, "/")
		var v float64
		var ok bool
		if perClass {
			for j := range st.Metrics.PerClass {
				if row := &st.Metrics.PerClass[j]; row.Name == class {
					v, ok = fieldByJSONName(reflect.ValueOf(row).Elem(), metric)
				}
			}
		} else {
			v, ok = fieldByJSONName(reflect.ValueOf(st.Metrics).Elem(), metric)
		}
		if !ok {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

// fieldByJSONName returns the numeric field of struct value s whose JSON name is name. The
// metrics structs omit zero values from JSON, so reading the fields keeps a true 0.
func fieldByJSONName(s reflect.Value, name string) (float64, bool) {
	t := s.Type()
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if tag != name {
			continue
		}
		f := s.Field(i)
		switch f.Kind() {
		case reflect.Float64, reflect.Float32:
			return f.Float(), true
		case reflect.Int, reflect.Int32, reflect.Int64:
			return float64(f.Int()), true
		}
		return 0, false
	}
	return 0, false
}

// TrialResult fills a trial's outcome from an Evaluation status: Succeeded with the fitness
// score and the objective values in the study's order (a missing one counts as 0), Failed, or
// Pending while the Evaluation has not finished. It lives here, beneath the evaluation package,
// so that the study binding (binding.ResultOf) and the study report share one rule.
func TrialResult(t *study.Trial, objectives []blisv1alpha1.Objective, st *blisv1alpha1.EvaluationStatus) {
	switch st.Phase {
	case blisv1alpha1.PhaseSucceeded:
		t.State = study.Succeeded
	case blisv1alpha1.PhaseFailed:
		t.State = study.Failed
		return
	default:
		t.State = study.Pending
		return
	}
	if st.FitnessScore != nil {
		t.Score = *st.FitnessScore
	}
	t.Objectives = make([]float64, len(objectives))
	for i, o := range objectives {
		for _, f := range st.Fitness {
			if f.Name == o.Name {
				t.Objectives[i] = f.Value
			}
		}
	}
}
