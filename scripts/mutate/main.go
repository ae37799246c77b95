// Command mutate is make mutate's mutation tester. For each package
// directory it is given, it lists the mutants of the package's code (a
// comparison's boundary moved or negated, && and || swapped, an arithmetic
// operator inverted, ++ and --, += and -= swapped, a ! removed), runs the
// package's tests once with a coverage profile, then once per mutant on a
// line those tests run, through go test -overlay, so that the tree is never
// written and go.work resolves the modules as for any test. A mutant the
// tests notice is killed; one they do not notice lived, unless
// scripts/mutate/equivalent.txt says why no test can (an equivalent
// mutant). It writes a report per package into -out and prints each
// package's figures: killed, lived, timed out, not viable, not covered,
// and the efficacy, killed / (killed + lived).
//
// usage: go run ./scripts/mutate [-out DIR] [-factor N] [-equivalent FILE] PACKAGE_DIR...
//
// It was written for this repository because gremlins v0.6.0 reads a
// module's name from the first line of its go.mod (ours start with a
// comment) and tests each mutant in a copy of the module alone, where the
// operators' replace lines to ../common lead nowhere.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	out := flag.String("out", "bin/mutate", "the directory the reports are written to")
	factor := flag.Int("factor", 3, "a mutant's tests time out after this many times the tests' time without it (plus 10s)")
	equivalents := flag.String("equivalent", "scripts/mutate/equivalent.txt", "the mutants known to be equivalent, and why")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: mutate [-out DIR] [-factor N] [-equivalent FILE] PACKAGE_DIR...")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *out, *factor, *equivalents, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out string, factor int, equivalents string, dirs []string) error {
	known, err := readEquivalents(equivalents)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(cwd, abs)
		if err != nil {
			return err
		}
		r, err := mutatePackage(ctx, abs, rel, factor, known)
		if err != nil {
			return err
		}
		if err := r.write(out); err != nil {
			return err
		}
		fmt.Println(r.summary())
	}
	return nil
}

// mutatePackage judges every mutant of the package in dir (rel, relative
// to where mutate runs, is how the report names its files).
func mutatePackage(ctx context.Context, dir, rel string, factor int, known equivalentSet) (*report, error) {
	ms, err := mutants(dir)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "mutate-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(work) }()
	start := time.Now()
	cov, took, err := baseline(ctx, dir, work)
	if err != nil {
		return nil, err
	}
	limit := time.Duration(factor)*took + 10*time.Second
	r := &report{pkg: rel, baseline: took}
	fmt.Fprintf(os.Stderr, "mutate: %s: %d mutants, tests take %s\n", rel, len(ms), took.Round(100*time.Millisecond))
	for i, m := range ms {
		s := notCovered
		if cov.covers(m) {
			if s, err = judge(ctx, dir, work, m, limit); err != nil {
				return nil, err
			}
		}
		key := keyOf(rel, m)
		if s == lived && known.has(key) {
			s = equivalent
			known.used(key)
		}
		r.add(s, key)
		if s != notCovered {
			fmt.Fprintf(os.Stderr, "mutate: %d/%d %s: %s\n", i+1, len(ms), s, key)
		}
	}
	r.took = time.Since(start)
	r.stale = known.unusedIn(rel)
	return r, nil
}
