package conditions

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestRefused(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", field.ErrorList{field.Invalid(field.NewPath("spec", "containers").Index(0).Child("image"), "x ", "trailing whitespace")})
	podSecurity := apierrors.NewForbidden(pods, "p", errors.New(`violates PodSecurity "restricted:latest": runAsNonRoot != true`))
	terminating := apierrors.NewForbidden(pods, "p", errors.New("unable to create new content in namespace ns because it is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	for _, tt := range []struct {
		name    string
		err     error
		refused bool
		says    string
	}{
		{"nil", nil, false, ""},
		{"an invalid child", fmt.Errorf("creating a pod: %w", invalid), true, "trailing whitespace"},
		{"a child Pod Security forbids", podSecurity, true, `violates PodSecurity "restricted:latest"`},
		{"a request too large", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), true, "limit is 3145728"},
		{"a refusal joined to a failure", errors.Join(errors.New("connection refused"), podSecurity), true, "runAsNonRoot"},
		{"a namespace being deleted", terminating, false, ""},
		{"a conflict", apierrors.NewConflict(pods, "p", errors.New("changed")), false, ""},
		{"a failure of the network", errors.New("connection refused"), false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Refused(tt.err)
			if IsUnapplied(got) != tt.refused {
				t.Fatalf("Refused(%v) = %v; refused %v, want %v", tt.err, got, IsUnapplied(got), tt.refused)
			}
			if !tt.refused {
				if !errors.Is(got, tt.err) {
					t.Errorf("Refused changed an error that is no refusal: %v", got)
				}
				return
			}
			reason, msg, blocked, _ := Reported(got)
			if reason != ReasonRefused || !blocked || !strings.Contains(msg, tt.says) || Recheck(got) != RefusedRecheck {
				t.Errorf("Reported(Refused(%v)) = %s, %q, blocked %v, recheck %v; want %s saying %q, blocked, recheck %v",
					tt.err, reason, msg, blocked, Recheck(got), ReasonRefused, tt.says, RefusedRecheck)
			}
		})
	}
}
