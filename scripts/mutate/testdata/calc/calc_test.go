package calc

import "testing"

func TestMax(t *testing.T) {
	if Max(1, 2) != 2 || Max(3, 1) != 3 {
		t.Fatal("Max")
	}
}

// Too weak: 0 - 0 is 0 too.
func TestDouble(t *testing.T) {
	if Double(0) != 0 {
		t.Fatal("Double")
	}
}

func TestSign(t *testing.T) {
	if Sign(-2) != -1 || Sign(0) != 0 || Sign(3) != 1 {
		t.Fatal("Sign")
	}
}

func TestSumOfTwo(t *testing.T) {
	if Sum(1, 2) != 3 {
		t.Fatal("Sum")
	}
}
