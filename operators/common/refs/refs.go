// Package refs lets a controller react to objects its custom resources name
// in their spec, such as a Secret holding a password: the Secret may be
// created or changed after the custom resource, and the custom resource must
// be reconciled again when it is.
package refs

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Index indexes the custom resources of obj's type under field by the names
// names returns, and returns a handler for the named kind (for Watches) that
// enqueues the custom resources, listed into a copy of list, that name the
// object in its namespace.
func Index(mgr ctrl.Manager, obj client.Object, list client.ObjectList, field string, names func(client.Object) []string) (handler.EventHandler, error) {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), obj, field, names); err != nil {
		return nil, err
	}
	c := mgr.GetClient()
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, named client.Object) []reconcile.Request {
		l := list.DeepCopyObject().(client.ObjectList)
		if err := c.List(ctx, l, client.InNamespace(named.GetNamespace()), client.MatchingFields{field: named.GetName()}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing the objects that name another", "field", field, "name", named.GetName())
			return nil
		}
		var reqs []reconcile.Request
		_ = meta.EachListItem(l, func(o runtime.Object) error {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o.(client.Object))})
			return nil
		})
		return reqs
	}), nil
}
