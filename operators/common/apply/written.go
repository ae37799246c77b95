package apply

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// written remembers, for each object a pass wrote (its status, a
// finalizer: reconciler.Run), the resourceVersion that write replaced. The cache answers a
// pass with what its watch has delivered so far: a pass that a child's
// event starts a moment after the write may read the copy from before it.
// Every write from that copy would fail with a conflict (the writes carry
// the resourceVersion they were computed from), after the pass spent its
// reads and its children's requests on a spec and status already out of
// date; and the write's own watch event brings the object back anyway. So
// a pass that reads exactly the copy a write of this process replaced
// skips: no request, no conflict. Any other copy (a newer one, one a
// person wrote, the object made again under its name) is worked on as
// usual.
var written = &superseded{byKey: map[TypedKey]supersededAt{}}

// superseded keeps objects by type, namespace and name (TypedKey),
// which are all a pass for an object that is gone knows of it.
type superseded struct {
	mu    sync.Mutex
	byKey map[TypedKey]supersededAt
}

type supersededAt struct {
	uid             types.UID
	resourceVersion string
	// released: this process took its finalizer off the object of uid,
	// which then goes; every copy of it the cache may still deliver (the
	// one its status write made, say) is out of date, and a pass on one
	// would finalize it again: start Jobs for an object already gone.
	released bool
}

// Wrote notes that obj, read at resourceVersion was, has just been
// written by this process: a copy at was is out of date (Stale). Nothing is
// noted when no write happened (obj's resourceVersion is still was).
func Wrote(obj client.Object, was string) { written.record(obj, was) }

// Released notes that this process took its finalizer off obj: every copy
// of obj (its UID) is out of date from now on.
func Released(obj client.Object) { written.release(obj) }

// Stale reports whether obj is a copy that a write of this process
// replaced (Wrote, Released): the write's own watch event brings the
// object back.
func Stale(obj client.Object) bool { return written.stale(obj) }

// ForgetWrites drops what was noted of the writes to the object of type
// like at key, which is gone.
func ForgetWrites(like client.Object, key client.ObjectKey) { written.forget(like, key) }

func (s *superseded) record(obj client.Object, was string) {
	if obj.GetResourceVersion() == was {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if at := s.byKey[KeyOf(obj, client.ObjectKeyFromObject(obj))]; at.released && at.uid == obj.GetUID() {
		return
	}
	s.byKey[KeyOf(obj, client.ObjectKeyFromObject(obj))] = supersededAt{uid: obj.GetUID(), resourceVersion: was}
}

func (s *superseded) release(obj client.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byKey[KeyOf(obj, client.ObjectKeyFromObject(obj))] = supersededAt{uid: obj.GetUID(), released: true}
}

func (s *superseded) stale(obj client.Object) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.byKey[KeyOf(obj, client.ObjectKeyFromObject(obj))]
	return ok && at.uid == obj.GetUID() && (at.released || at.resourceVersion == obj.GetResourceVersion())
}

func (s *superseded) forget(like client.Object, key client.ObjectKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byKey, KeyOf(like, key))
}
