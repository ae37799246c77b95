// Command gordon is a reference solution of lab 7's three tasks
// (labs/07-gordon.md, section 7), on the starter in ../starter: compare the
// two with `diff -u labs/tasks/gordon/starter labs/tasks/gordon/solution`.
//
//   - Task 1, the API calls: calls.txt, beside this file.
//   - Task 2, delete: each pod names its Gordon as its controlling owner,
//     and the garbage collector deletes the pods with the Gordon. No
//     finalizer, no code that runs on delete: an operator that is stopped
//     when the Gordon goes would miss it, the garbage collector does not.
//   - Task 3, the checker: the operator watches the pods it owns, so a pod
//     deleted or ended wakes it, and it counts only the pods that still run.
//     No polling: the workshop's Checker asked every second.
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
			// edited, deleted; and (task 3) of every change of a pod a
			// Gordon owns, as a change of that Gordon.
			return ctrl.NewControllerManagedBy(mgr).
				For(&gordonv1.Gordon{}).
				Owns(&corev1.Pod{}).
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
	// Task 3: a pod that is being deleted, or whose containers ended for
	// good, no longer counts: another takes its place.
	pods := slices.DeleteFunc(list.Items, func(p corev1.Pod) bool {
		return p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	want := int(g.Spec.Gordon.Replicas)
	for len(pods) < want {
		pod := newPod(&g)
		// Task 2: the pod is g's, and goes with it.
		if err := ctrl.SetControllerReference(&g, pod, r.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
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
