package controller

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/operator-workshops/workshop/operators/etcd-cluster/internal/membership"
)

// fakeEtcd plays etcd for the controller tests: the member processes the
// kubelet runs for pods, the membership the operator changes through
// membership.Client, and the rules by which etcd refuses a start or a change.
// Real etcd proves the planner and the Executor in the membership package's
// tests, and the operator as a whole on the real node (tests/realnode);
// these tests are about what the controller does with pods, volumes and
// steps, and with a fake they do not wait on elections or on processes.
//
// What it keeps of etcd:
//   - A member's data is its volume: a process started on a volume that
//     holds a member's data runs as that member, whatever its flags say, and
//     exits if the member was removed. An empty volume bootstraps a new
//     cluster (--initial-cluster-state=new) or joins as the added member of
//     its peer URL (existing); a member that has run before cannot come back
//     empty.
//   - A cluster has a leader while a quorum of its voters runs; without one,
//     linearizable reads and every change fail.
//   - Changes are refused as etcd refuses them: an add or a promotion that
//     would leave fewer started voters than a quorum, a removal that would,
//     a second learner, the promotion of a learner that is not running,
//     learners before 3.4 and leader moves before 3.3, a member older than
//     the cluster's version.
//   - Learners answer Status only.
//   - Each member keeps the keyspace on its volume. A write goes to the
//     leader's copy and to every running member's; a member that joins gets
//     the leader's copy (a snapshot), one that ran before catches up when it
//     runs again under a leader. The leader is the running voter with the
//     most recent copy, as raft's vote allows: the keys survive as long as
//     a quorum's copies do, and a cluster bootstrapped again starts empty.
//     A read is answered from the member's own copy.
//   - A member's own copy of the member list can lag (lag): serializable
//     lists answer from it, linearizable ones wait for the member to catch up.
//   - The operator can be cut off from a member that the others still
//     reach (partition).
type fakeEtcd struct {
	mu      sync.Mutex
	running map[string]*process // by client URL
	volumes map[string]*volume  // by the UID of the claim
	started map[string]*cluster // bootstrapped clusters, by initial-cluster token
	lastID  uint64
	// copies are the lagging member lists of members, by client URL, and
	// staleLists counts the lists answered from them.
	copies     map[string][]*etcdserverpb.Member
	staleLists int
	// cutOff are the client URLs the operator's calls do not reach.
	cutOff map[string]bool
}

// cluster is what the members of one etcd cluster agreed on.
type cluster struct {
	members []*etcdserverpb.Member
	leader  uint64
	// minor is the cluster version, 3.minor: it only goes up, to the oldest
	// running member's version.
	minor int
	index uint64 // raft index, moved by every change
}

// volume is a member's data directory: empty, or member id of c, with its
// copy of the keyspace as of the write applied.
type volume struct {
	c       *cluster
	id      uint64
	data    map[string]string
	applied uint64
}

// process is a running member, on volume v.
type process struct {
	c     *cluster
	id    uint64
	minor int
	v     *volume
}

func newFakeEtcd() *fakeEtcd {
	return &fakeEtcd{
		running: map[string]*process{}, volumes: map[string]*volume{}, started: map[string]*cluster{}, lastID: 0x1000,
		copies: map[string][]*etcdserverpb.Member{}, cutOff: map[string]bool{},
	}
}

// lag freezes the member lists the members at endpoints answer serializable
// lists from, as they are now, until catchUp.
func (f *fakeEtcd) lag(endpoints ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ep := range endpoints {
		if p := f.running[ep]; p != nil {
			f.copies[ep] = copyMembers(p.c)
		}
	}
}

// catchUp ends every lag, and starts the count of stale lists again.
func (f *fakeEtcd) catchUp() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.copies)
	f.staleLists = 0
}

// stale returns how many lists were answered from a lagging copy.
func (f *fakeEtcd) stale() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.staleLists
}

// partition cuts the calls to endpoint off (or lets them through again):
// the member runs on, and its peers reach it.
func (f *fakeEtcd) partition(endpoint string, off bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cutOff[endpoint] = off
}

var _ membership.Client = (*fakeEtcd)(nil)

// startFlags are the etcd flags of a member's pod.
type startFlags struct {
	name, peerURL, clientURL, initialCluster, state, token string
	// minor is the etcd version of the pod's image, 3.minor.
	minor int
}

// start runs a member on the volume of claim uid, as etcd started with
// flags would, or says why etcd would exit.
func (f *fakeEtcd) start(uid string, s startFlags) (*process, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running[s.clientURL] != nil {
		return nil, fmt.Errorf("listen on %s: address already in use", s.clientURL)
	}
	v := f.volumes[uid]
	if v == nil {
		v = &volume{}
		f.volumes[uid] = v
	}
	if v.c == nil {
		var err error
		if v.c, v.id, err = f.initialize(s); err != nil {
			return nil, err
		}
	}
	m := v.c.member(v.id)
	if m == nil {
		return nil, fmt.Errorf("member %x has been permanently removed from the cluster", v.id)
	}
	if s.minor < v.c.minor {
		return nil, fmt.Errorf("etcd 3.%d cannot join a cluster of version 3.%d", s.minor, v.c.minor)
	}
	m.Name, m.ClientURLs = s.name, []string{s.clientURL}
	if v.data == nil {
		// Empty: a new cluster's, or filled by the leader's snapshot.
		v.data = map[string]string{}
	}
	p := &process{c: v.c, id: v.id, minor: s.minor, v: v}
	f.running[s.clientURL] = p
	v.c.index++
	f.settle(v.c)
	return p, nil
}

// initialize is the first start on an empty volume.
func (f *fakeEtcd) initialize(s startFlags) (*cluster, uint64, error) {
	if s.state == "new" {
		c := f.started[s.token]
		if c == nil {
			c = &cluster{minor: s.minor}
			for _, kv := range strings.Split(s.initialCluster, ",") {
				name, peer, _ := strings.Cut(kv, "=")
				c.members = append(c.members, &etcdserverpb.Member{ID: f.newID(), Name: name, PeerURLs: []string{peer}})
			}
			f.started[s.token] = c
		}
		m := c.byPeer(s.peerURL)
		if m == nil {
			return nil, 0, fmt.Errorf("%s is not in --initial-cluster %s", s.peerURL, s.initialCluster)
		}
		if f.runningAs(c, m.ID) != nil || f.hasData(c, m.ID) {
			return nil, 0, fmt.Errorf("member %s of cluster %s has started before: starting it empty as new would make a second cluster", s.name, s.token)
		}
		return c, m.ID, nil
	}
	for _, c := range f.clusters() {
		m := c.byPeer(s.peerURL)
		if m == nil {
			continue
		}
		if f.hasData(c, m.ID) {
			return nil, 0, fmt.Errorf("member %x (%s) has run before and its data is gone: the leader would refuse its empty log", m.ID, s.name)
		}
		if f.settle(c) == 0 {
			return nil, 0, fmt.Errorf("%s cannot join: the cluster has no leader", s.name)
		}
		return c, m.ID, nil
	}
	return nil, 0, fmt.Errorf("no cluster has a member at %s: add it first", s.peerURL)
}

// stop stops process p, if it still runs.
func (f *fakeEtcd) stop(clientURL string, p *process) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running[clientURL] == p {
		delete(f.running, clientURL)
		f.settle(p.c)
	}
}

// runs reports whether p still runs (a removed member's process exits).
func (f *fakeEtcd) runs(clientURL string, p *process) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running[clientURL] == p
}

// serves reports whether p runs in a cluster with a leader: etcd's
// /health, the pod's readiness.
func (f *fakeEtcd) serves(clientURL string, p *process) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running[clientURL] == p && f.settle(p.c) != 0
}

// dropVolume deletes the data of claim uid.
func (f *fakeEtcd) dropVolume(uid string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.volumes, uid)
}

func (f *fakeEtcd) newID() uint64 {
	f.lastID += 0x1111
	return f.lastID
}

func (f *fakeEtcd) clusters() []*cluster {
	var out []*cluster
	for _, v := range f.volumes {
		if v.c != nil && !slices.Contains(out, v.c) {
			out = append(out, v.c)
		}
	}
	return out
}

func (f *fakeEtcd) runningAs(c *cluster, id uint64) *process {
	for _, p := range f.running {
		if p.c == c && p.id == id {
			return p
		}
	}
	return nil
}

func (f *fakeEtcd) hasData(c *cluster, id uint64) bool {
	for _, v := range f.volumes {
		if v.c == c && v.id == id {
			return true
		}
	}
	return false
}

// settle elects a leader if the cluster has none and a quorum of its voters
// runs, drops it if not, moves the cluster version up, and returns the
// leader (0 for none).
func (f *fakeEtcd) settle(c *cluster) uint64 {
	var voters []uint64
	oldest := -1
	for _, m := range c.members {
		p := f.runningAs(c, m.ID)
		if p == nil {
			continue
		}
		if !m.IsLearner {
			voters = append(voters, m.ID)
		}
		if oldest < 0 || p.minor < oldest {
			oldest = p.minor
		}
	}
	switch {
	case len(voters) < membership.Quorum(len(c.voters())):
		c.leader = 0
	case !slices.Contains(voters, c.leader):
		// The most recent copy wins the vote; the lowest ID among equals.
		c.leader = slices.MinFunc(voters, func(a, b uint64) int {
			if d := cmp.Compare(f.runningAs(c, b).v.applied, f.runningAs(c, a).v.applied); d != 0 {
				return d
			}
			return cmp.Compare(a, b)
		})
		c.index++
	}
	if oldest > c.minor {
		c.minor = oldest
	}
	f.replicate(c)
	return c.leader
}

// replicate brings every running member's copy of the keyspace to the
// leader's, when c has a leader.
func (f *fakeEtcd) replicate(c *cluster) {
	if c.leader == 0 {
		return
	}
	lead := f.runningAs(c, c.leader).v
	for _, p := range f.running {
		if p.c == c && p.v != lead && p.v.applied != lead.applied {
			p.v.data, p.v.applied = maps.Clone(lead.data), lead.applied
		}
	}
}

func (c *cluster) member(id uint64) *etcdserverpb.Member {
	for _, m := range c.members {
		if m.ID == id {
			return m
		}
	}
	return nil
}

func (c *cluster) byPeer(peerURL string) *etcdserverpb.Member {
	for _, m := range c.members {
		if slices.Contains(m.PeerURLs, peerURL) {
			return m
		}
	}
	return nil
}

func (c *cluster) voters() []*etcdserverpb.Member {
	return slices.DeleteFunc(slices.Clone(c.members), func(m *etcdserverpb.Member) bool { return m.IsLearner })
}

// Errors as the etcd client returns them.
var (
	errNoLeader = rpctypes.ErrGRPCNoLeader
	// errLinearizable is a read through raft without a quorum: it waits
	// until the caller's deadline.
	errLinearizable = context.DeadlineExceeded
)

func refused(endpoint string) error {
	return status.Errorf(codes.Unavailable, "connection error: dial %s: connection refused", endpoint)
}

// at is the process behind endpoint, with the lock held; callers unlock.
func (f *fakeEtcd) at(endpoint string) (*process, error) {
	f.mu.Lock()
	p := f.running[endpoint]
	if p == nil || f.cutOff[endpoint] {
		return nil, refused(endpoint)
	}
	return p, nil
}

// onVoter runs fn, with the lock held, on the process behind endpoint,
// which must be a voting member of a cluster with a leader.
func (f *fakeEtcd) onVoter(endpoint string, fn func(*process) error) error {
	p, err := f.at(endpoint)
	defer f.mu.Unlock()
	switch {
	case err != nil:
		return err
	case p.c.member(p.id).IsLearner:
		return rpctypes.ErrGRPCNotSupportedForLearner
	case f.settle(p.c) == 0:
		return errNoLeader
	}
	return fn(p)
}

func copyMembers(c *cluster) []*etcdserverpb.Member {
	out := make([]*etcdserverpb.Member, len(c.members))
	for i, m := range c.members {
		out[i] = &etcdserverpb.Member{ID: m.ID, Name: m.Name, PeerURLs: slices.Clone(m.PeerURLs), ClientURLs: slices.Clone(m.ClientURLs), IsLearner: m.IsLearner}
	}
	return out
}

// MemberList implements membership.Client.
func (f *fakeEtcd) MemberList(_ context.Context, endpoint string, serializable bool) ([]*etcdserverpb.Member, error) {
	p, err := f.at(endpoint)
	defer f.mu.Unlock()
	switch {
	case err != nil:
		return nil, err
	case p.c.member(p.id).IsLearner:
		return nil, rpctypes.ErrGRPCNotSupportedForLearner
	case !serializable && f.settle(p.c) == 0:
		return nil, errLinearizable
	case serializable && f.copies[endpoint] != nil:
		f.staleLists++
		return f.copies[endpoint], nil
	}
	return copyMembers(p.c), nil
}

// startedVoters counts the voters of c that run, but for the member skip.
func (f *fakeEtcd) startedVoters(c *cluster, skip uint64) int {
	n := 0
	for _, m := range c.voters() {
		if m.ID != skip && f.runningAs(c, m.ID) != nil {
			n++
		}
	}
	return n
}

func (f *fakeEtcd) add(endpoint string, peerURLs []string, learner bool) (*etcdserverpb.Member, error) {
	var added *etcdserverpb.Member
	err := f.onVoter(endpoint, func(p *process) error {
		c := p.c
		switch {
		case learner && c.minor < 4:
			return status.Errorf(codes.Unimplemented, "etcd 3.%d has no learners", c.minor)
		case slices.ContainsFunc(peerURLs, func(u string) bool { return c.byPeer(u) != nil }):
			return rpctypes.ErrGRPCPeerURLExist
		case learner && slices.ContainsFunc(c.members, func(m *etcdserverpb.Member) bool { return m.IsLearner }):
			return rpctypes.ErrGRPCTooManyLearners
		case !learner && f.startedVoters(c, 0) < membership.Quorum(len(c.voters())+1):
			return rpctypes.ErrGRPCMemberNotEnoughStarted
		}
		m := &etcdserverpb.Member{ID: f.newID(), PeerURLs: slices.Clone(peerURLs), IsLearner: learner}
		c.members = append(c.members, m)
		c.index++
		added = &etcdserverpb.Member{ID: m.ID, PeerURLs: slices.Clone(peerURLs), IsLearner: learner}
		return nil
	})
	return added, err
}

// MemberAdd implements membership.Client.
func (f *fakeEtcd) MemberAdd(_ context.Context, endpoint string, peerURLs []string) (*etcdserverpb.Member, error) {
	return f.add(endpoint, peerURLs, false)
}

// MemberAddAsLearner implements membership.Client.
func (f *fakeEtcd) MemberAddAsLearner(_ context.Context, endpoint string, peerURLs []string) (*etcdserverpb.Member, error) {
	return f.add(endpoint, peerURLs, true)
}

// MemberPromote implements membership.Client.
func (f *fakeEtcd) MemberPromote(_ context.Context, endpoint string, id uint64) error {
	return f.onVoter(endpoint, func(p *process) error {
		c := p.c
		m := c.member(id)
		switch {
		case c.minor < 4:
			return status.Errorf(codes.Unimplemented, "etcd 3.%d has no learners", c.minor)
		case m == nil:
			return rpctypes.ErrGRPCMemberNotFound
		case !m.IsLearner:
			return rpctypes.ErrGRPCMemberNotLearner
		case f.runningAs(c, id) == nil:
			return rpctypes.ErrGRPCLearnerNotReady
		case f.startedVoters(c, 0)+1 < membership.Quorum(len(c.voters())+1):
			return rpctypes.ErrGRPCMemberNotEnoughStarted
		}
		m.IsLearner = false
		c.index++
		return nil
	})
}

// MemberRemove implements membership.Client. The removed member's process
// exits, as etcd's does.
func (f *fakeEtcd) MemberRemove(_ context.Context, endpoint string, id uint64) error {
	return f.onVoter(endpoint, func(p *process) error {
		c := p.c
		m := c.member(id)
		switch {
		case m == nil:
			return rpctypes.ErrGRPCMemberNotFound
		case !m.IsLearner && f.startedVoters(c, id) < membership.Quorum(len(c.voters())-1):
			return rpctypes.ErrGRPCMemberNotEnoughStarted
		}
		c.members = slices.DeleteFunc(c.members, func(m *etcdserverpb.Member) bool { return m.ID == id })
		c.index++
		for url, q := range f.running {
			if q.c == c && q.id == id {
				delete(f.running, url)
			}
		}
		f.settle(c)
		return nil
	})
}

// MoveLeader implements membership.Client.
func (f *fakeEtcd) MoveLeader(_ context.Context, endpoint string, transferee uint64) error {
	return f.onVoter(endpoint, func(p *process) error {
		c := p.c
		to := c.member(transferee)
		switch {
		case c.minor < 3:
			return status.Errorf(codes.Unimplemented, "etcd 3.%d cannot move its leader", c.minor)
		case c.leader != p.id:
			return rpctypes.ErrGRPCNotLeader
		case to == nil || to.IsLearner || f.runningAs(c, transferee) == nil:
			return rpctypes.ErrGRPCBadLeaderTransferee
		}
		c.leader = transferee
		c.index++
		return nil
	})
}

// Status implements membership.Client: a member without a quorum sees no
// leader.
func (f *fakeEtcd) Status(_ context.Context, endpoint string) (*clientv3.StatusResponse, error) {
	p, err := f.at(endpoint)
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &clientv3.StatusResponse{
		Header:    &etcdserverpb.ResponseHeader{MemberId: p.id, RaftTerm: 1},
		Version:   "3." + strconv.Itoa(p.minor) + ".0",
		Leader:    f.settle(p.c),
		RaftIndex: p.c.index,
		IsLearner: p.c.member(p.id).IsLearner,
	}, nil
}

// put writes key through the member at endpoint, as etcdctl put does.
func (f *fakeEtcd) put(endpoint, key, value string) error {
	return f.onVoter(endpoint, func(p *process) error {
		lead := f.runningAs(p.c, p.c.leader).v
		lead.data[key] = value
		lead.applied++
		p.c.index++
		f.replicate(p.c)
		return nil
	})
}

// get reads key linearizably through the member at endpoint; ok is false
// when the cluster does not have it.
func (f *fakeEtcd) get(endpoint, key string) (value string, ok bool, err error) {
	err = f.onVoter(endpoint, func(p *process) error {
		value, ok = p.v.data[key]
		return nil
	})
	return value, ok, err
}

// minorOf is the minor version of an etcd image tagged v3.minor.patch.
func minorOf(image string) (int, error) {
	_, tag, _ := strings.Cut(image, ":v3.")
	minor, _, _ := strings.Cut(tag, ".")
	n, err := strconv.Atoi(minor)
	if err != nil {
		return 0, fmt.Errorf("image %s: no etcd 3.x version tag", image)
	}
	return n, nil
}
