package finalizers

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

const finalizer = "example.org/backup"

func TestEnsureAndRemove(t *testing.T) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	c := fake.NewClientBuilder().WithObjects(cm).Build()
	stored := func() *corev1.ConfigMap {
		got := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	if added, err := Ensure(ctx, c, stored(), finalizer); err != nil || !added {
		t.Fatalf("first Ensure: added %v, err %v; want added", added, err)
	}
	if !controllerutil.ContainsFinalizer(stored(), finalizer) {
		t.Fatal("the finalizer is not stored")
	}
	if added, err := Ensure(ctx, c, stored(), finalizer); err != nil || added {
		t.Fatalf("second Ensure: added %v, err %v; want no change", added, err)
	}
	if err := Remove(ctx, c, stored(), finalizer); err != nil {
		t.Fatal(err)
	}
	if controllerutil.ContainsFinalizer(stored(), finalizer) {
		t.Fatal("the finalizer is still stored")
	}
}

func TestEnsureLeavesDeletedObjectsAlone(t *testing.T) {
	now := metav1.Now()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "c", Namespace: "ns", DeletionTimestamp: &now, Finalizers: []string{"other/finalizer"},
	}}
	c := fake.NewClientBuilder().WithObjects(cm).Build()
	if added, err := Ensure(context.Background(), c, cm, finalizer); err != nil || added {
		t.Fatalf("Ensure on a deleted object: added %v, err %v; want nothing done", added, err)
	}
}

// A copy read before another writer changed the finalizers would put their
// list back as it was: the patch fails with a conflict instead.
func TestStaleCopiesConflict(t *testing.T) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Finalizers: []string{"other/finalizer"}}}
	c := fake.NewClientBuilder().WithObjects(cm).Build()
	stale := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), stale); err != nil {
		t.Fatal(err)
	}
	fresh := stale.DeepCopy()
	fresh.Finalizers = nil
	if err := c.Update(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(ctx, c, stale.DeepCopy(), finalizer); !apierrors.IsConflict(err) {
		t.Errorf("Ensure on a stale copy: %v, want a conflict", err)
	}
	stale.Finalizers = append(stale.Finalizers, finalizer)
	if err := Remove(ctx, c, stale, finalizer); !apierrors.IsConflict(err) {
		t.Errorf("Remove on a stale copy: %v, want a conflict", err)
	}
}
