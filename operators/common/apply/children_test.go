package apply

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ChildrenShown holds a pass while the cache lacks a child this process
// created or still shows one it deleted as it was, and lets it go once the
// cache shows them all; what one owner waits for is not another's.
func TestChildrenShown(t *testing.T) {
	Reset()
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g", UID: "g1"}}
	pod := func(name string, uid types.UID) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid}}
		p.OwnerReferences = []metav1.OwnerReference{{Name: owner.Name, UID: owner.UID, Controller: new(true)}}
		return p
	}
	a, b, old := pod("g-a", "a"), pod("g-b", "b"), pod("g-old", "old")
	unseenOf := func(what string, listed []*corev1.Pod) *Unseen {
		t.Helper()
		err := ChildrenShown(owner, listed)
		var u *Unseen
		if err != nil && !errors.As(err, &u) {
			t.Fatalf("%s: %v, want an *Unseen or nil", what, err)
		}
		return u
	}

	if u := unseenOf("nothing written", nil); u != nil {
		t.Fatalf("nothing written: %v", u)
	}
	CreatedChild(owner, a)
	CreatedChild(owner, b)
	DeletedChild(owner, old)
	if u := unseenOf("a listed, b not", []*corev1.Pod{a, old}); u == nil || !u.Deleted {
		t.Fatalf("a listed, b not, old as it was: %v, want the deleted old", u)
	} else if u.Key.Name != "g-old" || u.Kind != "Pod" || u.After <= 0 || u.After > unseenFor {
		t.Errorf("unseen %+v, want Pod g-old, deleted, within %v", u, unseenFor)
	}
	terminating := old.DeepCopy()
	terminating.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	if u := unseenOf("old terminating, b not listed", []*corev1.Pod{a, terminating}); u == nil || u.Key.Name != "g-b" || u.Deleted {
		t.Fatalf("old terminating, b not listed: %v, want the created g-b", u)
	}
	if u := unseenOf("every one shown", []*corev1.Pod{a, b}); u != nil {
		t.Fatalf("every one shown: %v", u)
	}
	// Shown once is forgotten: the cache may drop a pod another hand
	// deletes, and the pass must not wait for it again.
	if u := unseenOf("shown before, gone now", nil); u != nil {
		t.Errorf("shown before, gone now: %v", u)
	}

	// Another owner of the same name (made again) waits for nothing of
	// the first's.
	CreatedChild(owner, a)
	again := owner.DeepCopy()
	again.UID = "g2"
	if err := ChildrenShown(again, []*corev1.Pod{}); err != nil {
		t.Errorf("the owner made again under its name: %v", err)
	}
	// A child the cache saw deleted before it saw it listed is not awaited.
	children.gone(a)
	if u := unseenOf("seen deleted", nil); u != nil {
		t.Errorf("seen deleted: %v", u)
	}
	// A memory ends after unseenFor.
	CreatedChild(owner, b)
	children.byOwner[keyOfOwner(owner)].until = time.Now()
	if u := unseenOf("expired", nil); u != nil {
		t.Errorf("expired: %v", u)
	}
}

// The memories of owners no pass came back to are dropped by the next note
// once unseenFor has passed since the last sweep, and only those that
// ended.
func TestChildrenSweep(t *testing.T) {
	Reset()
	owner := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)}}
	}
	gone, live := owner("gone"), owner("live")
	child := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	held := func(o *corev1.ConfigMap) bool {
		_, ok := children.byOwner[keyOfOwner(o)]
		return ok
	}
	CreatedChild(gone, child)
	children.byOwner[keyOfOwner(gone)].until = time.Now() // ended
	CreatedChild(live, child)
	if !held(gone) {
		t.Error("swept sooner than unseenFor after the last sweep")
	}
	children.swept = time.Now().Add(-unseenFor - time.Second)
	CreatedChild(live, child)
	if held(gone) {
		t.Error("a memory that ended outlived the sweep")
	}
	if !held(live) {
		t.Error("the sweep dropped a memory that has not ended")
	}
}
