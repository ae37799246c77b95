package controller

import "testing"

// A room survives its annotation; none reported writes none and reads as
// none; one that does not read as two numbers is measured but unknown.
func TestRoomAnnotation(t *testing.T) {
	for _, r := range []room{{reported: true, free: 1500000, dump: 1000000}, {reported: true, free: -1, dump: -1}, {}} {
		if got := roomOf(r.annotation()); got != r {
			t.Errorf("roomOf(%q) = %+v, want %+v", r.annotation(), got, r)
		}
	}
	if a := (room{}).annotation(); a != "" {
		t.Errorf("a room no Job reported is written as %q, want nothing", a)
	}
	if got, want := roomOf("lots"), (room{reported: true, free: -1, dump: -1}); got != want {
		t.Errorf("roomOf(%q) = %+v, want %+v", "lots", got, want)
	}
}
