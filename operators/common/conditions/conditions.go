// Package conditions holds the condition types every operator reports and a
// setter that stamps the generation it observed.
//
// Ready is the condition `kubectl wait --for=condition=Ready` waits for;
// Progressing says the operator is still working towards the spec; Degraded
// says something needs a person's attention.
package conditions

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// IsTrue reports whether condition typ is present and True.
func IsTrue(conds []metav1.Condition, typ string) bool {
	return meta.IsStatusConditionTrue(conds, typ)
}

// NewlyDegraded returns after's Degraded condition when it is True and
// before's was not, or was for another reason: the moment to tell a person,
// once, with an Event (the status says it all along). Messages may change
// from pass to pass (a restart count) without a new Event.
func NewlyDegraded(before, after []metav1.Condition) (metav1.Condition, bool) {
	d := meta.FindStatusCondition(after, Degraded)
	if d == nil || d.Status != metav1.ConditionTrue {
		return metav1.Condition{}, false
	}
	if was := meta.FindStatusCondition(before, Degraded); was != nil && was.Status == metav1.ConditionTrue && was.Reason == d.Reason {
		return metav1.Condition{}, false
	}
	return *d, true
}
