package controller

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	gordonv1 "github.com/operator-workshops/workshop/operators/gordon/api/v1"
	"github.com/operator-workshops/workshop/operators/gordon/internal/expectations"
)

// A pass that comes while the cache has not shown the pods the last pass
// created waits for them (the expectations): counting what the cache shows
// would create them again. The cache here never shows a pod, so a second
// pass that counted it would create three more. (Checked: with
// holdForCache never holding, this test fails with 9 creations.)
func TestAPassWaitsUntilTheCacheShowsItsPods(t *testing.T) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gordonv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
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
	r := &GordonReconciler{Client: c, Recorder: events.NewFakeRecorder(100), Expectations: expectations.New(), Requests: DefaultRequests}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(g)}
	for pass := range 3 {
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
	}
	if n := creations.Load(); n != 3 {
		t.Errorf("%d pods created over three passes, the cache showing none: want the 3 the spec asks for, once", n)
	}
}
