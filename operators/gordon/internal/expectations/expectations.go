// Package expectations remembers the pod creations and deletions a controller
// asked for and has not yet seen in its informer cache.
//
// A controller counts pods in its cache, and the cache lags the API server:
// right after creating three pods, a second reconcile may still count none
// and create three more. Until every creation and deletion it asked for has
// been observed, the controller must not count again. This is the mechanism
// of the ReplicaSet controller, reduced to what the gordon operator needs.
//
// Expectations live in memory only: a restarted operator starts with a cache
// listed afresh from the API server, which already shows every pod that was
// created, so it has nothing to wait for.
package expectations

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TTL bounds how long a lost event can hold a controller back: after it, the
// expectations of a key count as met and the controller counts again.
const TTL = 5 * time.Minute

// Expectations is safe for concurrent use by the workers of a controller and
// the event handlers of its informers.
type Expectations struct {
	mu  sync.Mutex
	m   map[types.NamespacedName]*entry
	now func() time.Time
}

type entry struct {
	creations int
	deletions map[types.UID]bool
	since     time.Time
}

// New returns empty expectations.
func New() *Expectations {
	return &Expectations{m: map[types.NamespacedName]*entry{}, now: time.Now}
}

// ExpectCreations records that n pods are about to be created for key.
func (e *Expectations) ExpectCreations(key types.NamespacedName, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(key).creations += n
}

// ExpectDeletion records that the pod uid is about to be deleted for key.
func (e *Expectations) ExpectDeletion(key types.NamespacedName, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(key).deletions[uid] = true
}

// CreationObserved records that the cache saw a pod of key appear, or that a
// creation failed and will never be seen.
func (e *Expectations) CreationObserved(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok && x.creations > 0 {
		x.creations--
	}
}

// DeletionObserved records that the cache saw the pod uid of key terminate
// or disappear, or that its deletion failed. Observing a pod twice is fine.
func (e *Expectations) DeletionObserved(key types.NamespacedName, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		delete(x.deletions, uid)
	}
}

// Satisfied reports whether the cache has seen everything asked for key,
// or the expectations are older than TTL.
func (e *Expectations) Satisfied(key types.NamespacedName) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok || (x.creations == 0 && len(x.deletions) == 0) || e.now().Sub(x.since) > TTL {
		delete(e.m, key)
		return true
	}
	return false
}

// Forget drops the expectations of key, for example when it is deleted.
func (e *Expectations) Forget(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}

func (e *Expectations) get(key types.NamespacedName) *entry {
	x, ok := e.m[key]
	if !ok {
		x = &entry{deletions: map[types.UID]bool{}}
		e.m[key] = x
	}
	x.since = e.now()
	return x
}
