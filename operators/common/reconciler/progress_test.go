package reconciler

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// A child's change goes ahead of the custom resources created before it,
// whether the wrapped handler adds with a priority of its own (as
// controller-runtime's handlers do) or without (as gordon's pod handler
// does); the initial list and resyncs keep the wrapped handler's priority.
func TestProgressGoesAheadOfNewWork(t *testing.T) {
	byLabel := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetLabels()["owner"]}}}
	})
	pod := func(owner, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: owner + "-pod", ResourceVersion: rv, Labels: map[string]string{"owner": owner}}}
	}
	type out struct {
		name     string
		priority int
	}
	for _, c := range []struct {
		name  string
		child handler.EventHandler
		want  []out // a resync at the wrapped handler's priority: after the new ones at the same
	}{
		{"a handler that adds with a priority", byLabel, []out{{"under-way", ProgressPriority}, {"new-1", 0}, {"new-2", 0}, {"resynced", handler.LowPriority}}},
		{"a handler that adds without", addsWithout{}, []out{{"under-way", ProgressPriority}, {"new-1", 0}, {"new-2", 0}, {"resynced", 0}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := priorityqueue.New[reconcile.Request]("test")
			defer q.ShutDown()
			forHandler := handler.WithLowPriorityWhenUnchanged(&handler.EnqueueRequestForObject{})
			for _, n := range []string{"new-1", "new-2"} {
				forHandler.Create(t.Context(), event.CreateEvent{Object: &thing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n}}}, q)
			}
			progress := Progress(c.child)
			progress.Update(t.Context(), event.UpdateEvent{ObjectOld: pod("resynced", "7"), ObjectNew: pod("resynced", "7")}, q)
			progress.Update(t.Context(), event.UpdateEvent{ObjectOld: pod("under-way", "7"), ObjectNew: pod("under-way", "8")}, q)
			for i, w := range c.want {
				got, priority, _ := q.GetWithPriority()
				if got.Name != w.name || priority != w.priority {
					t.Errorf("out %d: %s at priority %d; want %s at %d", i+1, got.Name, priority, w.name, w.priority)
				}
				q.Done(got)
			}
		})
	}
}

// A child's creation, in the initial list or not, stays where the wrapped
// handler puts it: behind new work, or the initial list's place.
func TestProgressLeavesCreations(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	progress := Progress(&handler.EnqueueRequestForObject{})
	progress.Create(t.Context(), event.CreateEvent{Object: &thing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "listed"}}, IsInInitialList: true}, q)
	progress.Create(t.Context(), event.CreateEvent{Object: &thing{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "created"}}}, q)
	for _, w := range []struct {
		name     string
		priority int
	}{{"created", 0}, {"listed", handler.LowPriority}} {
		got, priority, _ := q.GetWithPriority()
		if got.Name != w.name || priority != w.priority {
			t.Errorf("got %s at priority %d; want %s at %d", got.Name, priority, w.name, w.priority)
		}
		q.Done(got)
	}
}

// addsWithout adds what a pod's update brings with Add, as gordon's pod
// handler does, where controller-runtime's handlers give a priority.
type addsWithout struct{ handler.EventHandler }

func (addsWithout) Update(_ context.Context, e event.UpdateEvent, q queue) {
	q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: e.ObjectNew.GetNamespace(), Name: e.ObjectNew.GetLabels()["owner"]}})
}
