package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// status is what a package's tests made of a mutant.
type status string

const (
	killed     status = "killed"      // a test failed
	lived      status = "lived"       // every test passed
	timedOut   status = "timed out"   // the tests ran far longer than without it
	notViable  status = "not viable"  // it does not compile
	notCovered status = "not covered" // no test runs its line
	equivalent status = "equivalent"  // lived, and equivalent.txt says why it cannot be killed
)

// block is a stretch of source a test ran (a coverage profile's line with
// a count above zero).
type block struct{ startLine, startCol, endLine, endCol int }

func (b block) holds(line, col int) bool {
	after := line > b.startLine || line == b.startLine && col >= b.startCol
	before := line < b.endLine || line == b.endLine && col <= b.endCol
	return after && before
}

// coverage is, by file name (base name: a package's files share one
// directory), the blocks the tests ran.
type coverage map[string][]block

func (c coverage) covers(m mutant) bool {
	for _, b := range c[filepath.Base(m.file)] {
		if b.holds(m.covLine, m.covCol) {
			return true
		}
	}
	return false
}

// baseline runs the package's tests in dir once, with a coverage profile,
// and returns what they ran and how long they took. They must pass: a
// mutant is judged by whether it makes them fail.
func baseline(ctx context.Context, dir, work string) (coverage, time.Duration, error) {
	profile := filepath.Join(work, "cover.out")
	start := time.Now()
	out, err := goTest(ctx, dir, "-covermode=set", "-coverprofile="+profile)
	took := time.Since(start)
	if err != nil {
		return nil, 0, fmt.Errorf("the tests of %s fail without a mutant: %w\n%s", dir, err, out)
	}
	f, err := os.Open(profile)
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = f.Close() }()
	cov := coverage{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		// name.go:startLine.startCol,endLine.endCol statements count
		line := s.Text()
		if strings.HasPrefix(line, "mode:") {
			continue
		}
		name, rest, ok := strings.Cut(line, ":")
		fields := strings.Fields(rest)
		if !ok || len(fields) != 3 {
			return nil, 0, fmt.Errorf("%s: unreadable line %q", profile, line)
		}
		if fields[2] == "0" {
			continue
		}
		var b block
		if _, err := fmt.Sscanf(fields[0], "%d.%d,%d.%d", &b.startLine, &b.startCol, &b.endLine, &b.endCol); err != nil {
			return nil, 0, fmt.Errorf("%s: unreadable line %q: %w", profile, line, err)
		}
		base := filepath.Base(name)
		cov[base] = append(cov[base], b)
	}
	return cov, took, s.Err()
}

// judge runs the package's tests in dir with m made (through go test
// -overlay: the tree is never written), within limit.
func judge(ctx context.Context, dir, work string, m mutant, limit time.Duration) (status, error) {
	src, err := os.ReadFile(m.file)
	if err != nil {
		return "", err
	}
	changed := filepath.Join(work, "mutant-"+strconv.Itoa(m.off)+"-"+filepath.Base(m.file))
	if err := os.WriteFile(changed, m.apply(src), 0o600); err != nil {
		return "", err
	}
	defer func() { _ = os.Remove(changed) }()
	overlay := filepath.Join(work, "overlay.json")
	spec, err := json.Marshal(map[string]map[string]string{"Replace": {m.file: changed}})
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(overlay, spec, 0o600); err != nil {
		return "", err
	}
	// The tests of the mutant's own file first: most mutants they kill
	// are killed without running the rest (a package's slow tests, an
	// embedded etcd's, often sit in another file). One they do not kill
	// meets every test of the package.
	if first := testsOf(m.file); first != "" {
		s, err := attempt(ctx, dir, overlay, limit, "-run="+first)
		if err != nil || s != lived {
			return s, err
		}
	}
	return attempt(ctx, dir, overlay, limit)
}

// attempt runs the package's tests in dir with overlay, and args, within
// limit.
func attempt(ctx context.Context, dir, overlay string, limit time.Duration, args ...string) (status, error) {
	tctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	// -timeout too, past the limit: a test binary outlives go test when
	// mutate is killed.
	args = append([]string{"-failfast", "-timeout=" + (limit + 30*time.Second).String(), "-overlay=" + overlay}, args...)
	out, err := goTest(tctx, dir, args...)
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return "", ctx.Err()
	case tctx.Err() != nil:
		return timedOut, nil
	case err == nil:
		return lived, nil
	case bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")):
		return notViable, nil
	case errors.As(err, &exit):
		return killed, nil
	}
	return "", err
}

// testsOf returns the -run pattern of the tests in the test file beside
// file (name_test.go for name.go), "" when it has none.
func testsOf(file string) string {
	f, err := parser.ParseFile(token.NewFileSet(), strings.TrimSuffix(file, ".go")+"_test.go", nil, parser.SkipObjectResolution)
	if err != nil {
		return ""
	}
	var names []string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && fn.Name.Name != "TestMain" {
			names = append(names, fn.Name.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "^(" + strings.Join(names, "|") + ")$"
}

// goTest runs go test on the package in dir, without the test cache.
func goTest(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", append([]string{"test", "-count=1"}, append(args, ".")...)...)
	cmd.Dir = dir
	// The test binary and its children (envtest's control plane) go with
	// the deadline: the whole process group is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	return cmd.CombinedOutput()
}
