package controller

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/operator-workshops/workshop/operators/common/labels"
	"github.com/operator-workshops/workshop/operators/common/pods"
	"github.com/operator-workshops/workshop/operators/common/podsecurity"
	gordonv1 "github.com/operator-workshops/workshop/operators/gordon/api/v1"
)

// DefaultRequests are what a gordon pod requests of its node when the
// operator's flags say nothing else (--pod-cpu-request,
// --pod-memory-request): the workshop's demo container needs little.
var DefaultRequests = pods.NewRequests("10m", "16Mi")

// podFor returns a new gordon pod of g, requesting requests, named by the
// API server from the workshop's prefix. The caller sets the owner
// reference.
func podFor(g *gordonv1.Gordon, requests pods.Requests) *corev1.Pod {
	image := g.Spec.Gordon.Image
	if image == "" {
		image = gordonv1.DefaultImage
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: podNamePrefix,
			Namespace:    g.Namespace,
			Labels:       labels.Standard(appName, g.Name, FieldOwner),
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:            containerName,
				Image:           image,
				SecurityContext: podsecurity.Container(),
				Resources:       corev1.ResourceRequirements{Requests: requests.List()},
			}},
			// The workshop's image does not say which user it runs as, so
			// the pod cannot promise runAsNonRoot unless spec.gordon.runAsUser
			// names one; the rest of the restricted profile always applies.
			SecurityContext: podsecurity.Pod(g.Spec.Gordon.RunAsUser),
			// A gordon pod never talks to the API server: no token to steal.
			AutomountServiceAccountToken: ptr.To(false),
		},
	}
}

// selector is the label selector of g's pods, as kubectl takes it.
func selector(g *gordonv1.Gordon) string {
	return metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: labels.Selector(appName, g.Name)})
}
