package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The test subject's mutants, judged by its own tests: Max's > made <= is
// killed, and so is each of Sign's, and Sum's, by a test of calc_test.go
// that its own sum_test.go does not have; Max's > made >= is equivalent (equal arguments give the same result),
// as the list says; Double's + made - lives (its test tries 0 only);
// Negative's comparison runs in no test. An entry of the list that no
// mutant matches is reported.
func TestMutatePackage(t *testing.T) {
	list := filepath.Join(t.TempDir(), "equivalent.txt")
	entries := `# the subject's
testdata/calc/calc.go Max: > to >=: if a > b {
	a equal b returns b, which is a
testdata/calc/calc.go Max: < to >: if a < b {
	no such line any more
`
	if err := os.WriteFile(list, []byte(entries), 0o600); err != nil {
		t.Fatal(err)
	}
	known, err := readEquivalents(list)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "calc"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := mutatePackage(context.Background(), dir, "testdata/calc", 3, known)
	if err != nil {
		t.Fatal(err)
	}
	want := map[status][]string{
		killed: {
			"testdata/calc/calc.go Max: > to <=: if a > b {",
			// A case clause's expression runs when its switch does.
			"testdata/calc/calc.go Sign: < to <=: case x < 0:",
			"testdata/calc/calc.go Sign: < to >=: case x < 0:",
			"testdata/calc/calc.go Sign: > to >=: case x > 0:",
			"testdata/calc/calc.go Sign: > to <=: case x > 0:",
			// Killed by a test of another file than its own.
			"testdata/calc/sum.go Sum: += to -=: t += x",
		},
		equivalent: {"testdata/calc/calc.go Max: > to >=: if a > b {"},
		lived:      {"testdata/calc/calc.go Double: + to -: func Double(x int) int { return x + x }"},
		notCovered: {
			"testdata/calc/calc.go Negative: < to <=: func Negative(x int) bool { return x < 0 }",
			"testdata/calc/calc.go Negative: < to >=: func Negative(x int) bool { return x < 0 }",
		},
	}
	for s, keys := range want {
		if !slices.Equal(r.keys[s], keys) {
			t.Errorf("%s: %q, want %q", s, r.keys[s], keys)
		}
	}
	if r.count[timedOut]+r.count[notViable] != 0 {
		t.Errorf("timed out or not viable: %v", r.count)
	}
	if e := r.efficacy(); e != 600.0/7 {
		t.Errorf("efficacy %.1f, want 85.7 (six killed, one lived)", e)
	}
	if !slices.Equal(r.stale, []string{"testdata/calc/calc.go Max: < to >: if a < b {"}) {
		t.Errorf("stale entries %q", r.stale)
	}
	out := t.TempDir()
	if err := r.write(out); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(out, "testdata_calc.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(text), "testdata/calc: killed 6, lived 1, equivalent 1, timed out 0, not viable 0, not covered 2; efficacy 85.7 %") {
		t.Errorf("report:\n%s", text)
	}
}

// A mutant's change is made at its offset, the rest of the source kept.
func TestApply(t *testing.T) {
	src := []byte("if a > b && !c {")
	ms := []mutant{{off: 5, from: ">", to: "<="}, {off: 12, from: "!", to: " "}}
	got := []string{string(ms[0].apply(src)), string(ms[1].apply(src))}
	if want := []string{"if a <= b && !c {", "if a > b &&  c {"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// An entry without a reason is refused: the list says why, or it is no list.
func TestEquivalentNeedsAReason(t *testing.T) {
	list := filepath.Join(t.TempDir(), "equivalent.txt")
	if err := os.WriteFile(list, []byte("a/b.go F: > to >=: if a > b {\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readEquivalents(list); err == nil {
		t.Error("an entry without a reason was read")
	}
}
