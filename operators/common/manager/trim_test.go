package manager

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-workshops/workshop/operators/common/pods"
)

func TestTrim(t *testing.T) {
	byObject := Children("test-operator", &corev1.Pod{}, &corev1.Service{})
	Trim(byObject, pods.KeepStatus)
	var podKind, serviceKind cache.ByObject
	for kind, o := range byObject {
		switch kind.(type) {
		case *corev1.Pod:
			podKind = o
		case *corev1.Service:
			serviceKind = o
		}
	}
	if podKind.Transform == nil || serviceKind.Transform != nil {
		t.Fatalf("Trim set the transforms of pods %v and of Services %v; want the pods' only", podKind.Transform != nil, serviceKind.Transform != nil)
	}
	if !podKind.Label.Matches(labels.Set{"app.kubernetes.io/managed-by": "test-operator"}) {
		t.Errorf("Trim changed the pods' selection to %v", podKind.Label)
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec:       corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for range 2 { // again on what it trimmed
		out, err := podKind.Transform(pod)
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*corev1.Pod)
		if len(got.ManagedFields) != 0 || len(got.Spec.Containers) != 0 || got.Spec.NodeName != "n" || got.Status.Phase != corev1.PodRunning || got.Name != "p" {
			t.Fatalf("the pod's transform left %+v; want its name, node and status, no containers nor managedFields", got)
		}
		pod = got
	}
	// What is not a pod (an informer's tombstone) goes through as it is.
	tombstone := "not an object"
	if out, err := podKind.Transform(tombstone); err != nil || out != tombstone {
		t.Errorf("the transform of %q gave %v, %v", tombstone, out, err)
	}
}

func TestTrimOfAKindNotCachedPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "*v1.Deployment") {
			t.Errorf("Trim of a kind not in the cache: panic %v; want one naming the kind", r)
		}
	}()
	Trim(map[client.Object]cache.ByObject{&corev1.Pod{}: {}}, func(*appsv1.Deployment) {})
}
