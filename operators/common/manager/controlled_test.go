package manager

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// builderIndexer hands IndexControllers' indexes to a fake client's builder.
type builderIndexer struct{ b *fake.ClientBuilder }

func (i builderIndexer) IndexField(_ context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	i.b.WithIndex(obj, field, extract)
	return nil
}

func TestControlledByListsByTheControllersUID(t *testing.T) {
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "owner", UID: "owner-uid"}}
	pod := func(ns, name string, uid types.UID, controller bool) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels:          map[string]string{"app": "owner"}, // every one wears the owner's labels
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: uid, Controller: &controller}}}}
	}
	b := fake.NewClientBuilder().WithObjects(
		pod("a", "ours", "owner-uid", true),
		pod("a", "earlier-owners", "earlier-uid", true), // of an earlier owner of the same name
		pod("a", "only-owned", "owner-uid", false),      // an owner reference, not the controller
		pod("b", "other-namespace", "owner-uid", true),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "orphan", Labels: map[string]string{"app": "owner"}}},
	)
	if err := IndexControllers(context.Background(), builderIndexer{b}, &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	c := b.Build()
	var list corev1.PodList
	if err := c.List(context.Background(), &list, ControlledBy(owner)); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range list.Items {
		got = append(got, p.Name)
	}
	if !slices.Equal(got, []string{"ours"}) {
		t.Errorf("ControlledBy listed %v; want [ours]", got)
	}
}
