package membership

import (
	"fmt"
	"sort"
	"strings"
)

// Member is one etcd member as the planner sees it: what etcd's member list
// says, what a probe of the member found, and what only the operator knows.
type Member struct {
	// ID is the etcd member ID.
	ID uint64
	// Name is the member's name, the name of its pod: <cluster>-<ordinal>.
	Name string
	// PeerURLs are where the member listens for its peers.
	PeerURLs []string
	// ClientURLs are where the member serves clients. etcd learns them when
	// the member starts, so empty means added but never started.
	ClientURLs []string
	// IsLearner is true for a member that receives the log but does not vote
	// (etcd 3.4 and later).
	IsLearner bool
	// Healthy is true when the member answered a status probe and sees a leader.
	Healthy bool
	// IsLeader is true for the raft leader.
	IsLeader bool
	// RaftIndex is the committed raft index the member reported. A learner
	// has caught up when its index is close to the leader's.
	RaftIndex uint64
	// Failed is set by the operator, not by etcd: the member will not come
	// back with its data (its volume is gone, or it has been unhealthy for
	// longer than the operator waits). Only a failed member is replaced; an
	// unhealthy one is waited for, because replacing it copies all the data
	// again and, while that runs, the cluster tolerates one failure less.
	Failed bool
}

// Started reports whether the member has ever run: etcd knows its client URLs.
func (m Member) Started() bool { return len(m.ClientURLs) > 0 }

func (m Member) String() string {
	if m.Name == "" {
		return fmt.Sprintf("member %x", m.ID)
	}
	return m.Name
}

// DefaultLearnerLag is Options.LearnerLag when it is zero.
const DefaultLearnerLag = 1000

// Options are the facts about the cluster that the member list does not show.
type Options struct {
	// Cluster is the name of the EtcdCluster; members are named <Cluster>-<ordinal>.
	Cluster string
	// Learners adds new members as learners, which etcd supports from 3.4 on.
	// A learner copies the data before it votes, so adding it costs the
	// cluster no fault tolerance. Without it a new member votes at once and,
	// until it has started and caught up, counts against the quorum.
	Learners bool
	// MoveLeader moves the leadership off a member before removing it, which
	// etcd supports from 3.3 on. Without it the leader is removed as it is;
	// it steps down once the removal commits and the others elect a new one,
	// which stalls writes for an election timeout.
	MoveLeader bool
	// LearnerLag is how many raft entries a learner may be behind the leader
	// and still count as caught up; DefaultLearnerLag when zero. etcd itself
	// also wants the learner at 90% of the leader's index.
	LearnerLag uint64
}

// Action is what a step does.
type Action string

// The actions.
const (
	// None: the cluster has the desired members, all healthy.
	None Action = "None"
	// Start: create the pod of a member that was added but never started, with
	// an empty data volume, --initial-cluster-state=existing and
	// --initial-cluster=Step.InitialCluster. After an operator restart
	// between MemberAdd and the pod, this is what the plan says, so creating
	// the pod must be idempotent. Step.Member.ID is the ID etcd gave the
	// member: a volume of the same name labelled with another ID is left
	// from a removed member (etcd would start it as that member, which the
	// cluster refuses) and has to go first.
	Start Action = "Start"
	// Promote: make a learner that has caught up a voting member.
	Promote Action = "Promote"
	// MoveLeader: hand leadership from Step.Member, about to be removed, to
	// Step.To, so that the removal does not cost an election.
	MoveLeader Action = "MoveLeader"
	// Remove: remove Step.Member from the cluster, then delete its pod and
	// its volume: its data can never rejoin under a new member ID.
	Remove Action = "Remove"
	// Add: MemberAdd (or MemberAddAsLearner when Step.Member.IsLearner) with
	// the peer URL of Step.Member.Name, the lowest free ordinal.
	Add Action = "Add"
	// Wait: a change is in progress or a member is away; plan again later.
	Wait Action = "Wait"
	// Blocked: no step is safe; Step.Cause and Step.Reason say why. A person
	// has to act.
	Blocked Action = "Blocked"
)

// Cause names why a Wait or Blocked step stops, for a condition's reason.
type Cause string

// The causes of Wait and Blocked steps.
const (
	// LearnerCatchingUp: a learner is still copying the data.
	LearnerCatchingUp Cause = "LearnerCatchingUp"
	// MemberUnhealthy: a member does not answer and is not marked failed.
	MemberUnhealthy Cause = "MemberUnhealthy"
	// QuorumLost: fewer than a quorum of the voters are healthy. etcd cannot
	// change its membership; only bringing members back with their data, or a
	// restore from a backup, ends this.
	QuorumLost Cause = "QuorumLost"
	// WouldLoseQuorum: the next change would leave fewer healthy voters than
	// the new quorum.
	WouldLoseQuorum Cause = "WouldLoseQuorum"
	// InvalidSize: the desired size is below 1.
	InvalidSize Cause = "InvalidSize"
	// NoMembers: the member list is empty.
	NoMembers Cause = "NoMembers"
	// UnknownMember: a member is not named <cluster>-<ordinal>, or two share a
	// name; someone changed the membership by hand.
	UnknownMember Cause = "UnknownMember"
)

// Step is the one thing to do next.
type Step struct {
	Action Action
	// Member is the member the step is about. For Add only Name and IsLearner
	// are set: etcd assigns the ID.
	Member Member
	// To is the member that takes over the leadership (MoveLeader).
	To Member
	// InitialCluster is the --initial-cluster value for the member to start
	// (Start).
	InitialCluster string
	// Cause is set on Wait and Blocked steps.
	Cause Cause
	// Reason says why, in words for an event or a condition message.
	Reason string
}

func (s Step) String() string {
	switch s.Action {
	case Add:
		if s.Member.IsLearner {
			return fmt.Sprintf("Add %s as learner", s.Member)
		}
		return fmt.Sprintf("Add %s", s.Member)
	case Start, Promote, Remove:
		return fmt.Sprintf("%s %s", s.Action, s.Member)
	case MoveLeader:
		return fmt.Sprintf("MoveLeader %s -> %s", s.Member, s.To)
	case Wait, Blocked:
		return fmt.Sprintf("%s (%s): %s", s.Action, s.Cause, s.Reason)
	}
	return string(s.Action)
}

// Next plans the one step that brings members closer to desired voting
// members, all healthy. It changes one member at a time and finishes (or, on
// scale down, undoes) a change in flight before it starts another:
//
//   - an added member that never started is started (or removed, when it is
//     no longer wanted and the quorum holds);
//   - without a quorum of healthy voters nothing is changed: Blocked;
//   - a learner is promoted once caught up (removed if unwanted or failed);
//   - on scale down the victim is an unhealthy voter, else the highest
//     ordinal, with leadership moved off it first;
//   - a failed voter is removed, and the add path recreates it empty;
//   - an unhealthy voter is waited for;
//   - on scale up the lowest free ordinal is added.
func Next(desired int, members []Member, opts Options) Step {
	if desired < 1 {
		return blocked(InvalidSize, "size %d: an etcd cluster needs at least 1 member", desired)
	}
	if len(members) == 0 {
		return blocked(NoMembers, "etcd lists no members: bootstrap the cluster first")
	}
	ms, problem := byOrdinal(opts.Cluster, members)
	if problem != "" {
		return blocked(UnknownMember, "%s", problem)
	}
	v := Availability(ms)
	surplus := len(ms) > desired

	if m, ok := find(ms, func(m Member) bool { return !m.Started() }); ok {
		if surplus && v.Available() {
			return Step{Action: Remove, Member: m,
				Reason: fmt.Sprintf("%s was added but never started, and %d members are wanted: undo the add", m, desired)}
		}
		// Starting a member needs no quorum, and adding the second member of
		// a one-member cluster without learners takes the quorum away until
		// the new member runs: starting it is the only way on.
		return Step{Action: Start, Member: m, InitialCluster: InitialCluster(ms),
			Reason: fmt.Sprintf("%s was added to the cluster and has not started yet", m)}
	}
	if !v.Available() {
		return blocked(QuorumLost,
			"quorum lost: %d of %d voting members healthy (%s not), %d needed; etcd cannot change its membership without a quorum. "+
				"Bring the members back with their data, or restore the cluster from a backup",
			v.Healthy, v.Voters, strings.Join(names(ms, func(m Member) bool { return !m.IsLearner && !m.Healthy }), ", "), v.Quorum)
	}

	if l, ok := find(ms, func(m Member) bool { return m.IsLearner }); ok {
		leader, _ := find(ms, func(m Member) bool { return m.IsLeader && m.Healthy })
		switch {
		case surplus:
			return Step{Action: Remove, Member: l,
				Reason: fmt.Sprintf("learner %s is not promoted yet, and %d members are wanted: undo the add", l, desired)}
		case l.Failed:
			return Step{Action: Remove, Member: l, Reason: fmt.Sprintf("learner %s failed: replace it", l)}
		case !l.Healthy:
			return wait(MemberUnhealthy, "learner %s does not answer", l)
		case !caughtUp(l.RaftIndex, leader.RaftIndex, opts.LearnerLag):
			return wait(LearnerCatchingUp, "learner %s is at raft index %d, the leader at %d", l, l.RaftIndex, leader.RaftIndex)
		}
		return Step{Action: Promote, Member: l, Reason: fmt.Sprintf("learner %s has caught up with the leader", l)}
	}

	// From here on every member is a started voter.
	if surplus {
		victim := ms[len(ms)-1]
		if u, ok := findLast(ms, func(m Member) bool { return !m.Healthy }); ok {
			victim = u
		}
		return removeVoter(ms, victim, v, opts, fmt.Sprintf("scale down from %d to %d members", len(ms), desired))
	}
	if f, ok := find(ms, func(m Member) bool { return m.Failed }); ok {
		return removeVoter(ms, f, v, opts, fmt.Sprintf("%s failed: replace it with an empty member of the same name", f))
	}
	if u, ok := find(ms, func(m Member) bool { return !m.Healthy }); ok {
		return wait(MemberUnhealthy, "%s does not answer; it is given time to come back (mark it failed to replace it)", u)
	}
	if len(ms) < desired {
		// Every voter is healthy here, so even a voter added without learners
		// leaves a quorum started (n of n+1 for n >= 2), as etcd's own check
		// wants. From one member to two there is no way around losing the
		// quorum until the second starts; etcd allows that case too.
		add := Member{Name: MemberName(opts.Cluster, freeOrdinal(opts.Cluster, ms)), IsLearner: opts.Learners}
		return Step{Action: Add, Member: add, Reason: fmt.Sprintf("scale up from %d to %d members", len(ms), desired)}
	}
	return Step{Action: None, Reason: fmt.Sprintf("%d members, all healthy", len(ms))}
}

// removeVoter removes victim if the healthy voters left still make the new
// quorum, moving the leadership off it first when etcd can.
func removeVoter(ms []Member, victim Member, v Verdict, opts Options, why string) Step {
	left := v.Healthy
	if victim.Healthy {
		left--
	}
	if left < Quorum(v.Voters-1) {
		return blocked(WouldLoseQuorum, "%s: removing %s would leave %d healthy of %d voting members, %d needed",
			why, victim, left, v.Voters-1, Quorum(v.Voters-1))
	}
	if victim.IsLeader && victim.Healthy && opts.MoveLeader {
		if to, ok := find(ms, func(m Member) bool { return m.ID != victim.ID && m.Healthy && !m.IsLearner }); ok {
			return Step{Action: MoveLeader, Member: victim, To: to,
				Reason: fmt.Sprintf("%s: %s leads and is to be removed", why, victim)}
		}
	}
	return Step{Action: Remove, Member: victim, Reason: why}
}

// caughtUp reports whether a learner at raft index learner is close enough to
// the leader at index leader: within lag entries, and at 90% of the leader's
// index or more, the bar etcd sets for a promotion.
func caughtUp(learner, leader, lag uint64) bool {
	if lag == 0 {
		lag = DefaultLearnerLag
	}
	if leader == 0 || learner == 0 {
		return false
	}
	if learner >= leader {
		return true
	}
	behind := leader - learner
	return behind <= lag && behind <= leader/10
}

// byOrdinal sorts a copy of members by ordinal; it names the problem when a
// member's name is not <cluster>-<ordinal> or two members share one.
func byOrdinal(cluster string, members []Member) ([]Member, string) {
	ms := append([]Member(nil), members...)
	seen := map[string]uint64{}
	for _, m := range ms {
		if _, ok := Ordinal(cluster, m.Name); !ok {
			return nil, fmt.Sprintf("member %x (name %q, peer URLs %v) is not named %s-<ordinal>: it was not added by the operator; remove it with etcdctl member remove",
				m.ID, m.Name, m.PeerURLs, cluster)
		}
		if id, dup := seen[m.Name]; dup {
			return nil, fmt.Sprintf("members %x and %x are both named %s; remove the one that does not run with etcdctl member remove", id, m.ID, m.Name)
		}
		seen[m.Name] = m.ID
	}
	sort.Slice(ms, func(i, j int) bool {
		a, _ := Ordinal(cluster, ms[i].Name)
		b, _ := Ordinal(cluster, ms[j].Name)
		return a < b
	})
	return ms, ""
}

// freeOrdinal is the lowest ordinal no member has, so that a replaced
// member comes back under its old name.
func freeOrdinal(cluster string, ms []Member) int {
	used := map[int]bool{}
	for _, m := range ms {
		n, _ := Ordinal(cluster, m.Name)
		used[n] = true
	}
	n := 0
	for used[n] {
		n++
	}
	return n
}

func find(ms []Member, ok func(Member) bool) (Member, bool) {
	for _, m := range ms {
		if ok(m) {
			return m, true
		}
	}
	return Member{}, false
}

func findLast(ms []Member, ok func(Member) bool) (Member, bool) {
	for i := len(ms) - 1; i >= 0; i-- {
		if ok(ms[i]) {
			return ms[i], true
		}
	}
	return Member{}, false
}

func names(ms []Member, ok func(Member) bool) []string {
	var out []string
	for _, m := range ms {
		if ok(m) {
			out = append(out, m.String())
		}
	}
	return out
}

func blocked(c Cause, format string, args ...any) Step {
	return Step{Action: Blocked, Cause: c, Reason: fmt.Sprintf(format, args...)}
}

func wait(c Cause, format string, args ...any) Step {
	return Step{Action: Wait, Cause: c, Reason: fmt.Sprintf(format, args...)}
}
