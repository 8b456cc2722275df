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
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// queueEntry is an Evaluation waiting for a parallelism slot, or holding one.
type queueEntry struct {
	uid      types.UID
	key      types.NamespacedName
	priority int32
	created  time.Time
}

// before is the admission order: higher priority first, then older, then by namespace/name.
func (a *queueEntry) before(b *queueEntry) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if !a.created.Equal(b.created) {
		return a.created.Before(b.created)
	}
	if a.key.Namespace != b.key.Namespace {
		return a.key.Namespace < b.key.Namespace
	}
	return a.key.Name < b.key.Name
}

// ledger holds the operator's parallelism state in memory: which Evaluations hold a slot
// (running) and which wait (queued), as counters per namespace. It is the only place that
// admits, so caps hold however many reconciles run at once. Slots of Evaluations that were
// running before a manager restart are re-registered (hold) before anything is admitted.
type ledger struct {
	maxGlobal, maxPerNamespace int
	// wake enqueues an Evaluation that may now be admitted.
	wake func(types.NamespacedName)

	mu       sync.Mutex
	running  map[types.UID]*queueEntry
	perNS    map[string]int
	queued   map[types.UID]*queueEntry
	onChange func(running, queued int)
}

func newLedger(maxGlobal, maxPerNamespace int, wake func(types.NamespacedName), onChange func(running, queued int)) *ledger {
	return &ledger{
		maxGlobal: maxGlobal, maxPerNamespace: maxPerNamespace, wake: wake, onChange: onChange,
		running: map[types.UID]*queueEntry{}, perNS: map[string]int{}, queued: map[types.UID]*queueEntry{},
	}
}

// nsFull reports whether namespace ns has no free slot.
func (l *ledger) nsFull(ns string) bool {
	return l.maxPerNamespace > 0 && l.perNS[ns] >= l.maxPerNamespace
}

func (l *ledger) globalFull() bool {
	return l.maxGlobal > 0 && len(l.running) >= l.maxGlobal
}

// hold registers e as holding a slot whether or not the caps allow it (a run that already
// started, found again after a restart).
func (l *ledger) hold(e queueEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holdLocked(&e)
}

func (l *ledger) holdLocked(e *queueEntry) {
	delete(l.queued, e.uid)
	if _, ok := l.running[e.uid]; ok {
		return
	}
	l.running[e.uid] = e
	l.perNS[e.key.Namespace]++
	l.changedLocked()
}

// enqueue registers e as waiting (an Evaluation found Queued after a restart), so that the
// admission order holds from the first reconcile on.
func (l *ledger) enqueue(e queueEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.running[e.uid]; ok {
		return
	}
	if _, ok := l.queued[e.uid]; !ok {
		l.queued[e.uid] = &e
		l.changedLocked()
	}
}

// admission is the outcome of tryAdmit.
type admission struct {
	admitted bool
	reason   string
	message  string
}

// tryAdmit admits e when a slot is free for it and no queued Evaluation that could use a slot
// comes before it; otherwise e is (or stays) queued and the result says why, with its position.
func (l *ledger) tryAdmit(e queueEntry) admission {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.running[e.uid]; ok {
		return admission{admitted: true, reason: ReasonAdmitted, message: "holds a parallelism slot"}
	}
	cur, ok := l.queued[e.uid]
	if !ok {
		cur = &e
		l.queued[e.uid] = cur
		l.changedLocked()
	}
	// Position among all queued Evaluations, and whether an admissible one is ahead.
	pos, blockedBy := 1, 0
	for _, q := range l.queued {
		if q.uid == cur.uid || !q.before(cur) {
			continue
		}
		pos++
		if !l.nsFull(q.key.Namespace) {
			blockedBy++
		}
	}
	total := len(l.queued)
	switch {
	case l.globalFull():
		return admission{reason: ReasonGlobalLimitReached, message: fmt.Sprintf(
			"position %d of %d in the queue: all %d global slots are in use", pos, total, l.maxGlobal)}
	case l.nsFull(cur.key.Namespace):
		return admission{reason: ReasonNamespaceLimitReached, message: fmt.Sprintf(
			"position %d of %d in the queue: all %d slots of namespace %s are in use", pos, total, l.maxPerNamespace, cur.key.Namespace)}
	case l.maxGlobal > 0 && blockedBy >= l.maxGlobal-len(l.running):
		return admission{reason: ReasonWaitingForTurn, message: fmt.Sprintf(
			"position %d of %d in the queue: %d Evaluations ahead (by priority, then age) take the free slots", pos, total, blockedBy)}
	}
	l.holdLocked(cur)
	return admission{admitted: true, reason: ReasonAdmitted, message: "got a parallelism slot"}
}

// release frees the slot or queue place of uid and wakes the Evaluations that may now be
// admitted.
func (l *ledger) release(uid types.UID) {
	l.mu.Lock()
	e, wasRunning := l.running[uid]
	if wasRunning {
		delete(l.running, uid)
		if l.perNS[e.key.Namespace]--; l.perNS[e.key.Namespace] <= 0 {
			delete(l.perNS, e.key.Namespace)
		}
	}
	_, wasQueued := l.queued[uid]
	delete(l.queued, uid)
	// A freed slot goes to the next in order; so does a free slot that a queued Evaluation
	// leaving the queue (woken for it, it now waits for inputs or for an identical run) did
	// not take.
	var wake []types.NamespacedName
	if wasRunning || wasQueued {
		wake = l.nextLocked()
	}
	if wasRunning || wasQueued {
		l.changedLocked()
	}
	l.mu.Unlock()
	for _, k := range wake {
		l.wake(k)
	}
}

// releaseKey releases whatever Evaluation key holds (it was deleted).
func (l *ledger) releaseKey(key types.NamespacedName) {
	l.mu.Lock()
	var uids []types.UID
	for uid, e := range l.running {
		if e.key == key {
			uids = append(uids, uid)
		}
	}
	for uid, e := range l.queued {
		if e.key == key {
			uids = append(uids, uid)
		}
	}
	l.mu.Unlock()
	for _, uid := range uids {
		l.release(uid)
	}
}

// nextLocked returns the queued Evaluations that could take the free slots now, in admission
// order: one per free global slot, skipping namespaces at their cap.
func (l *ledger) nextLocked() []types.NamespacedName {
	free := len(l.queued)
	if l.maxGlobal > 0 {
		free = l.maxGlobal - len(l.running)
	}
	if free <= 0 {
		return nil
	}
	var cands []*queueEntry
	for _, q := range l.queued {
		if !l.nsFull(q.key.Namespace) {
			cands = append(cands, q)
		}
	}
	// Partial selection: the free best candidates.
	var out []types.NamespacedName
	perNS := map[string]int{}
	for len(out) < free && len(cands) > 0 {
		best := 0
		for i := range cands {
			if cands[i].before(cands[best]) {
				best = i
			}
		}
		b := cands[best]
		cands = append(cands[:best], cands[best+1:]...)
		if l.maxPerNamespace > 0 && l.perNS[b.key.Namespace]+perNS[b.key.Namespace] >= l.maxPerNamespace {
			continue
		}
		perNS[b.key.Namespace]++
		out = append(out, b.key)
	}
	return out
}

// counts returns the number of running and queued Evaluations.
func (l *ledger) counts() (running, queued int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.running), len(l.queued)
}

func (l *ledger) changedLocked() {
	if l.onChange != nil {
		l.onChange(len(l.running), len(l.queued))
	}
}
