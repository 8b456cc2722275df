// Package policy is the simulator's pluggable control plane: admission → priority → routing
// at arrival (each optionally delayed by a decision latency), and the instance scheduler and
// preemption orderings inside every replica.
//
// Policies come in three representations that can be mixed per stage in one Bundle:
//
//   - templates with documented parameters (always-admit, token-bucket, ..., weighted-scoring
//     over llm-d's scorers computed with llm-d's formulas, so that an evolved weight means the
//     same thing in an exported EndpointPickerConfig);
//   - decision trees over the documented observables;
//   - CEL expressions over the same observables, compiled once per run, cost-checked before
//     the run and free of non-deterministic functions.
//
// Build turns a Bundle into a Pipeline of fresh policy instances for one run. The simulator
// talks to the Pipeline with plain values (RequestView, InstanceSnapshot, Ticket, SchedKey);
// the package imports nothing from the simulator. Everything is deterministic: router
// randomness comes from the caller's stream, maps are only used for lookups, and the hot paths
// of template routing do not allocate.
//
// Calls the simulator makes, per request:
//
//	p.Arrive(&v, t)                                  // cluster arrival
//	d := p.Admit(&v, snaps, t+p.AdmissionLatency())  // Delay: retry after d.Delay
//	p.Prioritize(&v, snaps, t')                      // sets v.Priority
//	rd := p.Route(&v, snaps, t'+p.RoutingLatency())  // keep rd.Ticket with the request
//	p.FirstToken(&ticket)                            // streaming: first output token
//	p.Finished(&ticket, t'')                         // completed, timed out or dropped
//
// and inside instances p.Scheduler().Before orders the wait queue and p.Preemption().Victim
// picks the request to preempt. docs/policies.md describes every template, scorer, observable
// and the bundle format.
package policy
