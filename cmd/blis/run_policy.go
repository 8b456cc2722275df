package main

import (
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
}

// policyBundle builds the run's policy bundle from --policy-config and the flags that were
// given, or returns nil when none was (BLIS's defaults through the simulator's fast path; the
// decision latencies then come from the cluster settings alone).
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
	if !given {
		return nil, nil
	}
	if fl.Changed("admission-latency") {
		pf.AdmissionLatency = &f.admissionLatency
	}
	if fl.Changed("routing-latency") {
		pf.RoutingLatency = &f.routingLatency
	}
	return policy.FromFlags(pf)
}
