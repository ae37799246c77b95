package membership

import (
	"context"
	"fmt"
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

// Etcd is the Client that talks to real etcd servers with clientv3. It opens
// one connection for each call and closes it, so a member that was away and
// came back is reached at once, not after a gRPC reconnect backoff.
type Etcd struct {
	config clientv3.Config
}

var _ Client = Etcd{}

// NewEtcd returns a Client that dials with config: its TLS, credentials and
// DialTimeout are used, its Endpoints ignored (each call names its own). A nil
// Logger is replaced by one that discards, so that a probe of a member that
// is down does not fill the operator's log.
func NewEtcd(config clientv3.Config) Etcd {
	if config.Logger == nil {
		config.Logger = zap.NewNop()
	}
	return Etcd{config: config}
}

// callTimeout bounds a call whose context has no deadline of its own.
const callTimeout = 10 * time.Second

// call runs fn on a client of endpoint alone and returns its result. It
// returns when ctx ends even if fn does not; the client is closed once
// fn returns, and the result of a call given up on is dropped.
func call[T any](ctx context.Context, e Etcd, endpoint string, fn func(context.Context, *clientv3.Client) (T, error)) (T, error) {
	var zero T
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, callTimeout)
		defer cancel()
	}
	cfg := e.config
	cfg.Endpoints = []string{endpoint}
	c, err := clientv3.New(cfg)
	if err != nil {
		return zero, fmt.Errorf("connect to etcd at %s: %w", endpoint, err)
	}
	type result struct {
		value T
		err   error
	}
	done := make(chan result, 1)
	go func() {
		defer func() { _ = c.Close() }()
		v, err := fn(ctx, c)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.value, r.err
	case <-ctx.Done():
		return zero, fmt.Errorf("etcd at %s: %w", endpoint, ctx.Err())
	}
}

// MemberList implements Client.
func (e Etcd) MemberList(ctx context.Context, endpoint string, serializable bool) ([]*etcdserverpb.Member, error) {
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
func (e Etcd) MemberAdd(ctx context.Context, endpoint string, peerURLs []string) (*etcdserverpb.Member, error) {
	return call(ctx, e, endpoint, func(ctx context.Context, c *clientv3.Client) (*etcdserverpb.Member, error) {
		resp, err := c.MemberAdd(ctx, peerURLs)
		if err != nil {
			return nil, err
		}
		return resp.Member, nil
	})
}

// MemberAddAsLearner implements Client.
func (e Etcd) MemberAddAsLearner(ctx context.Context, endpoint string, peerURLs []string) (*etcdserverpb.Member, error) {
	return call(ctx, e, endpoint, func(ctx context.Context, c *clientv3.Client) (*etcdserverpb.Member, error) {
		resp, err := c.MemberAddAsLearner(ctx, peerURLs)
		if err != nil {
			return nil, err
		}
		return resp.Member, nil
	})
}

// MemberPromote implements Client.
func (e Etcd) MemberPromote(ctx context.Context, endpoint string, id uint64) error {
	_, err := call(ctx, e, endpoint, func(ctx context.Context, c *clientv3.Client) (*clientv3.MemberPromoteResponse, error) {
		return c.MemberPromote(ctx, id)
	})
	return err
}

// MemberRemove implements Client.
func (e Etcd) MemberRemove(ctx context.Context, endpoint string, id uint64) error {
	_, err := call(ctx, e, endpoint, func(ctx context.Context, c *clientv3.Client) (*clientv3.MemberRemoveResponse, error) {
		return c.MemberRemove(ctx, id)
	})
	return err
}

// MoveLeader implements Client.
func (e Etcd) MoveLeader(ctx context.Context, endpoint string, transferee uint64) error {
	_, err := call(ctx, e, endpoint, func(ctx context.Context, c *clientv3.Client) (*clientv3.MoveLeaderResponse, error) {
		return c.MoveLeader(ctx, transferee)
	})
	return err
}

// Status implements Client.
func (e Etcd) Status(ctx context.Context, endpoint string) (*clientv3.StatusResponse, error) {
	return call(ctx, e, endpoint, func(ctx context.Context, c *clientv3.Client) (*clientv3.StatusResponse, error) {
		return c.Status(ctx, endpoint)
	})
}
