package membership

import (
	"reflect"
	"strings"
	"testing"
)

const cl = "ex"

var (
	learners = Options{Cluster: cl, Learners: true, MoveLeader: true}
	etcd32   = Options{Cluster: cl} // no learners, no MoveLeader
)

type memberOpt func(*Member)

// member is a started, healthy voter of cluster ex at raft index 100.
func member(ordinal int, opts ...memberOpt) Member {
	name := MemberName(cl, ordinal)
	m := Member{
		ID:         uint64(0xa0 + ordinal),
		Name:       name,
		PeerURLs:   []string{"http://" + name + ":2380"},
		ClientURLs: []string{"http://" + name + ":2379"},
		Healthy:    true,
		RaftIndex:  100,
	}
	for _, o := range opts {
		o(&m)
	}
	return m
}

func leads(m *Member)   { m.IsLeader = true }
func down(m *Member)    { m.Healthy, m.IsLeader = false, false }
func failed(m *Member)  { down(m); m.Failed = true }
func learner(m *Member) { m.IsLearner = true }
func unstarted(m *Member) {
	down(m)
	m.ClientURLs, m.RaftIndex = nil, 0
}
func at(index uint64) memberOpt { return func(m *Member) { m.RaftIndex = index } }
func named(name string) memberOpt {
	return func(m *Member) { m.Name = name }
}

// healthy is a cluster of n started voters, ex-0 leading.
func healthy(n int) []Member {
	ms := []Member{member(0, leads)}
	for i := 1; i < n; i++ {
		ms = append(ms, member(i))
	}
	return ms
}

func with(ms []Member, more ...Member) []Member { return append(append([]Member(nil), ms...), more...) }

// summary is Step.String without the free text of Wait and Blocked.
func summary(s Step) string {
	if s.Action == Wait || s.Action == Blocked {
		return string(s.Action) + " " + string(s.Cause)
	}
	return s.String()
}

func TestNext(t *testing.T) {
	tests := []struct {
		name    string
		desired int
		members []Member
		opts    Options
		want    string
	}{
		{"steady", 3, healthy(3), learners, "None"},
		{"size 1 steady", 1, healthy(1), learners, "None"},
		{"even size steady", 4, healthy(4), learners, "None"},
		{"size 0 is refused", 0, healthy(3), learners, "Blocked InvalidSize"},
		{"no members", 3, nil, learners, "Blocked NoMembers"},

		// Scale up.
		{"scale up adds the lowest free ordinal as a learner", 5, healthy(3), learners, "Add ex-3 as learner"},
		{"scale up without learners adds a voter", 5, healthy(3), etcd32, "Add ex-3"},
		{"size 1 to 3", 3, healthy(1), learners, "Add ex-1 as learner"},
		{"size 1 to 2 without learners", 2, healthy(1), etcd32, "Add ex-1"},
		{"even size", 4, healthy(3), learners, "Add ex-3 as learner"},
		{"a gap is filled first", 3, []Member{member(0, leads), member(2)}, learners, "Add ex-1 as learner"},

		// An added member that never started.
		{"added learner is started", 5, with(healthy(3), member(3, learner, unstarted)), learners, "Start ex-3"},
		{"added voter is started", 5, with(healthy(3), member(3, unstarted)), etcd32, "Start ex-3"},
		// After an operator restart between MemberAdd and the pod: still
		// short of 5, and yet no second add.
		{"resume after restart starts, never adds again", 5, with(healthy(3), member(3, unstarted)), learners, "Start ex-3"},
		{"second member of a one-member cluster is started without a quorum", 2,
			[]Member{member(0, down), member(1, unstarted)}, etcd32, "Start ex-1"},
		{"an unwanted added member is removed", 3, with(healthy(3), member(3, learner, unstarted)), learners, "Remove ex-3"},
		{"an unwanted added member is started when there is no quorum to remove it", 1,
			[]Member{member(0, down), member(1, unstarted)}, etcd32, "Start ex-1"},

		// Learners.
		{"caught-up learner is promoted", 5, with(healthy(3), member(3, learner, at(99))), learners, "Promote ex-3"},
		{"learner ahead of the leader's last report is promoted", 5, with(healthy(3), member(3, learner, at(120))), learners, "Promote ex-3"},
		{"learner far behind waits", 5, with(healthy(3), member(3, learner, at(10))), learners, "Wait LearnerCatchingUp"},
		{"learner at 90% but more than the lag behind waits", 5,
			[]Member{member(0, leads, at(100000)), member(1), member(2), member(3, learner, at(98000))}, learners, "Wait LearnerCatchingUp"},
		{"learner within a custom lag is promoted", 5,
			[]Member{member(0, leads, at(100000)), member(1), member(2), member(3, learner, at(98000))},
			Options{Cluster: cl, Learners: true, LearnerLag: 5000}, "Promote ex-3"},
		{"learner that has applied nothing waits", 5, with(healthy(3), member(3, learner, at(0))), learners, "Wait LearnerCatchingUp"},
		{"learner waits while no leader is known", 5,
			[]Member{member(0), member(1), member(2), member(3, learner)}, learners, "Wait LearnerCatchingUp"},
		{"learner that does not answer waits", 5, with(healthy(3), member(3, learner, down)), learners, "Wait MemberUnhealthy"},
		{"failed learner is removed", 5, with(healthy(3), member(3, learner, failed)), learners, "Remove ex-3"},
		{"unwanted learner is removed, not promoted", 3, with(healthy(3), member(3, learner)), learners, "Remove ex-3"},
		{"learner first, then the failed voter", 5,
			[]Member{member(0, leads), member(1, failed), member(2), member(3, learner)}, learners, "Promote ex-3"},

		// Scale down.
		{"scale down removes the highest ordinal", 3, healthy(5), learners, "Remove ex-4"},
		{"scale down moves leadership off the victim first", 3,
			[]Member{member(0), member(1), member(2), member(3), member(4, leads)}, learners, "MoveLeader ex-4 -> ex-0"},
		{"without MoveLeader (etcd 3.2) the leader is removed as it is", 3,
			[]Member{member(0), member(1), member(2), member(3), member(4, leads)}, etcd32, "Remove ex-4"},
		{"scale down removes an unhealthy member first", 4,
			[]Member{member(0, leads), member(1, down), member(2), member(3), member(4)}, learners, "Remove ex-1"},
		{"scale down to 1", 1, healthy(2), learners, "Remove ex-1"},
		{"scale down to an even size", 4, healthy(5), learners, "Remove ex-4"},

		// Failures.
		{"failed member of 3 is replaced", 3, []Member{member(0, leads), member(1, failed), member(2)}, learners, "Remove ex-1"},
		{"the replacement is added under the old name", 3, []Member{member(0, leads), member(2)}, learners, "Add ex-1 as learner"},
		{"unhealthy member is waited for, not replaced", 3, []Member{member(0, leads), member(1, down), member(2)}, learners, "Wait MemberUnhealthy"},
		{"unhealthy member holds back a scale up", 5, []Member{member(0, leads), member(1, down), member(2)}, learners, "Wait MemberUnhealthy"},
		{"2 of 3 failed: quorum lost, nothing removed", 3,
			[]Member{member(0), member(1, failed), member(2, failed)}, learners, "Blocked QuorumLost"},
		{"2 of 3 down and a scale down asked: still nothing removed", 1,
			[]Member{member(0), member(1, down), member(2, down)}, learners, "Blocked QuorumLost"},
		{"size 1 lost", 1, []Member{member(0, failed)}, learners, "Blocked QuorumLost"},
		{"2 of 4 down: no quorum in an even size", 4,
			[]Member{member(0), member(1), member(2, down), member(3, down)}, learners, "Blocked QuorumLost"},
		{"3 of 5 healthy keeps the quorum: replace", 5,
			[]Member{member(0, leads), member(1, failed), member(2), member(3, down), member(4)}, learners, "Remove ex-1"},
		{"removing a failed member that still answers would lose the quorum", 3,
			[]Member{member(0, leads), member(1, down), member(2, func(m *Member) { m.Failed = true })}, learners, "Blocked WouldLoseQuorum"},

		// Members the operator did not add.
		{"a member named by hand", 3, with(healthy(3), member(3, named("manual"))), learners, "Blocked UnknownMember"},
		{"an added member whose peer URL is not the operator's", 3, with(healthy(3), member(3, unstarted, named(""))), learners, "Blocked UnknownMember"},
		{"two members with one name", 3, with(healthy(3), member(7, named("ex-1"))), learners, "Blocked UnknownMember"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step := Next(tt.desired, tt.members, tt.opts)
			if got := summary(step); got != tt.want {
				t.Errorf("Next = %s, want %s", step, tt.want)
			}
			if step.Reason == "" && step.Action != None {
				t.Errorf("step %s has no reason", step)
			}
		})
	}
}

func TestNextStartGivesTheInitialCluster(t *testing.T) {
	step := Next(4, with(healthy(3), member(3, learner, unstarted)), learners)
	want := "ex-0=http://ex-0:2380,ex-1=http://ex-1:2380,ex-2=http://ex-2:2380,ex-3=http://ex-3:2380"
	if step.Action != Start || step.InitialCluster != want {
		t.Errorf("Next = %s with initial cluster %q, want Start with %q", step, step.InitialCluster, want)
	}
}

func TestNextDoesNotChangeItsInput(t *testing.T) {
	ms := []Member{member(2), member(0, leads), member(1)}
	before := with(ms)
	Next(1, ms, learners)
	if !reflect.DeepEqual(ms, before) {
		t.Errorf("Next reordered its input: %v", ms)
	}
}

// TestNextConverges drives Next against a model cluster that carries each
// step out at once, and checks the whole sequence and that no two changes are
// ever in flight.
func TestNextConverges(t *testing.T) {
	tests := []struct {
		name    string
		desired int
		members []Member
		opts    Options
		want    []string
	}{
		{"3 to 5", 5, healthy(3), learners, []string{
			"Add ex-3 as learner", "Start ex-3", "Promote ex-3", "Add ex-4 as learner", "Start ex-4", "Promote ex-4"}},
		{"5 to 3, leader among the victims", 3, []Member{member(0), member(1), member(2), member(3), member(4, leads)}, learners, []string{
			"MoveLeader ex-4 -> ex-0", "Remove ex-4", "Remove ex-3"}},
		{"1 to 3 on etcd 3.2", 3, healthy(1), etcd32, []string{"Add ex-1", "Start ex-1", "Add ex-2", "Start ex-2"}},
		{"replace a failed member", 3, []Member{member(0, leads), member(1, failed), member(2)}, learners, []string{
			"Remove ex-1", "Add ex-1 as learner", "Start ex-1", "Promote ex-1"}},
		{"scale down while a learner is in flight undoes it", 3, with(healthy(3), member(3, learner, unstarted)), learners, []string{
			"Remove ex-3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := with(tt.members)
			var got []string
			for range 20 {
				step := Next(tt.desired, ms, tt.opts)
				if step.Action == None {
					break
				}
				got = append(got, step.String())
				ms = carryOut(t, ms, step)
				if n := len(names(ms, func(m Member) bool { return m.IsLearner || !m.Started() })); n > 1 {
					t.Fatalf("after %s, %d changes are in flight: %v", step, n, ms)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("steps = %q,\nwant %q", got, tt.want)
			}
			if len(ms) != tt.desired {
				t.Errorf("ended with %d members, want %d", len(ms), tt.desired)
			}
		})
	}
}

// carryOut is a model of the operator and etcd together.
func carryOut(t *testing.T, ms []Member, step Step) []Member {
	t.Helper()
	ms = with(ms)
	index := func(name string) int {
		for i, m := range ms {
			if m.Name == name {
				return i
			}
		}
		t.Fatalf("%s: no member %s in %v", step, name, ms)
		return -1
	}
	switch step.Action {
	case Add:
		o, _ := Ordinal(cl, step.Member.Name)
		m := member(o, unstarted)
		m.ID += 0x100 // a new member, a new ID
		m.IsLearner = step.Member.IsLearner
		ms = append(ms, m)
	case Start:
		m := &ms[index(step.Member.Name)]
		m.ClientURLs = []string{"http://" + m.Name + ":2379"}
		m.Healthy, m.RaftIndex = true, 100
	case Promote:
		ms[index(step.Member.Name)].IsLearner = false
	case MoveLeader:
		ms[index(step.Member.Name)].IsLeader = false
		ms[index(step.To.Name)].IsLeader = true
	case Remove:
		i := index(step.Member.Name)
		ms = append(ms[:i], ms[i+1:]...)
	default:
		t.Fatalf("unexpected step %s", step)
	}
	return ms
}

func TestStepString(t *testing.T) {
	tests := []struct {
		step Step
		want string
	}{
		{Step{Action: None}, "None"},
		{Step{Action: Add, Member: Member{Name: "ex-3"}}, "Add ex-3"},
		{Step{Action: Remove, Member: Member{ID: 0xbeef}}, "Remove member beef"},
		{Step{Action: Blocked, Cause: QuorumLost, Reason: "quorum lost"}, "Blocked (QuorumLost): quorum lost"},
	}
	for _, tt := range tests {
		if got := tt.step.String(); got != tt.want {
			t.Errorf("String = %q, want %q", got, tt.want)
		}
	}
}

func TestQuorumLostNamesTheMembers(t *testing.T) {
	step := Next(3, []Member{member(0), member(1, failed), member(2, down), member(3, learner, down)}, learners)
	if !strings.Contains(step.Reason, "(ex-1, ex-2 not)") || !strings.Contains(step.Reason, "1 of 3") {
		t.Errorf("reason %q does not say which voting members are down, and only those", step.Reason)
	}
}

// A removal that would cost the quorum says what would be left of it.
func TestWouldLoseQuorumSaysWhatIsLeft(t *testing.T) {
	ms := []Member{member(0, leads), member(1), member(2, down)}
	step := removeVoter(ms, ms[1], Availability(ms), learners, "scale down")
	if want := "scale down: removing ex-1 would leave 1 healthy of 2 voting members, 2 needed"; step.Cause != WouldLoseQuorum || step.Reason != want {
		t.Errorf("removeVoter = %s %q, want WouldLoseQuorum %q", step.Action, step.Reason, want)
	}
}

// Leadership moves off a leader that is to be removed to a healthy voter:
// never to the leader itself, a member that is down or a learner.
func TestLeadershipMovesToAHealthyVoter(t *testing.T) {
	ms := []Member{member(0, leads), member(1, down), member(2, learner), member(3), member(4)}
	step := removeVoter(ms, ms[0], Availability(ms), learners, "scale down")
	if step.Action != MoveLeader || step.To.Name != "ex-3" {
		t.Errorf("removeVoter = %s, want leadership moved to ex-3", step)
	}
}

// A learner is caught up within LearnerLag entries of the leader and at
// 90 % of its index or more, both bounds included.
func TestCaughtUpBounds(t *testing.T) {
	tests := []struct {
		learner, leader, lag uint64
		want                 bool
	}{
		{900, 1000, 100, true},
		{899, 1000, 100, false},
		{900, 1000, 1000, true},
		{899, 1000, 1000, false},
		{1000, 1000, 1, true},
		{0, 1000, 1000, false},
	}
	for _, tt := range tests {
		if got := caughtUp(tt.learner, tt.leader, tt.lag); got != tt.want {
			t.Errorf("caughtUp(%d, %d, %d) = %v, want %v", tt.learner, tt.leader, tt.lag, got, tt.want)
		}
	}
}

// Scaling down removes a member that is down before a healthy one, the
// first member too.
func TestScaleDownRemovesTheMemberThatIsDown(t *testing.T) {
	step := Next(3, []Member{member(0, down), member(1, leads), member(2), member(3)}, learners)
	if step.Action != Remove || step.Member.Name != "ex-0" {
		t.Errorf("Next = %s, want ex-0, which is down, removed", step)
	}
}

// No voter, no quorum: a zero Verdict is not available.
func TestNoVotersIsUnavailable(t *testing.T) {
	if (Verdict{}).Available() || Availability(nil).Available() {
		t.Error("a cluster without voters is called available")
	}
}
