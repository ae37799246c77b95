// Command sample is a reference solution of lab 8's operator task
// (labs/08-kustomize-operator.md, section 9), on the starter in ../starter:
// `diff -u labs/tasks/sample/starter labs/tasks/sample/solution` shows what
// it adds. Unlike the training's create and delete handlers, Reconcile makes
// the Deployment match the Sample as it is now, whatever changed: a new
// count, a Deployment edited or deleted by someone, an operator restarted.
package main

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/operator-workshops/workshop/operators/common/manager"
)

// sampleGVK is the training's resource. It has no Go type: the operator
// reads it as unstructured data, as kopf reads a dict.
var sampleGVK = schema.GroupVersionKind{Group: "nuvolaris.org", Version: "v1", Kind: "Sample"}

func main() {
	manager.Main(manager.Operator{
		Name: "sample-lab",
		Setup: func(mgr ctrl.Manager, _ manager.Options) error {
			sample := &unstructured.Unstructured{}
			sample.SetGroupVersionKind(sampleGVK)
			// A change of a Deployment a Sample owns (its pods becoming
			// ready, someone scaling it) reconciles that Sample too.
			return ctrl.NewControllerManagedBy(mgr).
				For(sample).
				Owns(&appsv1.Deployment{}).
				Complete(&reconciler{Client: mgr.GetClient()})
		},
	})
}

type reconciler struct {
	client.Client
}

// Reconcile is called with the namespace and name of a Sample each time it
// changes (created, edited, deleted), and once for each at start.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	s := &unstructured.Unstructured{}
	s.SetGroupVersionKind(sampleGVK)
	if err := r.Get(ctx, req.NamespacedName, s); err != nil {
		// Deleted: the garbage collector deletes its Deployment, which
		// names it as its owner.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	count, _, err := unstructured.NestedInt64(s.Object, "spec", "count")
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("spec.count: %w", err)
	}
	want := deployment(s.GetNamespace(), s.GetName(), int32(count))
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: want.Name, Namespace: want.Namespace}}
	// CreateOrUpdate reads the Deployment, lets the function below set
	// what the Sample decides, and creates or updates it only when that
	// changed something.
	_, err = controllerutil.CreateOrUpdate(ctx, r.Client, d, func() error {
		if d.CreationTimestamp.IsZero() {
			d.Spec = want.Spec // the selector cannot change afterwards
		} else if !metav1.IsControlledBy(d, s) {
			// Never take over someone else's Deployment of that name.
			return fmt.Errorf("deployment %s exists and is not this Sample's: rename or delete it", d.Name)
		}
		d.Labels = want.Labels
		d.Spec.Replicas = want.Spec.Replicas
		return controllerutil.SetControllerReference(s, d, r.Scheme())
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	// The training's handlers returned a message, which kopf wrote into
	// the status; here the status says what the Deployment has.
	before := s.DeepCopy()
	if err := unstructured.SetNestedField(s.Object, int64(d.Status.ReadyReplicas), "status", "readyReplicas"); err != nil {
		return ctrl.Result{}, err
	}
	msg := fmt.Sprintf("%d of %d pods ready", d.Status.ReadyReplicas, count)
	if err := unstructured.SetNestedField(s.Object, msg, "status", "message"); err != nil {
		return ctrl.Result{}, err
	}
	if equality.Semantic.DeepEqual(before.Object["status"], s.Object["status"]) {
		return ctrl.Result{}, nil // every write costs: none when nothing changed
	}
	return ctrl.Result{}, r.Status().Patch(ctx, s, client.MergeFrom(before))
}

// deployment is the training's demo-deploy for the Sample named sample in
// namespace, with count replicas: named <sample>-demo-deploy, its pods
// labelled with the Sample's name, so that two Samples never share one.
func deployment(namespace, sample string, count int32) *appsv1.Deployment {
	labels := map[string]string{"app": "demo", "app.kubernetes.io/instance": sample}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: sample + "-demo-deploy", Namespace: namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &count,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "demo", Image: "prgcont/gordon:v1.0"}},
				},
			},
		},
	}
}
