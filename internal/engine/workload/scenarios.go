package workload

import (
	"fmt"
	"strings"
)

// scenarios are the built-in workloads, written as ordinary spec files so that they document
// the format and go through the same validation as user files.
var scenarios = []struct{ name, doc, yaml string }{
	{"bursty-traffic", "Poisson baseline of 20 req/s with 10x spikes for 5 s every 60 s (admission resilience)", `
version: "2"
seed: 42
category: language
aggregate_rate: 20
horizon: 600000000
clients:
  - id: bursty
    slo_class: standard
    rate_fraction: 1
    arrival: {process: bursty, spike_interval_us: 60000000, spike_duration_us: 5000000, spike_multiplier: 10}
    input_distribution: {type: gaussian, params: {mean: 512, std_dev: 128, min: 32, max: 2048}}
    output_distribution: {type: exponential, params: {mean: 128, min: 1, max: 2048}}
`},
	{"diurnal-cycle", "24-hour sinusoidal rate averaging 5 req/s, 10x peak-to-trough, peak at 14:00 (autoscaler response)", `
version: "2"
seed: 42
category: language
aggregate_rate: 5
horizon: 86400000000
clients:
  - id: daily-users
    slo_class: standard
    rate_fraction: 1
    arrival: {process: diurnal, period_us: 86400000000, peak_to_trough_ratio: 10, peak_us: 50400000000}
    input_distribution: {type: gaussian, params: {mean: 512, std_dev: 128, min: 32, max: 2048}}
    output_distribution: {type: exponential, params: {mean: 128, min: 1, max: 2048}}
`},
	{"unfair-tenants", "90% low-priority bulk tenant with long prompts, 10% high-priority realtime tenant (fairness, priority inversion)", `
version: "2"
seed: 42
category: language
aggregate_rate: 30
horizon: 300000000
clients:
  - id: low-priority-bulk
    tenant_id: bulk
    slo_class: batch
    rate_fraction: 0.9
    arrival: {process: poisson}
    input_distribution: {type: gaussian, params: {mean: 2048, std_dev: 512, min: 256, max: 8192}}
    output_distribution: {type: exponential, params: {mean: 256, min: 1, max: 4096}}
  - id: high-priority-realtime
    tenant_id: realtime
    slo_class: critical
    rate_fraction: 0.1
    arrival: {process: poisson}
    input_distribution: {type: gaussian, params: {mean: 256, std_dev: 64, min: 16, max: 1024}}
    output_distribution: {type: exponential, params: {mean: 64, min: 1, max: 1024}}
`},
	{"prefix-heavy", "80% of requests share one of four 1024-token system prompts, 20% unique (cache-aware routing)", `
version: "2"
seed: 42
category: language
aggregate_rate: 40
horizon: 300000000
clients:
  - id: app-a
    slo_class: standard
    rate_fraction: 0.2
    prefix_group: system-prompt-a
    prefix_length: 1024
    arrival: {process: poisson}
    input_distribution: {type: gaussian, params: {mean: 128, std_dev: 32, min: 16, max: 512}}
    output_distribution: {type: exponential, params: {mean: 128, min: 1, max: 2048}}
  - id: app-b
    slo_class: standard
    rate_fraction: 0.2
    prefix_group: system-prompt-b
    prefix_length: 1024
    arrival: {process: poisson}
    input_distribution: {type: gaussian, params: {mean: 128, std_dev: 32, min: 16, max: 512}}
    output_distribution: {type: exponential, params: {mean: 128, min: 1, max: 2048}}
  - id: app-c
    slo_class: standard
    rate_fraction: 0.2
    prefix_group: system-prompt-c
    prefix_length: 1024
    arrival: {process: poisson}
    input_distribution: {type: gaussian, params: {mean: 128, std_dev: 32, min: 16, max: 512}}
    output_distribution: {type: exponential, params: {mean: 128, min: 1, max: 2048}}
  - id: app-d
    slo_class: standard
    rate_fraction: 0.2
    prefix_group: system-prompt-d
    prefix_length: 1024
    arrival: {process: poisson}
    input_distribution: {type: gaussian, params: {mean: 128, std_dev: 32, min: 16, max: 512}}
    output_distribution: {type: exponential, params: {mean: 128, min: 1, max: 2048}}
  - id: unique
    slo_class: standard
    rate_fraction: 0.2
    arrival: {process: poisson}
    input_distribution: {type: gaussian, params: {mean: 1024, std_dev: 256, min: 64, max: 4096}}
    output_distribution: {type: exponential, params: {mean: 128, min: 1, max: 2048}}
`},
	{"mixed-slo", "equal thirds of critical (realtime), standard (interactive) and batch traffic (joint priority scheduling)", `
version: "2"
seed: 42
category: language
aggregate_rate: 30
horizon: 300000000
clients:
  - id: realtime
    slo_class: critical
    rate_fraction: 1
    arrival: {process: poisson}
    input_distribution: {type: gaussian, params: {mean: 256, std_dev: 64, min: 16, max: 1024}}
    output_distribution: {type: exponential, params: {mean: 64, min: 1, max: 1024}}
  - id: interactive
    slo_class: standard
    rate_fraction: 1
    arrival: {process: poisson}
    input_distribution: {type: gaussian, params: {mean: 512, std_dev: 128, min: 32, max: 2048}}
    output_distribution: {type: exponential, params: {mean: 256, min: 1, max: 2048}}
  - id: batch
    slo_class: batch
    rate_fraction: 1
    arrival: {process: poisson}
    input_distribution: {type: gaussian, params: {mean: 2048, std_dev: 512, min: 128, max: 8192}}
    output_distribution: {type: exponential, params: {mean: 512, min: 1, max: 4096}}
`},
	{"agentic-react", "ReAct agents: reason → web_search → observe, up to 5 iterations with accumulated context, then a final answer", `
version: "2"
seed: 42
category: agentic
aggregate_rate: 2
horizon: 60000000
clients:
  - id: react-agent
    tenant_id: team-search
    slo_class: standard
    rate_fraction: 1
    arrival: {process: poisson}
    agentic:
      workflow: react-search
      loop:
        over: [reason, act, observe]
        max_iterations: 5
      steps:
        - id: reason
          type: llm_call
          input_distribution: {type: gaussian, params: {mean: 256, std_dev: 50, min: 32, max: 1024}}
          output_distribution: {type: exponential, params: {mean: 128}}
        - id: act
          type: tool_call
          tool: web_search
          depends_on: [reason]
        - id: observe
          type: llm_call
          depends_on: [act]
          context_growth: accumulate
          input_distribution: {type: gaussian, params: {mean: 200, std_dev: 50, min: 32, max: 2048}}
          output_distribution: {type: exponential, params: {mean: 64}}
        - id: final-answer
          type: llm_call
          depends_on: [observe]
          input_distribution: {type: gaussian, params: {mean: 512, std_dev: 100, min: 64, max: 2048}}
          output_distribution: {type: exponential, params: {mean: 256}}
      tools:
        web_search:
          latency: {type: exponential, params: {mean: 50000}}
          output_tokens: {type: gaussian, params: {mean: 200, std_dev: 50, min: 10, max: 1000}}
`},
	{"agentic-mcts", "MCTS / tree of thought: decompose, 4 parallel candidates, evaluate, run tests, refine", `
version: "2"
seed: 42
category: agentic
aggregate_rate: 1
horizon: 60000000
clients:
  - id: mcts-agent
    slo_class: standard
    rate_fraction: 1
    arrival: {process: poisson}
    agentic:
      workflow: mcts-code
      steps:
        - id: decompose
          type: llm_call
          input_distribution: {type: gaussian, params: {mean: 500, std_dev: 100, min: 64, max: 2048}}
          output_distribution: {type: exponential, params: {mean: 200}}
        - id: generate
          type: llm_call
          depends_on: [decompose]
          fan_out: 4
          input_distribution: {type: gaussian, params: {mean: 300, std_dev: 80, min: 32, max: 1024}}
          output_distribution: {type: exponential, params: {mean: 512}}
        - id: evaluate
          type: llm_call
          depends_on: [generate]
          input_distribution: {type: gaussian, params: {mean: 2048, std_dev: 200, min: 256, max: 4096}}
          output_distribution: {type: exponential, params: {mean: 64}}
        - id: verify
          type: tool_call
          tool: code_exec
          depends_on: [evaluate]
        - id: refine
          type: llm_call
          depends_on: [verify]
          input_distribution: {type: gaussian, params: {mean: 1024, std_dev: 150, min: 128, max: 4096}}
          output_distribution: {type: exponential, params: {mean: 256}}
      tools:
        code_exec:
          latency: {type: gaussian, params: {mean: 100000, std_dev: 20000, min: 10000, max: 500000}}
          output_tokens: {type: constant, params: {value: 150}}
`},
	{"agentic-fork-join", "parallel tool calls: plan, then web search ∥ database query ∥ document retrieval, then synthesize", `
version: "2"
seed: 42
category: agentic
aggregate_rate: 2
horizon: 60000000
clients:
  - id: research-agent
    slo_class: standard
    rate_fraction: 1
    arrival: {process: poisson}
    agentic:
      workflow: fork-join-research
      steps:
        - id: plan
          type: llm_call
          input_distribution: {type: gaussian, params: {mean: 300, std_dev: 50, min: 32, max: 1024}}
          output_distribution: {type: exponential, params: {mean: 100}}
        - id: search-web
          type: tool_call
          tool: web_search
          depends_on: [plan]
        - id: query-db
          type: tool_call
          tool: db_query
          depends_on: [plan]
        - id: fetch-docs
          type: tool_call
          tool: doc_retrieval
          depends_on: [plan]
        - id: synthesize
          type: llm_call
          depends_on: [search-web, query-db, fetch-docs]
          input_distribution: {type: gaussian, params: {mean: 1500, std_dev: 200, min: 256, max: 4096}}
          output_distribution: {type: exponential, params: {mean: 512}}
      tools:
        web_search:
          latency: {type: exponential, params: {mean: 80000}}
          output_tokens: {type: gaussian, params: {mean: 300, std_dev: 80, min: 20, max: 1000}}
        db_query:
          latency: {type: gaussian, params: {mean: 20000, std_dev: 5000, min: 1000, max: 100000}}
          output_tokens: {type: constant, params: {value: 100}}
        doc_retrieval:
          latency: {type: exponential, params: {mean: 30000}}
          output_tokens: {type: gaussian, params: {mean: 500, std_dev: 100, min: 50, max: 2000}}
`},
}

// ScenarioNames lists the built-in scenarios in a stable order.
func ScenarioNames() []string {
	names := make([]string, len(scenarios))
	for i, s := range scenarios {
		names[i] = s.name
	}
	return names
}

// ScenarioDescription returns a one-line description of a built-in scenario ("" if unknown).
func ScenarioDescription(name string) string {
	for _, s := range scenarios {
		if s.name == name {
			return s.doc
		}
	}
	return ""
}

// Scenario returns a fresh copy of the named built-in workload spec; callers may adjust it
// (rate, horizon, num_requests) before calling Source.
func Scenario(name string) (*Spec, error) {
	for _, s := range scenarios {
		if s.name == name {
			spec, err := ParseSpec([]byte(s.yaml))
			if err != nil {
				return nil, fmt.Errorf("scenario %s: %w", name, err)
			}
			return spec, nil
		}
	}
	return nil, fmt.Errorf("unknown workload scenario %q; valid: %s", name, strings.Join(ScenarioNames(), ", "))
}

// ScenarioYAML returns the spec text of a built-in scenario, a starting point for custom files.
func ScenarioYAML(name string) (string, error) {
	for _, s := range scenarios {
		if s.name == name {
			return strings.TrimPrefix(s.yaml, "\n"), nil
		}
	}
	return "", fmt.Errorf("unknown workload scenario %q; valid: %s", name, strings.Join(ScenarioNames(), ", "))
}
