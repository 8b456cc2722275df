package policy

import (
	"fmt"
	"math"
	"strings"
)

// TreeNode is a node of a decision-tree policy (seed 000 §5, type 3). An inner node has If,
// Then and Else; a leaf has the outcome fields of its policy kind:
//
//   - admission: Action (admit | reject | delay), DelayUs for delay, optional Reason
//   - priority: Score
//   - routing: Score, the instance's score (the tree is evaluated once per instance)
type TreeNode struct {
	If   *Condition `yaml:"if,omitempty" json:"if,omitempty"`
	Then *TreeNode  `yaml:"then,omitempty" json:"then,omitempty"`
	Else *TreeNode  `yaml:"else,omitempty" json:"else,omitempty"`

	Action  string   `yaml:"action,omitempty" json:"action,omitempty"`
	DelayUs int64    `yaml:"delay_us,omitempty" json:"delay_us,omitempty"`
	Reason  string   `yaml:"reason,omitempty" json:"reason,omitempty"`
	Score   *float64 `yaml:"score,omitempty" json:"score,omitempty"`
}

// Condition compares one observable (the names CEL uses) with a constant. Numeric observables
// take <, <=, >, >=, ==, !=; string observables take == and !=.
type Condition struct {
	Observable string `yaml:"observable" json:"observable"`
	Op         string `yaml:"op" json:"op"`
	Value      any    `yaml:"value" json:"value"`
}

type treeOp int8

const (
	opLT treeOp = iota
	opLE
	opGT
	opGE
	opEQ
	opNE
)

var treeOps = map[string]treeOp{"<": opLT, "<=": opLE, ">": opGT, ">=": opGE, "==": opEQ, "!=": opNE}

// cnode is a compiled node; children are indices, leaves have obs = -1.
type cnode struct {
	obs       int
	op        treeOp
	num       float64
	str       string
	then, els int32
	action    AdmissionAction
	delay     int64
	reason    string
	score     float64
}

// compiledTree is a flat, allocation-free evaluator of a decision tree.
type compiledTree struct{ nodes []cnode }

func compileTree(k Kind, root *TreeNode) (*compiledTree, error) {
	if root == nil {
		return nil, fmt.Errorf("empty tree")
	}
	t := &compiledTree{}
	if _, err := t.add(k, root, "tree"); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *compiledTree) add(k Kind, n *TreeNode, path string) (int32, error) {
	if n == nil {
		return 0, fmt.Errorf("%s: missing node", path)
	}
	idx := int32(len(t.nodes))
	t.nodes = append(t.nodes, cnode{obs: -1})
	if n.If == nil {
		if n.Then != nil || n.Else != nil {
			return 0, fmt.Errorf("%s: then/else without if", path)
		}
		leaf, err := compileLeaf(k, n, path)
		if err != nil {
			return 0, err
		}
		t.nodes[idx] = leaf
		return idx, nil
	}
	if n.Action != "" || n.Score != nil || n.DelayUs != 0 || n.Reason != "" {
		return 0, fmt.Errorf("%s: a node has either if/then/else or an outcome, not both", path)
	}
	c, err := compileCondition(k, n.If, path+".if")
	if err != nil {
		return 0, err
	}
	th, err := t.add(k, n.Then, path+".then")
	if err != nil {
		return 0, err
	}
	el, err := t.add(k, n.Else, path+".else")
	if err != nil {
		return 0, err
	}
	c.then, c.els = th, el
	t.nodes[idx] = c
	return idx, nil
}

func compileCondition(k Kind, c *Condition, path string) (cnode, error) {
	i, ok := observableIndex[c.Observable]
	if !ok || observables[i].scope&kindScope(k) == 0 {
		return cnode{}, fmt.Errorf("%s: observable %q is not visible to %s policies (visible: %s)",
			path, c.Observable, k, strings.Join(Observables(k), ", "))
	}
	op, ok := treeOps[c.Op]
	if !ok {
		return cnode{}, fmt.Errorf("%s: unknown op %q (use <, <=, >, >=, ==, !=)", path, c.Op)
	}
	n := cnode{obs: i, op: op}
	if observables[i].typ == obsString {
		s, ok := c.Value.(string)
		if !ok {
			return cnode{}, fmt.Errorf("%s: %s is a string; value must be a string, got %T", path, c.Observable, c.Value)
		}
		if op != opEQ && op != opNE {
			return cnode{}, fmt.Errorf("%s: %s is a string; only == and != apply", path, c.Observable)
		}
		n.str = s
		return n, nil
	}
	f, ok := toFloat(c.Value)
	if !ok || math.IsNaN(f) {
		return cnode{}, fmt.Errorf("%s: %s is numeric; value must be a number, got %T %v", path, c.Observable, c.Value, c.Value)
	}
	n.num = f
	return n, nil
}

func compileLeaf(k Kind, n *TreeNode, path string) (cnode, error) {
	leaf := cnode{obs: -1, reason: n.Reason}
	switch k {
	case KindAdmission:
		if n.Score != nil {
			return leaf, fmt.Errorf("%s: admission leaves take action, not score", path)
		}
		switch AdmissionAction(n.Action) {
		case Admit, Reject:
		case Delay:
			if n.DelayUs <= 0 {
				return leaf, fmt.Errorf("%s: delay needs delay_us > 0", path)
			}
		default:
			return leaf, fmt.Errorf("%s: action must be admit, reject or delay, got %q", path, n.Action)
		}
		leaf.action, leaf.delay = AdmissionAction(n.Action), n.DelayUs
		if leaf.reason == "" {
			leaf.reason = "decision-tree"
		}
	default:
		if n.Action != "" || n.DelayUs != 0 {
			return leaf, fmt.Errorf("%s: %s leaves take score, not action", path, k)
		}
		if n.Score == nil || math.IsNaN(*n.Score) || math.IsInf(*n.Score, 0) {
			return leaf, fmt.Errorf("%s: leaf needs a finite score", path)
		}
		leaf.score = *n.Score
	}
	return leaf, nil
}

// eval walks the tree for e and returns the leaf reached.
func (t *compiledTree) eval(e *evalEnv) *cnode {
	n := &t.nodes[0]
	for n.obs >= 0 {
		o := &observables[n.obs]
		var hit bool
		if o.typ == obsString {
			hit = (o.str(e) == n.str) == (n.op == opEQ)
		} else {
			v := o.num(e)
			switch n.op {
			case opLT:
				hit = v < n.num
			case opLE:
				hit = v <= n.num
			case opGT:
				hit = v > n.num
			case opGE:
				hit = v >= n.num
			case opEQ:
				hit = v == n.num
			case opNE:
				hit = v != n.num
			}
		}
		if hit {
			n = &t.nodes[n.then]
		} else {
			n = &t.nodes[n.els]
		}
	}
	return n
}

type treeAdmission struct {
	t   *compiledTree
	env evalEnv
}

func (a *treeAdmission) Decide(r *RequestView, st *RouterState, snaps []InstanceSnapshot, now int64) AdmissionDecision {
	a.env = evalEnv{req: r, st: st, snaps: snaps, now: now, inst: -1}
	a.env.agg.compute(snaps)
	l := a.t.eval(&a.env)
	return AdmissionDecision{Action: l.action, Delay: l.delay, Reason: l.reason}
}

type treePriority struct {
	t   *compiledTree
	env evalEnv
}

func (p *treePriority) Compute(r *RequestView, st *RouterState, snaps []InstanceSnapshot, now int64) PriorityDecision {
	p.env = evalEnv{req: r, st: st, snaps: snaps, now: now, inst: -1}
	p.env.agg.compute(snaps)
	return PriorityDecision{Score: p.t.eval(&p.env).score}
}

type treeScorer struct {
	t     *compiledTree
	env   evalEnv
	cache *scoreCache
}

func (s *treeScorer) score(sc *scoreCtx, out []float64) {
	s.cache.begin(sc)
	s.env = evalEnv{req: sc.req, st: sc.st, snaps: sc.snaps, now: sc.now, scores: s.cache}
	s.env.agg.compute(sc.snaps)
	for i := range sc.snaps {
		s.env.inst = i
		out[i] = s.t.eval(&s.env).score
	}
}

// usesPrefix reports whether a tree reads the router's prefix index.
func (t *compiledTree) usesPrefix() bool {
	for _, n := range t.nodes {
		if n.obs >= 0 && needsPrefixIndex(observables[n.obs].name) {
			return true
		}
	}
	return false
}
