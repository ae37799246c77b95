/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controller

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	operatorv1 "example.com/gordon/api/v1"
)

// gordonLabel marks each pod with the name of its Gordon.
const gordonLabel = "operator.prgcont.cz/gordon"

// GordonReconciler reconciles a Gordon object
type GordonReconciler struct {
	client.Client
	Scheme *runtime.Scheme
	// APIReader reads from the API server itself, not from the manager's
	// cache, which may not have seen yet the pods the last pass created.
	APIReader client.Reader
}

// +kubebuilder:rbac:groups=operator.prgcont.cz,resources=gordons,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=operator.prgcont.cz,resources=gordons/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=operator.prgcont.cz,resources=gordons/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete

// Reconcile gives one Gordon spec.gordon.replicas running pods: it creates
// those missing, owned by the Gordon (the garbage collector deletes them
// with it), deletes those too many, and lists them in the status. It runs
// when the Gordon changes and when one of its pods does (SetupWithManager),
// so a pod that is deleted or ends is replaced at once.
func (r *GordonReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)

	var g operatorv1.Gordon
	if err := r.Get(ctx, req.NamespacedName, &g); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var list corev1.PodList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(g.Namespace), client.MatchingLabels{gordonLabel: g.Name}); err != nil {
		return ctrl.Result{}, err
	}
	// A pod being deleted, or whose containers ended for good, no longer
	// counts: another takes its place.
	pods := slices.DeleteFunc(list.Items, func(p corev1.Pod) bool {
		return p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	for len(pods) < int(g.Spec.Gordon.Replicas) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "gordon-", Namespace: g.Namespace, Labels: map[string]string{gordonLabel: g.Name}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "gordon", Image: "prgcont/gordon:v1.0"}}},
		}
		if err := ctrl.SetControllerReference(&g, pod, r.Scheme); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Create(ctx, pod); err != nil {
			return ctrl.Result{}, err
		}
		log.Info("created a pod", "pod", pod.Name)
		pods = append(pods, *pod)
	}
	for len(pods) > int(g.Spec.Gordon.Replicas) {
		last := pods[len(pods)-1]
		if err := r.Delete(ctx, &last); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		log.Info("deleted a pod", "pod", last.Name)
		pods = pods[:len(pods)-1]
	}

	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if slices.Equal(names, g.Status.Pods) && g.Status.Replicas == int32(len(names)) {
		return ctrl.Result{}, nil
	}
	before := g.DeepCopy()
	g.Status.Pods, g.Status.Replicas = names, int32(len(names))
	return ctrl.Result{}, r.Status().Patch(ctx, &g, client.MergeFrom(before))
}

// SetupWithManager sets up the controller with the Manager: it watches the
// Gordons, and the pods they own.
func (r *GordonReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&operatorv1.Gordon{}).
		Owns(&corev1.Pod{}).
		Named("gordon").
		Complete(r)
}
