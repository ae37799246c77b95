package apply

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// The copies a write of this process replaced are Stale: the one the write
// was computed from, and, once the object is released, every copy of it;
// never a newer copy, nor a copy of another object made under the name.
func TestStale(t *testing.T) {
	Reset()
	at := func(uid, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", UID: types.UID("u" + uid), ResourceVersion: rv}}
	}
	want := func(what string, obj *corev1.ConfigMap, stale bool) {
		t.Helper()
		if Stale(obj) != stale {
			t.Errorf("%s (uid %s at %s): Stale = %v, want %v", what, obj.UID, obj.ResourceVersion, !stale, stale)
		}
	}
	Wrote(at("1", "1"), "1")
	want("no write happened", at("1", "1"), false)
	Wrote(at("1", "2"), "1")
	want("the copy the write replaced", at("1", "1"), true)
	want("the copy the write made", at("1", "2"), false)
	want("another object's copy at that version", at("2", "1"), false)

	Released(at("1", "3"))
	want("a copy of the released object", at("1", "2"), true)
	want("a later copy of the released object", at("1", "5"), true)
	want("another object's copy", at("2", "1"), false)
	Wrote(at("1", "4"), "3") // its status written as it goes
	want("a copy of the released object, after a write of it", at("1", "9"), true)

	Wrote(at("2", "7"), "6") // the object made again under the name
	want("the new object's replaced copy", at("2", "6"), true)
	want("the new object's copy", at("2", "7"), false)
}

// Get, and so Claim, read the cache first: an object it holds, or an
// error other than NotFound, costs no request to the API server.
func TestGetReadsTheCacheFirst(t *testing.T) {
	Reset()
	requests := 0
	api := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			requests++
			return c.Get(ctx, key, obj, opts...)
		}}).Build()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cached"}}
	cached := fake.NewClientBuilder().WithObjects(cm).Build()
	ctx := context.Background()
	if err := Get(ctx, cached, api, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil || requests != 0 {
		t.Errorf("an object the cache holds: err %v, %d requests; want it, without a request", err, requests)
	}
	refused := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "cached", errors.New("no"))
	failing := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return refused
		}}).Build()
	if err := Get(ctx, failing, api, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsForbidden(err) || requests != 0 {
		t.Errorf("a cache that fails: err %v, %d requests; want its error, without a request", err, requests)
	}
	if exists, err := Claim(ctx, failing, api, cm, &corev1.ConfigMap{ObjectMeta: cm.ObjectMeta}, ControlledBy(cm)); exists || !apierrors.IsForbidden(err) {
		t.Errorf("Claim through a cache that fails: exists %v, err %v; want its error", exists, err)
	}
}
