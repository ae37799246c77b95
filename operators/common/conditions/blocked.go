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
