// Package controller turns a Database into its Pod, its NodePort Service and,
// for mysql, the Secret with its root password.
package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/manager"
	"github.com/operator-workshops/workshop/operators/common/pods"
	"github.com/operator-workshops/workshop/operators/common/reconciler"
	"github.com/operator-workshops/workshop/operators/common/secrets"
	dbv1 "github.com/operator-workshops/workshop/operators/database/api/v1"
)

// DatabaseReconciler reconciles Databases.
type DatabaseReconciler struct {
	client.Client
	// APIReader reads from the API server what the cache leaves out: a Pod
	// or Service of a Database's name that the operator did not create.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Secrets says which Secrets of its namespace a Database may name.
	Secrets secrets.Policy
	// Images overrides the default image of a type for every Database that
	// does not name its own (for example local stand-ins of mongo or mysql).
	Images map[dbv1.Type]string
	// Requests are what each Database's server requests of its node.
	Requests pods.Requests

	told conditions.Told
	// secretReads reads Secrets, of which the cache holds the metadata
	// only, from the API server when they changed.
	secretReads *secrets.Reader
}

// +kubebuilder:rbac:groups=zalando.org,resources=databases,verbs=list;watch
// +kubebuilder:rbac:groups=zalando.org,resources=databases/status,verbs=patch
// +kubebuilder:rbac:groups=zalando.org,resources=databases/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// Leader election (--leader-elect), in the operator's own namespace only: its
// Lease, and the Event that says which replica leads.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=database-operator-system
// +kubebuilder:rbac:groups="",resources=events,verbs=create,namespace=database-operator-system

// Reconcile brings the children of one Database in line with its spec, in
// the shape every operator of the workshop shares. A Database needs no
// finalizer: its children carry owner references, and the garbage
// collector deletes them with it.
func (r *DatabaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return reconciler.Run(ctx, req, reconciler.Steps[*dbv1.Database, observed]{
		Client: r.Client, Recorder: r.Recorder, Told: &r.told,
		Normal: r.reconcileChildren,
		Forget: func(key client.ObjectKey) {
			r.secretReads.Forget(client.ObjectKey{Namespace: key.Namespace, Name: key.Name + generatedSecretSuffix})
		},
		Settling:  func(o observed) bool { return o.created },
		Summarize: summarize,
	})
}

// Cache narrows the operator's cache to its own Pods and Services, with the
// app.kubernetes.io/managed-by label, instead of every Pod and Service of the
// cluster. Secrets are watched for their metadata only (a Database may name
// any Secret of its namespace), so the cache holds no Secret's data: a
// Secret is read from the API server when a Database needs it, and kept
// (secrets.Reader) only while the Secret is unchanged and a Database names
// or owns it.
func Cache() map[client.Object]cache.ByObject {
	return manager.Children(FieldOwner, &corev1.Pod{}, &corev1.Service{})
}

// SetupWithManager watches Databases, their children (a child's change
// ahead of new Databases, reconciler.Owner), and the Secrets they name, so
// that every change is handled as it happens, without polling.
func (r *DatabaseReconciler) SetupWithManager(mgr ctrl.Manager) error {
	reads, named, err := secrets.Named(mgr, r.APIReader, &dbv1.Database{}, &dbv1.DatabaseList{}, func(o client.Object) string {
		return o.(*dbv1.Database).Spec.RootPasswordSecretRef.SecretName()
	})
	if err != nil {
		return err
	}
	r.secretReads = reads
	owned := reconciler.Owner(mgr, &dbv1.Database{})
	return reconciler.Controller(mgr, &dbv1.Database{}).
		Watches(&corev1.Pod{}, owned).
		Watches(&corev1.Service{}, owned).
		Watches(&corev1.Secret{}, owned, builder.OnlyMetadata).
		Watches(&corev1.Secret{}, named, builder.OnlyMetadata).
		Complete(r)
}

var owner = apply.FieldOwner(FieldOwner)
