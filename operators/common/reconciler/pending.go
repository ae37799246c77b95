package reconciler

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Controller begins the controller of an operator's custom resource obj,
// as ctrl.NewControllerManagedBy(mgr).For(obj) does, with pending's handler
// beside For's, both filtered by predicates: every operator's controller
// starts here.
func Controller(mgr ctrl.Manager, obj Object, predicates ...predicate.Predicate) *builder.Builder {
	only := builder.WithPredicates(predicates...)
	return ctrl.NewControllerManagedBy(mgr).For(obj, only).Watches(obj, pending(), only)
}

// pending is an event handler, beside the one For sets, that enqueues at
// normal priority a custom resource whose spec the operator has not
// reported on yet (its generation ahead of status.observedGeneration): new
// work. controller-runtime's queue puts every object of its initial list
// behind the events of the moment (handler.LowPriority), where a resource
// created while the operator started, or while it was down, would wait
// behind every pass that follows an event, and behind Poll's: 1000
// EtcdClusters none of whose members answer (fake nodes) kept the 33
// created while the caches synced waiting for over 8 minutes, each pass
// over another cluster spending its probes' timeouts. The queue keeps the
// higher of the priorities an object is added with, so For's handler
// leaves it as pending set it.
func pending() handler.EventHandler {
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			o, ok := e.Object.(Object)
			if !ok || o.GetGeneration() == o.GetObservedGeneration() {
				return
			}
			req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)}
			if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
				pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(0)}, req)
				return
			}
			q.Add(req)
		},
	}
}
