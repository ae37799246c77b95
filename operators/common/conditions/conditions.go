// Package conditions holds the condition types every operator reports, the
// errors a pass ends with when a person must act (Blocked) or something is
// awaited (Waiting), and Summarize, the one way Ready, Progressing and
// Degraded are set: together, every pass, from what the pass Observed.
//
// Ready is the condition `kubectl wait --for=condition=Ready` waits for;
// Progressing says the operator is still working towards the spec; Degraded
// says something needs a person's attention.
package conditions

import (
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Condition types shared by all operators.
const (
	Ready       = "Ready"
	Progressing = "Progressing"
	Degraded    = "Degraded"
)

// Set records a condition in conds, stamped with the generation of the spec it
// describes. LastTransitionTime only moves when the status changes, so setting
// the same condition again is not a change. It returns whether conds changed.
func Set(conds *[]metav1.Condition, generation int64, typ string, status metav1.ConditionStatus, reason, format string, args ...any) bool {
	return meta.SetStatusCondition(conds, metav1.Condition{
		Type:               typ,
		Status:             status,
		ObservedGeneration: generation,
		Reason:             reason,
		Message:            fmt.Sprintf(format, args...),
	})
}

// Stamp marks conds, but those of the types except, as describing
// generation.
func Stamp(conds []metav1.Condition, generation int64, except ...string) {
	for i := range conds {
		if !slices.Contains(except, conds[i].Type) {
			conds[i].ObservedGeneration = generation
		}
	}
}

// IsTrue reports whether condition typ is present and True.
func IsTrue(conds []metav1.Condition, typ string) bool {
	return meta.IsStatusConditionTrue(conds, typ)
}

// Told remembers what events told a person about each object, so that each
// is told once however many passes see it: the Degraded reason a Warning
// last told (the status says it all along), and the outcomes told Once (a
// Job's). It remembers in memory because the object a pass starts from
// comes from a cache that may not have seen the previous pass's status
// write yet; after a restart it trusts that status. Its zero value is ready
// to use; a reconciler holds one, and forgets each object once it is gone.
type Told struct {
	mu      sync.Mutex
	reasons map[types.NamespacedName]toldReason
	once    map[types.NamespacedName]toldOnce
}

// toldOnce is what was told Once about the object of uid.
type toldOnce struct {
	uid  types.UID
	told map[string]bool
}

// Once reports whether what (a Job's outcome, by the Job's UID; a spec's
// warning, by its generation) is told about obj for the first time, and
// remembers that it is.
func (t *Told) Once(obj metav1.Object, what string) bool {
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	t.mu.Lock()
	defer t.mu.Unlock()
	o, known := t.once[key]
	if !known || o.uid != obj.GetUID() {
		o = toldOnce{uid: obj.GetUID(), told: map[string]bool{}}
		if t.once == nil {
			t.once = map[types.NamespacedName]toldOnce{}
		}
		t.once[key] = o
	}
	if o.told[what] {
		return false
	}
	o.told[what] = true
	return true
}

// toldReason is the reason last told about the object of uid: a new object
// of the same name starts afresh.
type toldReason struct {
	uid    types.UID
	reason string
}

// Degraded returns after's Degraded condition when it is True for a reason
// not yet told about obj (before is the status the pass started from): the
// moment for a Warning event. Messages may change from pass to pass (a
// restart count) without a new event; once Degraded is False, the next
// problem is told again.
func (t *Told) Degraded(obj metav1.Object, before, after []metav1.Condition) (metav1.Condition, bool) {
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	t.mu.Lock()
	defer t.mu.Unlock()
	d := meta.FindStatusCondition(after, Degraded)
	if d == nil || d.Status != metav1.ConditionTrue {
		delete(t.reasons, key)
		return metav1.Condition{}, false
	}
	last, known := t.reasons[key]
	known = known && last.uid == obj.GetUID()
	told := last.reason
	if t.reasons == nil {
		t.reasons = map[types.NamespacedName]toldReason{}
	}
	t.reasons[key] = toldReason{uid: obj.GetUID(), reason: d.Reason}
	if !known {
		was := meta.FindStatusCondition(before, Degraded)
		told, known = "", was != nil && was.Status == metav1.ConditionTrue
		if known {
			told = was.Reason
		}
	}
	if known && told == d.Reason {
		return metav1.Condition{}, false
	}
	return *d, true
}

// Forget drops what was told about the object at key, once it is gone.
func (t *Told) Forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.reasons, key)
	delete(t.once, key)
}
