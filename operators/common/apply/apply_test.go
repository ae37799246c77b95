package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/operator-workshops/workshop/operators/common/conditions"
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

func TestSpecHash(t *testing.T) {
	spec := func(image string) *corev1.PodSpec {
		return &corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: image}}}
	}
	a, again, b := SpecHash(spec("mongo:4")), SpecHash(spec("mongo:4")), SpecHash(spec("mongo:5"))
	if len(a) != 16 || strings.Trim(a, "0123456789abcdef") != "" {
		t.Errorf("hash %q: want 16 hex digits", a)
	}
	if a != again {
		t.Errorf("the same spec hashes to %q and %q", a, again)
	}
	if a == b {
		t.Errorf("two specs hash alike: %q", a)
	}
}

func TestIgnoreNamespaceTerminating(t *testing.T) {
	// What the API server's NamespaceLifecycle admission answers a create in
	// a namespace that is being deleted.
	terminating := apierrors.NewForbidden(corev1.Resource("pods"), "mysql-db",
		errors.New("unable to create new content in namespace e2e because it is being terminated"))
	terminating.ErrStatus.Details.Causes = append(terminating.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: corev1.NamespaceTerminatingCause, Field: "metadata.namespace",
	})
	otherForbidden := apierrors.NewForbidden(corev1.Resource("pods"), "mysql-db", errors.New("exceeded quota"))

	for _, tc := range []struct {
		name string
		err  error
		kept bool
	}{
		{"nil", nil, false},
		{"namespace terminating", terminating, false},
		{"wrapped by Apply and joined with a status write", errors.Join(fmt.Errorf("applying pod: %w", terminating), errors.New("status")), false},
		{"another forbidden", otherForbidden, true},
		{"not an API error", errors.New("boom"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := IgnoreNamespaceTerminating(tc.err)
			if kept := got != nil; kept != tc.kept {
				t.Errorf("IgnoreNamespaceTerminating(%v) = %v, want the error kept: %v", tc.err, got, tc.kept)
			}
		})
	}
}

// cachedClient reads from a cache of its own and writes to the API server
// behind it, as the manager's client does.
type cachedClient struct {
	client.Client
	cache client.Reader
}

func (c cachedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.cache.Get(ctx, key, obj, opts...)
}

func TestCreateIfAbsent(t *testing.T) {
	owner := FieldOwner("test-operator")
	desired := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child", Namespace: "ns"}, Data: map[string]string{"made": "by us"}}
	}
	for _, tt := range []struct {
		name          string
		cached, inAPI *corev1.ConfigMap // what the cache and the API server hold
		created       bool
		reads         int    // of the API server
		want          string // existing's data, when not created
	}{
		{name: "absent: created without a read", created: true},
		{name: "cached: read from the cache, not created",
			cached: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child", Namespace: "ns"}, Data: map[string]string{"made": "earlier"}},
			inAPI:  &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child", Namespace: "ns"}, Data: map[string]string{"made": "earlier"}},
			want:   "earlier"},
		{name: "a stranger's, outside the cache: the create conflicts, and it is read",
			inAPI: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child", Namespace: "ns"}, Data: map[string]string{"made": "by a person"}},
			reads: 1, want: "by a person"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			Reset() // each case's object is new to this process
			reads := 0
			api := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					reads++
					return c.Get(ctx, key, obj, opts...)
				}})
			cache := fake.NewClientBuilder()
			if tt.inAPI != nil {
				api = api.WithObjects(tt.inAPI)
			}
			if tt.cached != nil {
				cache = cache.WithObjects(tt.cached)
			}
			c := cachedClient{Client: api.Build(), cache: cache.Build()}
			existing := &corev1.ConfigMap{}
			created, err := owner.CreateIfAbsent(context.Background(), c, c.Client, desired(), existing)
			if err != nil || created != tt.created || reads != tt.reads {
				t.Fatalf("created %v, %d reads of the API server, err %v; want created %v, %d reads", created, reads, err, tt.created, tt.reads)
			}
			got := &corev1.ConfigMap{}
			if err := c.Client.Get(context.Background(), client.ObjectKeyFromObject(desired()), got); err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.created && got.Data["made"] != "by us":
				t.Errorf("the API server holds %v, want the desired object", got.Data)
			case !tt.created && (existing.Data["made"] != tt.want || got.Data["made"] != tt.want):
				t.Errorf("existing %v, the API server %v; want both %q, untouched", existing.Data, got.Data, tt.want)
			}
		})
	}
}

// An object this process created is Unseen while its cache does not show
// it: neither read from the API server nor created again. Once the cache
// shows it (FollowCache forgets it), or the memory ends, a miss is read
// from the API server again.
func TestUnseen(t *testing.T) {
	Reset()
	owner := FieldOwner("test-operator")
	desired := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child", Namespace: "ns"}}
	}
	requests := 0
	api := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			requests++
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			requests++
			return c.Create(ctx, obj, opts...)
		}}).Build()
	behind := cachedClient{Client: api, cache: fake.NewClientBuilder().Build()} // a cache that shows nothing yet
	ctx := context.Background()
	key := client.ObjectKeyFromObject(desired())
	if created, err := owner.CreateIfAbsent(ctx, behind, api, desired(), &corev1.ConfigMap{}); !created || err != nil {
		t.Fatalf("first pass: created %v, err %v", created, err)
	}
	requests = 0
	var u *Unseen
	if created, err := owner.CreateIfAbsent(ctx, behind, api, desired(), &corev1.ConfigMap{}); created || !errors.As(err, &u) || requests != 0 {
		t.Fatalf("next pass, the cache behind: created %v, err %v, %d requests; want Unseen, without a request", created, err, requests)
	}
	if u.After <= 0 || u.After > unseenFor {
		t.Errorf("Unseen after %s, want within %s", u.After, unseenFor)
	}
	if err := Get(ctx, behind, api, key, &corev1.ConfigMap{}); !errors.As(err, &u) || requests != 0 {
		t.Fatalf("Get with the cache behind: err %v, %d requests; want Unseen, without a request", err, requests)
	}
	if err := Get(ctx, behind, api, key, &corev1.Secret{}); !apierrors.IsNotFound(err) || requests != 1 {
		t.Errorf("Get of another kind of the same name: err %v, %d requests; want NotFound from the API server", err, requests)
	}

	unseen.forget(KeyOf(desired(), client.ObjectKeyFromObject(desired()))) // as FollowCache does when the cache shows it
	requests = 0
	if err := Get(ctx, behind, api, key, &corev1.ConfigMap{}); err != nil || requests != 1 {
		t.Errorf("Get once the cache showed it: err %v, %d requests; want it read from the API server", err, requests)
	}

	unseen.creating(desired())(true)
	unseen.until[KeyOf(desired(), client.ObjectKeyFromObject(desired()))] = time.Now().Add(-time.Second) // the memory ended
	requests = 0
	if err := Get(ctx, behind, api, key, &corev1.ConfigMap{}); err != nil || requests != 1 {
		t.Errorf("Get after the memory ended: err %v, %d requests; want it read from the API server", err, requests)
	}

	// A memory nothing reads nor forgets (a kind the cache does not
	// follow) is dropped once it ended, by a later creation.
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "unfollowed", Namespace: "ns"}}
	unseen.creating(other)(true)
	unseen.until[KeyOf(other, client.ObjectKeyFromObject(other))] = time.Now().Add(-time.Second)
	unseen.swept = time.Time{}
	unseen.creating(desired())(true)
	if _, kept := unseen.until[KeyOf(other, client.ObjectKeyFromObject(other))]; kept {
		t.Error("a memory that ended is kept after the next creation's sweep")
	}
}

// Reset forgets every memory of this process's own writes, as a new process
// starts with none: what it applied, what it created and the copies its
// writes replaced.
func TestResetForgetsEveryWrite(t *testing.T) {
	Reset()
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", UID: "u1", ResourceVersion: "2"}}
	last.last[obj.UID] = appliedAt{config: "c", content: "c"}
	unseen.creating(obj)
	Wrote(obj, "1")
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owner", UID: "u0"}}
	CreatedChild(owner, obj)
	stale := obj.DeepCopy()
	stale.ResourceVersion = "1"
	if !Stale(stale) || unseen.check(client.ObjectKeyFromObject(obj), obj) == nil || size() != 1 ||
		ChildrenShown(owner, []*corev1.ConfigMap{}) == nil {
		t.Fatal("the memories were not written")
	}
	Reset()
	if Stale(stale) {
		t.Error("a copy one of the writes replaced is still stale after Reset")
	}
	if err := unseen.check(client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Errorf("a creation is still unseen after Reset: %v", err)
	}
	if n := size(); n != 0 {
		t.Errorf("%d applies remembered after Reset", n)
	}
	if err := ChildrenShown(owner, []*corev1.ConfigMap{}); err != nil {
		t.Errorf("a child's creation is still awaited after Reset: %v", err)
	}
}

// CreateOwned follows Claim's rule for what exists: the owner's own object
// is left as it is, a stranger's is a NameConflict, and neither is changed.
func TestCreateOwned(t *testing.T) {
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "ns", UID: "owner-uid"}}
	ours := func(o client.Object) bool { return o.GetLabels()["made-for"] == "owner" }
	child := func(madeFor string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child", Namespace: "ns", Labels: map[string]string{"made-for": madeFor}}}
	}
	for _, tt := range []struct {
		name     string
		inAPI    *corev1.ConfigMap
		created  bool
		conflict bool
	}{
		{"absent: created", nil, true, false},
		{"the owner's: left as it is", child("owner"), false, false},
		{"a stranger's: a NameConflict", child("someone"), false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			Reset()
			api := fake.NewClientBuilder()
			if tt.inAPI != nil {
				api = api.WithObjects(tt.inAPI)
			}
			c := cachedClient{Client: api.Build(), cache: fake.NewClientBuilder().Build()}
			created, err := FieldOwner("test-operator").CreateOwned(context.Background(), c, c.Client, owner, child("owner"), &corev1.ConfigMap{}, ours)
			var b *conditions.Blocked
			if created != tt.created || errors.As(err, &b) != tt.conflict || (err != nil && !tt.conflict) {
				t.Fatalf("created %v, err %v; want created %v, a conflict %v", created, err, tt.created, tt.conflict)
			}
			if tt.conflict && b.Reason != conditions.ReasonNameConflict {
				t.Errorf("reason %s, want %s", b.Reason, conditions.ReasonNameConflict)
			}
			got := &corev1.ConfigMap{}
			if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "child"}, got); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]string{true: "someone", false: "owner"}[tt.conflict]; got.Labels["made-for"] != want {
				t.Errorf("the API server holds a child made for %q, want %q", got.Labels["made-for"], want)
			}
		})
	}
}
