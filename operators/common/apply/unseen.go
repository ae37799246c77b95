package apply

import (
	"fmt"
	"maps"
	"reflect"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Unseen is the error Get and CreateIfAbsent return, without a request,
// for an object this process created that its cache does not show yet:
// it exists, it is the operator's own, and its creation's watch event is
// on its way. A pass that needs it ends there (reconciler.Run ends it
// without a status write); that event brings the object back, or, should
// it never come, the pass runs again After. Reading it from the API server
// instead cost a read per object whose next pass came at once, each on the
// kind's client limiter, the one that bounds make bench's runs.
type Unseen struct {
	Kind  string
	Key   client.ObjectKey
	After time.Duration
	// Deleted: this process deleted it, and its cache still shows it as
	// it was (ChildrenShown).
	Deleted bool
}

func (u *Unseen) Error() string {
	if u.Deleted {
		return fmt.Sprintf("%s %s, deleted by this operator, is still in its cache", u.Kind, u.Key)
	}
	return fmt.Sprintf("%s %s, created by this operator, is not in its cache yet", u.Kind, u.Key)
}

// unseenFor is how long a creation is believed without the cache showing
// it: far longer than a watch event takes, even with a thousand objects
// created at once.
const unseenFor = 30 * time.Second

// created remembers, by kind and key, the objects this process created
// that its cache has not shown yet (FollowCache forgets one when the cache
// shows it, or its deletion), and when each memory ends. It holds an
// object for the moment between its creation and its watch event.
type created struct {
	mu    sync.Mutex
	until map[TypedKey]time.Time
	// swept is when the memories that ended were last dropped: those of
	// kinds FollowCache does not follow, which nothing forgets.
	swept time.Time
}

// TypedKey names an object by its Go type (the operators share a process
// in tests, and a name is unique within a kind only) and its namespace and
// name: what a memory of this module keeps an object by.
type TypedKey struct {
	kind reflect.Type
	key  client.ObjectKey
}

// KeyOf names the object of like's type at key.
func KeyOf(like client.Object, key client.ObjectKey) TypedKey {
	return TypedKey{reflect.TypeOf(like), key}
}

var unseen = &created{until: map[TypedKey]time.Time{}}

// creating records obj as created by this process before the request
// that creates it is sent, since the cache's event for it can come before
// the request's answer, and returns what to call with the request's
// outcome: one that failed forgets it.
func (c *created) creating(obj client.Object) func(ok bool) {
	k := KeyOf(obj, client.ObjectKeyFromObject(obj))
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	sweep(c.until, func(until time.Time) time.Time { return until }, &c.swept, now)
	c.until[k] = now.Add(unseenFor)
	return func(ok bool) {
		if !ok {
			c.forget(k)
		}
	}
}

// sweep drops the memories of m that ended by now (until says when each
// ends), once unseenFor has passed since the last sweep (swept): those of
// objects no pass came back to, which nothing else forgets.
func sweep[K comparable, V any](m map[K]V, until func(V) time.Time, swept *time.Time, now time.Time) {
	if now.Sub(*swept) > unseenFor {
		maps.DeleteFunc(m, func(_ K, v V) bool { return !now.Before(until(v)) })
		*swept = now
	}
}

func (c *created) forget(k TypedKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.until, k)
}

// check returns an *Unseen for obj (its kind, and the key given) when this
// process created it and the cache has not shown it yet, and nil otherwise.
func (c *created) check(key client.ObjectKey, obj client.Object) error {
	k := KeyOf(obj, key)
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok := c.until[k]
	if !ok {
		return nil
	}
	left := time.Until(until)
	if left <= 0 {
		delete(c.until, k)
		return nil
	}
	return &Unseen{Kind: KindOf(obj), Key: key, After: left}
}
