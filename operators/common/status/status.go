// Package status writes a custom resource's status subresource only when the
// reconcile changed it, so an idle operator sends no writes and triggers no
// watch events.
package status

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-workshops/workshop/operators/common/apply"
)

// PatchIfChanged sends a merge patch of after's status, computed against
// before (a deep copy taken when the object was read), when the two differ.
//
// The patch carries before's resourceVersion: a merge patch replaces lists
// whole, so a reconcile that started from a stale copy (the cache lags the
// writes of the previous reconcile) would otherwise put back the conditions
// the previous one had just changed. A stale patch fails with a conflict
// instead, and the reconcile runs again on fresh data.
func PatchIfChanged(ctx context.Context, c client.Client, before, after client.Object) error {
	was, err := statusOf(before)
	if err != nil {
		return err
	}
	is, err := statusOf(after)
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(was, is) {
		return nil
	}
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	if err := c.Status().Patch(ctx, after, patch); err != nil {
		return fmt.Errorf("writing status of %s: %w", client.ObjectKeyFromObject(after), err)
	}
	return nil
}

// Finish ends a reconcile that worked on after, a copy of before: it writes
// the status when it changed and returns err joined with that write's error.
// Two errors are dropped, as nothing is wrong: a conflict on the status write
// (the object changed since it was read, and that change's watch event runs
// the reconcile again, on fresh data), and an error that only says the
// namespace is being deleted (see apply.IgnoreNamespaceTerminating).
// reconciler.Run calls it last, with the pass's error.
func Finish(ctx context.Context, c client.Client, before, after client.Object, err error) error {
	werr := PatchIfChanged(ctx, c, before, after)
	if apierrors.IsConflict(werr) {
		werr = nil
	}
	return apply.IgnoreNamespaceTerminating(errors.Join(err, werr))
}

func statusOf(obj client.Object) (any, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("reading status of %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	return u["status"], nil
}
