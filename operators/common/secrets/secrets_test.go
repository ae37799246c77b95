package secrets

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/operator-workshops/workshop/operators/common/conditions"
)

func TestKey(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "ns"},
		Data:       map[string][]byte{"password": []byte("s3cret"), "empty": {}},
	}).Build()
	for _, tt := range []struct {
		name, secret, key, hint string
		reason, msg, value      string
	}{
		{name: "present", secret: "creds", key: "password", value: "s3cret"},
		{name: "no Secret", secret: "gone", key: "password", reason: ReasonSecretNotFound,
			msg: `Secret "gone" not found: create it with the root password under key "password"`},
		{name: "no Secret, another way out", secret: "gone", key: "password", hint: "remove spec.ref",
			reason: ReasonSecretNotFound, msg: `Secret "gone" not found: create it with the root password under key "password", or remove spec.ref`},
		{name: "no key", secret: "creds", key: "other", reason: ReasonSecretKeyMissing,
			msg: `Secret "creds" has no key "other": add the root password under that key`},
		{name: "empty value", secret: "creds", key: "empty", reason: ReasonSecretKeyMissing,
			msg: `Secret "creds" has no key "empty": add the root password under that key`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Policy{}.Key(context.Background(), c, "ns", tt.secret, tt.key, "the root password", tt.hint)
			reason, msg, blocked, _ := conditions.Reported(err)
			if tt.reason == "" {
				if err != nil || string(v) != tt.value {
					t.Fatalf("value %q, err %v; want %q", v, err, tt.value)
				}
				return
			}
			if !blocked || reason != tt.reason || msg != tt.msg {
				t.Errorf("blocked %v, reason %q, message %q; want %q, %q", blocked, reason, msg, tt.reason, tt.msg)
			}
		})
	}
}

// With --referable-secrets-only, a Secret its owner did not label is
// refused, with the command that labels it; a labelled one serves.
func TestLabelledOnly(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "ns"},
			Data:       map[string][]byte{"password": []byte("not yours")},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: "ns", Labels: map[string]string{ReferableLabel: "true"}},
			Data:       map[string][]byte{"password": []byte("s3cret")},
		},
	).Build()
	ctx, p := context.Background(), Policy{LabelledOnly: true}

	v, err := p.Key(ctx, c, "ns", "theirs", "password", "the root password", "")
	reason, msg, blocked, _ := conditions.Reported(err)
	want := `Secret "theirs" is not labelled operator-workshops.io/referable=true: the operator runs with ` +
		`--referable-secrets-only and uses only the Secrets their owners marked. If the root password may serve here, ` +
		`its owner labels it: kubectl label secret theirs operator-workshops.io/referable=true`
	if v != nil || !blocked || reason != ReasonSecretNotReferable || msg != want {
		t.Errorf("unlabelled: value %q, blocked %v, reason %q, message %q; want refused with %q", v, blocked, reason, msg, want)
	}
	if v, err := p.Key(ctx, c, "ns", "shared", "password", "the root password", ""); err != nil || string(v) != "s3cret" {
		t.Errorf("labelled: value %q, err %v; want s3cret", v, err)
	}
	if v, err := (Policy{}).Key(ctx, c, "ns", "theirs", "password", "the root password", ""); err != nil || string(v) != "not yours" {
		t.Errorf("by default: value %q, err %v; want any Secret of the namespace", v, err)
	}
}
