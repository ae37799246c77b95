// Command kustomize is lab 8's operator: the Nuvolaris training's Sample
// (samples.nuvolaris.org) scales a Deployment to spec.count, with kustomize
// as a library instead of kopf calling kubectl. Run it from this directory
// with `go run .` against the current kubeconfig, or `go run . render NAME
// COUNT` to print what it would apply for a Sample, as `kubectl kustomize`
// does.
//
// What the training's operator got wrong, and this one does not:
//   - it acted on create and delete only: a changed count was ignored. Here
//     every change of a Sample, or of its Deployment, runs Reconcile, which
//     makes the Deployment match the Sample as it is now;
//   - every Sample applied the same Deployment, demo-deploy, and deleting one
//     Sample deleted it for all. Here each Sample has its own,
//     <sample>-demo-deploy, owned by it, so that the garbage collector
//     deletes it with its Sample and with no other;
//   - kubectl's errors were lost. Here they are returned, logged, retried and
//     shown in the Sample's status;
//   - the Sample had no schema: the CRD (crd.yaml) now refuses a count that
//     is not an integer from 0 to 100;
//   - its login handler chose between the in-cluster token and a kubeconfig.
//     controller-runtime's ctrl.GetConfig does the same: --kubeconfig, the
//     pod's ServiceAccount token, $KUBECONFIG, then ~/.kube/config.
package main

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/manager"
)

// SampleGVK is the training's resource.
var SampleGVK = schema.GroupVersionKind{Group: "nuvolaris.org", Version: "v1", Kind: "Sample"}

// fieldOwner names this operator in the objects' managed fields; its Apply
// is the server-side apply every operator of the repository uses.
const fieldOwner apply.FieldOwner = "sample-operator"

func main() {
	if len(os.Args) == 4 && os.Args[1] == "render" {
		if err := printRender(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	manager.Main(manager.Operator{
		Name:             "sample",
		DefaultProbeAddr: ":8087",
		Setup: func(mgr ctrl.Manager, _ manager.Options) error {
			return (&SampleReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
		},
	})
}

func printRender(name, count string) error {
	n, err := strconv.ParseInt(count, 10, 64)
	if err != nil {
		return fmt.Errorf("count %q: %w", count, err)
	}
	objs, err := Render(name, n)
	if err != nil {
		return err
	}
	for _, o := range objs {
		data, err := sigsyaml.Marshal(o.Object)
		if err != nil {
			return err
		}
		fmt.Printf("---\n%s", data)
	}
	return nil
}

// SampleReconciler makes each Sample's Deployment match it.
type SampleReconciler struct {
	client.Client
}

// SetupWithManager reconciles a Sample when it changes, or when a Deployment
// it owns does (its ready pods are the Sample's status).
func (r *SampleReconciler) SetupWithManager(mgr ctrl.Manager) error {
	sample := &unstructured.Unstructured{}
	sample.SetGroupVersionKind(SampleGVK)
	return ctrl.NewControllerManagedBy(mgr).
		For(sample, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		Complete(r)
}

// Reconcile renders the Sample's objects with kustomize and applies them,
// then writes what it observed to the status.
func (r *SampleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	s := &unstructured.Unstructured{}
	s.SetGroupVersionKind(SampleGVK)
	if err := r.Get(ctx, req.NamespacedName, s); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !s.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil // the garbage collector deletes what it owns
	}
	count, _, err := unstructured.NestedInt64(s.Object, "spec", "count")
	if err != nil {
		return ctrl.Result{}, r.setStatus(ctx, s, 0, fmt.Sprintf("spec.count: %v", err))
	}
	objs, err := Render(s.GetName(), count)
	if err != nil {
		return ctrl.Result{}, r.setStatus(ctx, s, 0, err.Error())
	}
	ready := int64(0)
	for _, o := range objs {
		o.SetNamespace(s.GetNamespace())
		conflict, err := r.apply(ctx, s, o)
		if err != nil {
			_ = r.setStatus(ctx, s, 0, err.Error())
			return ctrl.Result{}, err
		}
		if conflict != "" {
			return ctrl.Result{}, r.setStatus(ctx, s, 0, conflict)
		}
		if o.GetKind() == "Deployment" {
			var d appsv1.Deployment
			if err := r.Get(ctx, client.ObjectKeyFromObject(o), &d); err != nil {
				return ctrl.Result{}, err
			}
			ready = int64(d.Status.ReadyReplicas)
		}
	}
	msg := fmt.Sprintf("%d of %d pods ready", ready, count)
	return ctrl.Result{}, r.setStatus(ctx, s, ready, msg)
}

// apply applies o as owned by Sample s, unless an object of that name exists
// that s does not own: then it returns a message saying so, and leaves it.
func (r *SampleReconciler) apply(ctx context.Context, s, o *unstructured.Unstructured) (string, error) {
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(o.GroupVersionKind())
	err := r.Get(ctx, client.ObjectKeyFromObject(o), existing)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return "", err
	default:
		if owner := metav1.GetControllerOf(existing); owner == nil || owner.UID != s.GetUID() {
			return fmt.Sprintf("%s %s exists and is not this Sample's: rename or delete it", o.GetKind(), o.GetName()), nil
		}
	}
	yes := true
	o.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: SampleGVK.GroupVersion().String(), Kind: SampleGVK.Kind,
		Name: s.GetName(), UID: s.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes,
	}})
	return "", fieldOwner.Apply(ctx, r.Client, client.ApplyConfigurationFromUnstructured(o))
}

// setStatus writes the Sample's status when it changed.
func (r *SampleReconciler) setStatus(ctx context.Context, s *unstructured.Unstructured, ready int64, msg string) error {
	before := s.DeepCopy()
	if err := unstructured.SetNestedField(s.Object, ready, "status", "readyReplicas"); err != nil {
		return err
	}
	if err := unstructured.SetNestedField(s.Object, msg, "status", "message"); err != nil {
		return err
	}
	if reflect.DeepEqual(before.Object["status"], s.Object["status"]) {
		return nil
	}
	return r.Status().Patch(ctx, s, client.MergeFrom(before))
}
