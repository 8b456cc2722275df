package evaluation

import (
	"math"
	"sort"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation/fitness"
)

// aggregate is the mean over seeds of every metric.
type aggregate struct {
	values  []float64
	has     []bool
	classes []classRow
}

// mean aggregates the seeds: each metric's mean over the seeds that define it.
func (r *Result) mean() aggregate {
	a := aggregate{values: make([]float64, len(metricDefs)), has: make([]bool, len(metricDefs))}
	for i := range metricDefs {
		var xs []float64
		for _, s := range r.Seeds {
			if s.has[i] {
				xs = append(xs, s.values[i])
			}
		}
		if len(xs) > 0 {
			a.values[i], a.has[i] = meanOf(xs), true
		}
	}
	seen := map[string]bool{}
	var names []string
	for _, s := range r.Seeds {
		for _, c := range s.classes {
			if !seen[c.name] {
				seen[c.name] = true
				names = append(names, c.name)
			}
		}
	}
	sort.Strings(names)
	for _, n := range names {
		row := classRow{name: n, values: make([]float64, len(classDefs)), has: make([]bool, len(classDefs))}
		for i := range classDefs {
			var xs []float64
			for _, s := range r.Seeds {
				if c := s.class(n); c != nil && c.has[i] {
					xs = append(xs, c.values[i])
				}
			}
			if len(xs) > 0 {
				row.values[i], row.has[i] = meanOf(xs), true
			}
		}
		a.classes = append(a.classes, row)
	}
	return a
}

func (s *SeedResult) class(name string) *classRow {
	for i := range s.classes {
		if s.classes[i].name == name {
			return &s.classes[i]
		}
	}
	return nil
}

// metricValue is the value of a metric reference in one seed or the aggregate.
func metricValue(ref metricRef, values []float64, has []bool, classes []classRow) (float64, bool) {
	if ref.class == "" {
		return values[ref.index], has[ref.index]
	}
	for _, c := range classes {
		if c.name == ref.class {
			return c.values[ref.index], c.has[ref.index]
		}
	}
	return 0, false
}

// ApplyTo writes the result into status: inputHash, engineVersion, metrics (the mean over
// seeds), replicates (with two or more seeds), fitness and fitnessScore, anomalies and
// traceSummary. It is the one place that builds these fields, so `blis evaluate` and the
// operator write identical numbers; every floating-point field goes through RoundMetric
// (counts are exact integers, means over seeds rounded to the nearest integer). Other fields
// (conditions, phase, times, attempts, Pareto rank) are left as they are.
func (r *Result) ApplyTo(status *blisv1alpha1.EvaluationStatus) {
	status.InputHash = r.Hash
	status.EngineVersion = r.EngineVersion
	a := r.mean()

	m := &blisv1alpha1.EvaluationMetrics{}
	for i, d := range metricDefs {
		if a.has[i] && d.set != nil {
			d.set(m, statusNumber(a.values[i], d.integer))
		}
	}
	for _, c := range a.classes {
		if len(m.PerClass) == blisv1alpha1.MaxClassMetrics {
			break
		}
		cm := blisv1alpha1.ClassMetrics{Name: c.name}
		for i, d := range classDefs {
			if c.has[i] {
				d.set(&cm, statusNumber(c.values[i], d.integer))
			}
		}
		m.PerClass = append(m.PerClass, cm)
	}
	m.Pools = r.poolMetrics()
	status.Metrics = m

	status.Replicates = nil
	if len(r.Seeds) >= 2 {
		status.Replicates = r.replicates()
	}

	status.Fitness, status.FitnessScore = nil, nil
	f := r.fitness(a)
	for _, nv := range f.values {
		if len(status.Fitness) == blisv1alpha1.MaxFitnessValues {
			break
		}
		status.Fitness = append(status.Fitness, blisv1alpha1.NamedValue{Name: nv.name, Value: blisv1alpha1.RoundMetric(nv.value)})
	}
	if f.hasScore {
		s := blisv1alpha1.RoundMetric(f.score)
		status.FitnessScore = &s
	}
	status.Anomalies = r.anomalies(a)
	status.TraceSummary = r.TraceSummary()
}

// statusNumber prepares a value for status: counts are kept exact (their setters round a mean
// over seeds to the nearest integer), other numbers go through RoundMetric.
func statusNumber(v float64, integer bool) float64 {
	if integer {
		return v
	}
	return blisv1alpha1.RoundMetric(v)
}

// Status returns the status of a successful evaluation as `blis evaluate` prints it: phase
// Succeeded and the fields ApplyTo writes. Conditions, times and attempts belong to the
// operator and are not set.
func (r *Result) Status() blisv1alpha1.EvaluationStatus {
	st := blisv1alpha1.EvaluationStatus{Phase: blisv1alpha1.PhaseSucceeded}
	r.ApplyTo(&st)
	return st
}

type namedValue struct {
	name  string
	value float64
}

type fitnessResult struct {
	values   []namedValue
	score    float64
	hasScore bool
}

// fitness computes the objectives' normalised values and score, then BLIS's fitness-weight
// components (and its score when there are no objectives), from the aggregate metrics. A
// metric without a value (a class with no requests) normalises to 0, the worst.
func (r *Result) fitness(a aggregate) fitnessResult {
	var f fitnessResult
	doc := r.doc
	if len(doc.Objectives) > 0 {
		norm := make([]float64, len(doc.Objectives))
		for i, o := range doc.Objectives {
			ref := r.plan.objectives[i]
			if v, ok := metricValue(ref, a.values, a.has, a.classes); ok {
				norm[i] = fitness.Normalize(v, ref.scale, o.Direction)
			}
			f.values = append(f.values, namedValue{o.Name, norm[i]})
		}
		f.score, f.hasScore = fitness.WeightedMean(doc.Objectives, norm), true
	}
	if len(doc.FitnessWeights) > 0 {
		score, comps, err := fitness.BLISScore(doc.FitnessWeights, blisMetrics(a))
		if err == nil {
			keys := make([]string, 0, len(comps))
			for k := range comps {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				f.values = append(f.values, namedValue{k, comps[k]})
			}
			if !f.hasScore {
				f.score, f.hasScore = score, true
			}
		}
	}
	return f
}

// blisMetrics picks BLIS's fitness inputs from the aggregate.
func blisMetrics(a aggregate) fitness.BLISMetrics {
	get := func(name string) float64 {
		for i, d := range metricDefs {
			if d.name == name {
				return a.values[i]
			}
		}
		return 0
	}
	return fitness.BLISMetrics{
		RequestsPerSec: get("responsesPerSec"), TokensPerSec: get("tokensPerSec"),
		TTFTP99Ms: get("ttftP99Ms"), TTFTP50Ms: get("ttftP50Ms"), TTFTMeanMs: get("ttftMeanMs"),
		E2EP99Ms: get("e2eP99Ms"), E2EP50Ms: get("e2eP50Ms"), E2EMeanMs: get("e2eMeanMs"),
	}
}

// replicateDefaults are the headline metrics reported with replicate statistics, after the
// objectives' metrics, up to MaxReplicateStats rows.
var replicateDefaults = []string{"ttftP99Ms", "e2eP99Ms", "itlP99Ms", "responsesPerSec", "tokensPerSec",
	"goodputRps", "sloAttainment", "ttftMeanMs", "e2eMeanMs", "itlMeanMs", "ttftP50Ms", "e2eP50Ms",
	"schedulingDelayP99Ms", "completedRequests", "cacheHitRate", "replicaSeconds"}

// replicates computes the across-seed statistics.
func (r *Result) replicates() *blisv1alpha1.ReplicateStatistics {
	rs := &blisv1alpha1.ReplicateStatistics{Count: int32(len(r.Seeds))}
	var refs []metricRef
	seen := map[string]bool{}
	for _, ref := range r.plan.objectives {
		if !seen[ref.name] {
			seen[ref.name] = true
			refs = append(refs, ref)
		}
	}
	for _, name := range replicateDefaults {
		if seen[name] {
			continue
		}
		for i, d := range metricDefs {
			if d.name == name {
				seen[name] = true
				refs = append(refs, metricRef{name: name, index: i, scale: d.scale})
			}
		}
	}
	for _, ref := range refs {
		if len(rs.Metrics) == blisv1alpha1.MaxReplicateStats {
			break
		}
		var xs []float64
		for _, s := range r.Seeds {
			if v, ok := metricValue(ref, s.values, s.has, s.classes); ok {
				xs = append(xs, v)
			}
		}
		if len(xs) == 0 {
			continue
		}
		st := Summarize(xs)
		rs.Metrics = append(rs.Metrics, blisv1alpha1.ReplicateStat{
			Name:   ref.name,
			Mean:   blisv1alpha1.RoundMetric(st.Mean),
			Stddev: blisv1alpha1.RoundMetric(st.Stddev),
			Ci95:   blisv1alpha1.RoundMetric(st.CI95),
		})
	}
	return rs
}

// Stats are replicate statistics of one metric.
type Stats struct {
	// N is the number of values.
	N int
	// Mean is the arithmetic mean.
	Mean float64
	// Stddev is the sample standard deviation (n − 1 in the denominator; 0 for one value).
	Stddev float64
	// CI95 is the half-width of the 95% confidence interval of the mean, Student's t with
	// n − 1 degrees of freedom times Stddev / √n (0 for one value).
	CI95 float64
}

// Summarize computes the replicate statistics of xs.
func Summarize(xs []float64) Stats {
	st := Stats{N: len(xs)}
	if st.N == 0 {
		return st
	}
	st.Mean = meanOf(xs)
	if st.N < 2 {
		return st
	}
	var ss float64
	for _, x := range xs {
		d := x - st.Mean
		ss += d * d
	}
	st.Stddev = math.Sqrt(ss / float64(st.N-1))
	st.CI95 = StudentT975(st.N-1) * st.Stddev / math.Sqrt(float64(st.N))
	return st
}

func meanOf(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// studentT975 are the 0.975 quantiles of Student's t distribution for 1 to 31 degrees of
// freedom (the two-sided 95% critical values).
var studentT975 = [...]float64{12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624,
	2.306004, 2.262157, 2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905,
	2.109816, 2.100922, 2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899, 2.059539,
	2.055529, 2.051831, 2.048407, 2.045230, 2.042272, 2.039513}

// StudentT975 is the two-sided 95% critical value of Student's t with df degrees of freedom
// (df >= 1); beyond the table it uses the large-sample expansion around 1.959964.
func StudentT975(df int) float64 {
	if df < 1 {
		return math.NaN()
	}
	if df <= len(studentT975) {
		return studentT975[df-1]
	}
	// Cornish-Fisher expansion of the t quantile in powers of 1/df.
	z := 1.959964
	n := float64(df)
	g1 := (z*z*z + z) / 4
	g2 := (5*math.Pow(z, 5) + 16*z*z*z + 3*z) / 96
	return z + g1/n + g2/(n*n)
}
