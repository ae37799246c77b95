package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// CONTRIBUTING.md's figures are the reports': each report of results/ has
// its row in the mutation table of CONTRIBUTING.md, and each row a report.
func TestContributingQuotesTheResults(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "CONTRIBUTING.md"))
	if err != nil {
		t.Fatal(err)
	}
	reports, err := filepath.Glob(filepath.Join("results", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) == 0 {
		t.Fatal("no report in scripts/mutate/results: run make mutate")
	}
	summary := regexp.MustCompile(`^(\S+): killed (\d+), lived (\d+), equivalent (\d+), timed out (\d+), not viable \d+, not covered (\d+); efficacy (\S+ %|n/a)`)
	want := map[string]bool{}
	for _, r := range reports {
		text, err := os.ReadFile(r)
		if err != nil {
			t.Fatal(err)
		}
		m := summary.FindStringSubmatch(string(text))
		if m == nil {
			t.Errorf("%s: no summary line", r)
			continue
		}
		row := fmt.Sprintf("| `%s` | %s | %s | %s | %s | %s | %s |", m[1], m[2], m[3], m[4], m[5], m[6], m[7])
		want[row] = true
		if !strings.Contains(string(readme), row+"\n") {
			t.Errorf("CONTRIBUTING.md lacks the row of %s:\n%s", r, row)
		}
	}
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "| `operators/") && strings.HasSuffix(line, "% |") && !want[line] {
			t.Errorf("CONTRIBUTING.md quotes a figure no report of results/ says: %s", line)
		}
	}
}
