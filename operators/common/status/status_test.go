package status

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestPatchIfChanged(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	writes := 0
	c := fake.NewClientBuilder().
		WithObjects(pod).
		WithStatusSubresource(pod).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				writes++
				return c.SubResource(sub).Patch(ctx, obj, p, opts...)
			},
		}).Build()
	ctx := context.Background()

	got := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
		t.Fatal(err)
	}
	before := got.DeepCopy()
	got.Labels = map[string]string{"spec": "changes are not status"}
	if err := PatchIfChanged(ctx, c, before, got); err != nil || writes != 0 {
		t.Fatalf("unchanged status: err %v, %d writes, want none", err, writes)
	}

	got.Status.Message = "changed"
	if err := PatchIfChanged(ctx, c, before, got); err != nil || writes != 1 {
		t.Fatalf("changed status: err %v, %d writes, want 1", err, writes)
	}
	stored := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), stored); err != nil {
		t.Fatal(err)
	}
	if stored.Status.Message != "changed" {
		t.Errorf("stored status message %q, want %q", stored.Status.Message, "changed")
	}

	// A reconcile that read the object before that write must not undo it.
	stale := before.DeepCopy()
	stale.Status.Reason = "stale"
	if err := PatchIfChanged(ctx, c, before, stale); !apierrors.IsConflict(err) {
		t.Fatalf("a patch from a stale copy: err %v, want a conflict", err)
	}
}

func TestFinish(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	c := fake.NewClientBuilder().WithObjects(pod).WithStatusSubresource(pod).Build()
	ctx := context.Background()
	read := func() *corev1.Pod {
		got := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	before := read()
	after := before.DeepCopy()
	after.Status.Message = "first"
	reconcileErr := errors.New("the reconcile's own error")
	if err := Finish(ctx, c, before, after, reconcileErr); !errors.Is(err, reconcileErr) {
		t.Fatalf("Finish = %v, want the reconcile's error kept", err)
	}
	if got := read().Status.Message; got != "first" {
		t.Fatalf("status message %q after Finish, want it written: %q", got, "first")
	}

	// A second reconcile that started from the same, now stale, copy: its
	// write conflicts, which is no error to report, and changes nothing.
	stale := before.DeepCopy()
	stale.Status.Message = "stale"
	if err := Finish(ctx, c, before, stale, nil); err != nil {
		t.Errorf("Finish on a stale copy = %v, want nil (the newer version's event reconciles again)", err)
	}
	if got := read().Status.Message; got != "first" {
		t.Errorf("status message %q, want %q: a stale write went through", got, "first")
	}
}
