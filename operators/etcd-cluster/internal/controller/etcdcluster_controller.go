// Package controller turns an EtcdCluster into etcd members: a pod and a
// volume each, a headless Service their peers find them by and a client
// Service. Every membership change goes through etcd's own API, one at a
// time, as package membership plans it.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/manager"
	"github.com/operator-workshops/workshop/operators/common/pods"
	"github.com/operator-workshops/workshop/operators/common/reconciler"
	etcdv1 "github.com/operator-workshops/workshop/operators/etcd-cluster/api/v1beta2"
	"github.com/operator-workshops/workshop/operators/etcd-cluster/internal/membership"
)

// Addressing places the members of one cluster: where each listens for its
// peers and for clients, and which member a peer URL belongs to.
type Addressing interface {
	membership.Addressing
	ClientURL(name string) string
}

// HeadlessService is the Addressing of members in a cluster: pod p of
// cluster c is p.c.<namespace>.svc, through the headless Service c.
func HeadlessService(c *etcdv1.EtcdCluster) Addressing {
	return membership.HeadlessService{Service: c.Name, Namespace: c.Namespace}
}

// Requeue delays: etcd is not watched, so the operator looks again
// (reconciler.Poll: behind the events waiting, so that clusters whose
// members never answer, each pass probing them for seconds, cannot starve
// the others).
const (
	// requeueSoon follows a step in flight: etcd refuses a second change
	// for a few seconds after one, and a started member needs a moment.
	requeueSoon = 2 * time.Second
	// requeueUnreachable follows a failure to reach any member.
	requeueUnreachable = 5 * time.Second
	// requeueSteady is how often a healthy cluster is probed, to notice a
	// member that stops answering while its pod stays up.
	requeueSteady = 30 * time.Second
)

// after comes back to the cluster after d, unless err: then err alone, which
// controller-runtime retries with its backoff (it ignores RequeueAfter
// beside an error).
func after(d time.Duration, err error) (ctrl.Result, error) {
	if err != nil {
		return ctrl.Result{}, err
	}
	return reconciler.Poll(d), nil
}

// EtcdClusterReconciler reconciles EtcdClusters.
type EtcdClusterReconciler struct {
	client.Client
	Recorder events.EventRecorder
	// APIReader reads from the API server what the cache leaves out: an
	// object of a child's name that the operator did not create.
	APIReader client.Reader
	// ClusterWide makes the operator act on the clusters annotated
	// etcd.database.coreos.com/scope: clusterwide, and only on them, as the
	// coreos operator did with -cluster-wide. Without it the operator acts
	// on the clusters without the annotation.
	ClusterWide bool
	// Etcd talks to the members.
	Etcd membership.Client
	// Requests are what each member requests of its node, unless its
	// cluster's spec.pod.resources says otherwise.
	Requests pods.Requests

	mu        sync.Mutex
	executors map[types.NamespacedName]*membership.Executor
	told      conditions.Told
}

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters,verbs=list;watch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters/status,verbs=patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch
// No pods/portforward here: only an operator run outside the cluster uses it
// (--member-access=port-forward), with its user's kubeconfig, never with the
// in-cluster role generated from these markers (issue #11, least privilege).
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// Leader election (--leader-elect), in the operator's own namespace only: its
// Lease, and the Event that says which replica leads.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=etcd-operator-system
// +kubebuilder:rbac:groups="",resources=events,verbs=create,namespace=etcd-operator-system

// Cache narrows the operator's cache to its own children, with the
// app.kubernetes.io/managed-by label: in a cluster-wide operator, every Pod,
// volume, Service and PodDisruptionBudget of the cluster otherwise. Of a
// member's pod and volume, which the operator creates and never applies
// again, it keeps what a pass reads (manager.Trim): of the pod, trimPod's
// fields; of the volume, its metadata and status.
func Cache() map[client.Object]cache.ByObject {
	byObject := manager.Children(FieldOwner, &corev1.Pod{}, &corev1.PersistentVolumeClaim{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{})
	manager.Trim(byObject, trimPod)
	manager.Trim(byObject, func(v *corev1.PersistentVolumeClaim) { v.Spec = corev1.PersistentVolumeClaimSpec{} })
	return byObject
}

// trimPod keeps of a member's pod its metadata, its status, its node and its
// containers' names, images and arguments: the member it started as and
// the image it runs, which a pass reads. The rest of its spec (probes,
// volumes, resources, the API server's defaults) is most of its size, and
// is never read back.
func trimPod(p *corev1.Pod) {
	for i, c := range p.Spec.Containers {
		p.Spec.Containers[i] = corev1.Container{Name: c.Name, Image: c.Image, Args: c.Args}
	}
	p.Spec = corev1.PodSpec{NodeName: p.Spec.NodeName, Containers: p.Spec.Containers}
}

// Reconcile brings one EtcdCluster one step closer to its spec, in the
// shape every operator of the workshop shares. A cluster needs no
// finalizer: its pods, volumes and Services carry owner references and go
// with it.
func (r *EtcdClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return reconciler.Run(ctx, req, reconciler.Steps[*etcdv1.EtcdCluster, pass]{
		Client: r.Client, Recorder: r.Recorder, Told: &r.told,
		Forget:    r.forget,
		Manages:   r.manages,
		Normal:    r.reconcileCluster,
		Summarize: summarize,
	})
}

// reconcileCluster applies the cluster's Services and budget and moves its
// members one step, noting what it found and did for summarize.
func (r *EtcdClusterReconciler) reconcileCluster(ctx context.Context, c *etcdv1.EtcdCluster) (pass, ctrl.Result, error) {
	// Once per spec change, however many passes see it (before a restart,
	// the status's observedGeneration tells whether it was seen).
	if c.Spec.Size%2 == 0 && c.Generation != c.Status.ObservedGeneration && r.told.Once(c, fmt.Sprintf("EvenSize %d", c.Generation)) {
		r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, "EvenSize", "Validate",
			"size %d tolerates %d failed member(s), no more than size %d: odd sizes are advised",
			c.Spec.Size, membership.Tolerates(c.Spec.Size), c.Spec.Size-1)
	}
	var p pass
	// A paused cluster is looked at, not changed: its members are read
	// and their next step planned, for the status to tell.
	if !c.Spec.Paused {
		// A Blocked error is looked at again as every operator's is
		// (reconciler.Run): a stranger's object in a child's way, which no
		// event brings back, after conditions.NameConflictRecheck.
		if err := r.applyClusterObjects(ctx, c); err != nil {
			return p, ctrl.Result{}, err
		}
	}
	res, err := r.reconcileMembers(ctx, c, &p)
	return p, res, err
}

// manages reports whether c is this operator's: annotated clusterwide when
// the operator runs cluster-wide, not annotated otherwise.
func (r *EtcdClusterReconciler) manages(c client.Object) bool {
	return (c.GetAnnotations()[etcdv1.ScopeAnnotation] == etcdv1.ScopeClusterWide) == r.ClusterWide
}

// applyClusterObjects applies what the cluster has once, whatever its
// members: its two Services and its PodDisruptionBudget.
func (r *EtcdClusterReconciler) applyClusterObjects(ctx context.Context, c *etcdv1.EtcdCluster) error {
	ref, err := apply.ControllerReference(c, r.Scheme())
	if err != nil {
		return err
	}
	peer := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace}}
	clients := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: clientServiceName(c.Name), Namespace: c.Namespace}}
	budget := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace}}
	for _, obj := range []client.Object{peer, clients, budget} {
		if err := r.claim(ctx, c, obj); err != nil {
			return err
		}
	}
	// Claim read them from the cache: what the last apply left is not
	// applied again.
	return errors.Join(
		applyChanged(ctx, r.Client, peerServiceFor(c, ref), peer),
		applyChanged(ctx, r.Client, clientServiceFor(c, ref), clients),
		applyChanged(ctx, r.Client, disruptionBudgetFor(c, ref), budget))
}

// claim reads obj, a child of c, into itself, and returns NameConflict
// when it is not c's (apply.Claim).
func (r *EtcdClusterReconciler) claim(ctx context.Context, c *etcdv1.EtcdCluster, obj client.Object) error {
	_, err := apply.Claim(ctx, r.Client, r.APIReader, c, obj, apply.ControlledBy(c))
	return err
}

func applyChanged(ctx context.Context, c client.Client, obj runtime.ApplyConfiguration, live client.Object) error {
	_, err := owner.ApplyChanged(ctx, c, obj, live)
	return err
}

// executor is the Executor of cluster key, kept between reconciles so that
// it asks the leader it found last first.
func (r *EtcdClusterReconciler) executor(c *etcdv1.EtcdCluster) *membership.Executor {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := client.ObjectKeyFromObject(c)
	if r.executors == nil {
		r.executors = map[types.NamespacedName]*membership.Executor{}
	}
	e, ok := r.executors[key]
	if !ok {
		e = &membership.Executor{Client: r.Etcd, Quiet: requeueUnreachable}
		r.executors[key] = e
	}
	e.Addressing = HeadlessService(c)
	return e
}

func (r *EtcdClusterReconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.executors, key)
}

// SetupWithManager watches the EtcdClusters this operator manages (a new
// one ahead of the initial list, reconciler.Controller) and their children.
// etcd itself is not watched: reconciles requeue to probe it. A child's
// change is not put ahead of new clusters (reconciler.Progress, as the
// other operators do): the pass it brings asks the members, for seconds
// when they do not answer (fake nodes), and 1000 clusters whose pods'
// changes went first had 432 Ready after 7 minutes, where in one order
// all were in 4.4.
func (r *EtcdClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := manager.IndexControllers(context.Background(), mgr.GetFieldIndexer(), &corev1.Pod{}, &corev1.PersistentVolumeClaim{}); err != nil {
		return err
	}
	return reconciler.Controller(mgr, &etcdv1.EtcdCluster{}, predicate.NewPredicateFuncs(r.manages)).
		Owns(&corev1.Pod{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		Owns(&corev1.Service{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Complete(r)
}

var owner = apply.FieldOwner(FieldOwner)
