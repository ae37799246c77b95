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

// with runs call on a client of endpoint alone. It returns when ctx ends
// even if the call does not; the client is closed once the call returns.
func (e Etcd) with(ctx context.Context, endpoint string, call func(context.Context, *clientv3.Client) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, callTimeout)
		defer cancel()
	}
	cfg := e.config
	cfg.Endpoints = []string{endpoint}
	c, err := clientv3.New(cfg)
	if err != nil {
		return fmt.Errorf("connect to etcd at %s: %w", endpoint, err)
	}
	done := make(chan error, 1)
	go func() {
		defer func() { _ = c.Close() }()
		done <- call(ctx, c)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("etcd at %s: %w", endpoint, ctx.Err())
	}
}

// MemberList implements Client.
func (e Etcd) MemberList(ctx context.Context, endpoint string, serializable bool) ([]*etcdserverpb.Member, error) {
	var out []*etcdserverpb.Member
	err := e.with(ctx, endpoint, func(ctx context.Context, c *clientv3.Client) error {
		var opts []clientv3.OpOption
		if serializable {
			opts = append(opts, clientv3.WithSerializable())
		}
		resp, err := c.MemberList(ctx, opts...)
		if err == nil {
			out = resp.Members
		}
		return err
	})
	return out, err
}

// MemberAdd implements Client.
func (e Etcd) MemberAdd(ctx context.Context, endpoint string, peerURLs []string) (*etcdserverpb.Member, error) {
	var out *etcdserverpb.Member
	err := e.with(ctx, endpoint, func(ctx context.Context, c *clientv3.Client) error {
		resp, err := c.MemberAdd(ctx, peerURLs)
		if err == nil {
			out = resp.Member
		}
		return err
	})
	return out, err
}

// MemberAddAsLearner implements Client.
func (e Etcd) MemberAddAsLearner(ctx context.Context, endpoint string, peerURLs []string) (*etcdserverpb.Member, error) {
	var out *etcdserverpb.Member
	err := e.with(ctx, endpoint, func(ctx context.Context, c *clientv3.Client) error {
		resp, err := c.MemberAddAsLearner(ctx, peerURLs)
		if err == nil {
			out = resp.Member
		}
		return err
	})
	return out, err
}

// MemberPromote implements Client.
func (e Etcd) MemberPromote(ctx context.Context, endpoint string, id uint64) error {
	return e.with(ctx, endpoint, func(ctx context.Context, c *clientv3.Client) error {
		_, err := c.MemberPromote(ctx, id)
		return err
	})
}

// MemberRemove implements Client.
func (e Etcd) MemberRemove(ctx context.Context, endpoint string, id uint64) error {
	return e.with(ctx, endpoint, func(ctx context.Context, c *clientv3.Client) error {
		_, err := c.MemberRemove(ctx, id)
		return err
	})
}

// MoveLeader implements Client.
func (e Etcd) MoveLeader(ctx context.Context, endpoint string, transferee uint64) error {
	return e.with(ctx, endpoint, func(ctx context.Context, c *clientv3.Client) error {
		_, err := c.MoveLeader(ctx, transferee)
		return err
	})
}

// Status implements Client.
func (e Etcd) Status(ctx context.Context, endpoint string) (*clientv3.StatusResponse, error) {
	var out *clientv3.StatusResponse
	err := e.with(ctx, endpoint, func(ctx context.Context, c *clientv3.Client) error {
		resp, err := c.Status(ctx, endpoint)
		out = resp
		return err
	})
	return out, err
}
