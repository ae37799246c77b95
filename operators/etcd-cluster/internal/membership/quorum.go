package membership

import "fmt"

// Quorum is how many voting members of n must agree for a write: a strict
// majority, floor(n/2)+1.
func Quorum(n int) int { return n/2 + 1 }

// Tolerates is how many of n voting members may fail before the cluster stops
// serving writes. An even size tolerates no more than the odd size below it
// (4 tolerates 1, like 3), which is why odd sizes are the usual advice.
func Tolerates(n int) int {
	if n < 1 {
		return 0
	}
	return n - Quorum(n)
}

// Verdict says whether a cluster serves reads and writes, and how close it is
// to not doing so.
type Verdict struct {
	// Voters is the number of voting members (learners do not vote).
	Voters int
	// Healthy is how many of the voters answered a probe and see a leader.
	Healthy int
	// Quorum is Quorum(Voters).
	Quorum int
}

// Available reports whether a quorum of the voters is healthy.
func (v Verdict) Available() bool { return v.Voters > 0 && v.Healthy >= v.Quorum }

// Margin is how many more healthy voters may fail before the cluster stops
// serving writes; 0 when it is on the edge or already unavailable.
func (v Verdict) Margin() int { return max(v.Healthy-v.Quorum, 0) }

func (v Verdict) String() string {
	if !v.Available() {
		return fmt.Sprintf("unavailable: %d of %d voting members healthy, %d needed", v.Healthy, v.Voters, v.Quorum)
	}
	return fmt.Sprintf("available: %d of %d voting members healthy, %d more may fail", v.Healthy, v.Voters, v.Margin())
}

// Availability counts the voters of members and how many of them are healthy.
func Availability(members []Member) Verdict {
	var v Verdict
	for _, m := range members {
		if m.IsLearner {
			continue
		}
		v.Voters++
		if m.Healthy {
			v.Healthy++
		}
	}
	v.Quorum = Quorum(v.Voters)
	return v
}
