package sim

import (
	"math/rand/v2"
	"testing"
)

// TestRandomConfigurations runs many small random clusters and workloads with every invariant
// checked after every event, and compares each with the reference stepper: no configuration may
// panic, violate an invariant, or make the two steppers disagree.
func TestRandomConfigurations(t *testing.T) {
	rnd := rand.New(rand.NewPCG(2026, 11))
	runs := 40
	if testing.Short() {
		runs = 10
	}
	for i := range runs {
		nInst := 1 + rnd.IntN(3)
		m := &linearModel{
			base: 1 + rnd.Int64N(3000), perPrefill: rnd.Int64N(20), perDecode: rnd.Int64N(200),
			perCtx: rnd.Int64N(200), queueing: rnd.Int64N(2000), outTok: rnd.Int64N(100), post: rnd.Int64N(1000),
		}
		cfg := &Config{Seed: int64(i), Router: []RouterFactory{RoundRobin, LeastLoaded}[rnd.IntN(2)],
			AdmissionLatency: rnd.Int64N(3) * 500, RoutingLatency: rnd.Int64N(3) * 300}
		if rnd.IntN(4) == 0 {
			cfg.Horizon = 1 + rnd.Int64N(2_000_000)
		}
		for range nInst {
			ic := InstanceConfig{
				Latency: m, BlockSize: int32(1 + rnd.IntN(32)),
				TotalKVBlocks:       int32(20 + rnd.IntN(400)),
				MaxNumSeqs:          int32(1 + rnd.IntN(40)),
				MaxNumBatchedTokens: int32(1 + rnd.IntN(600)),
			}
			if rnd.IntN(3) == 0 {
				ic.LongPrefillTokenThreshold = int32(1 + rnd.IntN(300))
			}
			if rnd.IntN(3) == 0 {
				ic.MaxModelLen = min(int32(50+rnd.IntN(800)), ic.TotalKVBlocks*ic.BlockSize)
			}
			if rnd.IntN(2) == 0 {
				ic.Preemption = PreemptPriority
			}
			ic.DisablePrefixCaching = rnd.IntN(4) == 0
			ic.DisableChunkedPrefill = rnd.IntN(6) == 0
			cfg.Instances = append(cfg.Instances, ic)
		}
		sp := genSpec{
			n: 20 + rnd.IntN(150), gapUs: 1 + rnd.Int64N(20000), poisson: rnd.IntN(2) == 0,
			inMean: int32(1 + rnd.IntN(400)), inStd: int32(rnd.IntN(200)),
			outMean: int32(rnd.IntN(200)), outSd: int32(rnd.IntN(100)),
			classes: true, seed: uint64(i),
		}
		if rnd.IntN(2) == 0 {
			sp.prefixLen, sp.prefixGroups = int32(1+rnd.IntN(100)), 1+rnd.IntN(4)
		}
		if rnd.IntN(3) == 0 {
			sp.timeout = 1 + rnd.Int64N(3_000_000)
		}
		reqs := gen(sp)
		if rnd.IntN(5) == 0 {
			for j := range reqs {
				reqs[j].OutputLen = int32(rnd.IntN(3)) // zero- and one-token outputs
			}
		}
		if i%2 == 1 {
			// Every other case runs a policy bundle (chosen from its own stream, so the
			// clusters and workloads stay those of the legacy cases).
			cfg = withPolicy(cfg, parseBundle(t, policyCases[rand.New(rand.NewPCG(uint64(i), 5)).IntN(len(policyCases))]))
		}
		if err := cfg.Validate(); err != nil {
			continue // e.g. max-model-len larger than the cache: rejected up front, as intended
		}
		results := make([]*Result, 2)
		for k, eager := range []bool{false, true} {
			c := *cfg
			c.Options = Options{RequestRecords: true, CheckInvariants: true}
			s := mustSim(t, &c, &sliceSource{reqs: reqs})
			s.eagerKV = eager
			if err := s.run(); err != nil {
				t.Fatalf("case %d (%+v, %+v): %v", i, cfg, sp, err)
			}
			results[k] = s.res
		}
		for j := range results[0].Records {
			if results[0].Records[j] != results[1].Records[j] {
				t.Fatalf("case %d: request %d differs between steppers:\n%+v\n%+v", i, j, results[0].Records[j], results[1].Records[j])
			}
		}
		// With a horizon the stream is read only up to the first request past it.
		if n := len(results[0].Records); n != len(reqs) && (cfg.Horizon == 0 || n > len(reqs)) {
			t.Fatalf("case %d: %d records for %d requests", i, len(results[0].Records), len(reqs))
		}
	}
}
