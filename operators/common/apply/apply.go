// Package apply sends desired objects with server-side apply under one field
// manager per operator, and builds the owner references that tie children to
// their custom resource.
//
// Builders return apply configurations (k8s.io/client-go/applyconfigurations),
// which hold only the fields the operator has an opinion on: fields the API
// server defaults or allocates (a Service's nodePort, say) stay out of the
// request and are never fought over.
package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// FieldOwner is the server-side apply field manager of one operator, for
// example "database-operator". Keep it constant: a new name would leave the
// old manager's fields behind.
type FieldOwner string

// Apply sends obj with server-side apply as owner. The operator is the only
// writer of what it applies, so it takes the fields over on conflict.
func (o FieldOwner) Apply(ctx context.Context, c client.Client, obj runtime.ApplyConfiguration) error {
	if err := c.Apply(ctx, obj, client.FieldOwner(o), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %T: %w", obj, err)
	}
	return nil
}

// ApplyChanged applies obj as Apply does, unless live, the object as the
// operator's cache last saw it, still holds what this process's last apply
// of the same configuration left: then the apply would change nothing, and
// would still cost a write (a PATCH for every child on every reconcile, even
// idle). Only status and bookkeeping (resourceVersion, managedFields) may
// have changed since: a Deployment's rollout does not make its
// configuration apply again, but any other change does (a person's edit, a
// label a controller added), and so does a different configuration, so
// drift is still repaired and fields dropped from the configuration still
// removed. live is read into by the caller, empty (no UID) when the object
// does not exist; its type is the object's. It reports whether it applied.
func (o FieldOwner) ApplyChanged(ctx context.Context, c client.Client, obj runtime.ApplyConfiguration, live client.Object) (bool, error) {
	config, err := hashOf(append([]byte(o+"\x00"), mustJSON(obj)...))
	if err != nil {
		return false, err
	}
	if uid := live.GetUID(); uid != "" {
		content, err := contentHash(live)
		if err != nil {
			return false, err
		}
		if last.unchanged(uid, appliedAt{config, content}) {
			return false, nil
		}
	}
	if err := o.Apply(ctx, c, obj); err != nil {
		return false, err
	}
	// The apply filled obj with the API server's answer: the object as it
	// is now, read into live's type so that it compares with what the cache
	// will hold.
	answer := reflect.New(reflect.TypeOf(live).Elem()).Interface().(client.Object)
	if err := json.Unmarshal(mustJSON(obj), answer); err != nil {
		return true, fmt.Errorf("reading the answer to applying %T: %w", obj, err)
	}
	content, err := contentHash(answer)
	if err != nil {
		return true, err
	}
	last.record(answer.GetUID(), appliedAt{config, content})
	return true, nil
}

// contentHash identifies an object's content: all but its status and the
// bookkeeping every write changes.
func contentHash(obj client.Object) (string, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return "", err
	}
	// Objects read from a cache or a typed client have no apiVersion and
	// kind; the apply's answer has them.
	delete(m, "status")
	delete(m, "apiVersion")
	delete(m, "kind")
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "resourceVersion")
		delete(meta, "managedFields")
	}
	b, err = json.Marshal(m) // map keys sorted
	if err != nil {
		return "", err
	}
	return hashOf(b)
}

// mustJSON encodes an apply configuration or an object; both always encode.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// SpecHash returns a short, stable hash of v's JSON form (16 hex digits), to
// record on a child the spec it was built from, in an annotation, so that a
// change of the spec is seen where the API server defaults fields and a
// comparison of the objects would not be exact. It panics if v does not
// marshal, which an API type or an apply configuration always does.
func SpecHash(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("apply.SpecHash: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func hashOf(b []byte) (string, error) {
	if b == nil {
		return "", fmt.Errorf("nothing to hash")
	}
	sum := sha256.Sum256(b)
	return string(sum[:]), nil
}

// applied remembers, for each object by UID, the last configuration applied
// to it and the content the API server answered with. UIDs are never
// reused, so one memory serves every controller of the process. It holds
// two hashes per child ever applied (those of deleted children stay until
// the process ends, some 100 bytes each) and is empty after a restart,
// which costs one apply per child.
type applied struct {
	mu   sync.Mutex
	last map[types.UID]appliedAt
}

type appliedAt struct{ config, content string }

var last = &applied{last: map[types.UID]appliedAt{}}

func (a *applied) unchanged(uid types.UID, now appliedAt) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last[uid] == now
}

func (a *applied) record(uid types.UID, at appliedAt) {
	if uid == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last[uid] = at
}

// CreateOnce creates obj as owner, for an object created once and never
// changed, such as a Job: one of the same name that exists already was
// created by an earlier pass the cache has not shown yet, and counts as done
// (the caller reads it to see whose it is). It reports whether this call
// created obj, so that only the call that did tells it in an Event.
func (o FieldOwner) CreateOnce(ctx context.Context, c client.Client, obj client.Object) (bool, error) {
	err := c.Create(ctx, obj, client.FieldOwner(o))
	if apierrors.IsAlreadyExists(err) {
		return false, nil
	}
	return err == nil, err
}

// IgnoreNamespaceTerminating returns nil when err says that nothing can be
// created because the namespace is being deleted, and err otherwise. The
// namespace's deletion takes the custom resource too, whose event ends the
// matter: retrying would only fill the log with errors until then.
func IgnoreNamespaceTerminating(err error) error {
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return nil
	}
	return err
}

// ControllerReference returns the owner reference that makes owner the
// controller of a child: the child is garbage-collected with its owner, and
// deleting the owner in the foreground waits for it. It is the reference
// controllerutil.SetControllerReference puts on a typed object (the one the
// operators create), as an apply configuration for a child they apply.
func ControllerReference(owner client.Object, scheme *runtime.Scheme) (*metav1ac.OwnerReferenceApplyConfiguration, error) {
	gvk, err := apiutil.GVKForObject(owner, scheme)
	if err != nil {
		return nil, err
	}
	ref := metav1.NewControllerRef(owner, gvk)
	return metav1ac.OwnerReference().
		WithAPIVersion(ref.APIVersion).
		WithKind(ref.Kind).
		WithName(ref.Name).
		WithUID(ref.UID).
		WithController(*ref.Controller).
		WithBlockOwnerDeletion(*ref.BlockOwnerDeletion), nil
}

// Get reads the object at key into obj from cached, the operator's cache,
// and when the cache has none, from live, the API server itself. The cache
// holds only the operator's own children (manager.Children): an object of
// the same name that a person or another controller made is not in it, and
// must be seen, and left alone, before an apply would take it over.
func Get(ctx context.Context, cached, live client.Reader, key client.ObjectKey, obj client.Object) error {
	err := cached.Get(ctx, key, obj)
	if !apierrors.IsNotFound(err) {
		return err
	}
	return live.Get(ctx, key, obj)
}
