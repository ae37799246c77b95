package apply

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A controller that counts its children in its cache, as gordon counts its
// pods, would count wrong between its writes and their watch events: right
// after creating three pods a pass would still count none and create three
// more, and a pod it deleted would still be counted. The ReplicaSet
// controller's expectations solve this with counts that its event handlers
// bring down; this memory instead remembers which children were created
// (under the name the API server chose, generateName) and deleted, and the
// pass compares them with what the cache lists. That needs no event handler
// of the controller's own, and no order between handlers: the cache is
// filled before any handler hears of a change, so what it lists is the
// truth the pass may count on.
var children = &expected{byOwner: map[ownerKey]*pending{}}

// ownerKey names an owner as its children's controller reference does.
type ownerKey struct {
	namespace, name string
	uid             types.UID
}

type expected struct {
	mu      sync.Mutex
	byOwner map[ownerKey]*pending
	swept   time.Time
}

// pending is what an owner waits for its cache to show.
type pending struct {
	created map[string]bool    // by name: to be listed
	deleted map[types.UID]bool // to be gone or terminating
	until   time.Time
}

// CreatedChild notes that this process created child, controlled by
// owner: until the cache lists it, ChildrenShown says so.
func CreatedChild(owner, child client.Object) {
	children.note(owner, func(p *pending) { p.created[child.GetName()] = true })
}

// DeletedChild notes that this process deleted child, controlled by owner:
// until the cache lists it gone or terminating, ChildrenShown says so.
func DeletedChild(owner, child client.Object) {
	children.note(owner, func(p *pending) { p.deleted[child.GetUID()] = true })
}

// ChildrenShown compares listed, owner's children as its cache lists them
// (terminating ones included), with the creations and deletions this
// process made for owner: when the cache shows them all it returns nil, and
// otherwise an *Unseen for the first it misses (a pass that gets one ends
// there; the child's watch event brings owner back). What the list shows
// is forgotten. A memory ends after unseenFor without the cache showing
// it: a child deleted by another hand before the cache saw it created is
// never listed.
func ChildrenShown[C client.Object](owner client.Object, listed []C) error {
	k := keyOfOwner(owner)
	now := time.Now()
	children.mu.Lock()
	defer children.mu.Unlock()
	p, ok := children.byOwner[k]
	if !ok {
		return nil
	}
	if !now.Before(p.until) {
		delete(children.byOwner, k)
		return nil
	}
	for _, c := range listed {
		delete(p.created, c.GetName())
		if c.GetDeletionTimestamp() == nil && p.deleted[c.GetUID()] {
			return &Unseen{Kind: KindOf(c), Key: client.ObjectKeyFromObject(c), After: p.until.Sub(now), Deleted: true}
		}
	}
	clear(p.deleted) // every one listed is terminating, the others gone
	for name := range p.created {
		var like C
		return &Unseen{Kind: KindOf(like), Key: client.ObjectKey{Namespace: owner.GetNamespace(), Name: name}, After: p.until.Sub(now)}
	}
	delete(children.byOwner, k)
	return nil
}

func (e *expected) note(owner client.Object, add func(*pending)) {
	k := keyOfOwner(owner)
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	sweep(e.byOwner, func(p *pending) time.Time { return p.until }, &e.swept, now)
	p, ok := e.byOwner[k]
	if !ok {
		p = &pending{created: map[string]bool{}, deleted: map[types.UID]bool{}}
		e.byOwner[k] = p
	}
	add(p)
	p.until = now.Add(unseenFor)
}

// gone forgets the child the cache saw deleted: created, it will never be
// listed.
func (e *expected) gone(child metav1.Object) {
	ref := metav1.GetControllerOf(child)
	if ref == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if p, ok := e.byOwner[ownerKey{child.GetNamespace(), ref.Name, ref.UID}]; ok {
		delete(p.created, child.GetName())
		delete(p.deleted, child.GetUID())
	}
}

func keyOfOwner(owner client.Object) ownerKey {
	return ownerKey{owner.GetNamespace(), owner.GetName(), owner.GetUID()}
}
