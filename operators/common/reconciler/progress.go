package reconciler

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ProgressPriority is the queue priority of a pass that a child's change
// brings: above new work (a custom resource just created, at 0) and far
// above Poll's passes (handler.LowPriority).
const ProgressPriority = 1

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// Progress wraps the handler of a child's events so that the passes a
// child's change brings go ahead of new work: work under way ends before
// more begins. A child's change is a step of an object already under way
// (its pod running, its Job done); a custom resource's creation is a new
// object's first step. In one queue served in order, 1000 Databases created
// at once took their 1000 creation passes (each waiting on the Pod and
// Service kinds' client limiters) before the first pass their pods'
// readiness brought (each waiting on the Database kind's limiter): the
// limiters worked one after the other, where now they work side by side
// (bench/README.md measures the difference), and an
// object reaches Ready before the objects created after it start. It is
// for passes that end quickly: one that waits on what may not answer
// (etcd-cluster's, which ask the members) would keep new work waiting
// behind every such change, and etcd-cluster does not use it.
//
// A child's creation keeps the wrapped handler's priority: it echoes the
// pass that created the child, which knew what it made, and a pass run at
// once on it would mostly meet siblings the cache does not show yet. Events
// of the initial list and resyncs (an update with the same
// resourceVersion) keep the wrapped handler's priority too
// (handler.LowPriority for controller-runtime's handlers, 0 for one that
// adds without a priority).
func Progress(h handler.EventHandler) handler.EventHandler {
	return progress{h}
}

// Owner is handler.EnqueueRequestForOwner's controller-owner handler, as
// the builder's Owns sets up, with Progress: a child's event brings the
// owner of obj's kind that controls it.
func Owner(mgr ctrl.Manager, obj client.Object) handler.EventHandler {
	return Progress(handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), obj, handler.OnlyControllerOwner()))
}

type progress struct{ handler.EventHandler }

func (p progress) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	if e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion() {
		q = raise(q)
	}
	p.EventHandler.Update(ctx, e, q)
}

func (p progress) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	p.EventHandler.Delete(ctx, e, raise(q))
}

func (p progress) Generic(ctx context.Context, e event.GenericEvent, q queue) {
	p.EventHandler.Generic(ctx, e, raise(q))
}

// raise gives what is added to q without a priority ProgressPriority, when
// q is controller-runtime's priority queue; any other queue is left as is.
func raise(q queue) queue {
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		return raised{pq}
	}
	return q
}

type raised struct {
	priorityqueue.PriorityQueue[reconcile.Request]
}

func (r raised) Add(item reconcile.Request) {
	r.AddWithOpts(priorityqueue.AddOpts{}, item)
}

func (r raised) AddAfter(item reconcile.Request, after time.Duration) {
	r.AddWithOpts(priorityqueue.AddOpts{After: after}, item)
}

func (r raised) AddRateLimited(item reconcile.Request) {
	r.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

func (r raised) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if o.Priority == nil {
		o.Priority = ptr.To(ProgressPriority)
	}
	r.PriorityQueue.AddWithOpts(o, items...)
}
