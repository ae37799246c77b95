package controller

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/operator-workshops/workshop/operators/gordon/internal/expectations"
)

// podHandler enqueues the Gordon that controls a pod, and tells the
// expectations what the cache now shows.
type podHandler struct {
	expectations *expectations.Expectations
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (h *podHandler) Create(_ context.Context, e event.CreateEvent, q queue) {
	if key, ok := ownerKey(e.Object); ok {
		h.expectations.CreationObserved(key)
		q.Add(reconcile.Request{NamespacedName: key})
	}
}

func (h *podHandler) Update(_ context.Context, e event.UpdateEvent, q queue) {
	key, ok := ownerKey(e.ObjectNew)
	if !ok {
		return
	}
	if e.ObjectNew.GetDeletionTimestamp() != nil {
		h.expectations.DeletionObserved(key, e.ObjectNew.GetUID())
	}
	q.Add(reconcile.Request{NamespacedName: key})
}

func (h *podHandler) Delete(_ context.Context, e event.DeleteEvent, q queue) {
	if key, ok := ownerKey(e.Object); ok {
		h.expectations.DeletionObserved(key, e.Object.GetUID())
		q.Add(reconcile.Request{NamespacedName: key})
	}
}

func (h *podHandler) Generic(_ context.Context, e event.GenericEvent, q queue) {
	if key, ok := ownerKey(e.Object); ok {
		q.Add(reconcile.Request{NamespacedName: key})
	}
}

var _ handler.EventHandler = &podHandler{}
