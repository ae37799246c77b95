// Package controller keeps exactly spec.gordon.replicas pods per Gordon,
// lists them in its status and replaces those that end.
package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/manager"
	"github.com/operator-workshops/workshop/operators/common/pods"
	"github.com/operator-workshops/workshop/operators/common/reconciler"
	gordonv1 "github.com/operator-workshops/workshop/operators/gordon/api/v1"
	"github.com/operator-workshops/workshop/operators/gordon/internal/replicas"
)

// GordonReconciler reconciles Gordons.
type GordonReconciler struct {
	client.Client
	Recorder events.EventRecorder
	// Requests are what each gordon pod requests of its node.
	Requests pods.Requests

	told conditions.Told
}

// Cache narrows the operator's cache to its own pods, with the
// app.kubernetes.io/managed-by label, instead of every pod of the cluster,
// and keeps of each its metadata and status: the operator creates its pods
// and never reads their spec back (manager.Trim).
func Cache() map[client.Object]cache.ByObject {
	byObject := manager.Children(FieldOwner, &corev1.Pod{})
	manager.Trim(byObject, pods.KeepStatus)
	return byObject
}

// +kubebuilder:rbac:groups=operator.prgcont.cz,resources=gordons,verbs=list;watch
// +kubebuilder:rbac:groups=operator.prgcont.cz,resources=gordons/status,verbs=patch
// +kubebuilder:rbac:groups=operator.prgcont.cz,resources=gordons/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch;create;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// Leader election (--leader-elect), in the operator's own namespace only: its
// Lease, and the Event that says which replica leads.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=gordon-operator-system
// +kubebuilder:rbac:groups="",resources=events,verbs=create,namespace=gordon-operator-system

// Reconcile brings the pods of one Gordon to spec.gordon.replicas, in the
// shape every operator of the workshop shares. A Gordon needs no finalizer:
// its pods carry owner references, and the garbage collector deletes them
// with it (the workshop's delete() task).
func (r *GordonReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return reconciler.Run(ctx, req, reconciler.Steps[*gordonv1.Gordon, *replicas.Plan]{
		Client: r.Client, Recorder: r.Recorder, Told: &r.told,
		Normal:    r.reconcilePods,
		Settling:  creating,
		Summarize: summarize,
	})
}

// creating reports whether the pass created pods, and only that: their
// creation events bring the Gordon back at once (the pass waits for the
// cache to show them), and that pass reports them, so this one writes no status
// (reconciler.Steps.Settling). A pass that deletes pods reports at once:
// a deleted pod may take its grace period to go.
func creating(plan *replicas.Plan) bool {
	return plan != nil && plan.Create > 0 && len(plan.Delete) == 0
}

// reconcilePods creates and deletes pods until g has as many as it asks
// for, and returns the plan it followed; nil when the pods could not be
// listed, or when the cache does not show yet the pods the last pass
// created or deleted: counting then would create or delete them twice
// (apply.ChildrenShown). Their events bring the Gordon back.
func (r *GordonReconciler) reconcilePods(ctx context.Context, g *gordonv1.Gordon) (*replicas.Plan, ctrl.Result, error) {
	owned, err := r.podsOf(ctx, g)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	if err := apply.ChildrenShown(g, owned); err != nil {
		return nil, ctrl.Result{}, err
	}
	plan := replicas.Compute(owned, int(g.Spec.Gordon.Replicas))
	return &plan, ctrl.Result{}, errors.Join(r.deletePods(ctx, g, plan.Delete), r.createPods(ctx, g, plan.Create))
}

// podsOf lists the pods that g controls, from the cache.
func (r *GordonReconciler) podsOf(ctx context.Context, g *gordonv1.Gordon) ([]*corev1.Pod, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, manager.ControlledBy(g)); err != nil {
		return nil, err
	}
	owned := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		owned[i] = &list.Items[i]
	}
	return owned, nil
}

// createPods creates n pods in batches of growing size, and stops at the
// first batch with a failure. The pods it made are told in one Event: an
// Event per pod doubled the operator's writes.
func (r *GordonReconciler) createPods(ctx context.Context, g *gordonv1.Gordon, n int) error {
	var made []string
	defer func() {
		if len(made) > 0 {
			r.Recorder.Eventf(g, nil, corev1.EventTypeNormal, "Created", "CreatePods", "Scheduled %s", listed(made, "pod"))
		}
	}()
	type created struct {
		name string
		err  error
	}
	for _, size := range replicas.Batches(n) {
		results := make(chan created, size)
		for range size {
			go func() {
				name, err := r.createPod(ctx, g)
				results <- created{name, err}
			}()
		}
		var failed error
		for range size {
			res := <-results
			if res.err != nil {
				failed = errors.Join(failed, res.err)
				continue
			}
			made = append(made, res.name)
		}
		if failed != nil {
			return failed
		}
	}
	return nil
}

// createPod creates one pod of g and returns its name.
func (r *GordonReconciler) createPod(ctx context.Context, g *gordonv1.Gordon) (string, error) {
	pod := podFor(g, r.Requests)
	if err := controllerutil.SetControllerReference(g, pod, r.Scheme()); err != nil {
		return "", err
	}
	if err := r.Create(ctx, pod, client.FieldOwner(FieldOwner)); err != nil {
		// In a namespace being deleted the event would be refused too; a
		// refusal is told once, by the Degraded condition's event.
		if _, refused := conditions.Refusal(err); !refused && apply.IgnoreNamespaceTerminating(err) != nil {
			r.Recorder.Eventf(g, nil, corev1.EventTypeWarning, ReasonCreateFail, "CreatePod", "Creating a pod failed: %v", err)
		}
		return "", fmt.Errorf("creating a pod for Gordon %s: %w", g.Name, err)
	}
	apply.CreatedChild(g, pod)
	ctrl.LoggerFrom(ctx).Info("scheduled pod", "pod", pod.Name)
	return pod.Name, nil
}

// deletePods deletes victims, and tells those it deleted in one Event.
func (r *GordonReconciler) deletePods(ctx context.Context, g *gordonv1.Gordon, victims []*corev1.Pod) error {
	var (
		errs    error
		removed []string
	)
	for _, pod := range victims {
		why := "scale down"
		if pods.Ended(pod) {
			why = fmt.Sprintf("it ended (%s)", pod.Status.Phase)
		}
		err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
		if client.IgnoreNotFound(err) != nil {
			errs = errors.Join(errs, fmt.Errorf("deleting pod %s: %w", pod.Name, err))
			continue
		}
		apply.DeletedChild(g, pod)
		ctrl.LoggerFrom(ctx).Info("removed pod", "pod", pod.Name, "reason", why)
		removed = append(removed, fmt.Sprintf("%s (%s)", pod.Name, why))
	}
	if len(removed) > 0 {
		r.Recorder.Eventf(g, nil, corev1.EventTypeNormal, "Deleted", "DeletePods", "Removed %s", listed(removed, "pod"))
	}
	return errs
}

// listed says "3 pods: a, b, c", naming five at most: an Event's message
// stays short whatever the scale.
func listed(items []string, noun string) string {
	const shown = 5
	sorted := slices.Sorted(slices.Values(items))
	head := fmt.Sprintf("%d %ss: ", len(items), noun)
	if len(items) == 1 {
		head = "1 " + noun + ": "
	}
	if len(sorted) <= shown {
		return head + strings.Join(sorted, ", ")
	}
	return head + strings.Join(sorted[:shown], ", ") + fmt.Sprintf(" and %d more", len(sorted)-shown)
}

// SetupWithManager watches Gordons and the pods they control; a pod's
// change goes ahead of new Gordons (reconciler.Owner).
func (r *GordonReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := manager.IndexControllers(context.Background(), mgr.GetFieldIndexer(), &corev1.Pod{}); err != nil {
		return err
	}
	return reconciler.Controller(mgr, &gordonv1.Gordon{}).
		Watches(&corev1.Pod{}, reconciler.Owner(mgr, &gordonv1.Gordon{})).
		Complete(r)
}
