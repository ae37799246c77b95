package pods

import (
	"context"
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-workshops/workshop/operators/common/conditions"
)

// Admitted asks the API server, by a server-side dry run, whether it would
// create a pod of template (a Pod or a pod template, typed or as an apply
// configuration: its metadata and spec are read) in namespace, before an
// operator destroys the running pod the new one is to replace. A pod that
// Pod Security, a policy or a webhook refuses is a *conditions.Blocked of
// reason Refused saying the server's message: the running pod stays, and
// the custom resource says why. The dry-run pod is named apart, with
// generateName (the running one holds the name). A quota's refusal is not
// one here: the quota counts the running pod, which its delete frees.
func Admitted(ctx context.Context, c client.Client, namespace, generateName string, template any) error {
	data, err := json.Marshal(template)
	if err != nil {
		return err
	}
	var t corev1.PodTemplateSpec
	if err := json.Unmarshal(data, &t); err != nil {
		return err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: generateName, Namespace: namespace,
			Labels: t.Labels, Annotations: t.Annotations, OwnerReferences: t.OwnerReferences,
		},
		Spec: t.Spec,
	}
	err = c.Create(ctx, pod, client.DryRunAll)
	msg, refused := conditions.Refusal(err)
	switch {
	case !refused:
		return err
	case apierrors.IsForbidden(err) && strings.Contains(msg, "exceeded quota"):
		return nil
	}
	return &conditions.Blocked{Reason: conditions.ReasonRefused, Recheck: conditions.RefusedRecheck, Unapplied: true,
		Message: "the API server refuses the new pod, so the running one stays: " + msg}
}
