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
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/evaluation"
)

func entry(ns, name string, prio int32, created int) queueEntry {
	return queueEntry{
		uid: types.UID(ns + "/" + name), key: types.NamespacedName{Namespace: ns, Name: name},
		priority: prio, created: time.Unix(int64(created), 0),
	}
}

// TestLedgerOrderAndCaps: admission follows priority, then age, then name; caps hold; a freed
// slot wakes the next Evaluations in order, skipping full namespaces.
func TestLedgerOrderAndCaps(t *testing.T) {
	var woken []string
	l := newLedger(2, 1, func(k types.NamespacedName) { woken = append(woken, k.String()) }, nil)

	if a := l.tryAdmit(entry("a", "first", 0, 1)); !a.admitted {
		t.Fatalf("first: %+v", a)
	}
	if a := l.tryAdmit(entry("a", "second", 0, 2)); a.admitted || a.reason != ReasonNamespaceLimitReached {
		t.Fatalf("second must wait for namespace a: %+v", a)
	}
	if a := l.tryAdmit(entry("b", "other", 0, 3)); !a.admitted {
		t.Fatalf("namespace b has a slot: %+v", a)
	}
	if a := l.tryAdmit(entry("c", "late", 0, 4)); a.admitted || a.reason != ReasonGlobalLimitReached {
		t.Fatalf("global cap: %+v", a)
	}
	if a := l.tryAdmit(entry("c", "urgent", 10, 5)); a.admitted || !strings.Contains(a.message, "position 1 of 3") {
		t.Fatalf("the urgent entry is first in the queue: %+v", a)
	}
	if r, q := l.counts(); r != 2 || q != 3 {
		t.Fatalf("running %d queued %d", r, q)
	}

	// Namespace b frees its slot: urgent (priority 10) is woken, not the older late.
	l.release(types.UID("b/other"))
	if len(woken) != 1 || woken[0] != "c/urgent" {
		t.Fatalf("woken %v, want [c/urgent]", woken)
	}
	if a := l.tryAdmit(entry("c", "late", 0, 4)); a.admitted || a.reason != ReasonWaitingForTurn {
		t.Fatalf("late must let urgent go first: %+v", a)
	}
	if a := l.tryAdmit(entry("c", "urgent", 10, 5)); !a.admitted {
		t.Fatalf("urgent: %+v", a)
	}
	// Releasing namespace a's slot: a/second (namespace a now free) is older than c/late but
	// namespace c is at its cap, so only a/second is woken.
	woken = nil
	l.release(types.UID("a/first"))
	if len(woken) != 1 || woken[0] != "a/second" {
		t.Fatalf("woken %v, want [a/second]", woken)
	}
	// Releasing twice is harmless.
	l.release(types.UID("a/first"))
	if r, _ := l.counts(); r != 1 {
		t.Fatalf("running %d after release", r)
	}
	// Holding a run found after a restart counts against the caps.
	l.hold(entry("a", "found", 0, 0))
	if a := l.tryAdmit(entry("a", "second", 0, 2)); a.admitted {
		t.Fatalf("namespace a is full again: %+v", a)
	}
	l.releaseKey(types.NamespacedName{Namespace: "a", Name: "second"})
	if _, q := l.counts(); q != 1 {
		t.Fatalf("queued %d after releaseKey, want 1 (c/late)", q)
	}
}

// TestLedgerRestoredQueueKeepsOrder: Evaluations found Queued after a restart are in line before
// any is admitted, so the first one reconciled does not jump the queue.
func TestLedgerRestoredQueueKeepsOrder(t *testing.T) {
	l := newLedger(1, 0, func(types.NamespacedName) {}, nil)
	l.enqueue(entry("ns", "urgent", 5, 9))
	if a := l.tryAdmit(entry("ns", "old", 0, 1)); a.admitted || a.reason != ReasonWaitingForTurn {
		t.Fatalf("old must wait for the restored urgent entry: %+v", a)
	}
	if a := l.tryAdmit(entry("ns", "urgent", 5, 9)); !a.admitted {
		t.Fatalf("urgent: %+v", a)
	}
}

// TestLedgerQueuedLeaverWakesNext: a queued Evaluation woken for a free slot that leaves the
// queue instead of taking it (it now waits for an identical run, or for an input) passes the
// slot on to the next in order.
func TestLedgerQueuedLeaverWakesNext(t *testing.T) {
	var woken []string
	l := newLedger(1, 0, func(k types.NamespacedName) { woken = append(woken, k.String()) }, nil)
	if a := l.tryAdmit(entry("ns", "running", 0, 1)); !a.admitted {
		t.Fatalf("running: %+v", a)
	}
	l.tryAdmit(entry("ns", "first", 0, 2))
	l.tryAdmit(entry("ns", "second", 0, 3))
	l.release(types.UID("ns/running"))
	if len(woken) != 1 || woken[0] != "ns/first" {
		t.Fatalf("woken %v, want [ns/first]", woken)
	}
	woken = nil
	l.release(types.UID("ns/first"))
	if len(woken) != 1 || woken[0] != "ns/second" {
		t.Fatalf("woken %v, want [ns/second]", woken)
	}
	if a := l.tryAdmit(entry("ns", "second", 0, 3)); !a.admitted {
		t.Fatalf("second: %+v", a)
	}
}

// TestIdenticalRuns: the first claim of an input hash leads it; later Evaluations of the hash
// wait for the leader and are woken once when it finishes; a leader whose input changed before
// its run started gives up its old hash (and wakes that hash's waiters).
func TestIdenticalRuns(t *testing.T) {
	var woken []string
	s := newIdenticalRuns(func(k types.NamespacedName) { woken = append(woken, k.Name) })
	rk := runKey{namespace: "ns", hash: "h1"}
	key := func(n string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: n} }

	if _, ok := s.follow(rk, "a", key("a")); ok {
		t.Fatal("no leader yet")
	}
	if l, mine := s.claim(rk, "a", key("a"), true); !mine || l.uid != "a" {
		t.Fatalf("a claims h1: %+v %v", l, mine)
	}
	if l, mine := s.claim(rk, "a", key("a"), true); !mine || l.uid != "a" {
		t.Fatalf("claiming again keeps the lead: %+v %v", l, mine)
	}
	if l, ok := s.follow(rk, "b", key("b")); !ok || l.key.Name != "a" {
		t.Fatalf("b follows a: %+v %v", l, ok)
	}
	if l, mine := s.claim(rk, "c", key("c"), true); mine || l.uid != "a" {
		t.Fatalf("c must wait for a: %+v %v", l, mine)
	}
	if _, mine := s.claim(rk, "d", key("d"), false); mine {
		t.Fatal("d (no reuse) does not lead h1")
	}
	if _, ok := s.follow(rk, "a", key("a")); ok {
		t.Fatal("a does not wait for itself")
	}
	s.finish("a")
	sort.Strings(woken)
	if strings.Join(woken, ",") != "b,c" {
		t.Fatalf("woken %v, want b and c", woken)
	}
	woken = nil
	s.finish("a")
	if len(woken) != 0 {
		t.Fatalf("finishing twice woke %v", woken)
	}

	// b leads h1, then its input changes to h2 before its run starts.
	s.claim(rk, "b", key("b"), true)
	s.follow(rk, "e", key("e"))
	rk2 := runKey{namespace: "ns", hash: "h2"}
	if _, mine := s.claim(rk2, "b", key("b"), true); !mine {
		t.Fatal("b leads h2")
	}
	if len(woken) != 1 || woken[0] != "e" {
		t.Fatalf("woken %v, want [e]", woken)
	}
	if _, ok := s.follow(rk, "e", key("e")); ok {
		t.Fatal("h1 has no leader any more")
	}
	if _, ok := s.follow(runKey{namespace: "other", hash: "h2"}, "f", key("f")); ok {
		t.Fatal("reuse is per namespace")
	}
	woken = nil
	s.finishKey(key("b"))
	if len(woken) != 0 {
		t.Fatalf("woken %v: h2 had no waiters", woken)
	}
	if _, ok := s.follow(rk2, "g", key("g")); ok {
		t.Fatal("b's lead of h2 ended with finishKey")
	}
}

// TestOwnWrites: a cached version older than the reconciler's own last write is stale; the
// record goes once the cache has caught up, or when the name now belongs to another object.
func TestOwnWrites(t *testing.T) {
	w := newOwnWrites()
	k := types.NamespacedName{Namespace: "ns", Name: "e"}
	if w.stale(k, "u", "5") {
		t.Fatal("nothing written yet")
	}
	w.record(k, "u", "10")
	for range 2 {
		if !w.stale(k, "u", "9") {
			t.Fatal("version 9 is older than the write at 10, however often it is read")
		}
	}
	if w.stale(k, "u", "10") {
		t.Fatal("the cache shows the write")
	}
	if w.stale(k, "u", "9") {
		t.Fatal("the record goes once the cache caught up")
	}
	w.record(k, "u", "20")
	if w.stale(k, "other", "3") {
		t.Fatal("a recreated Evaluation of the same name is not the one written")
	}
	w.record(k, "u", "30")
	w.forget(k)
	if w.stale(k, "u", "25") {
		t.Fatal("forgotten")
	}
}

// TestLedgerConcurrentAdmission: however many goroutines admit at once, the cap holds.
func TestLedgerConcurrentAdmission(t *testing.T) {
	l := newLedger(5, 0, func(types.NamespacedName) {}, nil)
	var mu sync.Mutex
	admitted := 0
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if l.tryAdmit(entry("ns", string(rune('a'+i%26))+strings.Repeat("x", i), 0, i)).admitted {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if admitted != 5 {
		t.Fatalf("%d admitted, want 5", admitted)
	}
}

// TestPoolRunsOnceAndHoldsOutcome: a UID submitted twice runs once; the outcome stays until
// forget; a cancelled key stops its run.
func TestPoolRunsOnceAndHoldsOutcome(t *testing.T) {
	var mu sync.Mutex
	runs := 0
	release := make(chan struct{})
	run := func(ctx context.Context, r *evaluation.Resolved) (*blisv1alpha1.EvaluationStatus, error) {
		mu.Lock()
		runs++
		mu.Unlock()
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &blisv1alpha1.EvaluationStatus{InputHash: r.Hash}, nil
	}
	notified := make(chan types.NamespacedName, 4)
	p := newPool(run, 1, 4, func(k types.NamespacedName) { notified <- k }, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = p.Start(ctx) }()

	uid := types.UID("u1")
	key := types.NamespacedName{Namespace: "ns", Name: "e1"}
	res := &evaluation.Resolved{Hash: "h1"}
	for range 3 {
		if err := p.submit(uid, key, res); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	select {
	case k := <-notified:
		if k != key {
			t.Fatalf("notified %v", k)
		}
	case <-time.After(waitTimeout):
		t.Fatal("no completion notice")
	}
	state, out := p.state(uid)
	if state != runDone || out.err != nil || out.status.InputHash != "h1" {
		t.Fatalf("state %v outcome %+v", state, out)
	}
	if err := p.submit(uid, key, res); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	n := runs
	mu.Unlock()
	if n != 1 {
		t.Fatalf("ran %d times, want 1", n)
	}
	p.forget(uid)
	if s, _ := p.state(uid); s != runUnknown || p.size() != 0 {
		t.Fatalf("after forget: state %v size %d", s, p.size())
	}
}

// TestBoundStatus: a huge trace summary is cut so the status stays under the bound.
func TestBoundStatus(t *testing.T) {
	st := &blisv1alpha1.EvaluationStatus{TraceSummary: strings.Repeat("é", 40000)}
	boundStatus(st)
	if len(st.TraceSummary) > blisv1alpha1.MaxTraceSummaryLength {
		t.Fatalf("summary %d bytes", len(st.TraceSummary))
	}
	if !strings.HasPrefix(st.TraceSummary, "é") || strings.ContainsRune(st.TraceSummary, '\uFFFD') {
		t.Fatal("the cut broke a UTF-8 sequence")
	}
	raw, _ := json.Marshal(st)
	if len(raw) > maxStatusBytes {
		t.Fatalf("status %d bytes", len(raw))
	}
}

// TestRunNameDeterministic: the run name is a DNS label that depends on the UID, not only the
// name, and fits every derived object name.
func TestRunNameDeterministic(t *testing.T) {
	ev := &blisv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("very.long.name", 20), UID: "a"}}
	n1 := runName(ev)
	if n1 != runName(ev) || len(resultName(ev)) > 63 || len(engineName(ev)) > 63 || strings.Contains(n1, ".") {
		t.Fatalf("run name %q", n1)
	}
	ev2 := ev.DeepCopy()
	ev2.UID = "b"
	if runName(ev2) == n1 {
		t.Fatal("a recreated Evaluation must get another run name")
	}
}

// TestPhaseTracker: the evaluations gauge follows phase changes without double counting.
func TestPhaseTracker(t *testing.T) {
	pt := newPhaseTracker()
	k := types.NamespacedName{Namespace: "ns", Name: "e"}
	pt.set(k, blisv1alpha1.PhaseQueued)
	pt.set(k, blisv1alpha1.PhaseRunning)
	pt.set(k, blisv1alpha1.PhaseRunning)
	if pt.count(blisv1alpha1.PhaseRunning) != 1 || pt.count(blisv1alpha1.PhaseQueued) != 0 {
		t.Fatal("phase counts")
	}
	pt.set(k, "")
	if pt.count(blisv1alpha1.PhaseRunning) != 0 {
		t.Fatal("forgotten Evaluation still counted")
	}
}
