// Command gordon is the prgcont workshop's gordon operator, as the workshop
// hands it to its participants, in Go: each Gordon gets
// spec.gordon.replicas pods, and its status lists them. It is the starter of
// lab 7's three tasks (labs/07-gordon.md, section 7), which it leaves to you:
//
//   - Task 1, the API calls: write in calls.txt, beside this file, every
//     request this operator makes to the API server, and what it is for.
//   - Task 2, delete: when a Gordon is deleted, its pods must go too (the
//     workshop's delete(), which does nothing).
//   - Task 3, the checker: a pod of a Gordon that is deleted, or ends, must
//     be replaced at once (the workshop's Checker, which only sleeps).
//
// Run it from the repository root with `go run ./labs/tasks/work/gordon -v=6`
// (-v=6 logs each request), and check your work with make lab-check LAB=7.
package main

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-workshops/workshop/operators/common/manager"
	gordonv1 "github.com/operator-workshops/workshop/operators/gordon/api/v1"
)

// gordonLabel marks each pod with the name of its Gordon.
const gordonLabel = "lab.workshop.local/gordon"

func main() {
	manager.Main(manager.Operator{
		Name:        "gordon-lab",
		AddToScheme: []func(*runtime.Scheme) error{gordonv1.AddToScheme},
		Setup: func(mgr ctrl.Manager, _ manager.Options) error {
			// The operator is told of every change of a Gordon: created,
			// edited, deleted.
			return ctrl.NewControllerManagedBy(mgr).
				For(&gordonv1.Gordon{}).
				Complete(&reconciler{Client: mgr.GetClient(), pods: mgr.GetAPIReader()})
		},
	})
}

type reconciler struct {
	client.Client
	// pods reads pods from the API server itself, not from the manager's
	// cache, which may not have seen yet the pods the last pass created: a
	// pass that counted from it could create them again.
	pods client.Reader
}

// Reconcile gives one Gordon spec.gordon.replicas pods: it creates those
// missing, deletes those too many, and lists them in the status.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var g gordonv1.Gordon
	if err := r.Get(ctx, req.NamespacedName, &g); err != nil {
		// The Gordon is gone (or cannot be read): nothing to do.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var list corev1.PodList
	if err := r.pods.List(ctx, &list, client.InNamespace(g.Namespace), client.MatchingLabels{gordonLabel: g.Name}); err != nil {
		return ctrl.Result{}, err
	}
	pods := list.Items
	want := int(g.Spec.Gordon.Replicas)
	for len(pods) < want {
		pod := newPod(&g)
		if err := r.Create(ctx, pod); err != nil {
			return ctrl.Result{}, err
		}
		pods = append(pods, *pod)
	}
	for len(pods) > want {
		last := pods[len(pods)-1]
		if err := r.Delete(ctx, &last); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		pods = pods[:len(pods)-1]
	}
	return ctrl.Result{}, r.report(ctx, &g, pods)
}

// newPod is a pod of g, named gordon-xxxxx as in the workshop.
func newPod(g *gordonv1.Gordon) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: ctrl.ObjectMeta{
			GenerateName: "gordon-",
			Namespace:    g.Namespace,
			Labels:       map[string]string{gordonLabel: g.Name},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "gordon", Image: g.Spec.Gordon.Image}},
		},
	}
}

// report lists pods in g's status, when the list changed.
func (r *reconciler) report(ctx context.Context, g *gordonv1.Gordon, pods []corev1.Pod) error {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if slices.Equal(names, g.Status.Pods) && g.Status.Replicas == int32(len(names)) {
		return nil
	}
	before := g.DeepCopy()
	g.Status.Pods, g.Status.Replicas = names, int32(len(names))
	return r.Status().Patch(ctx, g, client.MergeFrom(before))
}
