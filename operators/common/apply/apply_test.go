package apply

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
)

func TestControllerReference(t *testing.T) {
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", UID: "1234"}}
	ref, err := ControllerReference(owner, scheme.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	if *ref.APIVersion != "v1" || *ref.Kind != "ConfigMap" || *ref.Name != "owner" || *ref.UID != "1234" {
		t.Errorf("reference %+v does not name the owner", ref)
	}
	if !*ref.Controller || !*ref.BlockOwnerDeletion {
		t.Error("the reference must make the owner the controller and block its deletion until the child goes")
	}
}
