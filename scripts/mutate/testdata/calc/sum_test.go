package calc

import "testing"

func TestSumOfNothing(t *testing.T) {
	if Sum() != 0 {
		t.Fatal("Sum")
	}
}
