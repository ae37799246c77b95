// Package calc is mutate's test subject: one mutant its tests kill, one an
// equivalent, one they let live, and code no test runs.
package calc

// Max returns the larger of a and b.
func Max(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// Double returns x added to itself.
func Double(x int) int { return x + x }

// Negative is run by no test.
func Negative(x int) bool { return x < 0 }

// Sign is -1, 0 or 1, as x is negative, zero or positive.
func Sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}
