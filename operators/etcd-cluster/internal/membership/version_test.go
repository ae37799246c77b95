package membership

import "testing"

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
