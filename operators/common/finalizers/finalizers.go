// Package finalizers adds and removes an operator's finalizer with a patch
// that touches nothing else of the object.
//
// The patch carries the resourceVersion it was computed from, as the status
// patch does (package status): a merge patch replaces the finalizer list
// whole, so one computed from a stale copy would put back a finalizer
// another controller had just removed, or drop one it had just added. A
// stale patch fails with a conflict instead.
package finalizers

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Ensure adds finalizer to obj unless it is there or obj is being deleted.
// It returns true when it patched the object: the patch triggers a new
// reconcile, so the caller returns early.
func Ensure(ctx context.Context, c client.Client, obj client.Object, finalizer string) (bool, error) {
	if !obj.GetDeletionTimestamp().IsZero() || controllerutil.ContainsFinalizer(obj, finalizer) {
		return false, nil
	}
	before := obj.DeepCopyObject().(client.Object)
	controllerutil.AddFinalizer(obj, finalizer)
	if err := c.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, fmt.Errorf("adding finalizer %s to %s: %w", finalizer, client.ObjectKeyFromObject(obj), err)
	}
	return true, nil
}

// Remove takes finalizer off obj, letting its deletion finish.
func Remove(ctx context.Context, c client.Client, obj client.Object, finalizer string) error {
	if !controllerutil.ContainsFinalizer(obj, finalizer) {
		return nil
	}
	before := obj.DeepCopyObject().(client.Object)
	controllerutil.RemoveFinalizer(obj, finalizer)
	if err := c.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("removing finalizer %s from %s: %w", finalizer, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}
