package conditions

import (
	"errors"
	"fmt"
)

// Waiting is an error for a state the operator or the cluster is working
// through (a Job runs, a pod starts, an old object goes): the pass stops
// there, Progressing says why, and an event of the awaited object brings
// the object back. It is reported, not retried.
type Waiting struct {
	// Reason is the condition reason, Message what is awaited.
	Reason, Message string
	// Unfinished says the spec is being carried out by what is awaited
	// (a Job changing a password): until it is, observedGeneration stays
	// at the last spec that was, as for an Unapplied one, so that
	// `kubectl wait --for=condition=Ready` does not pass on this one.
	Unfinished bool
}

func (w *Waiting) Error() string { return w.Message }

// Wait returns a *Waiting with a formatted message.
func Wait(reason, format string, args ...any) error {
	return &Waiting{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Carrying returns a *Waiting for the work that carries out the spec: its
// generation is not observed until that work is done (Unfinished).
func Carrying(reason, format string, args ...any) error {
	return &Waiting{Reason: reason, Message: fmt.Sprintf(format, args...), Unfinished: true}
}

// Reported tells what err says for the conditions: the reason and message of
// a *Blocked or *Waiting in its chain, and whether a person must act
// (blocked). ok is false for any other error, and for nil.
func Reported(err error) (reason, message string, blocked, ok bool) {
	var b *Blocked
	if errors.As(err, &b) {
		return b.Reason, b.Message, true, true
	}
	var w *Waiting
	if errors.As(err, &w) {
		return w.Reason, w.Message, false, true
	}
	return "", "", false, false
}

// Unreported returns what of err the conditions do not report (Reported):
// a Blocked or Waiting error ends the pass without a retry, since the
// watches bring the object back when a person or the cluster acts. Of
// errors joined together, the others stay and are retried.
func Unreported(err error) error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var rest []error
		for _, e := range joined.Unwrap() {
			rest = append(rest, Unreported(e))
		}
		return errors.Join(rest...)
	}
	if _, _, _, ok := Reported(err); ok {
		return nil
	}
	return err
}
