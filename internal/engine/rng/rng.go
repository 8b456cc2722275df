// Package rng provides the simulator's partitioned random number generator.
//
// Every subsystem (the workload generator, the router, each instance, ...) draws from its own
// stream. A stream is a PCG generator seeded from the master seed and a 64-bit FNV-1a hash of the
// subsystem's name only, so the values one subsystem sees never depend on whether, when or how
// much any other subsystem drew (contract BC-10 of the engine design).
package rng

import (
	"math/rand/v2"
	"strconv"
)

// Well-known subsystem names. Instance streams are named by Instance.
const (
	Workload = "workload"
	Router   = "router"
)

// Partitioned hands out one independent stream per subsystem name.
// It is not safe for concurrent use; a simulation is single-threaded by design.
type Partitioned struct {
	master  int64
	streams map[string]*rand.Rand // lookup only; never iterated
}

// New returns a partitioned generator for the given master seed.
func New(master int64) *Partitioned {
	return &Partitioned{master: master, streams: make(map[string]*rand.Rand)}
}

// Master returns the master seed.
func (p *Partitioned) Master() int64 { return p.master }

// Stream returns the stream of the named subsystem, creating it on first use. Repeated calls
// with the same name return the same stream (and so continue its sequence).
func (p *Partitioned) Stream(name string) *rand.Rand {
	if r, ok := p.streams[name]; ok {
		return r
	}
	r := Derive(p.master, name)
	p.streams[name] = r
	return r
}

// Instance returns the stream of instance i ("instance_<i>").
func (p *Partitioned) Instance(i int) *rand.Rand {
	return p.Stream(InstanceName(i))
}

// InstanceName is the subsystem name of instance i.
func InstanceName(i int) string { return "instance_" + strconv.Itoa(i) }

// Derive returns a fresh stream for (master, name) without any shared state.
func Derive(master int64, name string) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(master), FNV1a(name)))
}

// FNV1a is the 64-bit FNV-1a hash of s. It is stable across platforms and Go versions.
func FNV1a(s string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime
	}
	return h
}
