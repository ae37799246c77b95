// Package secrets reads a key of a Secret that a custom resource names, and
// says what a person must do when it is not there.
package secrets

import (
	"context"
	"flag"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-workshops/workshop/operators/common/conditions"
)

// Reasons of the Blocked errors of Key.
const (
	ReasonSecretNotFound     = "SecretNotFound"
	ReasonSecretKeyMissing   = "SecretKeyMissing"
	ReasonSecretNotReferable = "SecretNotReferable"
)

// ReferableLabel, set to "true" on a Secret, is its owner's consent that a
// custom resource of its namespace name it, when the operator runs with
// --referable-secrets-only.
const ReferableLabel = "operator-workshops.io/referable"

// Policy says which Secrets of its namespace a custom resource may name.
// By default any: whoever may create the custom resource may have the
// operator use any Secret of the namespace. LabelledOnly narrows that to
// the Secrets labelled ReferableLabel=true, which whoever may label them,
// their owner, chose.
type Policy struct {
	LabelledOnly bool
}

// BindFlags adds --referable-secrets-only to fs.
func (p *Policy) BindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&p.LabelledOnly, "referable-secrets-only", p.LabelledOnly,
		"Use only the referenced Secrets labelled "+ReferableLabel+"=true: creating a custom resource then "+
			"no longer lets its creator use any Secret of the namespace, only those their owners labelled.")
}

// Key returns the value under key of the Secret name in namespace, read
// through r. A missing Secret, or a key that is missing or empty, is a
// Blocked error that says what to create; what names the value ("the root
// password"), and hint, when not empty, is appended to the missing Secret's
// message as another way out. A Secret p does not let a custom resource
// name is a Blocked error that says how its owner consents.
func (p Policy) Key(ctx context.Context, r client.Reader, namespace, name, key, what, hint string) ([]byte, error) {
	var s corev1.Secret
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s)
	if apierrors.IsNotFound(err) {
		msg := "Secret %q not found: create it with %s under key %q"
		if hint != "" {
			msg += ", or " + hint
		}
		return nil, conditions.Block(ReasonSecretNotFound, msg, name, what, key)
	}
	if err != nil {
		return nil, err
	}
	if p.LabelledOnly && s.Labels[ReferableLabel] != "true" {
		return nil, conditions.Block(ReasonSecretNotReferable,
			"Secret %q is not labelled %s=true: the operator runs with --referable-secrets-only and uses only the "+
				"Secrets their owners marked. If %s may serve here, its owner labels it: "+
				"kubectl label secret %s %s=true", name, ReferableLabel, what, name, ReferableLabel)
	}
	return Value(&s, key, what)
}

// Value returns the value under key of s, and a Blocked error when it is
// missing or empty.
func Value(s *corev1.Secret, key, what string) ([]byte, error) {
	v := s.Data[key]
	if len(v) == 0 {
		return nil, conditions.Block(ReasonSecretKeyMissing, "Secret %q has no key %q: add %s under that key", s.Name, key, what)
	}
	return v, nil
}
