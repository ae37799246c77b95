package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gordonv1 "github.com/operator-workshops/workshop/operators/gordon/api/v1"
)

func TestPodForIsLockedDown(t *testing.T) {
	g := &gordonv1.Gordon{ObjectMeta: metav1.ObjectMeta{Name: "gordoncluster", Namespace: "ns"}}
	pod := podFor(g, DefaultRequests)
	if a := pod.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Error("a gordon pod mounts a ServiceAccount token it never uses: automountServiceAccountToken is not false")
	}
	c := pod.Spec.Containers[0]
	if c.Image != gordonv1.DefaultImage {
		t.Errorf("image %q, want the workshop's %q when the Gordon names none", c.Image, gordonv1.DefaultImage)
	}
	if !c.Resources.Requests.Cpu().Equal(DefaultRequests.CPU) || !c.Resources.Requests.Memory().Equal(DefaultRequests.Memory) {
		t.Errorf("container requests %v, want the operator's %v", c.Resources.Requests, DefaultRequests.List())
	}
	if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container security context is not restricted: %+v", sc)
	}
	if sc := pod.Spec.SecurityContext; sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context has no RuntimeDefault seccomp profile: %+v", sc)
	}
}
