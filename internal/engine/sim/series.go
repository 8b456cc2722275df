package sim

import "math"

// This file records the bounded time series of Options.Series and calls Options.Progress.
//
// Time is cut into equal buckets starting at 0. Every series keeps raw sums, never means:
// counts per bucket (arrivals, completions, prompt tokens looked up and hit) and integrals of
// piecewise-constant values over simulated time (value × µs, in int64, so queue depth, batch
// size, used KV blocks and ready instances integrate exactly). When a time beyond the last
// bucket is reached the width doubles and pairs of buckets merge by adding their sums, which is
// exact, so the result does not depend on when merges happened, only on the final width.
//
// An instance's values are sampled after each of its steps: the wait-queue depth and KV blocks
// in use after the step and the size of the step's batch. They hold from the step's start to
// the next step's start or, when the step left the instance idle, to the step's end, after
// which the queue and batch count as empty and the KV blocks keep their last value.

// MaxSeriesBuckets bounds the number of buckets of every series.
const MaxSeriesBuckets = 512

// DefaultSeriesBucketUs is the initial bucket width of runs without a horizon (100 ms).
const DefaultSeriesBucketUs int64 = 100_000

// progressEvery is the number of processed events between two Options.Progress calls (a
// power of two: the check is a mask).
const progressEvery = 1 << 16

// Progress is how far a run has got, as reported to Options.Progress.
type Progress struct {
	// Now is the simulated time in µs.
	Now int64
	// Generated counts requests produced by the workload so far; Finished those that left
	// (completed, timed out, dropped or rejected).
	Generated, Finished int64
	// Horizon is the run's horizon in µs (0 = the run ends when the workload drains).
	Horizon int64
}

// Series are the bounded time series of a run (Options.Series). Bucket i covers simulated time
// [i·BucketUs, (i+1)·BucketUs), the last one ending at End; every slice has Buckets() values.
type Series struct {
	// BucketUs is the width of a bucket in µs.
	BucketUs int64
	// End is the end of the run (Result.End); the last bucket is cut there.
	End int64
	// Arrivals and Completions count the requests arriving at the cluster and completing in
	// each bucket (a completion at or after End is in the last bucket).
	Arrivals, Completions []int64
	// ReadyInstances is the time-average number of instances that can be routed to.
	ReadyInstances []float64
	// Instances holds one entry per instance, indexed like Config.Instances.
	Instances []InstanceSeries
}

// InstanceSeries are the per-bucket values of one instance.
type InstanceSeries struct {
	// QueueDepth and BatchSize are time-averages of the wait-queue depth and the batch size.
	QueueDepth, BatchSize []float64
	// KVUtilization is the time-average fraction of KV blocks in use, in [0, 1].
	KVUtilization []float64
	// CacheHitRate is prompt tokens hit in the prefix cache over prompt tokens looked up in the
	// bucket, in [0, 1]; a bucket without lookups repeats the previous value (0 at first).
	CacheHitRate []float64
}

// Buckets returns the number of buckets.
func (s *Series) Buckets() int { return len(s.Arrivals) }

// BucketDuration returns the simulated time bucket i covers in µs: BucketUs, less for the last
// bucket when End cuts it.
func (s *Series) BucketDuration(i int) int64 {
	start := int64(i) * s.BucketUs
	return max(min(s.BucketUs, s.End-start), 0)
}

// seriesRecorder accumulates the series of one run. Its arrays have MaxSeriesBuckets entries
// from the start, so recording never allocates.
type seriesRecorder struct {
	width       int64
	horizon     int64 // 0 = none
	arrivals    []int64
	completions []int64
	ready       []int64 // ready instances × µs
	readyNow    int64
	readySince  int64
	insts       []instSeries
}

// instSeries is one instance's sums and its currently held sample.
type instSeries struct {
	queue, batch, kv []int64 // value × µs
	look, hit        []int64 // prompt tokens
	// The sample held since `since`: busy (queue, batch) until idleAt, KV blocks until the next
	// sample.
	since, idleAt   int64
	queueN, batchN  int64
	kvN             int64
	steps           int64 // InstanceStats.Steps at the last sample
	cumLook, cumHit int64 // cumulative prompt tokens at the last sample
	totalBlocks     int64
	prefix          bool
}

// seriesWidth is the initial bucket width: the finest whole millisecond that fits the horizon in
// MaxSeriesBuckets buckets, or DefaultSeriesBucketUs without a horizon.
func seriesWidth(horizon int64) int64 {
	if horizon <= 0 {
		return DefaultSeriesBucketUs
	}
	w := (horizon + MaxSeriesBuckets - 1) / MaxSeriesBuckets
	return max((w+999)/1000*1000, 1000)
}

func newSeriesRecorder(horizon int64, insts []instance, ready int64) *seriesRecorder {
	r := &seriesRecorder{
		width:       seriesWidth(horizon),
		horizon:     horizon,
		arrivals:    make([]int64, MaxSeriesBuckets),
		completions: make([]int64, MaxSeriesBuckets),
		ready:       make([]int64, MaxSeriesBuckets),
		readyNow:    ready,
		insts:       make([]instSeries, len(insts)),
	}
	for i := range r.insts {
		is := &r.insts[i]
		// One backing array per instance keeps its five series together in memory.
		all := make([]int64, 5*MaxSeriesBuckets)
		is.queue, all = all[:MaxSeriesBuckets:MaxSeriesBuckets], all[MaxSeriesBuckets:]
		is.batch, all = all[:MaxSeriesBuckets:MaxSeriesBuckets], all[MaxSeriesBuckets:]
		is.kv, all = all[:MaxSeriesBuckets:MaxSeriesBuckets], all[MaxSeriesBuckets:]
		is.look, is.hit = all[:MaxSeriesBuckets:MaxSeriesBuckets], all[MaxSeriesBuckets:]
		is.totalBlocks = int64(insts[i].kv.TotalBlocks())
		is.prefix = !insts[i].cfg.DisablePrefixCaching
	}
	return r
}

// bucket returns the bucket of time t (>= 0), doubling the width first if t is past the last.
func (r *seriesRecorder) bucket(t int64) int {
	k := t / r.width
	for k >= MaxSeriesBuckets {
		r.grow()
		k = t / r.width
	}
	return int(k)
}

// grow doubles the bucket width, merging pairs of buckets.
func (r *seriesRecorder) grow() {
	r.width *= 2
	merge(r.arrivals)
	merge(r.completions)
	merge(r.ready)
	for i := range r.insts {
		is := &r.insts[i]
		merge(is.queue)
		merge(is.batch)
		merge(is.kv)
		merge(is.look)
		merge(is.hit)
	}
}

// merge adds bucket pairs (2i, 2i+1) into bucket i and clears the upper half.
func merge(a []int64) {
	h := len(a) / 2
	for i := range h {
		a[i] = a[2*i] + a[2*i+1]
	}
	clear(a[h:])
}

// arrival counts a cluster arrival at t.
func (r *seriesRecorder) arrival(t int64) { r.arrivals[r.bucket(t)]++ }

// completion counts a completion at t. A step that started before the horizon can complete
// requests after it; they count at the horizon, where the run ends, so that they never widen
// the buckets.
func (r *seriesRecorder) completion(t int64) {
	if r.horizon > 0 {
		t = min(t, r.horizon)
	}
	r.completions[r.bucket(t)]++
}

// setReady integrates the ready count up to t and holds n from t on.
func (r *seriesRecorder) setReady(t, n int64) {
	if n == r.readyNow {
		return
	}
	r.advanceReady(t)
	r.readyNow = n
}

// advanceReady integrates the held ready count up to t.
func (r *seriesRecorder) advanceReady(t int64) {
	for from := r.readySince; from < t; {
		k := r.bucket(from)
		end := min(t, int64(k+1)*r.width)
		r.ready[k] += r.readyNow * (end - from)
		from = end
	}
	r.readySince = max(r.readySince, t)
}

// hold adds the held sample's queue, batch and KV values over [from, to).
func (r *seriesRecorder) hold(is *instSeries, from, to, queue, batch, kv int64) {
	for from < to {
		k := r.bucket(from)
		end := min(to, int64(k+1)*r.width)
		d := end - from
		is.queue[k] += queue * d
		is.batch[k] += batch * d
		is.kv[k] += kv * d
		from = end
	}
}

// advance integrates is's held sample up to t.
func (r *seriesRecorder) advance(is *instSeries, t int64) {
	if t <= is.since {
		return
	}
	busyEnd := min(t, max(is.idleAt, is.since))
	r.hold(is, is.since, busyEnd, is.queueN, is.batchN, is.kvN)
	r.hold(is, busyEnd, t, 0, 0, is.kvN)
	is.since = t
}

// step samples instance in after a step event at now was processed.
func (r *seriesRecorder) step(in *instance, now int64) {
	is := &r.insts[in.idx]
	r.advance(is, now)
	is.kvN = int64(in.kv.UsedBlocks())
	is.idleAt = now
	is.queueN, is.batchN = 0, 0
	if in.stats.Steps != is.steps {
		is.steps = in.stats.Steps
		is.queueN = int64(in.waitQ.live)
		is.batchN = int64(len(in.shape.Prefill)) + in.shape.DecodeRequests
		if in.stepPending {
			// The next step starts when this one ends: the sample holds until then.
			is.idleAt = math.MaxInt64
		} else {
			is.idleAt = now + in.gaps[len(in.gaps)-1] - in.alphaOut
		}
		// Lookups happen only at admissions from the wait queue, which add a prefill chunk or
		// leave the queue non-empty; reading the counters only then keeps decode steps cheap.
		if is.prefix && (len(in.shape.Prefill) > 0 || in.waitQ.live > 0) {
			ks := in.kv.Stats()
			look := ks.LookupTokens + in.kvPrior.LookupTokens
			hit := ks.HitTokens + in.kvPrior.HitTokens + in.stats.KVReloadedTokens
			if look != is.cumLook || hit != is.cumHit {
				k := r.bucket(now)
				is.look[k] += look - is.cumLook
				is.hit[k] += hit - is.cumHit
				is.cumLook, is.cumHit = look, hit
			}
		}
	}
}

// result builds the run's Series, cut at end.
func (r *seriesRecorder) result(end int64) *Series {
	end = max(end, 0)
	for i := range r.insts {
		r.advance(&r.insts[i], end)
	}
	r.advanceReady(end)
	n := 1
	if end > 0 {
		k := r.bucket(end - 1)
		n = k + 1
	}
	// Completions at or after end (the last step's completions can end past a horizon) belong
	// to the last bucket.
	for k := n; k < MaxSeriesBuckets; k++ {
		r.completions[n-1] += r.completions[k]
		r.arrivals[n-1] += r.arrivals[k]
	}
	s := &Series{
		BucketUs:       r.width,
		End:            end,
		Arrivals:       append([]int64(nil), r.arrivals[:n]...),
		Completions:    append([]int64(nil), r.completions[:n]...),
		ReadyInstances: make([]float64, n),
		Instances:      make([]InstanceSeries, len(r.insts)),
	}
	for k := range n {
		s.ReadyInstances[k] = timeAverage(r.ready[k], s.BucketDuration(k), 1)
	}
	for i := range r.insts {
		is := &r.insts[i]
		all := make([]float64, 4*n)
		out := InstanceSeries{
			QueueDepth:    all[:n:n],
			BatchSize:     all[n : 2*n : 2*n],
			KVUtilization: all[2*n : 3*n : 3*n],
			CacheHitRate:  all[3*n:],
		}
		var rate float64
		for k := range n {
			d := s.BucketDuration(k)
			out.QueueDepth[k] = timeAverage(is.queue[k], d, 1)
			out.BatchSize[k] = timeAverage(is.batch[k], d, 1)
			out.KVUtilization[k] = timeAverage(is.kv[k], d, is.totalBlocks)
			if is.look[k] > 0 {
				rate = float64(is.hit[k]) / float64(is.look[k])
			}
			out.CacheHitRate[k] = rate
		}
		s.Instances[i] = out
	}
	return s
}

// timeAverage is integral / (duration · scale), 0 for an empty duration.
func timeAverage(integral, duration, scale int64) float64 {
	if duration <= 0 || scale <= 0 {
		return 0
	}
	return float64(integral) / float64(duration) / float64(scale)
}

// readyCount is the number of instances that can be routed to.
func (s *simulation) readyCount() int64 {
	if s.as == nil {
		return int64(len(s.insts))
	}
	var n int64
	for i := range s.insts {
		if s.insts[i].life == lifeReady {
			n++
		}
	}
	return n
}

// progress reports the run's progress to Options.Progress.
func (s *simulation) progress() {
	p := Progress{Now: s.now, Generated: s.res.Generated, Horizon: s.cfg.Horizon}
	p.Finished = s.res.Rejected + s.res.GatewayTimedOut
	for i := range s.res.Instances {
		st := &s.res.Instances[i]
		p.Finished += st.Completed + st.TimedOut + st.Dropped
	}
	s.cfg.Options.Progress(p)
}
