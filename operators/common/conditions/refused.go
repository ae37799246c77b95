package conditions

import (
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ReasonRefused is the reason of a child the API server refused: its spec is
// invalid, an admission plugin (Pod Security, a quota, a webhook) or the
// operator's RBAC forbids it, or it is too large. Retrying the same request
// changes nothing: a person must change the custom resource, the namespace
// or the operator's rights.
const ReasonRefused = "Refused"

// RefusedRecheck is how often a custom resource whose child was refused
// looks again: the cause may lie outside it (a namespace's Pod Security
// level, a quota, a Role), where no watch of the operator sees it change. A
// change of the custom resource itself brings it back at once.
const RefusedRecheck = time.Minute

// Refused returns err with an API server's refusal in it turned into a
// *Blocked of ReasonRefused, which says the server's own message: a pass
// reports it in its conditions (Degraded) and looks again after
// RefusedRecheck, instead of retrying in silence. Any other error is
// returned as it is. A refusal because the namespace is being deleted is
// not one: the object goes with it.
func Refused(err error) error {
	msg, ok := Refusal(err)
	if !ok {
		return err
	}
	return &Blocked{Reason: ReasonRefused, Recheck: RefusedRecheck, Unapplied: true, Message: "the API server refuses it: " + msg}
}

// Refusal returns the API server's message of the first refusal in err's
// tree, joined errors included, and whether there is one (Refused says
// which errors are).
func Refusal(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			if msg, ok := Refusal(e); ok {
				return msg, true
			}
		}
		return "", false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return "", false
	}
	switch {
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err), apierrors.IsRequestEntityTooLargeError(err):
		return status.Status().Message, true
	}
	return "", false
}
