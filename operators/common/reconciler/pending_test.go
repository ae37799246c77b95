package reconciler

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// In the initial list, a resource the operator never reported on goes
// ahead of one it did, whatever their order: For's handler puts both at
// handler.LowPriority, pending raises the new one.
func TestPendingGoesAheadOfTheInitialList(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	forHandler := handler.WithLowPriorityWhenUnchanged(&handler.EnqueueRequestForObject{})
	pending := pending()
	reported := &thing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "reported", Generation: 2}}
	reported.Status.ObservedGeneration = 2
	created := &thing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "created", Generation: 1}}
	for _, o := range []client.Object{reported, created} {
		e := event.CreateEvent{Object: o, IsInInitialList: true}
		forHandler.Create(t.Context(), e, q)
		pending.Create(t.Context(), e, q)
	}
	first, priority, _ := q.GetWithPriority()
	if first.Name != "created" || priority != 0 {
		t.Errorf("first out: %s at priority %d; want the resource never reported on, at 0", first.Name, priority)
	}
	second, priority, _ := q.GetWithPriority()
	if second.Name != "reported" || priority != handler.LowPriority {
		t.Errorf("second out: %s at priority %d; want the reported one at handler.LowPriority", second.Name, priority)
	}
}
