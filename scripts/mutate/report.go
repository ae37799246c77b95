package main

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// keyOf names mutant m of the package rel, as the report and
// equivalent.txt do: its file, its function, the change and the line's
// text; no line number, which any edit above it would change.
func keyOf(rel string, m mutant) string {
	fn := m.fn
	if fn == "" {
		fn = "-"
	}
	return fmt.Sprintf("%s %s: %s: %s", filepath.ToSlash(filepath.Join(rel, filepath.Base(m.file))), fn, m.kind(), m.text)
}

// report is what the tests of one package made of its mutants.
type report struct {
	pkg      string
	baseline time.Duration
	took     time.Duration
	count    map[status]int
	keys     map[status][]string
	stale    []string
}

func (r *report) add(s status, key string) {
	if r.count == nil {
		r.count, r.keys = map[status]int{}, map[status][]string{}
	}
	r.count[s]++
	r.keys[s] = append(r.keys[s], key)
}

// efficacy is killed / (killed + lived), in percent; -1 without either.
func (r *report) efficacy() float64 {
	judged := r.count[killed] + r.count[lived]
	if judged == 0 {
		return -1
	}
	return 100 * float64(r.count[killed]) / float64(judged)
}

func (r *report) summary() string {
	eff := "n/a"
	if e := r.efficacy(); e >= 0 {
		eff = fmt.Sprintf("%.1f %%", e)
	}
	return fmt.Sprintf("%s: killed %d, lived %d, equivalent %d, timed out %d, not viable %d, not covered %d; efficacy %s (%s)",
		r.pkg, r.count[killed], r.count[lived], r.count[equivalent], r.count[timedOut], r.count[notViable], r.count[notCovered],
		eff, r.took.Round(time.Second))
}

// write writes the report into dir, one file per package: the summary,
// then the mutants that lived, timed out or were not covered, and the
// entries of equivalent.txt that no mutant matched any more.
func (r *report) write(dir string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\ntests without a mutant: %s\n", r.summary(), r.baseline.Round(100*time.Millisecond))
	for _, s := range []status{lived, timedOut, notCovered, equivalent} {
		if len(r.keys[s]) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s:\n", s)
		for _, k := range r.keys[s] {
			fmt.Fprintf(&b, "  %s\n", k)
		}
	}
	if len(r.stale) > 0 {
		fmt.Fprintf(&b, "\nlisted in equivalent.txt, but no mutant lived there (remove the entry):\n")
		for _, k := range r.stale {
			fmt.Fprintf(&b, "  %s\n", k)
		}
	}
	name := strings.ReplaceAll(filepath.ToSlash(r.pkg), "/", "_") + ".txt"
	return os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644)
}

// equivalentSet is equivalent.txt: mutants that live because no test can
// tell them from the code (the same behaviour by another way), each with
// the reason.
type equivalentSet struct {
	why  map[string]string
	seen map[string]bool
}

// readEquivalents reads the file at path: each entry is a mutant's key,
// as the report prints it, on a line of its own, then its reason on the
// lines below, indented. Lines starting with # are comments.
func readEquivalents(path string) (equivalentSet, error) {
	set := equivalentSet{why: map[string]string{}, seen: map[string]bool{}}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return set, nil
	}
	if err != nil {
		return set, err
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	key, n := "", 0
	for s.Scan() {
		n++
		line := s.Text()
		switch {
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
		case line[0] == ' ' || line[0] == '\t':
			if key == "" {
				return set, fmt.Errorf("%s:%d: a reason without a mutant above it", path, n)
			}
			set.why[key] = strings.TrimSpace(set.why[key] + " " + strings.TrimSpace(line))
		default:
			if key != "" && set.why[key] == "" {
				return set, fmt.Errorf("%s: %q has no reason", path, key)
			}
			key = line
			set.why[key] = ""
		}
	}
	if key != "" && set.why[key] == "" {
		return set, fmt.Errorf("%s: %q has no reason", path, key)
	}
	return set, s.Err()
}

func (e equivalentSet) has(key string) bool { _, ok := e.why[key]; return ok }

func (e equivalentSet) used(key string) { e.seen[key] = true }

// unusedIn lists the entries of the package rel that no mutant matched.
func (e equivalentSet) unusedIn(rel string) []string {
	var out []string
	for k := range e.why {
		file, _, _ := strings.Cut(k, " ")
		if path.Dir(file) == filepath.ToSlash(rel) && !e.seen[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
