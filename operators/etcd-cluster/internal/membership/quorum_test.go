package membership

import "testing"

func TestQuorum(t *testing.T) {
	tests := []struct{ n, quorum, tolerates int }{
		{0, 1, 0}, {1, 1, 0}, {2, 2, 0}, {3, 2, 1}, {4, 3, 1}, {5, 3, 2}, {6, 4, 2}, {7, 4, 3},
	}
	for _, tt := range tests {
		if got := Quorum(tt.n); got != tt.quorum {
			t.Errorf("Quorum(%d) = %d, want %d", tt.n, got, tt.quorum)
		}
		if got := Tolerates(tt.n); got != tt.tolerates {
			t.Errorf("Tolerates(%d) = %d, want %d", tt.n, got, tt.tolerates)
		}
	}
}

func TestAvailability(t *testing.T) {
	tests := []struct {
		name      string
		members   []Member
		available bool
		margin    int
		text      string
	}{
		{"all healthy", healthy(3), true, 1, "available: 3 of 3 voting members healthy, 1 more may fail"},
		{"one down of 3", []Member{member(0, leads), member(1, down), member(2)}, true, 0,
			"available: 2 of 3 voting members healthy, 0 more may fail"},
		{"two down of 3", []Member{member(0), member(1, down), member(2, down)}, false, 0,
			"unavailable: 1 of 3 voting members healthy, 2 needed"},
		{"learners do not count", with(healthy(1), member(1, learner), member(2, learner)), true, 0,
			"available: 1 of 1 voting members healthy, 0 more may fail"},
		{"an unstarted voter counts against the quorum", []Member{member(0), member(1, unstarted)}, false, 0,
			"unavailable: 1 of 2 voting members healthy, 2 needed"},
		{"nothing", nil, false, 0, "unavailable: 0 of 0 voting members healthy, 1 needed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Availability(tt.members)
			if v.Available() != tt.available || v.Margin() != tt.margin || v.String() != tt.text {
				t.Errorf("Availability = %v (available %v, margin %d), want %q (available %v, margin %d)",
					v, v.Available(), v.Margin(), tt.text, tt.available, tt.margin)
			}
		})
	}
}
