/*
Copyright 2026 The blis-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controller

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation"
)

// RunFunc runs a resolved evaluation and returns its result fields (evaluation.Run followed by
// Result.ApplyTo in production).
type RunFunc func(ctx context.Context, r *evaluation.Resolved) (*blisv1alpha1.EvaluationStatus, error)

// DefaultRun runs the engine in this process.
func DefaultRun(ctx context.Context, r *evaluation.Resolved) (*blisv1alpha1.EvaluationStatus, error) {
	res, err := evaluation.RunWithOptions(ctx, r, evaluation.Options{Parallelism: 1})
	if err != nil {
		return nil, err
	}
	var st blisv1alpha1.EvaluationStatus
	res.ApplyTo(&st)
	return &st, nil
}

// runState is where an in-process run is.
type runState int

const (
	// runUnknown: the pool has never seen the run (or forgot it after its status was written).
	runUnknown runState = iota
	// runWaiting: submitted, waiting for a worker.
	runWaiting
	// runActive: a worker runs it.
	runActive
	// runDone: finished; the outcome waits to be written into status.
	runDone
)

// outcome is a finished in-process run.
type outcome struct {
	hash     string
	status   *blisv1alpha1.EvaluationStatus
	err      error
	started  time.Time
	finished time.Time
}

// task is one submitted run.
type task struct {
	uid      types.UID
	key      types.NamespacedName
	resolved *evaluation.Resolved
	ctx      context.Context
	cancel   context.CancelFunc
	state    runState
	out      *outcome
}

// pool is the in-process executor: a bounded queue and a fixed number of workers, keyed by
// Evaluation UID so that a run is never started twice. A finished run's outcome stays in memory
// until the reconciler has written it into status (Forget), and the Evaluation is enqueued
// through notify when it finishes.
type pool struct {
	run     RunFunc
	workers int
	notify  func(types.NamespacedName)

	mu     sync.Mutex
	tasks  map[types.UID]*task
	byKey  map[types.NamespacedName]types.UID
	queue  chan *task
	busy   int
	onBusy func(busy, workers int)
}

// newPool returns a pool of the given number of workers whose queue holds up to capacity waiting runs.
func newPool(run RunFunc, workers, capacity int, notify func(types.NamespacedName), onBusy func(busy, workers int)) *pool {
	if workers < 1 {
		workers = 1
	}
	if capacity < workers {
		capacity = workers
	}
	return &pool{
		run: run, workers: workers, notify: notify, onBusy: onBusy,
		tasks: map[types.UID]*task{}, byKey: map[types.NamespacedName]types.UID{},
		queue: make(chan *task, capacity),
	}
}

// Start runs the workers until ctx ends (manager.Runnable).
func (p *pool) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range p.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case t := <-p.queue:
					p.execute(t)
				}
			}
		}()
	}
	<-ctx.Done()
	p.mu.Lock()
	for _, t := range p.tasks {
		t.cancel()
	}
	p.mu.Unlock()
	wg.Wait()
	return nil
}

// NeedLeaderElection makes the pool run only on the leader, with the reconcilers.
func (p *pool) NeedLeaderElection() bool { return true }

// errPoolFull is returned by submit when the queue is full.
var errPoolFull = errors.New("the in-process queue is full")

// submit queues a run of resolved for the Evaluation uid/key unless the pool already knows uid
// (then it does nothing: a run is never started twice).
func (p *pool) submit(uid types.UID, key types.NamespacedName, resolved *evaluation.Resolved) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.tasks[uid]; ok {
		return nil
	}
	if old, ok := p.byKey[key]; ok && old != uid {
		// A deleted and recreated Evaluation of the same name: stop the old run.
		p.dropLocked(old)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &task{uid: uid, key: key, resolved: resolved, ctx: ctx, cancel: cancel, state: runWaiting}
	select {
	case p.queue <- t:
	default:
		cancel()
		return errPoolFull
	}
	p.tasks[uid] = t
	p.byKey[key] = uid
	return nil
}

// execute runs t on the calling worker.
func (p *pool) execute(t *task) {
	p.mu.Lock()
	if p.tasks[t.uid] != t || t.ctx.Err() != nil {
		p.mu.Unlock()
		return
	}
	t.state = runActive
	p.busy++
	p.reportLocked()
	p.mu.Unlock()

	o := &outcome{hash: t.resolved.Hash, started: time.Now()}
	o.status, o.err = p.run(t.ctx, t.resolved)
	o.finished = time.Now()

	p.mu.Lock()
	p.busy--
	p.reportLocked()
	current := p.tasks[t.uid] == t
	if current {
		t.state, t.out = runDone, o
	}
	p.mu.Unlock()
	if current && t.ctx.Err() == nil {
		p.notify(t.key)
	}
}

func (p *pool) reportLocked() {
	if p.onBusy != nil {
		p.onBusy(p.busy, p.workers)
	}
}

// state returns where the run of uid is, and its outcome when it is done.
func (p *pool) state(uid types.UID) (runState, *outcome) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.tasks[uid]
	if !ok {
		return runUnknown, nil
	}
	return t.state, t.out
}

// forget drops uid after its outcome was written into status.
func (p *pool) forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLocked(uid)
}

// cancelKey stops and drops the run of the Evaluation key (it was deleted).
func (p *pool) cancelKey(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if uid, ok := p.byKey[key]; ok {
		p.dropLocked(uid)
	}
}

func (p *pool) dropLocked(uid types.UID) {
	t, ok := p.tasks[uid]
	if !ok {
		return
	}
	t.cancel()
	delete(p.tasks, uid)
	if p.byKey[t.key] == uid {
		delete(p.byKey, t.key)
	}
}

// size returns the number of runs the pool holds (waiting, active or done).
func (p *pool) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.tasks)
}
