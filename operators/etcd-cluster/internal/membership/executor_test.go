package membership

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// fakeClient answers from a fixed member list and per-endpoint statuses, and
// fails each mutation with err.
type fakeClient struct {
	members []*etcdserverpb.Member
	status  map[string]*clientv3.StatusResponse
	listErr map[string]error
	// linErr, a linearizable list's error at one endpoint, before listErr.
	linErr map[string]error
	err    error
	errAt  map[string]error // a mutation's error at one endpoint, before err
	calls  []string

	// hang, when set, makes the lists of these endpoints wait for their
	// context's end; inFlight and maxInFlight count the lists under way.
	hang                  map[string]bool
	mu                    sync.Mutex
	inFlight, maxInFlight int
}

func (f *fakeClient) MemberList(ctx context.Context, ep string, serializable bool) ([]*etcdserverpb.Member, error) {
	f.mu.Lock()
	f.calls = append(f.calls, fmt.Sprintf("MemberList %s serializable=%v", ep, serializable))
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	if f.hang[ep] {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if err := f.linErr[ep]; err != nil && !serializable {
		return nil, err
	}
	if err := f.listErr[ep]; err != nil && (!serializable || !errors.Is(err, rpctypes.ErrNoLeader)) {
		return nil, err
	}
	return f.members, nil
}

func (f *fakeClient) MemberAdd(_ context.Context, ep string, peers []string) (*etcdserverpb.Member, error) {
	return f.add(ep, peers, false)
}

func (f *fakeClient) MemberAddAsLearner(_ context.Context, ep string, peers []string) (*etcdserverpb.Member, error) {
	return f.add(ep, peers, true)
}

func (f *fakeClient) add(ep string, peers []string, learner bool) (*etcdserverpb.Member, error) {
	f.calls = append(f.calls, fmt.Sprintf("MemberAdd %s %v learner=%v", ep, peers, learner))
	if err := f.mutationErr(ep); err != nil {
		return nil, err
	}
	return &etcdserverpb.Member{ID: 0xfeed, PeerURLs: peers, IsLearner: learner}, nil
}

func (f *fakeClient) MemberPromote(_ context.Context, ep string, id uint64) error {
	f.calls = append(f.calls, fmt.Sprintf("MemberPromote %s %x", ep, id))
	return f.err
}

func (f *fakeClient) MemberRemove(_ context.Context, ep string, id uint64) error {
	f.calls = append(f.calls, fmt.Sprintf("MemberRemove %s %x", ep, id))
	return f.mutationErr(ep)
}

func (f *fakeClient) mutationErr(ep string) error {
	if err, ok := f.errAt[ep]; ok {
		return err
	}
	return f.err
}

func (f *fakeClient) MoveLeader(_ context.Context, ep string, id uint64) error {
	f.calls = append(f.calls, fmt.Sprintf("MoveLeader %s %x", ep, id))
	return f.err
}

func (f *fakeClient) Status(_ context.Context, ep string) (*clientv3.StatusResponse, error) {
	if st, ok := f.status[ep]; ok {
		return st, nil
	}
	return nil, errors.New("connection refused")
}

// addressing maps ex-N to http://ex-N:2380.
type addressing struct{}

func (addressing) PeerURL(name string) string { return "http://" + name + ":2380" }
func (addressing) Name(peerURL string) string {
	return strings.TrimSuffix(strings.TrimPrefix(peerURL, "http://"), ":2380")
}

func pbMember(ordinal int, learner, started bool) *etcdserverpb.Member {
	m := member(ordinal)
	pm := &etcdserverpb.Member{ID: m.ID, PeerURLs: m.PeerURLs, IsLearner: learner}
	if started {
		pm.Name, pm.ClientURLs = m.Name, m.ClientURLs
	}
	return pm
}

func status(ordinal int, leader int, index uint64) *clientv3.StatusResponse {
	st := &clientv3.StatusResponse{Header: &etcdserverpb.ResponseHeader{MemberId: member(ordinal).ID}, RaftIndex: index}
	if leader >= 0 {
		st.Leader = member(leader).ID
	}
	return st
}

func clientURL(ordinal int) string { return member(ordinal).ClientURLs[0] }

func TestMembers(t *testing.T) {
	f := &fakeClient{
		members: []*etcdserverpb.Member{
			pbMember(0, false, true), pbMember(1, false, true), pbMember(2, false, true),
			pbMember(3, true, true), pbMember(4, false, false),
		},
		status: map[string]*clientv3.StatusResponse{
			clientURL(0): status(0, 1, 50),
			clientURL(1): status(1, 1, 51),
			// ex-2 does not answer.
			clientURL(3): status(3, 1, 49),
		},
		listErr: map[string]error{clientURL(3): rpctypes.ErrGRPCNotSupportedForLearner},
	}
	e := &Executor{Client: f, Addressing: addressing{}, Endpoints: []string{clientURL(3), clientURL(0)}}
	got, err := e.Members(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Member{
		member(0, at(50)),
		member(1, leads, at(51)),
		member(2, down, at(0)),
		member(3, learner, at(49)),
		member(4, unstarted),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Members =\n%+v\nwant\n%+v", got, want)
	}
	if e.Current() {
		t.Error("Current after a list from ex-0's own copy, want false")
	}
	// The learner refused the list; then every member's own copy was asked
	// at once. The next call starts at the leader.
	if want := []string{
		"MemberList " + clientURL(3) + " serializable=false",
		"MemberList " + clientURL(0) + " serializable=true",
		"MemberList " + clientURL(3) + " serializable=true",
	}; len(f.calls) != 3 || f.calls[0] != want[0] || !slices.Equal(slices.Sorted(slices.Values(f.calls[1:])), want[1:]) {
		t.Errorf("calls = %q, want %q (the last two in any order)", f.calls, want)
	}
	f.calls = nil
	if _, err := e.Members(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"MemberList " + clientURL(1) + " serializable=false"}; !reflect.DeepEqual(f.calls[:1], want) {
		t.Errorf("second call = %q, want %q", f.calls, want)
	}
	if !e.Current() {
		t.Error("not Current after a linearizable list from the leader")
	}

	// The leader stops answering: the list comes from a follower's copy,
	// which may lag.
	delete(f.status, clientURL(1))
	f.listErr[clientURL(1)] = errors.New("connection refused")
	if _, err := e.Members(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e.Current() {
		t.Errorf("Current after a list from a follower's copy (calls %q), want false", f.calls)
	}
}

// Members that do not answer cost one probe timeout, not one each: their
// own copies of the list are asked at once.
func TestUnansweredMembersAreAskedAtOnce(t *testing.T) {
	eps := []string{clientURL(0), clientURL(1), clientURL(2)}
	f := &fakeClient{hang: map[string]bool{eps[0]: true, eps[1]: true, eps[2]: true}}
	e := &Executor{Client: f, Addressing: addressing{}, Endpoints: eps, ProbeTimeout: 50 * time.Millisecond}
	if _, err := e.Members(context.Background()); err == nil || !strings.Contains(err.Error(), "no voting member answered") {
		t.Fatalf("Members = %v, want no voting member answered", err)
	}
	if f.maxInFlight != len(eps) {
		t.Errorf("at most %d lists under way at once, want the %d members' own copies asked together (calls %q)", f.maxInFlight, len(eps), f.calls)
	}
}

// After no member answered, Members answers the same for Quiet without
// asking again, unless the endpoints or the signs changed.
func TestQuietAfterNoAnswer(t *testing.T) {
	eps := []string{clientURL(0), clientURL(1)}
	refused := errors.New("connection refused")
	f := &fakeClient{listErr: map[string]error{eps[0]: refused, eps[1]: refused}}
	now := time.Unix(0, 0)
	e := &Executor{Client: f, Addressing: addressing{}, Endpoints: eps, Quiet: 5 * time.Second, Now: func() time.Time { return now }}
	ask := func(what string, wantCalls int) {
		t.Helper()
		f.calls = nil
		if _, err := e.Members(context.Background()); err == nil || !errors.Is(err, refused) {
			t.Fatalf("%s: Members = %v, want the members' refusal", what, err)
		}
		if len(f.calls) != wantCalls {
			t.Errorf("%s: calls %q, want %d", what, f.calls, wantCalls)
		}
	}
	ask("the first time", 3)
	now = now.Add(4 * time.Second)
	ask("4 s later", 0)
	e.Endpoints = append(e.Endpoints, clientURL(2))
	f.listErr[clientURL(2)] = refused
	ask("with another member", 4)
	now = now.Add(5 * time.Second)
	ask("5 s later", 4)
	e.Signs = []string{"member-0 ready"}
	ask("once a member's pod is ready", 4)
}

func TestCurrentNeedsTheLeader(t *testing.T) {
	// Linearizable, but from a member that does not lead: etcd before 3.5
	// answers that from the member's own copy.
	f := &fakeClient{
		members: []*etcdserverpb.Member{pbMember(0, false, true), pbMember(1, false, true), pbMember(2, false, true)},
		status:  map[string]*clientv3.StatusResponse{clientURL(0): status(0, 1, 5), clientURL(1): status(1, 1, 5), clientURL(2): status(2, 1, 5)},
	}
	e := &Executor{Client: f, Addressing: addressing{}, Endpoints: []string{clientURL(2)}}
	if _, err := e.Members(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e.Current() {
		t.Error("Current after a linearizable list from a follower, want false")
	}
	if _, err := e.Members(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !e.Current() {
		t.Errorf("not Current after a list from the leader (calls %q)", f.calls)
	}
}

func TestMembersWithoutQuorum(t *testing.T) {
	f := &fakeClient{
		members: []*etcdserverpb.Member{pbMember(0, false, true), pbMember(1, false, true), pbMember(2, false, true)},
		status:  map[string]*clientv3.StatusResponse{clientURL(0): status(0, -1, 50)}, // answers, sees no leader
		listErr: map[string]error{clientURL(0): rpctypes.ErrNoLeader, clientURL(1): errors.New("connection refused")},
	}
	e := &Executor{Client: f, Addressing: addressing{}, Endpoints: []string{clientURL(1), clientURL(0)}}
	got, err := e.Members(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v := Availability(got); v.Available() || v.Voters != 3 {
		t.Errorf("Availability = %v, want 3 voters and no quorum", v)
	}
	if step := Next(3, got, learners); step.Action != Blocked || step.Cause != QuorumLost {
		t.Errorf("Next = %s, want Blocked (QuorumLost)", step)
	}
}

func TestMembersSeesAnImpostor(t *testing.T) {
	// The URL of ex-1 is answered by a member with another ID: the pod of a
	// removed member still runs its old data.
	f := &fakeClient{
		members: []*etcdserverpb.Member{pbMember(0, false, true), pbMember(1, false, true)},
		status:  map[string]*clientv3.StatusResponse{clientURL(0): status(0, 0, 5), clientURL(1): status(7, 0, 5)},
	}
	e := &Executor{Client: f, Addressing: addressing{}, Endpoints: []string{clientURL(0)}}
	got, err := e.Members(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got[1].Healthy {
		t.Errorf("ex-1 answered with another member's ID and counts as healthy: %+v", got[1])
	}
}

// A member etcd lists without a name (one added, not started yet) is named
// from its peer URL; one with a name of its own keeps it, and one with
// neither stays nameless.
func TestMembersNames(t *testing.T) {
	f := &fakeClient{members: []*etcdserverpb.Member{
		pbMember(0, false, true),
		pbMember(1, false, false),
		{ID: 0xa, Name: "added-by-hand", PeerURLs: []string{"http://ex-9:2380"}},
		{ID: 0xb},
	}}
	e := &Executor{Client: f, Addressing: addressing{}, Endpoints: []string{clientURL(0)}}
	got, err := e.Members(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range got {
		names = append(names, m.Name)
	}
	if want := []string{"ex-0", "ex-1", "added-by-hand", ""}; !slices.Equal(names, want) {
		t.Errorf("names %q, want %q", names, want)
	}
}

// The next list goes first to the last member seen leading, even when the
// probes of the list between found no member healthy.
func TestLeaderIsRememberedWhenNoneAnswers(t *testing.T) {
	f := &fakeClient{
		members: []*etcdserverpb.Member{pbMember(0, false, true), pbMember(1, false, true)},
		status:  map[string]*clientv3.StatusResponse{clientURL(0): status(0, 1, 5), clientURL(1): status(1, 1, 5)},
	}
	e := &Executor{Client: f, Addressing: addressing{}, Endpoints: []string{clientURL(0)}}
	if _, err := e.Members(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.status = nil // no probe answers; the lists still do
	for i := range 2 {
		f.calls = nil
		if _, err := e.Members(context.Background()); err != nil {
			t.Fatal(err)
		}
		if want := "MemberList " + clientURL(1) + " serializable=false"; len(f.calls) == 0 || f.calls[0] != want {
			t.Errorf("list %d after the leader was seen: calls %q, want %q first", i+2, f.calls, want)
		}
	}
}

// When no member answers, the error says why the first, linearizable list
// failed as well as the members' own copies.
func TestMembersErrorSaysEveryRefusal(t *testing.T) {
	eps := []string{clientURL(0), clientURL(1)}
	timedOut, refused := errors.New("request timed out"), errors.New("connection refused")
	f := &fakeClient{linErr: map[string]error{eps[0]: timedOut}, listErr: map[string]error{eps[0]: refused, eps[1]: refused}}
	e := &Executor{Client: f, Addressing: addressing{}, Endpoints: eps}
	_, err := e.Members(context.Background())
	if !errors.Is(err, timedOut) || !errors.Is(err, refused) {
		t.Errorf("Members = %v, want both %q and %q in it", err, timedOut, refused)
	}
}

// A member whose status answer is empty, or has no header, is down: there
// is no ID in it to tell it is this member.
func TestEmptyStatusIsDown(t *testing.T) {
	f := &fakeClient{
		members: []*etcdserverpb.Member{pbMember(0, false, true), pbMember(1, false, true), pbMember(2, false, true)},
		status:  map[string]*clientv3.StatusResponse{clientURL(0): status(0, 0, 5), clientURL(1): nil, clientURL(2): {}},
	}
	e := &Executor{Client: f, Addressing: addressing{}, Endpoints: []string{clientURL(0)}}
	got, err := e.Members(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got[1].Healthy || got[2].Healthy {
		t.Errorf("members with an empty status answer count as healthy: %+v", got[1:])
	}
}

// A probe waits ProbeTimeout, DefaultProbeTimeout when it is not set.
func TestProbeTimeout(t *testing.T) {
	if got := (&Executor{}).probeTimeout(); got != DefaultProbeTimeout {
		t.Errorf("probe timeout unset: %v, want %v", got, DefaultProbeTimeout)
	}
	if got := (&Executor{ProbeTimeout: time.Second}).probeTimeout(); got != time.Second {
		t.Errorf("probe timeout 1s: %v", got)
	}
}

// Apply before any endpoint is known fails with the client's error; it
// does not crash.
func TestApplyWithoutEndpoints(t *testing.T) {
	refused := errors.New("no endpoint to call")
	e := &Executor{Client: &fakeClient{err: refused}, Addressing: addressing{}}
	if _, err := e.Apply(context.Background(), Step{Action: Promote, Member: member(1)}); !errors.Is(err, refused) {
		t.Errorf("Apply = %v, want the client's refusal", err)
	}
}

func TestMembersNoEndpoints(t *testing.T) {
	e := &Executor{Client: &fakeClient{}, Addressing: addressing{}}
	if _, err := e.Members(context.Background()); err == nil || !strings.Contains(err.Error(), "Executor.Endpoints") {
		t.Errorf("Members without endpoints = %v, want an error naming Executor.Endpoints", err)
	}
}

func TestApply(t *testing.T) {
	ex3 := member(3, learner)
	tests := []struct {
		name      string
		step      Step
		err       error
		wantRetry bool
		wantErr   bool
		wantCall  string
	}{
		{"add a learner", Step{Action: Add, Member: Member{Name: "ex-3", IsLearner: true}}, nil, false, false,
			"MemberAdd http://ex-0:2379 [http://ex-3:2380] learner=true"},
		{"add a voter", Step{Action: Add, Member: Member{Name: "ex-3"}}, nil, false, false,
			"MemberAdd http://ex-0:2379 [http://ex-3:2380] learner=false"},
		{"a second learner is refused for now", Step{Action: Add, Member: Member{Name: "ex-4", IsLearner: true}},
			rpctypes.ErrGRPCTooManyLearners, true, false, ""},
		{"an add without enough started members waits", Step{Action: Add, Member: Member{Name: "ex-4"}},
			rpctypes.ErrGRPCMemberNotEnoughStarted, true, false, ""},
		{"bad URLs fail", Step{Action: Add, Member: Member{Name: "ex-4"}}, rpctypes.ErrGRPCMemberBadURLs, false, true, ""},
		{"promote", Step{Action: Promote, Member: ex3}, nil, false, false, "MemberPromote http://ex-0:2379 a3"},
		{"promote a voter succeeds", Step{Action: Promote, Member: ex3}, rpctypes.ErrGRPCMemberNotLearner, false, false, ""},
		{"promote a learner not in sync is retried", Step{Action: Promote, Member: ex3}, rpctypes.ErrGRPCLearnerNotReady, true, false, ""},
		{"promote a member that is gone is planned again", Step{Action: Promote, Member: ex3}, rpctypes.ErrGRPCMemberNotFound, true, false, ""},
		{"remove", Step{Action: Remove, Member: ex3}, nil, false, false, "MemberRemove http://ex-0:2379 a3"},
		{"remove a removed member succeeds", Step{Action: Remove, Member: ex3}, rpctypes.ErrGRPCMemberNotFound, false, false, ""},
		{"remove during an election is retried", Step{Action: Remove, Member: ex3}, rpctypes.ErrGRPCLeaderChanged, true, false, ""},
		{"remove over a broken connection fails", Step{Action: Remove, Member: ex3}, errors.New("connection refused"), false, true, ""},
		{"move leader asks the leader", Step{Action: MoveLeader, Member: member(4, leads), To: member(0)}, nil, false, false,
			"MoveLeader http://ex-4:2379 a0"},
		{"move leader off a member that no longer leads succeeds", Step{Action: MoveLeader, Member: member(4), To: member(0)},
			rpctypes.ErrGRPCNotLeader, false, false, ""},
		{"move leader to a learner is planned again", Step{Action: MoveLeader, Member: member(4), To: member(3)},
			rpctypes.ErrGRPCBadLeaderTransferee, true, false, ""},
		{"move leader on etcd 3.2 fails", Step{Action: MoveLeader, Member: member(4), To: member(0)},
			errors.New("unknown service etcdserverpb.Maintenance/MoveLeader"), false, true, ""},
		{"move leader off a member with no client URL fails", Step{Action: MoveLeader, Member: member(4, unstarted), To: member(0)},
			nil, false, true, ""},
		{"start is the caller's", Step{Action: Start, Member: member(3, unstarted)}, nil, false, false, ""},
		{"wait calls nothing", Step{Action: Wait}, nil, false, false, ""},
		{"blocked calls nothing", Step{Action: Blocked}, nil, false, false, ""},
		{"none calls nothing", Step{Action: None}, nil, false, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeClient{err: tt.err}
			e := &Executor{Client: f, Addressing: addressing{}, Endpoints: []string{clientURL(0)}}
			res, err := e.Apply(context.Background(), tt.step)
			if (err != nil) != tt.wantErr || res.Retry != tt.wantRetry {
				t.Fatalf("Apply(%s) = %+v, %v; want retry %v, error %v", tt.step, res, err, tt.wantRetry, tt.wantErr)
			}
			if err == nil && res.Detail == "" && tt.step.Action != Start && tt.step.Action != Wait &&
				tt.step.Action != Blocked && tt.step.Action != None {
				t.Errorf("Apply(%s) gave no detail", tt.step)
			}
			if tt.wantCall != "" && (len(f.calls) != 1 || f.calls[0] != tt.wantCall) {
				t.Errorf("calls = %q, want %q", f.calls, tt.wantCall)
			}
			if tt.step.Action == Wait || tt.step.Action == Start || tt.step.Action == None || tt.step.Action == Blocked {
				if len(f.calls) != 0 {
					t.Errorf("Apply(%s) called etcd: %q", tt.step, f.calls)
				}
			}
		})
	}
}

func TestApplyGoesRoundAnUnhealthyMember(t *testing.T) {
	eps := []string{clientURL(0), clientURL(1), clientURL(2)}
	for _, step := range []Step{{Action: Add, Member: Member{Name: "ex-3"}}, {Action: Remove, Member: member(2)}} {
		t.Run(string(step.Action), func(t *testing.T) {
			// The first member sees a peer as inactive; the second does not.
			f := &fakeClient{errAt: map[string]error{eps[0]: rpctypes.ErrGRPCUnhealthy}}
			e := &Executor{Client: f, Addressing: addressing{}, Endpoints: eps}
			res, err := e.Apply(context.Background(), step)
			if err != nil || res.Retry {
				t.Fatalf("Apply(%s) = %+v, %v; want it done through the second member", step, res, err)
			}
			if len(f.calls) != 2 || !strings.Contains(f.calls[1], eps[1]) {
				t.Errorf("calls = %q; want the first member, then the second", f.calls)
			}

			// Every member refuses: wait and try again.
			f = &fakeClient{err: rpctypes.ErrGRPCUnhealthy}
			e = &Executor{Client: f, Addressing: addressing{}, Endpoints: eps}
			if res, err = e.Apply(context.Background(), step); err != nil || !res.Retry {
				t.Errorf("Apply(%s) refused by every member = %+v, %v; want a retry", step, res, err)
			}
			if len(f.calls) != len(eps) {
				t.Errorf("calls = %q; want each member asked once", f.calls)
			}

			// Any other refusal ends the turns at once.
			f = &fakeClient{err: rpctypes.ErrGRPCMemberBadURLs}
			e = &Executor{Client: f, Addressing: addressing{}, Endpoints: eps}
			_, _ = e.Apply(context.Background(), step)
			if len(f.calls) != 1 {
				t.Errorf("calls = %q; want only the first member asked", f.calls)
			}
		})
	}
}

func TestApplyAddTwice(t *testing.T) {
	// The first MemberAdd went through but the operator did not see the answer.
	f := &fakeClient{
		err:     rpctypes.ErrGRPCPeerURLExist,
		members: []*etcdserverpb.Member{pbMember(0, false, true), pbMember(3, true, false)},
	}
	e := &Executor{Client: f, Addressing: addressing{}, Endpoints: []string{clientURL(0)}}
	res, err := e.Apply(context.Background(), Step{Action: Add, Member: Member{Name: "ex-3", IsLearner: true}})
	if err != nil || res.Retry || res.ID != member(3).ID {
		t.Errorf("second add = %+v, %v; want the member added first (%x)", res, err, member(3).ID)
	}

	// Within the same second etcd gives the same member ID, and says so.
	f.err = rpctypes.ErrGRPCMemberExist
	res, err = e.Apply(context.Background(), Step{Action: Add, Member: Member{Name: "ex-3", IsLearner: true}})
	if err != nil || res.Retry || res.ID != member(3).ID {
		t.Errorf("add in the same second = %+v, %v; want the member added first (%x)", res, err, member(3).ID)
	}

	// The URL was taken when etcd answered and is free again when we look.
	f.members = f.members[:1]
	res, err = e.Apply(context.Background(), Step{Action: Add, Member: Member{Name: "ex-3", IsLearner: true}})
	if err != nil || !res.Retry {
		t.Errorf("add of a URL taken and freed again = %+v, %v; want a retry", res, err)
	}

	// And when the list cannot be read, say so.
	f.listErr = map[string]error{clientURL(0): errors.New("connection refused")}
	if _, err := e.Apply(context.Background(), Step{Action: Add, Member: Member{Name: "ex-3", IsLearner: true}}); err == nil {
		t.Error("add with an unreadable member list succeeded")
	}
}
