package secrets

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// counting counts the Gets sent to the API server.
type counting struct {
	client.Reader
	gets int
}

func (c *counting) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets++
	return c.Reader.Get(ctx, key, obj, opts...)
}

// A Secret is read from the API server once per version the metadata cache
// shows, never served from memory at a version the cache does not show, and
// forgotten once gone.
func TestReaderReadsAgainOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "ns", Name: "creds"}
	server := fake.NewClientBuilder().WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace},
		Data:       map[string][]byte{"password": []byte("one")},
	}).Build()
	api := &counting{Reader: server}
	// The metadata cache shows the server's Secrets, or lags it.
	md := metadataOf{server: server, lagging: map[client.ObjectKey]string{}}
	r := &Reader{Metadata: md, API: api}

	read := func(what, want string, wantGets int) {
		t.Helper()
		var s corev1.Secret
		if err := r.Get(ctx, key, &s); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := string(s.Data["password"]); got != want || api.gets != wantGets {
			t.Errorf("%s: password %q after %d API reads, want %q after %d", what, got, api.gets, want, wantGets)
		}
	}
	read("the first read", "one", 1)
	read("again, unchanged", "one", 1)
	read("and again", "one", 1)

	var s corev1.Secret
	if err := server.Get(ctx, key, &s); err != nil {
		t.Fatal(err)
	}
	s.Data["password"] = []byte("two")
	if err := server.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	read("after someone's change", "two", 2)
	read("again, unchanged", "two", 2)

	// The operator's own write, remembered, while the cache still shows
	// the version before it: read from the API server, not from memory.
	md.lagging[key] = s.ResourceVersion
	s.Data["password"] = []byte("three")
	if err := server.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	r.Remember(&s)
	read("while the cache lags the operator's write", "three", 3)
	delete(md.lagging, key)
	read("once the cache shows it", "three", 3)

	if err := server.Delete(ctx, &s); err != nil {
		t.Fatal(err)
	}
	if err := r.Get(ctx, key, &corev1.Secret{}); err == nil {
		t.Fatal("a deleted Secret was read")
	}
	if len(r.read) != 0 {
		t.Errorf("a deleted Secret is still in memory: %v", r.read)
	}
}

// metadataOf is a metadata cache of server's Secrets, which shows, for the
// keys of lagging, the resourceVersion given instead of the server's.
type metadataOf struct {
	server  client.Reader
	lagging map[client.ObjectKey]string
}

func (m metadataOf) Get(ctx context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	var s corev1.Secret
	if err := m.server.Get(ctx, key, &s); err != nil {
		return err
	}
	if rv, ok := m.lagging[key]; ok {
		s.ResourceVersion = rv
	}
	s.ObjectMeta.DeepCopyInto(&obj.(*metav1.PartialObjectMetadata).ObjectMeta)
	return nil
}

func (m metadataOf) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// A Secret is absent when neither the metadata cache nor the Reader's
// memory has it, without a request to the API server.
func TestAbsent(t *testing.T) {
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "ns", Name: "creds"}
	server := fake.NewClientBuilder().Build()
	api := &counting{Reader: server}
	r := &Reader{Metadata: metadataOf{server: server}, API: api}
	absent := func(what string, want bool) {
		t.Helper()
		got, err := r.Absent(ctx, key)
		if err != nil || got != want || api.gets != 0 {
			t.Errorf("%s: Absent = %v, %v after %d API reads; want %v after none", what, got, err, api.gets, want)
		}
	}
	absent("nothing anywhere", true)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, ResourceVersion: "1"}}
	r.Remember(s) // the operator created it; the cache does not show it yet
	absent("just created", false)
	r.Forget(key)
	if err := server.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}); err != nil {
		t.Fatal(err)
	}
	absent("in the cache", false)
}

// A Secret is kept without its managedFields, and what the caller holds is
// left as it is.
func TestRememberKeepsNoManagedFields(t *testing.T) {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "ns", ResourceVersion: "7",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "mysql-backup-operator"}}},
		Data: map[string][]byte{"password": []byte("one")},
	}
	var r Reader
	r.Remember(s)
	kept := r.read[client.ObjectKeyFromObject(s)]
	if kept == nil || len(kept.ManagedFields) != 0 || string(kept.Data["password"]) != "one" {
		t.Errorf("kept %+v; want the Secret's data without managedFields", kept)
	}
	if len(s.ManagedFields) != 1 {
		t.Errorf("Remember changed the caller's Secret: %+v", s.ManagedFields)
	}
}
