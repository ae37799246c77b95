// Package apply sends desired objects with server-side apply under one field
// manager per operator, and builds the owner references that tie children to
// their custom resource.
//
// Builders return apply configurations (k8s.io/client-go/applyconfigurations),
// which hold only the fields the operator has an opinion on: fields the API
// server defaults or allocates (a Service's nodePort, say) stay out of the
// request and are never fought over.
package apply

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// FieldOwner is the server-side apply field manager of one operator, for
// example "database-operator". Keep it constant: a new name would leave the
// old manager's fields behind.
type FieldOwner string

// Apply sends obj with server-side apply as owner. The operator is the only
// writer of what it applies, so it takes the fields over on conflict.
func (o FieldOwner) Apply(ctx context.Context, c client.Client, obj runtime.ApplyConfiguration) error {
	if err := c.Apply(ctx, obj, client.FieldOwner(o), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %T: %w", obj, err)
	}
	return nil
}

// IgnoreNamespaceTerminating returns nil when err says that nothing can be
// created because the namespace is being deleted, and err otherwise. The
// namespace's deletion takes the custom resource too, whose event ends the
// matter: retrying would only fill the log with errors until then.
func IgnoreNamespaceTerminating(err error) error {
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return nil
	}
	return err
}

// ControllerReference returns the owner reference that makes owner the
// controller of a child: the child is garbage-collected with its owner, and
// deleting the owner in the foreground waits for it.
func ControllerReference(owner client.Object, scheme *runtime.Scheme) (*metav1ac.OwnerReferenceApplyConfiguration, error) {
	gvk, err := apiutil.GVKForObject(owner, scheme)
	if err != nil {
		return nil, err
	}
	return metav1ac.OwnerReference().
		WithAPIVersion(gvk.GroupVersion().String()).
		WithKind(gvk.Kind).
		WithName(owner.GetName()).
		WithUID(owner.GetUID()).
		WithController(true).
		WithBlockOwnerDeletion(true), nil
}

// Get reads the object at key into obj from cached, the operator's cache,
// and when the cache has none, from live, the API server itself. The cache
// holds only the operator's own children (manager.Children): an object of
// the same name that a person or another controller made is not in it, and
// must be seen, and left alone, before an apply would take it over.
func Get(ctx context.Context, cached, live client.Reader, key client.ObjectKey, obj client.Object) error {
	err := cached.Get(ctx, key, obj)
	if !apierrors.IsNotFound(err) {
		return err
	}
	return live.Get(ctx, key, obj)
}
