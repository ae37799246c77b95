package membership

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A call that hangs (a gRPC picker waiting for a member that will not come
// back) must not hang the reconcile that made it.
func TestCallReturnsWhenItsContextEnds(t *testing.T) {
	e := NewEtcd(clientv3.Config{}) // no DialTimeout: the client does not dial before the call
	release := make(chan struct{})
	returned := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()

	start := time.Now()
	got, err := call(ctx, e, "http://127.0.0.1:1", func(context.Context, *clientv3.Client) (string, error) {
		defer close(returned)
		<-release
		return "too late", nil
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("call = %q, %v; want the context's deadline", got, err)
	}
	if got != "" {
		t.Errorf("call returned %q from a call it gave up on", got)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("call returned after %v, its context ended after 50ms", d)
	}
	close(release)
	<-returned // the abandoned call still ends, and its result goes nowhere
}
