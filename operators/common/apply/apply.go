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
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/operator-workshops/workshop/operators/common/conditions"
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
// of the same configuration left in the fields the configuration sets: then
// the apply would change nothing, and would still cost a write (a PATCH for
// every child on every reconcile, even idle). What the configuration does
// not set is not compared: status, bookkeeping, and what other controllers
// add (a Deployment's revision annotation, a bound claim's volume name and
// annotations, a person's label) are theirs, and an apply would leave them
// as they are. A change to a field the configuration sets (a person's edit,
// a value removed), a list of it grown or shrunk, and a different
// configuration apply again, so drift is still repaired and fields dropped
// from the configuration still removed. live is read into by the caller,
// empty (no UID) when the object does not exist; its type is the object's.
// It reports whether it applied.
func (o FieldOwner) ApplyChanged(ctx context.Context, c client.Client, obj runtime.ApplyConfiguration, live client.Object) (bool, error) {
	sent := mustJSON(obj)
	config, err := hashOf(append([]byte(o+"\x00"), sent...))
	if err != nil {
		return false, err
	}
	mask, err := maskOf(sent)
	if err != nil {
		return false, err
	}
	created := func(bool) {}
	if uid := live.GetUID(); uid != "" {
		content, err := setFieldsHash(mask, live)
		if err != nil {
			return false, err
		}
		if last.unchanged(uid, appliedAt{config, content}) {
			return false, nil
		}
	} else {
		// This apply creates it.
		made := reflect.New(reflect.TypeOf(live).Elem()).Interface().(client.Object)
		if err := json.Unmarshal(sent, made); err != nil {
			return false, err
		}
		created = unseen.creating(made)
	}
	err = o.Apply(ctx, c, obj)
	created(err == nil)
	if err != nil {
		return false, err
	}
	// The apply filled obj with the API server's answer: the object as it
	// is now, read into live's type so that it compares with what the cache
	// will hold.
	answer := reflect.New(reflect.TypeOf(live).Elem()).Interface().(client.Object)
	if err := Decode(obj, answer); err != nil {
		return true, fmt.Errorf("reading the answer to applying %T: %w", obj, err)
	}
	content, err := setFieldsHash(mask, answer)
	if err != nil {
		return true, err
	}
	last.record(answer.GetUID(), appliedAt{config, content})
	return true, nil
}

// Holds reports whether live, an object as the cluster has it, holds in
// every field the configuration obj sets the value obj sets: whether
// applying obj would leave what obj asks for as it is. What the API
// server adds in the fields obj sets (defaults) is not compared; a value
// the server keeps in another form than obj's (a quantity "1000m" read back
// as "1") compares unequal, so that an error goes towards "a change is
// pending". For an operator that holds back an apply, to say whether the
// spec is carried out without it.
func Holds(obj runtime.ApplyConfiguration, live client.Object) (bool, error) {
	mask, err := maskOf(mustJSON(obj))
	if err != nil {
		return false, err
	}
	set, err := setFields(mask, live)
	if err != nil {
		return false, err
	}
	return reflect.DeepEqual(set, any(mask)), nil
}

// maskOf is a configuration's JSON form, sent, as the fields it sets.
// Objects read from a cache or a typed client have no apiVersion and kind
// (the apply's answer has them): those two are left out.
func maskOf(sent []byte) (map[string]any, error) {
	var mask map[string]any
	if err := json.Unmarshal(sent, &mask); err != nil {
		return nil, err
	}
	delete(mask, "apiVersion")
	delete(mask, "kind")
	return mask, nil
}

// setFields is what obj holds in the fields mask, a configuration's JSON
// form, sets (project).
func setFields(mask map[string]any, obj client.Object) (any, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return project(mask, m), nil
}

// setFieldsHash identifies what obj holds in the fields mask sets.
func setFieldsHash(mask map[string]any, obj client.Object) (string, error) {
	set, err := setFields(mask, obj)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(set) // map keys sorted
	if err != nil {
		return "", err
	}
	return hashOf(b)
}

// absent stands, in a projection, for a field the mask sets and the value
// does not have.
const absent = "\x00absent"

// project keeps of v, a JSON value, the fields mask sets: of a map, the
// keys mask has; of a list as long as mask's, each item by mask's item at
// its index; a list of another length, and any other value, whole (the
// server's defaults inside it compare equal, a grown or shrunk list does
// not).
func project(mask, v any) any {
	switch mk := mask.(type) {
	case map[string]any:
		vm, ok := v.(map[string]any)
		if !ok {
			return v
		}
		out := make(map[string]any, len(mk))
		for k, sub := range mk {
			if x, ok := vm[k]; ok {
				out[k] = project(sub, x)
			} else {
				out[k] = absent
			}
		}
		return out
	case []any:
		vl, ok := v.([]any)
		if !ok || len(vl) != len(mk) {
			return v
		}
		out := make([]any, len(vl))
		for i := range vl {
			out[i] = project(mk[i], vl[i])
		}
		return out
	}
	return v
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
// to it and the fields it set as the API server answered. UIDs are never
// reused, so one memory serves every controller of the process. It holds
// two hashes per child (some 100 bytes), forgets a child when the cache
// sees it deleted (FollowCache), and is empty after a restart, which
// costs one apply per child.
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

func (a *applied) forget(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.last, uid)
}

// FollowCache keeps this package's memories of objects of the kinds of
// objs in step with informers, the manager's cache: ApplyChanged forgets
// an object once the cache sees it deleted, so that its memory holds the
// living children only, and Get stops answering Unseen for an object this
// process created once the cache shows it (or its deletion). Call it once
// per manager, with the kinds of the operator's children.
func FollowCache(ctx context.Context, informers cache.Informers, objs ...client.Object) error {
	for _, obj := range objs {
		inf, err := informers.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("following the cache of %T: %w", obj, err)
		}
		seen := func(o any) {
			if m, ok := o.(metav1.Object); ok {
				unseen.forget(KeyOf(obj, client.ObjectKey{Namespace: m.GetNamespace(), Name: m.GetName()}))
			}
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: seen,
			DeleteFunc: func(o any) {
				if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
					o = d.Obj
				}
				seen(o)
				if m, ok := o.(metav1.Object); ok {
					last.forget(m.GetUID())
					children.gone(m)
				}
			},
		}); err != nil {
			return fmt.Errorf("following the cache of %T: %w", obj, err)
		}
	}
	return nil
}

// Reset forgets everything this process remembers of its own writes (what
// it applied, created, deleted and wrote over), as a new process starts: testenv's
// Restart, which plays a restart in the same process, calls it. The
// memories kept by a reconciler (secrets.Reader, conditions.Told) go with
// the reconciler.
func Reset() {
	last.mu.Lock()
	clear(last.last)
	last.mu.Unlock()
	unseen.mu.Lock()
	clear(unseen.until)
	unseen.mu.Unlock()
	written.mu.Lock()
	clear(written.byKey)
	written.mu.Unlock()
	children.mu.Lock()
	clear(children.byOwner)
	children.mu.Unlock()
}

// size is how many objects ApplyChanged remembers, for the tests.
func size() int {
	last.mu.Lock()
	defer last.mu.Unlock()
	return len(last.last)
}

func (a *applied) record(uid types.UID, at appliedAt) {
	if uid == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last[uid] = at
}

// CreateIfAbsent creates desired as owner unless an object of its name
// exists, for a child created once and never applied again (a Pod, a
// volume kept as made), and reports whether it created it. The cache c
// reads from holds the operator's own children: one it holds is read into
// existing, without a request. One it misses is created; only when the name
// is taken (a stranger's object, or the operator's own the cache has not
// seen yet) is it read from the API server (live) into existing. The caller
// checks that what exists is its own. One this process created that the
// cache does not show yet is Unseen.
func (o FieldOwner) CreateIfAbsent(ctx context.Context, c client.Client, live client.Reader, desired, existing client.Object) (bool, error) {
	key := client.ObjectKeyFromObject(desired)
	err := c.Get(ctx, key, existing)
	if !apierrors.IsNotFound(err) {
		return false, err
	}
	if err := unseen.check(key, existing); err != nil {
		return false, err
	}
	created := unseen.creating(desired)
	err = c.Create(ctx, desired, client.FieldOwner(o))
	created(err == nil)
	if !apierrors.IsAlreadyExists(err) {
		return err == nil, err
	}
	return false, live.Get(ctx, key, existing)
}

// Decode fills obj, a typed object, with the apply configuration ac: what
// an apply sends, or what its response filled in.
func Decode(ac runtime.ApplyConfiguration, obj client.Object) error {
	b, err := json.Marshal(ac)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, obj)
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
// and when the cache has none, from live, the API server itself (unless
// live is nil: cached then reads from the API server already). The cache
// holds only the operator's own children (manager.Children): an object of
// the same name that a person or another controller made is not in it, and
// must be seen, and left alone, before an apply would take it over. One
// this process created that the cache does not show yet is Unseen.
func Get(ctx context.Context, cached, live client.Reader, key client.ObjectKey, obj client.Object) error {
	err := cached.Get(ctx, key, obj)
	if !apierrors.IsNotFound(err) || live == nil {
		return err
	}
	if err := unseen.check(key, obj); err != nil {
		return err
	}
	return live.Get(ctx, key, obj)
}

// Claim reads obj (its name and namespace set) as Get does and reports
// whether it exists. One that exists and that ours does not recognise as
// owner's is a NameConflict: the operators never change nor adopt an
// object they did not make. obj holds what was read, the conflicting
// object included. ours is ControlledBy(owner) unless the operator marks
// its children otherwise.
func Claim(ctx context.Context, cached, live client.Reader, owner, obj client.Object, ours func(client.Object) bool) (bool, error) {
	err := Get(ctx, cached, live, client.ObjectKeyFromObject(obj), obj)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, claimed(owner, obj, ours)
}

// CreateOwned creates desired as owner unless an object of its name exists
// (CreateIfAbsent), with Claim's rule for one that does: one ours does not
// recognise as owner's is a NameConflict, never changed nor adopted. It
// reports whether it created desired; existing holds what exists
// otherwise. One this process created that the cache does not show yet is
// Unseen.
func (o FieldOwner) CreateOwned(ctx context.Context, c client.Client, live client.Reader, owner, desired, existing client.Object, ours func(client.Object) bool) (bool, error) {
	created, err := o.CreateIfAbsent(ctx, c, live, desired, existing)
	if err != nil || created {
		return created, err
	}
	return false, claimed(owner, existing, ours)
}

// claimed is the one rule of Claim and CreateOwned: obj, which exists, is
// owner's when ours recognises it, and a NameConflict otherwise.
func claimed(owner, obj client.Object, ours func(client.Object) bool) error {
	if !ours(obj) {
		return conditions.NameConflict(KindOf(obj), obj.GetName(), KindOf(owner), owner.GetName())
	}
	return nil
}

// ControlledBy recognises the objects owner controls (its controller
// reference).
func ControlledBy(owner client.Object) func(client.Object) bool {
	return func(obj client.Object) bool { return metav1.IsControlledBy(obj, owner) }
}

// KindOf names the kind of a typed object: "Service" for a *corev1.Service.
func KindOf(obj client.Object) string {
	return reflect.TypeOf(obj).Elem().Name()
}
