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
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// runKey identifies a result: the input hash within a namespace (reuse is per namespace).
type runKey struct {
	namespace, hash string
}

// leader is the Evaluation whose run produces the result of a runKey.
type leader struct {
	uid types.UID
	key types.NamespacedName
}

// identicalRuns records, per namespace and input hash, the Evaluation whose engine run is in
// progress, so that an Evaluation of the same input waits for that run and reuses its result
// instead of running the engine a second time. A leader stays registered until the manager's
// cache shows it finished: only then does the field index on succeeded input hashes find it,
// and only then are the Evaluations waiting for it woken.
type identicalRuns struct {
	// wake enqueues an Evaluation whose leader finished.
	wake func(types.NamespacedName)

	mu      sync.Mutex
	leaders map[runKey]leader
	byUID   map[types.UID]runKey
	waiters map[runKey]map[types.NamespacedName]struct{}
}

func newIdenticalRuns(wake func(types.NamespacedName)) *identicalRuns {
	return &identicalRuns{
		wake:    wake,
		leaders: map[runKey]leader{},
		byUID:   map[types.UID]runKey{},
		waiters: map[runKey]map[types.NamespacedName]struct{}{},
	}
}

// follow returns the leader of rk when another Evaluation leads it, and registers key as
// waiting for it.
func (s *identicalRuns) follow(rk runKey, uid types.UID, key types.NamespacedName) (leader, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.leaders[rk]
	if !ok || l.uid == uid {
		return leader{}, false
	}
	s.addWaiterLocked(rk, key)
	return l, true
}

// claim makes uid the leader of rk unless another Evaluation leads it; it returns the leader
// and whether that is uid. When another leads and wait is set, key is registered as waiting
// for it. An Evaluation leads one runKey at most: one that leads another (its inputs changed
// before its run could start) gives that one up, and its waiters look again.
func (s *identicalRuns) claim(rk runKey, uid types.UID, key types.NamespacedName, wait bool) (leader, bool) {
	s.mu.Lock()
	if l, ok := s.leaders[rk]; ok {
		if l.uid != uid && wait {
			s.addWaiterLocked(rk, key)
		}
		s.mu.Unlock()
		return l, l.uid == uid
	}
	var wake []types.NamespacedName
	if old, ok := s.byUID[uid]; ok {
		wake = s.dropLocked(old)
	}
	l := leader{uid: uid, key: key}
	s.leaders[rk] = l
	s.byUID[uid] = rk
	s.mu.Unlock()
	for _, k := range wake {
		s.wake(k)
	}
	return l, true
}

func (s *identicalRuns) addWaiterLocked(rk runKey, key types.NamespacedName) {
	w := s.waiters[rk]
	if w == nil {
		w = map[types.NamespacedName]struct{}{}
		s.waiters[rk] = w
	}
	w[key] = struct{}{}
}

// dropLocked removes the leader of rk and returns its waiters.
func (s *identicalRuns) dropLocked(rk runKey) []types.NamespacedName {
	if l, ok := s.leaders[rk]; ok {
		delete(s.byUID, l.uid)
		delete(s.leaders, rk)
	}
	wake := make([]types.NamespacedName, 0, len(s.waiters[rk]))
	for k := range s.waiters[rk] {
		wake = append(wake, k)
	}
	delete(s.waiters, rk)
	return wake
}

// finish drops the leadership of uid (its run ended and the cache shows it, or it was deleted)
// and wakes the Evaluations that waited for it.
func (s *identicalRuns) finish(uid types.UID) {
	s.mu.Lock()
	var wake []types.NamespacedName
	if rk, ok := s.byUID[uid]; ok {
		wake = s.dropLocked(rk)
	}
	s.mu.Unlock()
	for _, k := range wake {
		s.wake(k)
	}
}

// finishKey drops the leadership of whatever Evaluation key held one (it was deleted).
func (s *identicalRuns) finishKey(key types.NamespacedName) {
	s.mu.Lock()
	var uids []types.UID
	for _, l := range s.leaders {
		if l.key == key {
			uids = append(uids, l.uid)
		}
	}
	s.mu.Unlock()
	for _, uid := range uids {
		s.finish(uid)
	}
}
