package membership

import (
	"slices"
	"testing"
)

// membersFrom decodes a fuzzer's bytes into a member list of cluster cl: each
// byte is one member, its low bits the flags (started, learner, healthy,
// leader, failed) and its high bits a step towards the next ordinal, so
// ordinals are distinct and may have gaps. At most 9 members, as spec.size.
func membersFrom(b []byte) []Member {
	var ms []Member
	ordinal := 0
	for i, x := range b {
		if i == 9 {
			break
		}
		ordinal += int(x >> 5)
		m := member(ordinal)
		m.ID = uint64(0x100 + i)
		m.RaftIndex = uint64(x) * 7
		if x&1 == 0 {
			m.ClientURLs = nil
		}
		m.IsLearner = x&2 != 0
		m.Healthy = x&4 != 0
		m.IsLeader = x&8 != 0
		m.Failed = x&16 != 0
		ms = append(ms, m)
		ordinal++
	}
	return ms
}

// Next's safety, on any member list: it never changes the membership
// without a quorum, never removes a voter the quorum needs, adds only when
// every member is a healthy voter and the cluster is too small, and says
// None only for exactly the desired healthy voters.
func FuzzNext(f *testing.F) {
	f.Add(3, []byte{5, 5, 5}, true)
	f.Add(1, []byte{5, 5, 13}, false)
	f.Add(5, []byte{5, 1, 7, 5}, true)
	f.Add(3, []byte{0, 21, 5, 0x25}, false)
	f.Add(2, []byte{13, 7, 23, 5}, true)
	f.Fuzz(func(t *testing.T, desired int, b []byte, modern bool) {
		desired = desired%11 - 1 // -1 to 9
		ms := membersFrom(b)
		opts := Options{Cluster: cl, Learners: modern, MoveLeader: modern}
		step := Next(desired, ms, opts)
		v := Availability(ms)
		has := func(m Member) bool {
			return slices.ContainsFunc(ms, func(x Member) bool { return x.ID == m.ID && x.Name == m.Name })
		}
		allHealthyVoters := !slices.ContainsFunc(ms, func(m Member) bool { return m.IsLearner || !m.Started() || !m.Healthy })

		switch step.Action {
		case Remove, Add, Promote, MoveLeader:
			if !v.Available() {
				t.Fatalf("%v without a quorum (%v) of %v", step, v, ms)
			}
		}
		switch step.Action {
		case Remove:
			if !has(step.Member) {
				t.Fatalf("removes %v, which is no member of %v", step.Member, ms)
			}
			if !step.Member.IsLearner && step.Member.Started() {
				left := v.Healthy
				if step.Member.Healthy {
					left--
				}
				if left < Quorum(v.Voters-1) {
					t.Fatalf("removing voter %v leaves %d healthy of %d voters: %v", step.Member, left, v.Voters-1, ms)
				}
			}
		case MoveLeader:
			if !has(step.Member) || !has(step.To) || !step.Member.IsLeader || !step.To.Healthy || step.To.IsLearner || step.To.ID == step.Member.ID {
				t.Fatalf("moves the leadership from %+v to %+v", step.Member, step.To)
			}
		case Promote:
			if !has(step.Member) || !step.Member.IsLearner || !step.Member.Healthy || step.Member.Failed {
				t.Fatalf("promotes %+v", step.Member)
			}
		case Add:
			if !allHealthyVoters || len(ms) >= desired {
				t.Fatalf("adds %v to %d members (%d wanted): %v", step.Member, len(ms), desired, ms)
			}
			if _, ok := Ordinal(cl, step.Member.Name); !ok || slices.ContainsFunc(ms, func(m Member) bool { return m.Name == step.Member.Name }) {
				t.Fatalf("adds %q, a name not free in %v", step.Member.Name, ms)
			}
			if step.Member.IsLearner != opts.Learners {
				t.Fatalf("adds %+v with learners %v", step.Member, opts.Learners)
			}
		case Start:
			if !has(step.Member) || step.Member.Started() {
				t.Fatalf("starts %+v", step.Member)
			}
		case None:
			if !allHealthyVoters || len(ms) != desired || slices.ContainsFunc(ms, func(m Member) bool { return m.Failed }) {
				t.Fatalf("nothing to do for %d wanted and %v", desired, ms)
			}
		case Wait, Blocked:
			if step.Cause == "" || step.Reason == "" {
				t.Fatalf("%v says no cause or reason", step)
			}
			if step.Cause == UnknownMember {
				t.Fatalf("members named by the operator are unknown: %v", step)
			}
		default:
			t.Fatalf("unknown action %q", step.Action)
		}
	})
}

// MemberName and Ordinal are inverses, and Ordinal takes no name
// MemberName would not give.
func FuzzOrdinal(f *testing.F) {
	f.Add("example-etcd-cluster", "example-etcd-cluster-3", 3)
	f.Add("ex", "ex-01", 0)
	f.Add("ex", "ex-", 12)
	f.Add("a-1", "a-1-1", 999999999)
	f.Fuzz(func(t *testing.T, cluster, name string, ordinal int) {
		if ordinal >= 0 {
			if got, ok := Ordinal(cluster, MemberName(cluster, ordinal)); ordinal <= 999_999_999 && (!ok || got != ordinal) {
				t.Fatalf("Ordinal(%q, %q) = %d, %v", cluster, MemberName(cluster, ordinal), got, ok)
			}
		}
		if n, ok := Ordinal(cluster, name); ok && (n < 0 || MemberName(cluster, n) != name) {
			t.Fatalf("Ordinal(%q, %q) = %d, but that ordinal's name is %q", cluster, name, n, MemberName(cluster, n))
		}
	})
}
