package conditions

import "fmt"

// Blocked is an error for a state only a person can fix, such as a missing
// Secret or a name taken by a foreign object. A reconciler reports it in its
// conditions instead of retrying: the watches bring the object back when the
// person acts.
type Blocked struct {
	// Reason is the condition reason, Message says what to do.
	Reason, Message string
}

func (b *Blocked) Error() string { return b.Message }

// Block returns a *Blocked with a formatted message.
func Block(reason, format string, args ...any) error {
	return &Blocked{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// ReasonNameConflict is the reason of a child's name taken by an object the
// custom resource does not control.
const ReasonNameConflict = "NameConflict"

// NameConflict returns the Blocked error of an object of kind kind named name
// that stands where a child of the ownerKind ownerName belongs and is not
// its: an operator never takes over an object it did not create.
func NameConflict(kind, name, ownerKind, ownerName string) error {
	return Block(ReasonNameConflict,
		"%s %q exists and does not belong to %s %q: the operator never takes over an object it did not create. "+
			"Delete or rename the %s, or give the %s another name", kind, name, ownerKind, ownerName, kind, ownerKind)
}
