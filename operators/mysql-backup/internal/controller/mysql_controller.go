// Package controller turns a MySQL into its server, volumes and Jobs:
// restore from the last backup on create, back up before delete, follow
// password changes. No step may lose data: a failed backup keeps the MySQL.
package controller

import (
	"context"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/manager"
	"github.com/operator-workshops/workshop/operators/common/pods"
	"github.com/operator-workshops/workshop/operators/common/reconciler"
	"github.com/operator-workshops/workshop/operators/common/secrets"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
)

// MySQLReconciler reconciles MySQLs.
type MySQLReconciler struct {
	client.Client
	// APIReader reads around the cache.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// JobDeadline is how long a backup, restore or password Job may run
	// before it counts as failed: a backup stuck on a volume that never
	// binds must not hold a deletion without saying so.
	JobDeadline time.Duration
	// ServerRequests are what each MySQL's server requests of its node,
	// JobRequests what each of its Jobs' pods requests.
	ServerRequests, JobRequests pods.Requests
	// Secrets says which Secrets of its namespace a MySQL may name.
	Secrets secrets.Policy
	// told is the Degraded reason each MySQL's last Warning event told,
	// and the restore and backup Jobs whose outcome an Event told: the pass
	// after the one that saw the Job done may read the MySQL from a cache
	// that has not seen that pass's status (or finalizer removal) yet, and
	// would tell it again (an Event is an API write).
	told conditions.Told
	// secretReads reads the credentials Secrets and those the MySQLs name,
	// from the API server only when the cache shows them changed. The
	// credentials Secret records which password the server has; deciding
	// from a stale copy of it would run a password Job twice.
	secretReads *secrets.Reader
}

// DefaultJobDeadline is JobDeadline unless the operator's flag says otherwise.
const DefaultJobDeadline = time.Hour

// DefaultServerRequests and DefaultJobRequests are ServerRequests and
// JobRequests unless the operator's flags say otherwise
// (--server-cpu-request, --job-memory-request, ...).
var (
	DefaultServerRequests = pods.NewRequests("100m", "256Mi")
	DefaultJobRequests    = pods.NewRequests("50m", "64Mi")
)

var owner = apply.FieldOwner(FieldOwner)

// +kubebuilder:rbac:groups=otus.homework,resources=mysqls,verbs=list;watch;patch
// +kubebuilder:rbac:groups=otus.homework,resources=mysqls/status,verbs=patch
// +kubebuilder:rbac:groups=otus.homework,resources=mysqls/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;services,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;delete
// Pods: create only by a server-side dry run, which asks whether the API
// server admits the server's new pod before Recreate deletes the running one;
// patch to label the server's pods for its Service once restored; delete to
// let a data volume deleted before any restore finished on it go.
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch;create;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// Leader election (--leader-elect), in the operator's own namespace only: its
// Lease, and the Event that says which replica leads.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=mysql-backup-operator-system
// +kubebuilder:rbac:groups="",resources=events,verbs=create,namespace=mysql-backup-operator-system

// Reconcile brings one MySQL towards its spec, or through its deletion, in
// the shape every operator of the workshop shares.
func (r *MySQLReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return reconciler.Run(ctx, req, reconciler.Steps[*mysqlv1.MySQL, observed]{
		Client: r.Client, Recorder: r.Recorder, Told: &r.told,
		Forget:    r.forget,
		Normal:    r.reconcileChildren,
		Summarize: summarize,
		Deletion: &reconciler.Deletion[*mysqlv1.MySQL, observed]{
			Finalizer: finalizer, Run: r.finalize, Summarize: summarizeDelete,
		},
	})
}

// forget drops what the operator remembers of the MySQL key, once it is
// gone.
func (r *MySQLReconciler) forget(key client.ObjectKey) {
	r.secretReads.Forget(client.ObjectKey{Namespace: key.Namespace, Name: credentialsName(key.Name)})
}

// Cache narrows the operator's cache to its own children, with the
// app.kubernetes.io/managed-by label, instead of every Deployment,
// ReplicaSet (the server's pods are found through its Deployment's), Service,
// volume, Job and Pod of the cluster. Secrets are watched for their metadata
// only: the cache holds no password, and the Secrets a MySQL needs are read
// through secretReads. Of what it creates but never applies again, the cache
// keeps what a pass reads: of a pod, its metadata and status; of a
// ReplicaSet, its metadata (which Deployment controls it); of a Job, its
// metadata and status; their specs, most of their size, are dropped
// (manager.Trim).
func Cache() map[client.Object]cache.ByObject {
	byObject := manager.Children(FieldOwner, &appsv1.Deployment{}, &appsv1.ReplicaSet{}, &corev1.Service{}, &corev1.PersistentVolumeClaim{},
		&batchv1.Job{}, &corev1.Pod{})
	manager.Trim(byObject, pods.KeepStatus)
	manager.Trim(byObject, func(s *appsv1.ReplicaSet) { *s = appsv1.ReplicaSet{ObjectMeta: s.ObjectMeta} })
	manager.Trim(byObject, func(j *batchv1.Job) { j.Spec = batchv1.JobSpec{} })
	return byObject
}

// SetupWithManager watches MySQLs and every object labelled with a MySQL's
// name: the server and its Service, volumes and credentials (which carry no
// owner reference, see finalize), the Jobs, and the server's pods,
// whose readiness starts the restore; a child's change goes ahead of new
// MySQLs (reconciler.Progress). It also watches the Secrets the passwords
// come from.
func (r *MySQLReconciler) SetupWithManager(mgr ctrl.Manager) error {
	// The server's ReplicaSets and pods, and the Jobs' pods, are listed by
	// their controller (serverPods, report).
	if err := manager.IndexControllers(context.Background(), mgr.GetFieldIndexer(), &appsv1.ReplicaSet{}, &corev1.Pod{}); err != nil {
		return err
	}
	reads, named, err := secrets.Named(mgr, r.APIReader, &mysqlv1.MySQL{}, &mysqlv1.MySQLList{}, func(o client.Object) string {
		return o.(*mysqlv1.MySQL).Spec.PasswordSecretRef.SecretName()
	})
	if err != nil {
		return err
	}
	r.secretReads = reads
	b := reconciler.Controller(mgr, &mysqlv1.MySQL{})
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &corev1.PersistentVolumeClaim{},
		&batchv1.Job{}, &corev1.Pod{}} {
		b = b.Watches(obj, reconciler.Progress(handler.EnqueueRequestsFromMapFunc(mySQLOf)))
	}
	return b.Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(credentialsOf), builder.OnlyMetadata).
		Watches(&corev1.Secret{}, named, builder.OnlyMetadata).
		Complete(r)
}

// mySQLOf maps a child to its MySQL by the child's label.
func mySQLOf(_ context.Context, o client.Object) []reconcile.Request {
	name, ok := o.GetLabels()[mysqlLabel]
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
}

// credentialsOf maps a Secret to its MySQL: by its label, else to the MySQL
// whose credentials would have its name, so that a stranger's Secret that
// stood in a MySQL's way (NameConflict) brings the MySQL back when it goes.
// (A stranger's object of another kind is outside the cache: the
// NameConflict's recheck sees it gone.)
func credentialsOf(ctx context.Context, o client.Object) []reconcile.Request {
	if reqs := mySQLOf(ctx, o); reqs != nil {
		return reqs
	}
	name, ok := strings.CutSuffix(o.GetName(), credentialsName(""))
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
}
