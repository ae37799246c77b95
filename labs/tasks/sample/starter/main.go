// Command sample is the starter of lab 8's operator task
// (labs/08-kustomize-operator.md, section 9): the Nuvolaris training's
// operator, whose Sample (samples.nuvolaris.org, labs/kustomize/crd.yaml)
// scales a Deployment to spec.count. The training's kopf handlers applied
// demo-deploy with count replicas on create and deleted it on delete.
//
// Task: write Reconcile, so that each Sample has its own Deployment,
// <sample>-demo-deploy (deployment below builds it), with spec.count
// replicas; that a new count is followed; that the Deployment goes with its
// Sample; and that the Sample's status.readyReplicas says how many of its
// pods are ready.
//
// Run it from the repository root with `go run ./labs/tasks/work/sample`,
// and check your work with make lab-check LAB=8.
package main

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
			return ctrl.NewControllerManagedBy(mgr).
				For(sample).
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
	// The training's first handlers printed the spec: so does this one.
	s := &unstructured.Unstructured{}
	s.SetGroupVersionKind(sampleGVK)
	if err := r.Get(ctx, req.NamespacedName, s); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctrl.LoggerFrom(ctx).Info("a Sample", "spec", s.Object["spec"])
	// Your code here.
	return ctrl.Result{}, nil
}

// deployment is the training's demo-deploy for the Sample named sample in
// namespace, with count replicas: named <sample>-demo-deploy, its pods
// labelled with the Sample's name, so that two Samples never share one.
//
//nolint:unused // yours to call, in Reconcile
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
