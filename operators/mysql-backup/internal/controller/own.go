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
	if !errors.As(err, new(*conditions.Blocked)) {
		return exists, err
	}
	if obj.GetLabels()[mysqlLabel] == m.Name && !obj.GetDeletionTimestamp().IsZero() {
		return true, conditions.Wait(ReasonPreviousObject, "%s %s of an earlier MySQL named %s is still being deleted",
			apply.KindOf(obj), obj.GetName(), m.Name)
	}
	if advice := keepAdvice(obj, m); advice != "" {
		return true, conditions.NameConflictAdvising(apply.KindOf(obj), obj.GetName(), "MySQL", m.Name, advice)
	}
	return exists, err
}

// keepAdvice is what a NameConflict tells a person of obj, a data volume or
// credentials Secret in m's way that may hold data, or the password data
// was written with: what it holds, and how to keep it or adopt it, never to
// delete it. "" for the other kinds (a Service or a Deployment holds no
// data). One of an earlier MySQL of the same name (its label, and a UID
// not m's: its deletion did not finish, say its finalizer was removed by
// hand) can be adopted by m, with the annotation the operator knows its own
// objects by: the data volume and the credentials together, since the data
// needs that password.
func keepAdvice(obj client.Object, m *mysqlv1.MySQL) string {
	var holds, kind string
	switch obj.(type) {
	case *corev1.PersistentVolumeClaim:
		holds, kind = "data", "pvc"
	case *corev1.Secret:
		holds, kind = "credentials", "secret"
	default:
		return ""
	}
	earlier := obj.GetAnnotations()[uidAnnotation]
	if obj.GetLabels()[mysqlLabel] != m.Name || earlier == "" {
		return fmt.Sprintf("It may hold someone's %s: keep it, and give the MySQL another name", holds)
	}
	what := "the data of"
	if kind == "secret" {
		what = fmt.Sprintf("the root password of the data volume %s, the password the data was written with, of", dataPVCName(m.Name))
	}
	adopt := func(kind, name string) string {
		return fmt.Sprintf("`kubectl annotate %s %s %s=%s --overwrite`", kind, name, uidAnnotation, m.UID)
	}
	return fmt.Sprintf("It holds %s an earlier MySQL named %s (UID %s), whose deletion did not finish (the operator removes it only after "+
		"the backup; was the MySQL's finalizer removed by hand?). Keep it. To run this MySQL on that data, adopt the data volume "+
		"and the credentials together: %s and %s (each that is still there); or give this MySQL another name",
		what, m.Name, earlier, adopt("secret", credentialsName(m.Name)), adopt("pvc", dataPVCName(m.Name)))
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
