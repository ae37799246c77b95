package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/conditions"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
)

// ours reports whether obj was made by the operator for m: it carries m's
// UID (uidAnnotation; the objects that must outlive a deletion until the
// backup is done have no owner reference).
func ours(obj client.Object, m *mysqlv1.MySQL) bool {
	return obj.GetAnnotations()[uidAnnotation] == string(m.UID)
}

// kept lists, for m, the objects that must outlive a deletion until the
// backup is done, and that the operator then deletes itself.
func kept(m *mysqlv1.MySQL) []client.Object {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: m.Namespace} }
	return []client.Object{
		&appsv1.Deployment{ObjectMeta: meta(m.Name)},
		&corev1.Service{ObjectMeta: meta(m.Name)},
		&corev1.PersistentVolumeClaim{ObjectMeta: meta(dataPVCName(m.Name))},
		&corev1.Secret{ObjectMeta: meta(credentialsName(m.Name))},
	}
}

// claim reads obj (its name and namespace set) and returns whether it
// exists (apply.Claim): from the cache, which holds m's children only, else
// from the API server; a Secret through secretReads (the cache holds
// Secrets' metadata only). Only m's own objects may be changed: a
// stranger's with the same name is a NameConflict, never adopted; one of an
// earlier MySQL of the same name that is still going is waited for.
func (r *MySQLReconciler) claim(ctx context.Context, m *mysqlv1.MySQL, obj client.Object) (bool, error) {
	cached, live := client.Reader(r.Client), r.APIReader
	if _, secret := obj.(*corev1.Secret); secret {
		cached, live = r.secretReads, nil
	}
	exists, err := apply.Claim(ctx, cached, live, m, obj, func(o client.Object) bool { return ours(o, m) })
	if errors.As(err, new(*conditions.Blocked)) && obj.GetLabels()[mysqlLabel] == m.Name && !obj.GetDeletionTimestamp().IsZero() {
		return true, conditions.Wait(ReasonPreviousObject, "%s %s of an earlier MySQL named %s is still being deleted",
			apply.KindOf(obj), obj.GetName(), m.Name)
	}
	return exists, err
}

// annotate adds values to obj's annotations with a merge patch that
// fails if obj changed since it was read.
func (r *MySQLReconciler) annotate(ctx context.Context, obj client.Object, values map[string]string) error {
	patch := client.MergeFromWithOptions(obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	maps.Copy(a, values)
	obj.SetAnnotations(a)
	return r.Patch(ctx, obj, patch)
}

// deleteKept deletes m's server, Service, data volume and credentials,
// once the backup is done or skipped. Objects that are not m's stay.
func (r *MySQLReconciler) deleteKept(ctx context.Context, m *mysqlv1.MySQL) error {
	for _, obj := range kept(m) {
		err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if !ours(obj, m) || !obj.GetDeletionTimestamp().IsZero() {
			continue
		}
		uid := obj.GetUID()
		err = r.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid})
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %s %s: %w", apply.KindOf(obj), obj.GetName(), err)
		}
	}
	return nil
}
