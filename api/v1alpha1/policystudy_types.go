/*
Copyright 2026 The blis-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels and annotations of the objects a PolicyStudy creates or reads.
const (
	// LabelStudy names the PolicyStudy an Evaluation or PolicyBundle belongs to. Evaluations
	// created by any client with this label join the study's leaderboard.
	LabelStudy = "blis.inference-sim.io/study"
	// LabelStudyGeneration is the search generation of a child the study created.
	LabelStudyGeneration = "blis.inference-sim.io/study-generation"
	// AnnotationStudyIndex is the index of a child within its generation.
	AnnotationStudyIndex = "blis.inference-sim.io/study-index"
	// AnnotationStudyParameters holds the parameter values of a child as a JSON object (path
	// to value).
	AnnotationStudyParameters = "blis.inference-sim.io/study-parameters"
	// AnnotationPromote asks a PolicyStudy to promote its current best candidate: each new
	// value of the annotation is one promotion request.
	AnnotationPromote = "blis.inference-sim.io/promote"
)

// Bounds of PolicyStudy status.
const (
	// MaxStudyParetoFront is the maximum number of entries of status.paretoFront.
	MaxStudyParetoFront = 10
	// MaxStudyConvergence is the maximum number of generations kept in status.convergence.
	MaxStudyConvergence = 20
	// MaxStudyParameters is the maximum number of search parameters.
	MaxStudyParameters = 16
)

// ParameterType is the kind of values a search parameter takes.
// +kubebuilder:validation:Enum=float;int;choice
type ParameterType string

// The parameter types.
const (
	// ParameterFloat is a real number in [min, max].
	ParameterFloat ParameterType = "float"
	// ParameterInt is an integer in [min, max].
	ParameterInt ParameterType = "int"
	// ParameterChoice is one of a list of values.
	ParameterChoice ParameterType = "choice"
)

// SearchParameter is one dimension of a study's search space: a field of the PolicyBundle
// spec and the values it may take.
//
// +kubebuilder:validation:XValidation:rule="self.type == 'choice' ? (has(self.values) && !has(self.min) && !has(self.max)) : (has(self.min) && has(self.max) && !has(self.values))",message="float and int parameters need min and max (and no values); choice parameters need values (and no min or max)"
// +kubebuilder:validation:XValidation:rule="!has(self.min) || !has(self.max) || self.min < self.max",message="min must be less than max"
// +kubebuilder:validation:XValidation:rule="!has(self.logScale) || !self.logScale || (self.type != 'choice' && has(self.min) && self.min > 0.0)",message="logScale needs a float or int parameter with min > 0"
// +kubebuilder:validation:XValidation:rule="self.type != 'int' || !has(self.min) || !has(self.max) || (self.min == double(int(self.min)) && self.max == double(int(self.max)))",message="the bounds of an int parameter must be whole numbers"
type SearchParameter struct {
	// path addresses a field of the PolicyBundle spec as dot-separated JSON field names, with
	// [key=value] selecting the element of a list whose key field equals value and [n] a
	// list index, for example routing.scorers[name=queue-scorer].weight,
	// admission.parameters.refill_rate or scheduler. The last element of a map field (such as
	// parameters) may be a key the base bundle does not set yet. The path is checked against
	// the base bundle when the study starts.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9]*(\[([0-9]+|[a-zA-Z][a-zA-Z0-9]*=[-a-zA-Z0-9_.:/]+)\])?(\.[a-zA-Z_][a-zA-Z0-9_-]*(\[([0-9]+|[a-zA-Z][a-zA-Z0-9]*=[-a-zA-Z0-9_.:/]+)\])?)*$`
	// +required
	Path string `json:"path"`

	// type is float, int or choice.
	// +required
	Type ParameterType `json:"type"`

	// min is the smallest value of a float or int parameter.
	// +optional
	Min *float64 `json:"min,omitempty"`

	// max is the largest value of a float or int parameter.
	// +optional
	Max *float64 `json:"max,omitempty"`

	// logScale samples and mutates the parameter on a logarithmic scale (min must be > 0).
	// +optional
	LogScale *bool `json:"logScale,omitempty"`

	// values are the values of a choice parameter. A value is written into the bundle as the
	// type the field has in the base bundle (a number field receives a number); a field the
	// base does not set receives the string.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=128
	// +optional
	Values []string `json:"values,omitempty"`

	// gridPoints is the number of evenly spaced values of a float or int parameter in a grid
	// search (an int parameter never gets more points than it has values).
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=5
	// +optional
	GridPoints int32 `json:"gridPoints,omitempty"`
}

// StudyAlgorithmName is a search algorithm.
// +kubebuilder:validation:Enum=grid;random;nsga2;evolution;cmaes
type StudyAlgorithmName string

// The search algorithms.
const (
	// AlgorithmGrid evaluates the Cartesian product of the parameters' grid values.
	AlgorithmGrid StudyAlgorithmName = "grid"
	// AlgorithmRandom samples candidates uniformly (log-uniformly with logScale).
	AlgorithmRandom StudyAlgorithmName = "random"
	// AlgorithmNSGA2 is the NSGA-II multi-objective genetic algorithm: non-dominated sorting
	// and crowding distance over the objectives, simulated binary crossover and polynomial
	// mutation.
	AlgorithmNSGA2 StudyAlgorithmName = "nsga2"
	// AlgorithmEvolution is a (mu+lambda) evolution strategy on the scalar fitness score, with
	// Gaussian mutation whose step size follows the one-fifth success rule.
	AlgorithmEvolution StudyAlgorithmName = "evolution"
	// AlgorithmCMAES is the covariance matrix adaptation evolution strategy (CMA-ES) on the
	// scalar fitness score, over float and int parameters.
	AlgorithmCMAES StudyAlgorithmName = "cmaes"
)

// CMAESSettings tune the cmaes algorithm. The strategy's other constants (recombination
// weights, learning rates, damping) are the defaults of Hansen's CMA-ES tutorial.
type CMAESSettings struct {
	// populationSize is lambda, the number of candidates per generation (default
	// 4 + floor(3 ln n) for n parameters). algorithm.populationSize does not apply to cmaes.
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=500
	// +optional
	PopulationSize *int32 `json:"populationSize,omitempty"`

	// initialSigmaPermille is the initial step size sigma0 as a fraction of each parameter's
	// range (of its logarithm with logScale), in permille (default 250, a quarter of the
	// range). The first run starts at the centre of the search space.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	InitialSigmaPermille *int32 `json:"initialSigmaPermille,omitempty"`

	// restarts is how many times a new run starts, from a uniformly drawn mean with the
	// initial step size, after a run converged (default 0). The study completes with reason
	// Converged when the last run converged, or with BudgetExhausted before.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Restarts *int32 `json:"restarts,omitempty"`
}

// StudyAlgorithm selects and tunes the search algorithm.
//
// +kubebuilder:validation:XValidation:rule="!has(self.parents) || !has(self.populationSize) || self.parents <= self.populationSize",message="parents must not exceed populationSize"
// +kubebuilder:validation:XValidation:rule="!has(self.cmaes) || (has(self.name) && self.name == 'cmaes')",message="cmaes settings need name cmaes",fieldPath=".cmaes"
type StudyAlgorithm struct {
	// name is grid, random, nsga2, evolution or cmaes.
	// +kubebuilder:default=random
	// +optional
	Name StudyAlgorithmName `json:"name,omitempty"`

	// populationSize is the number of candidates per generation: the population of nsga2 and
	// lambda (offspring per generation) of evolution. grid and random ignore it; cmaes uses
	// cmaes.populationSize.
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=500
	// +kubebuilder:default=16
	// +optional
	PopulationSize int32 `json:"populationSize,omitempty"`

	// parents is mu, the number of parents evolution keeps (default populationSize/4, at
	// least 1).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=500
	// +optional
	Parents *int32 `json:"parents,omitempty"`

	// mutationPermille is the probability that a parameter of an offspring is mutated, in
	// permille (default 1000/number of parameters).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MutationPermille *int32 `json:"mutationPermille,omitempty"`

	// initialStepPermille is evolution's initial Gaussian step size as a fraction of each
	// parameter's range, in permille.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=200
	// +optional
	InitialStepPermille int32 `json:"initialStepPermille,omitempty"`

	// cmaes tunes the cmaes algorithm (only with name cmaes).
	// +optional
	CMAES *CMAESSettings `json:"cmaes,omitempty"`
}

// StudyBudget bounds a study.
type StudyBudget struct {
	// maxEvaluations is the number of Evaluations the study creates at most. It may be raised
	// while the study runs or after it completed with BudgetExhausted, to search further.
	// 0 makes a leaderboard-only study: it creates nothing and ranks the Evaluations other
	// clients (an external optimizer) create with its label.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +required
	MaxEvaluations int32 `json:"maxEvaluations"`

	// maxFailures ends the study as Failed when this many of its Evaluations failed.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +kubebuilder:default=10
	// +optional
	MaxFailures int32 `json:"maxFailures,omitempty"`
}

// PromotionSpec says where the winner of a study goes.
type PromotionSpec struct {
	// policyBundleName is the PolicyBundle the winner is written to (default
	// <study>-winner). The study owns it; an existing bundle the study does not own is left
	// alone and promotion fails with reason Conflict.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	PolicyBundleName string `json:"policyBundleName,omitempty"`

	// configMapName is the ConfigMap the winner's llm-d export files are written to (keys
	// epp-config.yaml, inference-objectives.yaml, model-servers.yaml, ...).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	ConfigMapName string `json:"configMapName"`

	// target is the llm-d router release the export is written for (empty: the exporter's
	// default target).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Target string `json:"target,omitempty"`

	// onCompletion promotes the best candidate when the study completes. Without it the
	// winner is promoted only on request, by setting the blis.inference-sim.io/promote
	// annotation to a new value.
	// +kubebuilder:default=true
	// +optional
	OnCompletion *bool `json:"onCompletion,omitempty"`
}

// PolicyStudySpec is a search over PolicyBundles: the study patches a base bundle with
// parameter values chosen by its algorithm, creates one PolicyBundle and one Evaluation per
// candidate, and keeps a leaderboard and a Pareto front of the results.
//
// The fields that define the search (base, inputs, space, objectives, algorithm, seeds) are
// immutable; budget, parallelism and promotion may change while the study runs.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.basePolicyRef) && has(self.basePolicy))",message="set at most one of basePolicyRef and basePolicy"
// +kubebuilder:validation:XValidation:rule="has(self.searchSpace) || self.budget.maxEvaluations == 0",message="searchSpace is required unless budget.maxEvaluations is 0 (a leaderboard-only study)"
// +kubebuilder:validation:XValidation:rule="!has(self.algorithm.name) || self.algorithm.name != 'cmaes' || !has(self.searchSpace) || self.searchSpace.all(p, p.type != 'choice')",message="algorithm cmaes searches float and int parameters only: remove the choice parameters or use random, evolution or nsga2",fieldPath=".searchSpace"
// +kubebuilder:validation:XValidation:rule="has(self.searchSpace) == has(oldSelf.searchSpace)",message="searchSpace is immutable; create a new PolicyStudy"
// +kubebuilder:validation:XValidation:rule="has(self.basePolicyRef) == has(oldSelf.basePolicyRef) && (!has(self.basePolicyRef) || self.basePolicyRef == oldSelf.basePolicyRef)",message="basePolicyRef is immutable; create a new PolicyStudy"
// +kubebuilder:validation:XValidation:rule="has(self.basePolicy) == has(oldSelf.basePolicy) && (!has(self.basePolicy) || self.basePolicy == oldSelf.basePolicy)",message="basePolicy is immutable; create a new PolicyStudy"
// +kubebuilder:validation:XValidation:rule="has(self.seeds) == has(oldSelf.seeds) && (!has(self.seeds) || self.seeds == oldSelf.seeds)",message="seeds are immutable; create a new PolicyStudy"
// +kubebuilder:validation:XValidation:rule="has(self.horizon) == has(oldSelf.horizon) && (!has(self.horizon) || self.horizon == oldSelf.horizon)",message="horizon is immutable; create a new PolicyStudy"
// +kubebuilder:validation:XValidation:rule="has(self.numRequests) == has(oldSelf.numRequests) && (!has(self.numRequests) || self.numRequests == oldSelf.numRequests)",message="numRequests is immutable; create a new PolicyStudy"
type PolicyStudySpec struct {
	// clusterRef names the SimulatedCluster every candidate runs on.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterRef is immutable; create a new PolicyStudy"
	// +required
	ClusterRef LocalObjectReference `json:"clusterRef"`

	// workloadRef names the WorkloadSpec every candidate runs.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="workloadRef is immutable; create a new PolicyStudy"
	// +required
	WorkloadRef LocalObjectReference `json:"workloadRef"`

	// basePolicyRef names the PolicyBundle the search starts from. With neither
	// basePolicyRef nor basePolicy the base is the default policies.
	// +optional
	BasePolicyRef *LocalObjectReference `json:"basePolicyRef,omitempty"`

	// basePolicy is an inline base PolicyBundle spec.
	// +optional
	BasePolicy *PolicyBundleSpec `json:"basePolicy,omitempty"`

	// searchSpace are the parameters the study varies; required unless the study is
	// leaderboard-only (budget.maxEvaluations 0).
	// +listType=map
	// +listMapKey=path
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="searchSpace is immutable; create a new PolicyStudy"
	// +optional
	SearchSpace []SearchParameter `json:"searchSpace,omitempty"`

	// objectives define each candidate's fitness, as in an Evaluation; nsga2 ranks candidates
	// by all of them, the other algorithms (evolution and cmaes too) by the weighted fitness
	// score.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="objectives are immutable; create a new PolicyStudy"
	// +kubebuilder:validation:XValidation:rule="self.exists(o, o.weight > 0.0)",message="at least one objective needs a positive weight"
	// +required
	Objectives []Objective `json:"objectives"`

	// algorithm is the search algorithm and its settings.
	// +kubebuilder:default={}
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="algorithm is immutable; create a new PolicyStudy"
	// +optional
	Algorithm StudyAlgorithm `json:"algorithm,omitempty"`

	// seed drives every random choice of the search: the same study (seed, space, results)
	// proposes the same candidates.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="seed is immutable; create a new PolicyStudy"
	// +optional
	Seed int64 `json:"seed,omitempty"`

	// seeds are the simulation seeds of every candidate's Evaluation (replicates).
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Seeds []int64 `json:"seeds,omitempty"`

	// horizon overrides the workload's simulated duration, in microseconds.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Horizon *int64 `json:"horizon,omitempty"`

	// numRequests overrides the workload's request count.
	// +kubebuilder:validation:Minimum=1
	// +optional
	NumRequests *int64 `json:"numRequests,omitempty"`

	// budget bounds the number of Evaluations and failures.
	// +required
	Budget StudyBudget `json:"budget"`

	// parallelism is the number of the study's Evaluations that may be unfinished at once.
	// The operator's global and per-namespace caps apply on top.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=4
	// +optional
	Parallelism int32 `json:"parallelism,omitempty"`

	// execution is copied into every child Evaluation. Absent, children run in the manager's
	// in-process worker pool; when set, its executor defaults to job as in an Evaluation.
	// +kubebuilder:default={executor: inProcess}
	// +optional
	Execution *ExecutionSpec `json:"execution,omitempty"`

	// promotion writes the winner as a PolicyBundle and as llm-d configuration.
	// +optional
	Promotion *PromotionSpec `json:"promotion,omitempty"`
}

// Condition types of a PolicyStudy.
const (
	// StudyConditionProgressing is True while the study creates or waits for Evaluations.
	StudyConditionProgressing = "Progressing"
	// StudyConditionCompleted is True when the search ended normally (budget spent, grid
	// exhausted, or the search converged).
	StudyConditionCompleted = "Completed"
	// StudyConditionFailed is True when the study cannot go on (invalid search space, too
	// many failed Evaluations).
	StudyConditionFailed = "Failed"
	// StudyConditionPromoted is True when the current winner was written to the promotion
	// targets.
	StudyConditionPromoted = "Promoted"
)

// Condition reasons of a PolicyStudy.
const (
	// StudyReasonRunning: Evaluations are running or being created.
	StudyReasonRunning = "Running"
	// StudyReasonLeaderboardOnly: the study creates no Evaluations (maxEvaluations 0) and
	// ranks those other clients create with its label.
	StudyReasonLeaderboardOnly = "LeaderboardOnly"
	// StudyReasonWaitingForInputs: the base bundle, cluster or workload is missing or not Ready.
	StudyReasonWaitingForInputs = "WaitingForInputs"
	// StudyReasonBudgetExhausted: maxEvaluations Evaluations were created and have finished.
	StudyReasonBudgetExhausted = "BudgetExhausted"
	// StudyReasonSearchSpaceExhausted: the grid has no more candidates.
	StudyReasonSearchSpaceExhausted = "SearchSpaceExhausted"
	// StudyReasonConverged: the algorithm ended the search (cmaes: its last run converged).
	StudyReasonConverged = "Converged"
	// StudyReasonTooManyFailures: maxFailures Evaluations failed.
	StudyReasonTooManyFailures = "TooManyFailures"
	// StudyReasonInvalidSearchSpace: a parameter path or value does not fit the base bundle.
	StudyReasonInvalidSearchSpace = "InvalidSearchSpace"
	// StudyReasonSpecChanged: the search-defining part of the spec differs from the one the
	// study started with.
	StudyReasonSpecChanged = "SpecChanged"
	// StudyReasonPromoted: the winner was written.
	StudyReasonPromoted = "Promoted"
	// StudyReasonPromotionFailed: the winner could not be written or exported.
	StudyReasonPromotionFailed = "PromotionFailed"
	// StudyReasonConflict: a promotion target exists and is not owned by the study.
	StudyReasonConflict = "Conflict"
	// StudyReasonNoWinner: promotion was asked for but no Evaluation succeeded yet.
	StudyReasonNoWinner = "NoWinner"
)

// ParameterValue is the value of one search parameter.
type ParameterValue struct {
	// path is the parameter's path.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +required
	Path string `json:"path"`
	// value is the value as written into the bundle (numbers in shortest decimal form).
	// +kubebuilder:validation:MaxLength=128
	// +required
	Value string `json:"value"`
}

// StudyCandidate is one evaluated candidate of a study.
type StudyCandidate struct {
	// evaluation is the name of the candidate's Evaluation.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Evaluation string `json:"evaluation"`

	// policyBundle is the candidate's PolicyBundle (empty for an Evaluation created outside
	// the study with an inline policy).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PolicyBundle string `json:"policyBundle,omitempty"`

	// generation is the search generation; absent for Evaluations created outside the study.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Generation *int32 `json:"generation,omitempty"`

	// fitnessScore is the Evaluation's weighted fitness score (higher is better).
	// +optional
	FitnessScore *float64 `json:"fitnessScore,omitempty"`

	// fitness is the normalised value of each objective (1 is best).
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Fitness []NamedValue `json:"fitness,omitempty"`

	// parameters are the candidate's values of the search parameters.
	// +listType=map
	// +listMapKey=path
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Parameters []ParameterValue `json:"parameters,omitempty"`
}

// StudyCounters count a study's Evaluations.
type StudyCounters struct {
	// created is the number of Evaluations the study created.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Created int32 `json:"created,omitempty"`
	// running is the number of the study's Evaluations that have not finished.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Running int32 `json:"running,omitempty"`
	// succeeded is the number of the study's Evaluations that succeeded.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// failed is the number of the study's Evaluations that failed.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// external is the number of finished Evaluations with the study label that other clients
	// created; they join the leaderboard but not the search.
	// +kubebuilder:validation:Minimum=0
	// +optional
	External int32 `json:"external,omitempty"`
}

// GenerationSummary summarises one generation of a search.
type GenerationSummary struct {
	// generation is the generation number.
	// +kubebuilder:validation:Minimum=0
	// +required
	Generation int32 `json:"generation"`
	// evaluated is the number of its Evaluations that succeeded.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Evaluated int32 `json:"evaluated,omitempty"`
	// failed is the number of its Evaluations that failed.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// bestScore is the best fitness score of the generation.
	// +optional
	BestScore *float64 `json:"bestScore,omitempty"`
	// meanScore is the mean fitness score of the generation.
	// +optional
	MeanScore *float64 `json:"meanScore,omitempty"`
	// bestSoFar is the best fitness score of this and every earlier generation.
	// +optional
	BestSoFar *float64 `json:"bestSoFar,omitempty"`
}

// PromotionStatus records the last promotion.
type PromotionStatus struct {
	// evaluation is the Evaluation of the promoted candidate.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Evaluation string `json:"evaluation,omitempty"`
	// policyBundle is the PolicyBundle the winner was written to.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PolicyBundle string `json:"policyBundle,omitempty"`
	// configMap is the ConfigMap the llm-d export was written to.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ConfigMap string `json:"configMap,omitempty"`
	// request is the value of the promote annotation the promotion answered (empty for a
	// promotion on completion).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Request string `json:"request,omitempty"`
	// time is when the promotion was written.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
	// inputHash identifies the inputs of the last export: the winner's resolved input (its
	// policy with the ConfigMaps it references, the SimulatedCluster, the WorkloadSpec), the
	// cluster's topology and the target. The winner is exported again when they give another
	// hash; the same hash writes nothing.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	InputHash string `json:"inputHash,omitempty"`
	// configMaps are the ConfigMaps the last export read; a change to one of them exports the
	// winner again.
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	ConfigMaps []string `json:"configMaps,omitempty"`
}

// PolicyStudyStatus is the observed state of a PolicyStudy. Nothing in it grows with the number
// of Evaluations: counters, one best candidate, a front of at most 10 and the last 20
// generations.
type PolicyStudyStatus struct {
	// conditions: Progressing, Completed, Failed, Promoted.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// searchHash is the hash of the search-defining part of the spec when the study started;
	// a study whose spec no longer matches it stops with reason SpecChanged.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	SearchHash string `json:"searchHash,omitempty"`

	// generation is the number of generations proposed so far.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Generation int32 `json:"generation,omitempty"`

	// evaluations counts the study's Evaluations.
	// +optional
	Evaluations StudyCounters `json:"evaluations,omitzero"`

	// best is the candidate with the highest fitness score.
	// +optional
	Best *StudyCandidate `json:"best,omitempty"`

	// paretoFront are the non-dominated candidates over the objectives, best score first, at
	// most 10.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	// +optional
	ParetoFront []StudyCandidate `json:"paretoFront,omitempty"`

	// paretoFrontSize is the size of the whole front, of which paretoFront lists the top 10.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ParetoFrontSize int32 `json:"paretoFrontSize,omitempty"`

	// convergence summarises the last 20 generations, oldest first.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	// +optional
	Convergence []GenerationSummary `json:"convergence,omitempty"`

	// promotion records the last promotion.
	// +optional
	Promotion *PromotionStatus `json:"promotion,omitempty"`
}

// PolicyStudy searches PolicyBundles (grid, random, NSGA-II or an evolution strategy) by
// creating Evaluations, and reports a bounded leaderboard and Pareto front.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pstudy;study,categories=blis
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 48",message="a PolicyStudy name is at most 48 characters (it prefixes its children's names)"
// +kubebuilder:printcolumn:name="Algorithm",type=string,JSONPath=`.spec.algorithm.name`
// +kubebuilder:printcolumn:name="Created",type=integer,JSONPath=`.status.evaluations.created`
// +kubebuilder:printcolumn:name="Succeeded",type=integer,JSONPath=`.status.evaluations.succeeded`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.evaluations.failed`
// +kubebuilder:printcolumn:name="Best",type=number,JSONPath=`.status.best.fitnessScore`
// +kubebuilder:printcolumn:name="Completed",type=string,JSONPath=`.status.conditions[?(@.type=="Completed")].status`
// +kubebuilder:printcolumn:name="Winner",type=string,JSONPath=`.status.best.evaluation`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PolicyStudy struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the search.
	// +required
	Spec PolicyStudySpec `json:"spec"`

	// status is the search's progress and results.
	// +optional
	Status PolicyStudyStatus `json:"status,omitempty"`
}

// PolicyStudyList is a list of PolicyStudy.
//
// +kubebuilder:object:root=true
type PolicyStudyList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the PolicyStudies.
	Items []PolicyStudy `json:"items"`
}

func init() {
	registerKnownTypes(&PolicyStudy{}, &PolicyStudyList{})
}
