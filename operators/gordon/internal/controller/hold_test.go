package controller

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	gordonv1 "github.com/operator-workshops/workshop/operators/gordon/api/v1"
)

// A pass that comes while the cache has not shown the pods the last pass
// created waits for them (apply.ChildrenShown): counting what the cache shows
// would create them again. The cache here never shows a pod, so a second
// pass that counted it would create three more. (Checked: with
// ChildrenShown never holding, this test fails with 9 creations.)
func TestAPassWaitsUntilTheCacheShowsItsPods(t *testing.T) {
	s := holdScheme(t)
	g := &gordonv1.Gordon{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns", Generation: 1}}
	g.Spec.Gordon.Replicas = 3
	var creations atomic.Int32
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(g).WithStatusSubresource(g).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, pods := list.(*corev1.PodList); pods {
				return nil // a cache that has not seen them yet
			}
			return c.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, pod := obj.(*corev1.Pod); pod {
				creations.Add(1)
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	reconcileThrice(t, c, g)
	if n := creations.Load(); n != 3 {
		t.Errorf("%d pods created over three passes, the cache showing none: want the 3 the spec asks for, once", n)
	}
}

// The same for a scale down: while the cache still shows the pods the last
// pass deleted as they were, a second pass that counted them would delete
// two more. (Checked: without DeletedChild, 6 deletions over three passes.)
func TestAPassWaitsUntilTheCacheShowsItsDeletions(t *testing.T) {
	s := holdScheme(t)
	g := &gordonv1.Gordon{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns", UID: "g-uid", Generation: 1}}
	g.Spec.Gordon.Replicas = 1
	var running []corev1.Pod
	for _, name := range []string{"g-a", "g-b", "g-c"} {
		p := podFor(g, DefaultRequests)
		p.GenerateName, p.Name, p.UID = "", name, types.UID(name)
		if err := controllerutil.SetControllerReference(g, p, s); err != nil {
			t.Fatal(err)
		}
		p.Status.Phase = corev1.PodRunning
		running = append(running, *p)
	}
	var deletions atomic.Int32
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(g).WithStatusSubresource(g).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if pods, ok := list.(*corev1.PodList); ok {
				pods.Items = slices.Clone(running) // a cache that has not seen the deletions
				return nil
			}
			return c.List(ctx, list, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if _, pod := obj.(*corev1.Pod); pod {
				deletions.Add(1)
				return nil
			}
			return c.Delete(ctx, obj, opts...)
		},
	}).Build()
	reconcileThrice(t, c, g)
	if n := deletions.Load(); n != 2 {
		t.Errorf("%d pods deleted over three passes, the cache showing them all running: want the 2 over the spec, once", n)
	}
}

func holdScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gordonv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// reconcileThrice runs three passes of a reconciler on c for g, as its
// pods' events would.
func reconcileThrice(t *testing.T, c client.Client, g *gordonv1.Gordon) {
	t.Helper()
	r := &GordonReconciler{Client: c, Recorder: events.NewFakeRecorder(100), Requests: DefaultRequests}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(g)}
	for pass := range 3 {
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
	}
}
