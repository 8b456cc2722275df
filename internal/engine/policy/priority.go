package policy

import "fmt"

// DefaultTTFTTarget is the deadline-aware template's target for classes without one (µs).
const DefaultTTFTTarget int64 = 1_000_000

type constantPriority struct{ score float64 }

func (p constantPriority) Compute(*RequestView, *RouterState, []InstanceSnapshot, int64) PriorityDecision {
	return PriorityDecision{Score: p.score}
}

// sloPriority scores a request by its SLO class (sign = -1 gives inverted-slo).
type sloPriority struct {
	slo  *sloTable
	sign float64
}

func (p sloPriority) Compute(r *RequestView, _ *RouterState, _ []InstanceSnapshot, _ int64) PriorityDecision {
	return PriorityDecision{Score: p.sign * p.slo.priority(r)}
}

// tenantPriority scores a request by its tenant.
type tenantPriority struct {
	byTenant []float64
	names    map[string]float64
	def      float64
}

func (p *tenantPriority) Compute(r *RequestView, _ *RouterState, _ []InstanceSnapshot, _ int64) PriorityDecision {
	if r.Tenant >= 0 && int(r.Tenant) < len(p.byTenant) {
		return PriorityDecision{Score: p.byTenant[r.Tenant]}
	}
	if v, ok := p.names[r.TenantName]; ok {
		return PriorityDecision{Score: v}
	}
	return PriorityDecision{Score: p.def}
}

// deadlineAware gives earlier deadlines (arrival + the class's TTFT target) higher scores:
// score = −deadline in seconds, so priority order is earliest-deadline-first.
type deadlineAware struct {
	byClass []int64
	names   map[string]int64
	def     int64
}

func (p *deadlineAware) Compute(r *RequestView, _ *RouterState, _ []InstanceSnapshot, _ int64) PriorityDecision {
	target := p.def
	if r.Class >= 0 && int(r.Class) < len(p.byClass) {
		target = p.byClass[r.Class]
	} else if v, ok := p.names[r.ClassName]; ok {
		target = v
	}
	d := r.Arrival + target
	return PriorityDecision{Score: -float64(d) / 1e6, Deadline: d}
}

func buildPriorityTemplate(name string, r *paramReader, c *buildCtx) (PriorityPolicy, error) {
	switch name {
	case "constant":
		return constantPriority{score: r.float("score", 0)}, nil
	case "slo-based", "inverted-slo":
		over := r.floatMap("class_scores", nil)
		slo := c.slo
		if over != nil {
			m := make(map[string]int, len(c.sloPriorities)+len(over))
			for k, v := range c.sloPriorities {
				m[k] = v
			}
			slo = newSLOTable(c.classNames, m)
			for k, v := range over {
				slo.names[k] = v
			}
			if v, ok := over["standard"]; ok {
				slo.def = v
			}
			for i, n := range c.classNames {
				slo.byClass[i] = slo.lookupName(n)
			}
		}
		sign := 1.0
		if name == "inverted-slo" {
			sign = -1
		}
		return sloPriority{slo: slo, sign: sign}, nil
	case "tenant-priority":
		p := &tenantPriority{names: r.floatMap("tenant_scores", map[string]float64{}), def: r.float("default_score", 0)}
		p.byTenant = make([]float64, len(c.tenantNames))
		for i, n := range c.tenantNames {
			v, ok := p.names[n]
			if !ok {
				v = p.def
			}
			p.byTenant[i] = v
		}
		return p, nil
	case "deadline-aware":
		def := r.int("default_target_us", DefaultTTFTTarget)
		targets := r.floatMap("targets_us", nil)
		p := &deadlineAware{names: make(map[string]int64), def: def}
		if def <= 0 {
			return nil, fmt.Errorf("parameter \"default_target_us\": must be > 0, got %d", def)
		}
		for k, v := range c.sloTargets {
			p.names[k] = v
		}
		for _, k := range sortedKeys(targets) {
			v := targets[k]
			if v <= 0 {
				return nil, fmt.Errorf("parameter \"targets_us\": class %q: must be > 0, got %v", k, v)
			}
			p.names[k] = int64(v)
		}
		p.byClass = make([]int64, len(c.classNames))
		for i, n := range c.classNames {
			v, ok := p.names[n]
			if !ok {
				v = def
			}
			p.byClass[i] = v
		}
		return p, nil
	}
	return nil, errUnknownTemplate
}
