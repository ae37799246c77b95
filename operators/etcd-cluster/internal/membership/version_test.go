package membership

import (
	"strings"
	"testing"
)

func TestUpgradeStep(t *testing.T) {
	for _, tt := range []struct {
		running []string
		to      string
		ok      bool
	}{
		{[]string{"3.5.17", "3.5.17"}, "3.5.21", true},
		{[]string{"3.5.17"}, "v3.6.0", true},
		{[]string{"3.4.30", "3.5.0"}, "3.5.1", true},
		{[]string{"3.4.30", "3.5.0"}, "3.6.0", false}, // two edits in a row
		{[]string{"3.6.0"}, "3.5.21", false},          // down
		{[]string{"3.6.0"}, "4.0.0", false},           // across a major
		{nil, "3.6.0", true},
	} {
		if err := UpgradeStep(tt.running, tt.to); (err == nil) != tt.ok {
			t.Errorf("UpgradeStep(%v, %s) = %v, want ok %v", tt.running, tt.to, err, tt.ok)
		}
	}
}

// The refusal names the two minor versions the members may move to.
func TestUpgradeStepSaysWhereTo(t *testing.T) {
	err := UpgradeStep([]string{"3.5.17"}, "3.7.0")
	if want := "set spec.version to a 3.5 or 3.6 release"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("UpgradeStep = %v, want it to say %q", err, want)
	}
}

// A version is MAJOR.MINOR, a patch after it if any, each a number of zero
// or more.
func TestMajorMinor(t *testing.T) {
	for _, tt := range []struct {
		version      string
		major, minor int
		ok           bool
	}{
		{"3.5.17", 3, 5, true},
		{"v3.6.0", 3, 6, true},
		{"3.5", 3, 5, true},
		{"3.0.1", 3, 0, true},
		{"0.4.9", 0, 4, true},
		{"3", 0, 0, false},
		{"-1.5.0", 0, 0, false},
		{"3.-1.0", 0, 0, false},
		{"3.x.0", 0, 0, false},
		{"x.5.0", 0, 0, false},
	} {
		major, minor, err := majorMinor(tt.version)
		if (err == nil) != tt.ok || major != tt.major || minor != tt.minor {
			t.Errorf("majorMinor(%q) = %d, %d, %v; want %d, %d, ok %v", tt.version, major, minor, err, tt.major, tt.minor, tt.ok)
		}
	}
}
