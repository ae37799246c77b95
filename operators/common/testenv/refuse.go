package testenv

import (
	"context"
	"errors"
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RefusingNamespace creates a namespace for one integration test where the
// API server refuses to create pods of image, as an admin's policy would, and
// returns it once the policy is in force (see Refuse).
func (s *Suite) RefusingNamespace(t *testing.T, image string) string {
	t.Helper()
	ns := s.Namespace(t, nil)
	Refuse(t, s.Client, ns, image)
	return ns
}

// Refuse makes the API server refuse to create pods of image in namespace
// ns, as an admin's policy would (a ValidatingAdmissionPolicy and its
// binding, deleted when the test ends), and returns once the policy is in
// force. The refusal says "the image <image> is not allowed here".
func Refuse(t *testing.T, c client.Client, ns, image string) {
	t.Helper()
	ctx := context.Background()
	for _, o := range refusingPolicy(ns, image) {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), o) })
	}
	Eventually(t, "the policy refusing "+image+" in "+ns, func(ctx context.Context) error {
		return refuses(ctx, c, ns, image)
	})
}

// refusingPolicy is a ValidatingAdmissionPolicy and its binding, both named
// ns, under which the API server refuses to create pods of image in
// namespace ns.
func refusingPolicy(ns, image string) []client.Object {
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("object.spec.containers.all(c, c.image != %q)", image),
				Message:    "the image " + image + " is not allowed here",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        ns,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
			}},
		},
	}
	return []client.Object{policy, binding}
}

// refuses is nil once the API server refuses a pod of image in namespace
// ns (a server-side dry run): a policy is in force a moment after its
// creation.
func refuses(ctx context.Context, c client.Client, ns, image string) error {
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
	}
	err := c.Create(ctx, probe, client.DryRunAll)
	switch {
	case err == nil:
		return errors.New("a pod of " + image + " is still admitted")
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err):
		return nil
	}
	return err
}
