package conditions

import (
	"errors"
	"fmt"
	"time"
)

// Blocked is an error for a state only a person can fix, such as a missing
// Secret or a name taken by a foreign object. A reconciler reports it in its
// conditions instead of retrying: the watches bring the object back when the
// person acts.
type Blocked struct {
	// Reason is the condition reason, Message says what to do.
	Reason, Message string
	// Recheck, when set, is how soon to look again: for a cause no watch
	// of the operator sees go (an object outside its cache).
	Recheck time.Duration
	// Unapplied says the spec cannot be carried out as it is (a refused
	// child, a version etcd cannot move to): observedGeneration stays at
	// the last spec that was.
	Unapplied bool
}

// IsUnapplied reports whether err is, or holds, a *Blocked whose spec
// cannot be carried out, or a *Waiting for the work that carries it out.
func IsUnapplied(err error) bool {
	var b *Blocked
	var w *Waiting
	return errors.As(err, &b) && b.Unapplied || errors.As(err, &w) && w.Unfinished
}

func (b *Blocked) Error() string { return b.Message }

// Block returns a *Blocked with a formatted message.
func Block(reason, format string, args ...any) error {
	return &Blocked{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Recheck returns how soon to look again at a pass that ended with err: a
// Blocked error's Recheck, else 0.
func Recheck(err error) time.Duration {
	var b *Blocked
	if errors.As(err, &b) {
		return b.Recheck
	}
	return 0
}

// NameConflictRecheck is how often a custom resource blocked by a
// NameConflict looks again: the stranger's object is outside the operator's
// cache, which holds its own children only, so no watch sees it go. One
// read of the API server per blocked resource and period.
const NameConflictRecheck = 5 * time.Second

// ReasonNameConflict is the reason of a child's name taken by an object the
// custom resource does not control.
const ReasonNameConflict = "NameConflict"

// NameConflict returns the Blocked error of an object of kind kind named name
// that stands where a child of the ownerKind ownerName belongs and is not
// its: an operator never takes over an object it did not create.
// Gone, it stops standing in the way within NameConflictRecheck.
func NameConflict(kind, name, ownerKind, ownerName string) error {
	return NameConflictAdvising(kind, name, ownerKind, ownerName,
		fmt.Sprintf("Delete or rename the %s, or give the %s another name", kind, ownerKind))
}

// NameConflictAdvising returns NameConflict's error with advice of its own, for an
// object that must not be deleted lightly (a volume may hold someone's
// data).
func NameConflictAdvising(kind, name, ownerKind, ownerName, advice string) error {
	return &Blocked{Reason: ReasonNameConflict, Recheck: NameConflictRecheck, Message: fmt.Sprintf(
		"%s %q exists and does not belong to %s %q: the operator never takes over an object it did not create. %s",
		kind, name, ownerKind, ownerName, advice)}
}
