package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

// policyFlags are the control-plane flags of `blis run`, named as in upstream BLIS.
type policyFlags struct {
	policyConfig                                     string
	admission, priority, routing, scorers, scheduler string
	preemption                                       string
	admissionLatency, routingLatency                 int64
	bucketCapacity, bucketRefill                     float64
	// snapshotRefresh and cacheSignalDelay are the router's signal staleness (µs).
	snapshotRefresh, cacheSignalDelay int64
}

// addPolicyFlags registers the control-plane flags on fl.
func addPolicyFlags(fl *pflag.FlagSet, f *policyFlags) {
	fl.StringVar(&f.policyConfig, "policy-config", "", "policy bundle YAML (BLIS's policy config plus templates, decision trees, CEL and observability); the flags below override it")
	fl.StringVar(&f.admission, "admission-policy", "always-admit", "admission policy: "+strings.Join(policy.AdmissionTemplates, ", ")+" (cel and decision-tree through --policy-config)")
	fl.StringVar(&f.priority, "priority-policy", "constant", "priority policy: "+strings.Join(policy.PriorityTemplates, ", "))
	fl.StringVar(&f.routing, "routing-policy", "round-robin", "routing policy: "+strings.Join(policy.RoutingTemplates, ", "))
	fl.StringVar(&f.scorers, "routing-scorers", "", `scorers of weighted routing as "name:weight,..." (llm-d scorer types or BLIS names, e.g. "prefix-cache-scorer:3,queue-scorer:2")`)
	fl.StringVar(&f.scheduler, "scheduler", "fcfs", "instance scheduler (wait-queue order): "+strings.Join(policy.SchedulerNames(), ", "))
	fl.StringVar(&f.preemption, "preemption-policy", "fcfs", "preemption victim: fcfs (the request that joined the batch last) or priority (the lowest priority score; see --priority-policy)")
	fl.Int64Var(&f.admissionLatency, "admission-latency", 0, "admission decision latency in microseconds")
	fl.Int64Var(&f.routingLatency, "routing-latency", 0, "routing decision latency in microseconds")
	fl.Float64Var(&f.bucketCapacity, "token-bucket-capacity", 10000, "token-bucket admission: bucket capacity in tokens")
	fl.Float64Var(&f.bucketRefill, "token-bucket-refill-rate", 1000, "token-bucket admission: refill rate in tokens per second")
	fl.Int64Var(&f.snapshotRefresh, "snapshot-refresh-interval", 0, "refresh interval of the router's instance snapshots in microseconds: queue depth, batch size and KV utilization not set by the policy config's observability become periodic (0 = always current)")
	fl.Int64Var(&f.cacheSignalDelay, "cache-signal-delay", 0, "lag in microseconds of the precise prefix scorer's view of the instances' caches (their KV events; 0 = none)")
}

// policyBundle builds the run's policy bundle from --policy-config and the flags that were
// given, or returns nil when none was (BLIS's defaults through the simulator's fast path; the
// decision latencies then come from the cluster settings alone). The staleness flags alone give
// the default bundle, since only the pipeline's router models stale signals.
func policyBundle(fl *pflag.FlagSet, f *policyFlags) (*policy.Bundle, error) {
	pf := policy.Flags{PolicyConfig: f.policyConfig}
	given := f.policyConfig != ""
	str := func(name string, v *string) *string {
		if !fl.Changed(name) {
			return nil
		}
		given = true
		return v
	}
	pf.AdmissionPolicy = str("admission-policy", &f.admission)
	pf.PriorityPolicy = str("priority-policy", &f.priority)
	pf.RoutingPolicy = str("routing-policy", &f.routing)
	pf.RoutingScorers = str("routing-scorers", &f.scorers)
	pf.Scheduler = str("scheduler", &f.scheduler)
	pf.PreemptionPolicy = str("preemption-policy", &f.preemption)
	if fl.Changed("token-bucket-capacity") {
		pf.TokenBucketCapacity, given = &f.bucketCapacity, true
	}
	if fl.Changed("token-bucket-refill-rate") {
		pf.TokenBucketRefillRate, given = &f.bucketRefill, true
	}
	staleness := fl.Changed("snapshot-refresh-interval") || fl.Changed("cache-signal-delay")
	if f.snapshotRefresh < 0 || f.cacheSignalDelay < 0 {
		return nil, fmt.Errorf("--snapshot-refresh-interval and --cache-signal-delay must be >= 0, got %d and %d", f.snapshotRefresh, f.cacheSignalDelay)
	}
	if !given && !staleness {
		return nil, nil
	}
	if fl.Changed("admission-latency") {
		pf.AdmissionLatency = &f.admissionLatency
	}
	if fl.Changed("routing-latency") {
		pf.RoutingLatency = &f.routingLatency
	}
	b := &policy.Bundle{} // the defaults, as the fast path runs them
	if given {
		var err error
		if b, err = policy.FromFlags(pf); err != nil {
			return nil, err
		}
	}
	if staleness {
		var obs policy.ObservabilityConfig
		if b.Observability != nil {
			obs = *b.Observability
		}
		if fl.Changed("snapshot-refresh-interval") {
			obs.SnapshotRefreshUs = f.snapshotRefresh
		}
		if fl.Changed("cache-signal-delay") {
			obs.CacheSignalDelayUs = f.cacheSignalDelay
		}
		b.Observability = &obs
	}
	return b, nil
}
