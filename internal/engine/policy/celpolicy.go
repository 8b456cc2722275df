package policy

import (
	"fmt"
	"math"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
)

// DefaultCELCostLimit bounds the estimated worst-case cost of one CEL evaluation.
const DefaultCELCostLimit = 10000

// maxCELString bounds the size the cost estimator assumes for string observables; Build rejects
// tenant and class names longer than this so that the static estimate stays a true bound.
const maxCELString = 256

// celActivation resolves the observables of one evaluation straight from the evaluation
// environment: no map is built per evaluation, and only the names the expression references
// are computed. Resolved values are cached: decision-wide signals (request, tenant, global)
// once per decision, instance signals once per instance, so repeated references and the
// per-instance loop of a routing expression do not box the same value again.
type celActivation struct {
	env     *evalEnv
	decGen  uint64 // generation of the current decision
	instGen uint64 // generation of the current (decision, instance)
	stamp   []uint64
	cache   []ref.Val
	seen    []string // names this program resolved, with their observable index
	seenIdx []int
}

// lookup finds an observable by name. A program references few names and passes the same
// strings every time, so a short linear scan beats hashing the name.
func (a *celActivation) lookup(name string) (int, bool) {
	for k, s := range a.seen {
		if s == name {
			return a.seenIdx[k], true
		}
	}
	i, ok := observableIndex[name]
	if ok {
		a.seen = append(a.seen, name)
		a.seenIdx = append(a.seenIdx, i)
	}
	return i, ok
}

// nextDecision invalidates every cached value.
func (a *celActivation) nextDecision() {
	a.decGen = a.instGen + 1
	a.instGen = a.decGen
}

// nextInstance invalidates the cached instance signals.
func (a *celActivation) nextInstance() { a.instGen++ }

func (a *celActivation) ResolveName(name string) (any, bool) {
	i, ok := a.lookup(name)
	if !ok {
		return nil, false
	}
	if a.stamp == nil {
		a.stamp = make([]uint64, len(observables))
		a.cache = make([]ref.Val, len(observables))
	}
	o := &observables[i]
	want := a.decGen
	if o.scope == scopeRouting {
		want = a.instGen // instance signals, and score.* which differ per instance too
	}
	if a.stamp[i] == want && a.cache[i] != nil {
		return a.cache[i], true
	}
	var v ref.Val
	switch o.typ {
	case obsInt:
		v = types.Int(int64(o.num(a.env)))
	case obsDouble:
		v = types.Double(o.num(a.env))
	case obsString:
		v = types.String(o.str(a.env))
	case obsUint:
		v = types.Uint(o.u64(a.env))
	default:
		return nil, false
	}
	a.stamp[i], a.cache[i] = want, v
	return v, true
}

func (a *celActivation) Parent() interpreter.Activation { return nil }

// celEstimator gives the static cost estimator the size bounds of this environment: the only
// values of unknown size are strings (tenant and class names).
type celEstimator struct{}

func (celEstimator) EstimateSize(checker.AstNode) *checker.SizeEstimate {
	return &checker.SizeEstimate{Min: 0, Max: maxCELString}
}

func (celEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// celEnvs caches one CEL environment per policy kind; environments are immutable once built,
// and the lock lets concurrent runs (the operator's in-process executor) share them.
var (
	celEnvMu sync.Mutex
	celEnvs  = map[Kind]*cel.Env{}
)

func celEnv(k Kind) (*cel.Env, error) {
	celEnvMu.Lock()
	defer celEnvMu.Unlock()
	if e, ok := celEnvs[k]; ok {
		return e, nil
	}
	s := kindScope(k)
	opts := []cel.EnvOption{ext.Math(), cel.CrossTypeNumericComparisons(true)}
	for _, o := range observables {
		if o.scope&s == 0 {
			continue
		}
		var t *cel.Type
		switch o.typ {
		case obsInt:
			t = cel.IntType
		case obsDouble:
			t = cel.DoubleType
		case obsString:
			t = cel.StringType
		case obsUint:
			t = cel.UintType
		}
		opts = append(opts, cel.Variable(o.name, t))
	}
	e, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, err
	}
	celEnvs[k] = e
	return e, nil
}

// celProgram is a compiled, cost-checked expression with its reusable activation.
type celProgram struct {
	src  string
	prog cel.Program
	act  celActivation
	out  *cel.Type
	cost checker.CostEstimate
}

// compileCEL compiles expr for policy kind k. Errors carry the line and column in expr.
func compileCEL(k Kind, expr string, costLimit uint64) (*celProgram, error) {
	env, err := celEnv(k)
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("does not compile:\n%s", iss.String())
	}
	out := ast.OutputType()
	switch k {
	case KindAdmission:
		if !out.IsExactType(cel.BoolType) && !out.IsExactType(cel.StringType) {
			return nil, fmt.Errorf("must evaluate to bool (true = admit) or string (admit|reject|delay), got %s", out)
		}
	default:
		if !out.IsExactType(cel.DoubleType) && !out.IsExactType(cel.IntType) {
			return nil, fmt.Errorf("must evaluate to double or int, got %s", out)
		}
	}
	est, err := env.EstimateCost(ast, celEstimator{})
	if err != nil {
		return nil, fmt.Errorf("cost estimation failed: %w", err)
	}
	if est.Max > costLimit {
		return nil, fmt.Errorf("estimated cost %d exceeds the cost limit %d", est.Max, costLimit)
	}
	prog, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, err
	}
	return &celProgram{src: expr, prog: prog, out: out, cost: est}, nil
}

// eval evaluates the program on e.
func (p *celProgram) eval(e *evalEnv) (ref.Val, error) {
	p.act.env = e
	v, _, err := p.prog.Eval(&p.act)
	return v, err
}

// number evaluates a numeric program; errors and NaN become ok = false.
func (p *celProgram) number(e *evalEnv) (float64, bool) {
	v, err := p.eval(e)
	if err != nil {
		return 0, false
	}
	switch x := v.(type) {
	case types.Double:
		if math.IsNaN(float64(x)) {
			return 0, false
		}
		return float64(x), true
	case types.Int:
		return float64(x), true
	}
	return 0, false
}

// celAdmission admits when the expression yields true or "admit".
type celAdmission struct {
	p      *celProgram
	env    evalEnv
	delay  int64
	errors *int64
}

func (a *celAdmission) Decide(r *RequestView, st *RouterState, snaps []InstanceSnapshot, now int64) AdmissionDecision {
	a.env = evalEnv{req: r, st: st, snaps: snaps, now: now, inst: -1}
	a.env.agg.compute(snaps)
	a.p.act.nextDecision()
	v, err := a.p.eval(&a.env)
	if err != nil {
		*a.errors++
		return AdmissionDecision{Action: Reject, Reason: "cel: evaluation error"}
	}
	switch x := v.(type) {
	case types.Bool:
		if x {
			return AdmissionDecision{Action: Admit, Reason: PolicyCEL}
		}
		return AdmissionDecision{Action: Reject, Reason: PolicyCEL}
	case types.String:
		switch x {
		case "admit":
			return AdmissionDecision{Action: Admit, Reason: PolicyCEL}
		case "reject":
			return AdmissionDecision{Action: Reject, Reason: PolicyCEL}
		case "delay":
			if a.delay > 0 {
				return AdmissionDecision{Action: Delay, Delay: a.delay, Reason: PolicyCEL}
			}
		}
	}
	*a.errors++
	return AdmissionDecision{Action: Reject, Reason: "cel: invalid verdict"}
}

// celPriority scores a request with a numeric expression; errors score 0.
type celPriority struct {
	p      *celProgram
	env    evalEnv
	errors *int64
}

func (c *celPriority) Compute(r *RequestView, st *RouterState, snaps []InstanceSnapshot, now int64) PriorityDecision {
	c.env = evalEnv{req: r, st: st, snaps: snaps, now: now, inst: -1}
	c.env.agg.compute(snaps)
	c.p.act.nextDecision()
	v, ok := c.p.number(&c.env)
	if !ok {
		*c.errors++
		return PriorityDecision{}
	}
	return PriorityDecision{Score: v}
}

// celScorer scores each instance with a numeric expression; errors score −Inf so that the
// instance is picked only if every instance failed.
type celScorer struct {
	p      *celProgram
	env    evalEnv
	errors *int64
	cache  *scoreCache
}

func (c *celScorer) score(sc *scoreCtx, out []float64) {
	c.cache.begin(sc)
	c.env = evalEnv{req: sc.req, st: sc.st, snaps: sc.snaps, now: sc.now, scores: c.cache}
	c.env.agg.compute(sc.snaps)
	c.p.act.nextDecision()
	for i := range sc.snaps {
		c.env.inst = i
		c.p.act.nextInstance()
		v, ok := c.p.number(&c.env)
		if !ok {
			*c.errors++
			v = math.Inf(-1)
		}
		out[i] = v
	}
}
