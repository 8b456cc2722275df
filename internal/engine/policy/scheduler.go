package policy

import "fmt"

// schedFCFS names first-come-first-served ordering, both as a scheduler and as a preemption policy.
const schedFCFS = "fcfs"

// SchedKey is what an instance scheduler may observe about a request (seed 001 §D.7: local
// only). The simulator keeps one per queued or running request.
type SchedKey struct {
	// Priority is the router's priority score; higher is more urgent.
	Priority float64
	// Arrival is the cluster arrival time (µs).
	Arrival int64
	// InputTokens and MaxTokens are the prompt length and the output bound.
	InputTokens, MaxTokens int32
	// ID is the request id (unique, increasing with generation order).
	ID uint64
	// RunSeq is the order in which the request last entered the running batch.
	RunSeq uint64
}

// Scheduler orders an instance's wait queue. Before(a, b) reports whether a must be scheduled
// before b; it is a strict weak order with ID as the final tie-break, so every ordering is
// total and deterministic. The simulator keeps its wait queue sorted (or in a heap) by Before
// and forms batches from the front, exactly as vLLM does with its waiting list.
type Scheduler interface {
	Name() string
	Before(a, b *SchedKey) bool
}

// Preemption chooses the victim when a running request cannot get KV blocks.
// Victim(a, b) reports whether a should be preempted before b; the simulator scans its running
// batch and preempts the element that is a victim before every other one.
type Preemption interface {
	Name() string
	Victim(a, b *SchedKey) bool
}

// fifo is the tie-break of every ordering: earlier arrival, then lower ID (seed 001 §E.4).
func fifo(a, b *SchedKey) bool {
	if a.Arrival != b.Arrival {
		return a.Arrival < b.Arrival
	}
	return a.ID < b.ID
}

type fcfsScheduler struct{}

func (fcfsScheduler) Name() string               { return schedFCFS }
func (fcfsScheduler) Before(a, b *SchedKey) bool { return fifo(a, b) }

// priorityFCFS serves higher priority first, then FIFO (sign -1 gives reverse-priority).
type priorityFCFS struct {
	name string
	sign float64
}

func (s priorityFCFS) Name() string { return s.name }
func (s priorityFCFS) Before(a, b *SchedKey) bool {
	if a.Priority != b.Priority {
		return s.sign*a.Priority > s.sign*b.Priority
	}
	return fifo(a, b)
}

// sjf serves the shortest job first, by prompt length (BLIS), output bound, or their sum.
type sjf struct{ by int8 }

func (s sjf) Name() string { return "sjf" }
func (s sjf) size(k *SchedKey) int64 {
	switch s.by {
	case 1:
		return int64(k.MaxTokens)
	case 2:
		return int64(k.InputTokens) + int64(k.MaxTokens)
	}
	return int64(k.InputTokens)
}
func (s sjf) Before(a, b *SchedKey) bool {
	if x, y := s.size(a), s.size(b); x != y {
		return x < y
	}
	return fifo(a, b)
}

// preemptFCFS evicts the request that entered the running batch last (vLLM's default).
type preemptFCFS struct{}

func (preemptFCFS) Name() string { return schedFCFS }
func (preemptFCFS) Victim(a, b *SchedKey) bool {
	if a.RunSeq != b.RunSeq {
		return a.RunSeq > b.RunSeq
	}
	return a.ID > b.ID
}

// preemptPriority evicts the least urgent request; among equals the latest arrival, then the
// highest ID (seed 001 §E.4: LIFO).
type preemptPriority struct{}

func (preemptPriority) Name() string { return "priority" }
func (preemptPriority) Victim(a, b *SchedKey) bool {
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	if a.Arrival != b.Arrival {
		return a.Arrival > b.Arrival
	}
	return a.ID > b.ID
}

// SchedulerNames lists the instance scheduler templates.
func SchedulerNames() []string {
	return []string{schedFCFS, "priority-fcfs", "sjf", "reverse-priority"}
}

// NewScheduler returns the named scheduler ("" is fcfs). params may be nil; sjf takes "by":
// input (default), output or total.
func NewScheduler(name string, params Params) (Scheduler, error) {
	r := newParamReader(params)
	var s Scheduler
	switch name {
	case "", schedFCFS:
		s = fcfsScheduler{}
	case "priority-fcfs":
		s = priorityFCFS{name: "priority-fcfs", sign: 1}
	case "reverse-priority":
		s = priorityFCFS{name: "reverse-priority", sign: -1}
	case "sjf":
		var by int8
		switch r.str("by", "input", "input", "output", "total") {
		case "output":
			by = 1
		case "total":
			by = 2
		}
		s = sjf{by: by}
	default:
		return nil, fmt.Errorf("unknown scheduler %q (known: fcfs, priority-fcfs, sjf, reverse-priority)", name)
	}
	if err := r.done(); err != nil {
		return nil, fmt.Errorf("scheduler %q: %w", name, err)
	}
	return s, nil
}

// NewPreemption returns the named preemption policy ("" is fcfs).
func NewPreemption(name string) (Preemption, error) {
	switch name {
	case "", schedFCFS:
		return preemptFCFS{}, nil
	case "priority":
		return preemptPriority{}, nil
	}
	return nil, fmt.Errorf("unknown preemption policy %q (known: fcfs, priority)", name)
}
