package membership

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
)

// DefaultProbeTimeout is Executor.ProbeTimeout when it is zero.
const DefaultProbeTimeout = time.Second

// Executor reads a live cluster into Members and carries out the etcd calls
// of a Step. It is not safe for concurrent use; use one per cluster.
type Executor struct {
	// Client talks to etcd.
	Client Client
	// Addressing gives the peer URL of a member to add, and the name of an
	// added member that has not started (etcd does not know it yet).
	Addressing Addressing
	// Endpoints are client URLs to reach the cluster through before Members
	// has found its voters, for example every pod's client URL. Members
	// tries the voters it found last time first.
	Endpoints []string
	// ProbeTimeout bounds each call of Members to one member;
	// DefaultProbeTimeout when zero.
	ProbeTimeout time.Duration
	// Quiet is how long Members, after no member answered, answers the
	// same again without asking, while the Endpoints and Signs stay the
	// same: asking takes a worker for two probe timeouts, and the events of
	// a starting cluster's pods bring it back many times a second. Zero
	// asks every time.
	Quiet time.Duration
	// Signs are what the caller sees of the members besides etcd, such as
	// the pods found ready: a change asks again at once.
	Signs []string
	// Now tells the time, time.Now when nil.
	Now func() time.Time

	voters []string // client URLs of the healthy voters found last, leader first
	// unanswered is the last failure to reach every member: when, the
	// Endpoints asked, and the error.
	unanswered struct {
		at               time.Time
		endpoints, signs []string
		err              error
	}
	// current is true when the last list was read through raft from the
	// member found leading (see Current).
	current bool
}

// Members lists the cluster's members and probes each started one with a
// Status call on its client URL. A member is healthy when it answers as
// itself and sees a leader. Failed is left for the caller to set.
//
// The list comes from a voting member (learners refuse MemberList):
// linearizable from the leader found last time, or else from the first
// voter's own copy, so that a cluster without a quorum can still be planned
// for, which means reported as Blocked. A copy may lag by a change; every
// Apply is idempotent, so a step planned from it does no harm. What a list
// leaves out is only known to be gone when Current says so.
func (e *Executor) Members(ctx context.Context) ([]Member, error) {
	e.current = false
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	u := &e.unanswered
	if u.err != nil && slices.Equal(u.endpoints, e.Endpoints) && slices.Equal(u.signs, e.Signs) && now().Sub(u.at) < e.Quiet {
		return nil, u.err
	}
	list, from, linearizable, err := e.list(ctx)
	if err != nil {
		u.at, u.endpoints, u.signs, u.err = now(), slices.Clone(e.Endpoints), slices.Clone(e.Signs), err
		return nil, err
	}
	u.err = nil
	members := make([]Member, len(list))
	var wg sync.WaitGroup
	for i, pm := range list {
		m := Member{
			ID:         pm.ID,
			Name:       pm.Name,
			PeerURLs:   pm.PeerURLs,
			ClientURLs: pm.ClientURLs,
			IsLearner:  pm.IsLearner,
		}
		if m.Name == "" && len(m.PeerURLs) > 0 {
			m.Name = e.Addressing.Name(m.PeerURLs[0])
		}
		members[i] = m
		if m.Started() {
			wg.Go(func() { e.probe(ctx, &members[i]) })
		}
	}
	wg.Wait()

	var voters []string
	for _, m := range members {
		if m.IsLeader && linearizable && slices.Contains(m.ClientURLs, from) {
			e.current = true
		}
		if m.Healthy && !m.IsLearner {
			if m.IsLeader {
				voters = append([]string{m.ClientURLs[0]}, voters...)
			} else {
				voters = append(voters, m.ClientURLs[0])
			}
		}
	}
	if len(voters) > 0 {
		e.voters = voters
	}
	return members, nil
}

// Current reports whether the list the last Members call returned holds
// every committed membership change: it was read through raft (linearizable)
// from the member the probes then found leading. Before etcd 3.5 a
// linearizable list is still answered from the asked member's copy, and the
// leader's copy is the one that cannot lag. A list from a follower's copy
// may miss a member just added, so only a current list may tell that a
// member whose pod or volume is still there has been removed.
func (e *Executor) Current() bool { return e.current }

// list lists the members, and returns the endpoint that answered and whether
// it answered through raft.
func (e *Executor) list(ctx context.Context) ([]*etcdserverpb.Member, string, bool, error) {
	endpoints := e.endpoints()
	if len(endpoints) == 0 {
		return nil, "", false, errors.New("no etcd endpoints to list the members from: set Executor.Endpoints")
	}
	var errs []error
	// Without a quorum a linearizable list hangs until its deadline on every
	// member alike, so only the first (the leader, when known) is asked.
	pctx, cancel := context.WithTimeout(ctx, e.probeTimeout())
	list, err := e.Client.MemberList(pctx, endpoints[0], false)
	cancel()
	if list != nil {
		return list, endpoints[0], true, nil
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", endpoints[0], err))
	}
	if ctx.Err() != nil {
		return nil, "", false, ctx.Err()
	}
	// Then every member's own copy, asked at once: members that do not
	// answer cost one timeout, not one each (a worker waits on them). The
	// first endpoint in order that answered is taken, as asking them in
	// turn would.
	type answer struct {
		list []*etcdserverpb.Member
		err  error
	}
	var asked sync.WaitGroup
	defer asked.Wait() // the calls given up on end with their context
	pctx, cancel = context.WithTimeout(ctx, e.probeTimeout())
	defer cancel()
	answers := make([]chan answer, len(endpoints))
	for i, ep := range endpoints {
		answers[i] = make(chan answer, 1)
		asked.Go(func() {
			list, err := e.Client.MemberList(pctx, ep, true)
			answers[i] <- answer{list, err}
		})
	}
	for i, ep := range endpoints {
		a := <-answers[i]
		if a.list != nil {
			return a.list, ep, false, nil
		}
		if a.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ep, a.err))
		}
	}
	if ctx.Err() != nil {
		return nil, "", false, ctx.Err()
	}
	return nil, "", false, fmt.Errorf("list the etcd members: no voting member answered: %w", errors.Join(errs...))
}

func (e *Executor) probe(ctx context.Context, m *Member) {
	for _, ep := range m.ClientURLs {
		pctx, cancel := context.WithTimeout(ctx, e.probeTimeout())
		st, err := e.Client.Status(pctx, ep)
		cancel()
		if err != nil || st == nil || st.Header == nil {
			continue
		}
		// A pod that still runs the data of a removed member answers at
		// the same URL under its old ID: that is not this member.
		if st.Header.MemberId != m.ID {
			return
		}
		m.Healthy = st.Leader != 0
		m.IsLeader = st.Leader == m.ID
		m.RaftIndex = st.RaftIndex
		return
	}
}

func (e *Executor) probeTimeout() time.Duration {
	if e.ProbeTimeout > 0 {
		return e.ProbeTimeout
	}
	return DefaultProbeTimeout
}

// endpoints are the voters found last, leader first, then the configured ones.
func (e *Executor) endpoints() []string {
	out := slices.Clone(e.voters)
	for _, ep := range e.Endpoints {
		if !slices.Contains(out, ep) {
			out = append(out, ep)
		}
	}
	return out
}

// Result is what Apply did.
type Result struct {
	// Retry is true when etcd refused the step for now: a learner not in
	// sync yet, an election, too few started members. It is not a failure:
	// read the members again after a pause and plan again.
	Retry bool
	// Detail says what happened, for a log line or an event.
	Detail string
	// ID is the member ID etcd gave an added member (Add).
	ID uint64
}

// Apply carries out the etcd call of step: Add, Promote, MoveLeader or
// Remove. The other actions need no etcd call (Start is the caller's: create
// the pod) and return an empty Result.
//
// Apply is idempotent, so that an operator that crashed after the call and
// before it noted the result can simply plan and apply again: adding a peer
// URL that is already a member returns that member, promoting a voter and
// removing a member that is gone succeed, and moving leadership off a member
// that no longer leads succeeds.
//
// The calls go to the leader found by the last Members call, or to the
// first other endpoint; call Members first.
func (e *Executor) Apply(ctx context.Context, step Step) (Result, error) {
	switch step.Action {
	case Add:
		return e.add(ctx, step)
	case Promote:
		err := e.Client.MemberPromote(ctx, e.endpoint(), step.Member.ID)
		switch {
		case err == nil:
			return Result{Detail: fmt.Sprintf("promoted %s", step.Member)}, nil
		case errors.Is(etcdError(err), rpctypes.ErrMemberNotLearner):
			return Result{Detail: fmt.Sprintf("%s is already a voting member", step.Member)}, nil
		case errors.Is(etcdError(err), rpctypes.ErrMemberNotFound):
			return Result{Retry: true, Detail: fmt.Sprintf("%s is no longer a member; plan again", step.Member)}, nil
		}
		return e.failed(err, "promote %s", step.Member)
	case MoveLeader:
		if !step.Member.Started() {
			return Result{}, fmt.Errorf("move leadership off %s: it has no client URL", step.Member)
		}
		err := e.Client.MoveLeader(ctx, step.Member.ClientURLs[0], step.To.ID)
		switch {
		case err == nil:
			e.voters = nil // the leader changed: ask the configured endpoints again
			return Result{Detail: fmt.Sprintf("moved leadership from %s to %s", step.Member, step.To)}, nil
		case errors.Is(etcdError(err), rpctypes.ErrNotLeader):
			return Result{Detail: fmt.Sprintf("%s no longer leads", step.Member)}, nil
		}
		return e.failed(err, "move leadership from %s to %s", step.Member, step.To)
	case Remove:
		err := e.onAMember(func(ep string) error { return e.Client.MemberRemove(ctx, ep, step.Member.ID) })
		switch {
		case err == nil:
			e.voters = slices.DeleteFunc(e.voters, func(ep string) bool { return slices.Contains(step.Member.ClientURLs, ep) })
			return Result{Detail: fmt.Sprintf("removed %s (%x)", step.Member, step.Member.ID)}, nil
		case errors.Is(etcdError(err), rpctypes.ErrMemberNotFound):
			return Result{Detail: fmt.Sprintf("%s (%x) is already removed", step.Member, step.Member.ID)}, nil
		}
		return e.failed(err, "remove %s (%x)", step.Member, step.Member.ID)
	}
	return Result{}, nil
}

func (e *Executor) add(ctx context.Context, step Step) (Result, error) {
	peer := e.Addressing.PeerURL(step.Member.Name)
	call := e.Client.MemberAdd
	if step.Member.IsLearner {
		call = e.Client.MemberAddAsLearner
	}
	var m *etcdserverpb.Member
	err := e.onAMember(func(ep string) (err error) {
		m, err = call(ctx, ep, []string{peer})
		return err
	})
	if err == nil {
		return Result{ID: m.ID, Detail: fmt.Sprintf("added %s (%x) at %s", step.Member.Name, m.ID, peer)}, nil
	}
	// etcd derives a member's ID from its peer URLs and the second it was
	// added: a repeated add is refused as "member ID already exist" within
	// the same second, as "Peer URLs already exists" after it.
	if !errors.Is(etcdError(err), rpctypes.ErrPeerURLExist) && !errors.Is(etcdError(err), rpctypes.ErrMemberExist) {
		return e.failed(err, "add %s at %s", step.Member.Name, peer)
	}
	list, lerr := e.Client.MemberList(ctx, e.endpoint(), false)
	if lerr != nil {
		return Result{}, fmt.Errorf("add %s: its peer URL %s is taken, and listing the members to find by whom failed: %w", step.Member.Name, peer, lerr)
	}
	for _, m := range list {
		if slices.Contains(m.PeerURLs, peer) {
			return Result{ID: m.ID, Detail: fmt.Sprintf("%s (%x) was already added at %s", step.Member.Name, m.ID, peer)}, nil
		}
	}
	return Result{Retry: true, Detail: fmt.Sprintf("peer URL %s of %s was taken and is free again; plan again", peer, step.Member.Name)}, nil
}

// failed turns refusals that pass by themselves into a Retry, and the rest
// into an error.
func (e *Executor) failed(err error, format string, args ...any) (Result, error) {
	what := fmt.Sprintf(format, args...)
	ee := etcdError(err)
	var server rpctypes.EtcdError
	switch {
	case errors.Is(ee, rpctypes.ErrMemberLearnerNotReady),
		errors.Is(ee, rpctypes.ErrMemberNotEnoughStarted),
		errors.Is(ee, rpctypes.ErrTooManyLearners),
		errors.Is(ee, rpctypes.ErrBadLeaderTransferee),
		errors.Is(ee, rpctypes.ErrNotLeader),
		errors.As(ee, &server) && server.Code() == codes.Unavailable:
		return Result{Retry: true, Detail: fmt.Sprintf("%s: %v", what, ee)}, nil
	}
	e.voters = nil // the member we asked may be the problem: start from the configured endpoints
	return Result{}, fmt.Errorf("%s: %w", what, err)
}

// onAMember makes a membership change through the leader and, while a
// member refuses it as "unhealthy cluster", through each other member in
// turn. etcd checks the peer connections of the member the change reaches,
// not the leader's, and one member can keep a peer marked inactive for
// minutes (seen with etcd 3.6: after the peer came back at a new address)
// while the others are connected to it. Any other answer ends the turns.
func (e *Executor) onAMember(change func(endpoint string) error) error {
	err := fmt.Errorf("no endpoint to reach etcd at")
	for _, ep := range e.endpoints() {
		if err = change(ep); !errors.Is(etcdError(err), rpctypes.ErrUnhealthy) {
			return err
		}
	}
	return err
}

func (e *Executor) endpoint() string {
	if eps := e.endpoints(); len(eps) > 0 {
		return eps[0]
	}
	return ""
}

// etcdError maps a gRPC error from etcd to the rpctypes value it stands for,
// so errors.Is can compare it.
func etcdError(err error) error { return rpctypes.Error(err) }
