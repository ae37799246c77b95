package membership

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Client is the part of the etcd API that membership changes use. Every call
// names the client URL it goes to: a learner refuses all of these but Status,
// and MoveLeader must reach the leader, so the Executor, not a load balancer,
// chooses the member.
type Client interface {
	// MemberList lists the members as the member at endpoint knows them.
	// Serializable answers from that member's own copy and works without a
	// quorum; otherwise the list goes through the raft log.
	MemberList(ctx context.Context, endpoint string, serializable bool) ([]*etcdserverpb.Member, error)
	// MemberAdd adds a voting member with the given peer URLs.
	MemberAdd(ctx context.Context, endpoint string, peerURLs []string) (*etcdserverpb.Member, error)
	// MemberAddAsLearner adds a learner with the given peer URLs.
	MemberAddAsLearner(ctx context.Context, endpoint string, peerURLs []string) (*etcdserverpb.Member, error)
	// MemberPromote makes the learner id a voting member.
	MemberPromote(ctx context.Context, endpoint string, id uint64) error
	// MemberRemove removes the member id.
	MemberRemove(ctx context.Context, endpoint string, id uint64) error
	// MoveLeader asks the leader, which must be the member at endpoint, to
	// hand its leadership to the voting member transferee.
	MoveLeader(ctx context.Context, endpoint string, transferee uint64) error
	// Status asks the member at endpoint for its own state.
	Status(ctx context.Context, endpoint string) (*clientv3.StatusResponse, error)
}

// Etcd is the Client that talks to real etcd servers with clientv3. It keeps
// one connection per member (per client URL), shared by every call to that
// member from every worker: a cluster of three costs three connections, not
// a dial for each call. A connection that failed a call, or whose call was
// given up on, is closed, and the next call dials afresh: a member that was
// away and came back is reached at once, not after gRPC's reconnect backoff.
// One unused for idleAfter (a deleted cluster's, a removed member's) is closed
// by the next call to any member.
type Etcd struct {
	config clientv3.Config
	now    func() time.Time

	mu    sync.Mutex
	conns map[string]*conn
}

// conn is the connection to one member, and when a call last used it.
type conn struct {
	client *clientv3.Client
	used   time.Time
}

var _ Client = (*Etcd)(nil)

// NewEtcd returns a Client that dials with config: its TLS, credentials and
// DialTimeout are used, its Endpoints ignored (each call names its own). A nil
// Logger is replaced by one that discards, so that a probe of a member that
// is down does not fill the operator's log.
func NewEtcd(config clientv3.Config) *Etcd {
	if config.Logger == nil {
		config.Logger = zap.NewNop()
	}
	return &Etcd{config: config, now: time.Now, conns: map[string]*conn{}}
}

const (
	// callTimeout bounds a call whose context has no deadline of its own.
	callTimeout = 10 * time.Second
	// idleAfter is how long a connection no call used stays open. A
	// cluster's members are probed at least every 30 s while it exists.
	idleAfter = 5 * time.Minute
)

// connect returns the connection to endpoint, dialling it if there is none,
// and closes those idle for idleAfter.
func (e *Etcd) connect(endpoint string) (*clientv3.Client, error) {
	e.mu.Lock()
	now := e.now()
	for ep, c := range e.conns {
		if ep != endpoint && now.Sub(c.used) > idleAfter {
			delete(e.conns, ep)
			_ = c.client.Close()
		}
	}
	if c, ok := e.conns[endpoint]; ok {
		c.used = now
		e.mu.Unlock()
		return c.client, nil
	}
	e.mu.Unlock()

	// Dial without the lock: a member that does not answer holds up its
	// own calls only, for DialTimeout at most.
	cfg := e.config
	cfg.Endpoints = []string{endpoint}
	dialed, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to etcd at %s: %w", endpoint, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.conns[endpoint]; ok { // another worker dialled first
		_ = dialed.Close()
		c.used = now
		return c.client, nil
	}
	e.conns[endpoint] = &conn{client: dialed, used: now}
	return dialed, nil
}

// drop closes the connection to endpoint, unless another call dropped it
// already: a later call dials afresh. A call other workers have in flight on
// it fails, and their reconciles come back.
func (e *Etcd) drop(endpoint string, c *clientv3.Client) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cur, ok := e.conns[endpoint]; ok && cur.client == c {
		delete(e.conns, endpoint)
		_ = c.Close()
	}
}

// Close closes every connection.
func (e *Etcd) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for ep, c := range e.conns {
		delete(e.conns, ep)
		_ = c.client.Close()
	}
}

// call runs fn on the connection to endpoint and returns its result. It
// returns when ctx ends even if fn does not: the connection is then closed,
// which ends fn, and the result of a call given up on is dropped.
func call[T any](ctx context.Context, e *Etcd, endpoint string, fn func(context.Context, *clientv3.Client) (T, error)) (T, error) {
	var zero T
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, callTimeout)
		defer cancel()
	}
	c, err := e.connect(endpoint)
	if err != nil {
		return zero, err
	}
	type result struct {
		value T
		err   error
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn(ctx, c)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			e.drop(endpoint, c)
		}
		return r.value, r.err
	case <-ctx.Done():
		e.drop(endpoint, c)
		return zero, fmt.Errorf("etcd at %s: %w", endpoint, ctx.Err())
	}
}

// MemberList implements Client.
func (e *Etcd) MemberList(ctx context.Context, endpoint string, serializable bool) ([]*etcdserverpb.Member, error) {
	return call(ctx, e, endpoint, func(ctx context.Context, c *clientv3.Client) ([]*etcdserverpb.Member, error) {
		var opts []clientv3.OpOption
		if serializable {
			opts = append(opts, clientv3.WithSerializable())
		}
		resp, err := c.MemberList(ctx, opts...)
		if err != nil {
			return nil, err
		}
		return resp.Members, nil
	})
}

// MemberAdd implements Client.
func (e *Etcd) MemberAdd(ctx context.Context, endpoint string, peerURLs []string) (*etcdserverpb.Member, error) {
	return call(ctx, e, endpoint, func(ctx context.Context, c *clientv3.Client) (*etcdserverpb.Member, error) {
		resp, err := c.MemberAdd(ctx, peerURLs)
		if err != nil {
			return nil, err
		}
		return resp.Member, nil
	})
}

// MemberAddAsLearner implements Client.
func (e *Etcd) MemberAddAsLearner(ctx context.Context, endpoint string, peerURLs []string) (*etcdserverpb.Member, error) {
	return call(ctx, e, endpoint, func(ctx context.Context, c *clientv3.Client) (*etcdserverpb.Member, error) {
		resp, err := c.MemberAddAsLearner(ctx, peerURLs)
		if err != nil {
			return nil, err
		}
		return resp.Member, nil
	})
}

// MemberPromote implements Client.
func (e *Etcd) MemberPromote(ctx context.Context, endpoint string, id uint64) error {
	_, err := call(ctx, e, endpoint, func(ctx context.Context, c *clientv3.Client) (*clientv3.MemberPromoteResponse, error) {
		return c.MemberPromote(ctx, id)
	})
	return err
}

// MemberRemove implements Client.
func (e *Etcd) MemberRemove(ctx context.Context, endpoint string, id uint64) error {
	_, err := call(ctx, e, endpoint, func(ctx context.Context, c *clientv3.Client) (*clientv3.MemberRemoveResponse, error) {
		return c.MemberRemove(ctx, id)
	})
	return err
}

// MoveLeader implements Client.
func (e *Etcd) MoveLeader(ctx context.Context, endpoint string, transferee uint64) error {
	_, err := call(ctx, e, endpoint, func(ctx context.Context, c *clientv3.Client) (*clientv3.MoveLeaderResponse, error) {
		return c.MoveLeader(ctx, transferee)
	})
	return err
}

// Status implements Client.
func (e *Etcd) Status(ctx context.Context, endpoint string) (*clientv3.StatusResponse, error) {
	return call(ctx, e, endpoint, func(ctx context.Context, c *clientv3.Client) (*clientv3.StatusResponse, error) {
		return c.Status(ctx, endpoint)
	})
}
