package calc

// Sum adds xs up. Its own test file's test does not notice a mutant that
// calc_test.go's does: mutate must run every test before saying it lived.
func Sum(xs ...int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}
