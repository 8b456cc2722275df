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
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// ownWrites remembers the resourceVersion of the last status each Evaluation's reconcile wrote,
// until the manager's cache has caught up with it. A reconcile that reads an older version
// from the cache would act on a status the operator itself has already moved past (start a run
// that started, or finished, again; recreate a deleted Job as a first attempt), so it waits for
// the watch event of its own write instead, which enqueues the Evaluation again.
type ownWrites struct {
	mu      sync.Mutex
	written map[types.NamespacedName]writtenVersion
}

type writtenVersion struct {
	uid             types.UID
	resourceVersion string
}

func newOwnWrites() *ownWrites {
	return &ownWrites{written: map[types.NamespacedName]writtenVersion{}}
}

// record notes that the status of the Evaluation key/uid was written at resourceVersion rv.
func (w *ownWrites) record(key types.NamespacedName, uid types.UID, rv string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.written[key] = writtenVersion{uid: uid, resourceVersion: rv}
}

// stale reports whether the cached version rv of the Evaluation key/uid is older than the
// last status this reconciler wrote for it. Once the cache has caught up the record is
// dropped. Resource versions of one resource are comparable integers; one that is not
// well formed cannot be ordered and is not taken as stale.
func (w *ownWrites) stale(key types.NamespacedName, uid types.UID, rv string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.written[key]
	if !ok {
		return false
	}
	if last.uid == uid {
		if cmp, err := resourceversion.CompareResourceVersion(rv, last.resourceVersion); err == nil && cmp < 0 {
			return true
		}
	}
	delete(w.written, key)
	return false
}

// forget drops the record of the Evaluation key (it was deleted).
func (w *ownWrites) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.written, key)
}
