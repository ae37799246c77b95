package expectations

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

var key = types.NamespacedName{Namespace: "default", Name: "gordoncluster"}

func TestCreations(t *testing.T) {
	e := New()
	if !e.Satisfied(key) {
		t.Fatal("nothing expected, yet not satisfied")
	}
	e.ExpectCreations(key, 2)
	e.CreationObserved(key)
	if e.Satisfied(key) {
		t.Fatal("satisfied with one of two creations observed")
	}
	e.CreationObserved(key)
	if !e.Satisfied(key) {
		t.Fatal("not satisfied after both creations were observed")
	}
	// Pods observed with nothing expected (a restart, another writer) do
	// not bank credit for later creations.
	e.CreationObserved(key)
	e.ExpectCreations(key, 1)
	if e.Satisfied(key) {
		t.Fatal("an earlier observation satisfied a later expectation")
	}
	// Nor while a deletion is expected: the creation seen then is no
	// debt, and once the deletion is seen, nothing is awaited.
	e.Forget(key)
	e.ExpectDeletion(key, "pod-1")
	e.CreationObserved(key)
	e.DeletionObserved(key, "pod-1")
	if !e.Satisfied(key) {
		t.Fatal("a creation observed while only a deletion was expected left something awaited")
	}
}

func TestDeletionsAreCountedOncePerPod(t *testing.T) {
	e := New()
	e.ExpectDeletion(key, "a")
	e.ExpectDeletion(key, "b")
	// The cache shows pod a terminating, then gone: two events, one pod.
	e.DeletionObserved(key, "a")
	e.DeletionObserved(key, "a")
	if e.Satisfied(key) {
		t.Fatal("satisfied while pod b's deletion is unseen")
	}
	e.DeletionObserved(key, "b")
	if !e.Satisfied(key) {
		t.Fatal("not satisfied after both deletions were observed")
	}
}

func TestExpiry(t *testing.T) {
	e := New()
	now := time.Unix(0, 0)
	e.now = func() time.Time { return now }
	e.ExpectCreations(key, 1)
	now = now.Add(TTL)
	if e.Satisfied(key) {
		t.Fatal("expired at exactly TTL")
	}
	now = now.Add(time.Second)
	if !e.Satisfied(key) {
		t.Fatal("a lost event holds the controller back past TTL")
	}
}

func TestForget(t *testing.T) {
	e := New()
	e.ExpectCreations(key, 3)
	e.Forget(key)
	if !e.Satisfied(key) {
		t.Fatal("forgotten expectations still hold")
	}
}
