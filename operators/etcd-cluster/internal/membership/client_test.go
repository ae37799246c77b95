package membership

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
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
	if len(e.conns) != 0 {
		t.Errorf("the connection of a call given up on is kept: %v", e.conns)
	}
}

// Calls to a member share one connection; a failed call closes it, and so
// does a long idleness.
func TestCallsShareOneConnectionPerMember(t *testing.T) {
	e := NewEtcd(clientv3.Config{}) // no DialTimeout: the client does not dial before a call
	defer e.Close()
	now := time.Now()
	e.now = func() time.Time { return now }
	ctx := context.Background()
	failed := errors.New("etcdserver: unhealthy cluster")
	use := func(endpoint string, err error) *clientv3.Client {
		t.Helper()
		c, got := call(ctx, e, endpoint, func(_ context.Context, c *clientv3.Client) (*clientv3.Client, error) { return c, err })
		if !errors.Is(got, err) {
			t.Fatalf("call to %s: %v, want %v", endpoint, got, err)
		}
		return c
	}
	const a, b = "http://127.0.0.1:1", "http://127.0.0.1:2"

	first := use(a, nil)
	if again := use(a, nil); again != first {
		t.Error("a second call to a member dialled again")
	}
	if use(b, nil) == first {
		t.Error("two members share a connection")
	}

	use(a, failed)
	if first.Ctx().Err() == nil {
		t.Error("a connection that failed a call is still open")
	}
	second := use(a, nil)
	if second == first {
		t.Error("the call after a failure reused the failed connection")
	}

	now = now.Add(idleAfter)
	use(b, nil)
	if second.Ctx().Err() != nil || e.conns[a] == nil {
		t.Errorf("a connection idle for %v, no longer than idleAfter, was closed", idleAfter)
	}
	now = now.Add(time.Second)
	use(b, nil)
	if second.Ctx().Err() == nil || e.conns[a] != nil {
		t.Errorf("a connection idle for %v is still open", idleAfter+time.Second)
	}
}

// A call that fails on a connection already dropped, by another call that
// failed on it first, leaves alone the connection dialled since.
func TestLateFailureKeepsTheNewConnection(t *testing.T) {
	e := NewEtcd(clientv3.Config{}) // no DialTimeout: the client does not dial before a call
	defer e.Close()
	const a = "http://127.0.0.1:1"
	first, err := e.connect(a)
	if err != nil {
		t.Fatal(err)
	}
	e.drop(a, first) // the first call that failed on it
	e.drop(a, first) // a second one, with nothing in its place yet
	second, err := e.connect(a)
	if err != nil {
		t.Fatal(err)
	}
	e.drop(a, first) // a third, after the next call dialled again
	if e.conns[a] == nil || e.conns[a].client != second || second.Ctx().Err() != nil {
		t.Error("a late failure on a dropped connection closed the one dialled since")
	}
}

// A call whose context has no deadline gets callTimeout's; one whose
// context has a deadline keeps it.
func TestCallIsAlwaysBounded(t *testing.T) {
	e := NewEtcd(clientv3.Config{}) // no DialTimeout: the client does not dial before a call
	defer e.Close()
	deadline := func(ctx context.Context) time.Time {
		t.Helper()
		d, err := call(ctx, e, "http://127.0.0.1:1", func(ctx context.Context, _ *clientv3.Client) (time.Time, error) {
			d, ok := ctx.Deadline()
			if !ok {
				return time.Time{}, errors.New("the call's context has no deadline")
			}
			return d, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := time.Until(deadline(context.Background())); d <= 0 || d > callTimeout {
		t.Errorf("a call without a deadline of its own ends in %v, want within %v", d, callTimeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	want, _ := ctx.Deadline()
	if got := deadline(ctx); !got.Equal(want) {
		t.Errorf("a call with a deadline of its own ends at %v, want %v", got, want)
	}
}

// The client logs through the operator's logger when given one, and
// nowhere when not (clientv3 would write its own to stderr).
func TestClientLogger(t *testing.T) {
	given := zap.NewExample()
	if got := NewEtcd(clientv3.Config{Logger: given}).config.Logger; got != given {
		t.Errorf("the client logs through %v, not the logger it was given", got)
	}
	if got := NewEtcd(clientv3.Config{}).config.Logger; got == nil || got.Core().Enabled(zap.ErrorLevel) {
		t.Errorf("a client given no logger logs through %v, want one that logs nothing", got)
	}
}
