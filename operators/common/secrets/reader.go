package secrets

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reader reads Secrets from the API server only when they changed. The
// operators watch Secrets' metadata only, so that their cache holds no
// Secret's data, and every Secret of their namespaces would cost memory;
// Reader keeps the Secrets read through it, those the custom resources name
// or own, and serves one again from memory while the metadata cache shows
// the resourceVersion it was read at. A Secret the cache does not show yet,
// or shows at another version, is read from the API server.
//
// The operator's own writes to a Secret are Remembered with the API
// server's answer: until the cache shows them, it shows an older version,
// which is read from the API server rather than served stale.
//
// Reader is the data half of the Secrets' cache, held by a reconciler and
// gone with it: it serves nothing the metadata cache does not vouch for,
// so it is no second memory of the process's own writes (apply's is that,
// with apply.Reset).
type Reader struct {
	// Metadata is the manager's cache, which has Secrets' metadata
	// (builder.OnlyMetadata watches); API reads around it.
	Metadata, API client.Reader

	mu   sync.Mutex
	read map[client.ObjectKey]*corev1.Secret
}

// Get reads the Secret key into obj, a *corev1.Secret; anything else it
// reads from the API server.
func (r *Reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return r.API.Get(ctx, key, obj, opts...)
	}
	if meta, err := r.metadata(ctx, key); err == nil {
		r.mu.Lock()
		known := r.read[key]
		r.mu.Unlock()
		if known != nil && known.UID == meta.UID && known.ResourceVersion == meta.ResourceVersion {
			known.DeepCopyInto(s)
			return nil
		}
	}
	err := r.API.Get(ctx, key, s, opts...)
	switch {
	case apierrors.IsNotFound(err):
		r.Forget(key)
	case err == nil:
		r.Remember(s)
	}
	return err
}

// Absent reports whether the Secret key is neither in the metadata cache
// nor in memory (read or written through r): most likely it does not exist,
// which creating it tells for sure (AlreadyExists), without a read. One in
// memory that the cache does not show yet (just created) is not absent.
func (r *Reader) Absent(ctx context.Context, key client.ObjectKey) (bool, error) {
	r.mu.Lock()
	_, known := r.read[key]
	r.mu.Unlock()
	if known {
		return false, nil
	}
	_, err := r.metadata(ctx, key)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

// metadata is what the metadata cache shows of the Secret key.
func (r *Reader) metadata(ctx context.Context, key client.ObjectKey) (*metav1.PartialObjectMetadata, error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return meta, r.Metadata.Get(ctx, key, meta)
}

// List lists from the API server.
func (r *Reader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.API.List(ctx, list, opts...)
}

// Remember keeps s, as the API server answered a write of it, for the next
// Get, without its managedFields, which no operator reads (as the caches
// keep objects; an update that sends none leaves the server's as they are).
func (r *Reader) Remember(s *corev1.Secret) {
	if s.ResourceVersion == "" {
		return
	}
	kept := s.DeepCopy()
	kept.ManagedFields = nil
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.read == nil {
		r.read = map[client.ObjectKey]*corev1.Secret{}
	}
	r.read[client.ObjectKeyFromObject(s)] = kept
}

// Forget drops the Secret key from memory, when the custom resource that
// read it goes.
func (r *Reader) Forget(key client.ObjectKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.read, key)
}
