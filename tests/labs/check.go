package labs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A checker runs the checks of a lab (markdown.go's checks) for make
// lab-check, and says in plain words which are done and which are missing.
// It knows nothing of clusters: TestCheck (check_test.go) gives it the
// environment that points kubectl at the learner's cluster and calls run
// from an e2e-framework Assess, and TestChecker runs it on a fake lab.
type checker struct {
	file    string        // the lab, as its lines are named: labs/07-gordon.md
	dir     string        // where the checks run: the repository root
	env     []string      // their environment
	out     io.Writer     // where the lines go
	timeout time.Duration // for each check (buildLimit for one that builds)
	done    int           // checks run and done so far
}

// failedAt is prepended to each check, so that a missing check names the
// line that failed: a `test` or a `grep` prints nothing of its own. It says
// the line's number in the script, which is one more than in the check
// (it is line 1 itself); run turns it into the lab's line and its text.
const (
	failedAt       = `trap 'echo "` + failedAtMarker + `$LINENO" >&2' ERR` + "\n"
	failedAtMarker = "lab-check: failed at line "
)

// builds reports whether script builds something the first time it runs:
// the cluster's tools and images (make cluster-up, kind-up, olm-up,
// scripts/build-tools.sh: 12 to 18 minutes on a fresh 2-core machine, as
// the lab texts say) or Go code (go build, test, vet or run, and make
// lab-check, which builds the task's code: lab 10's go test of a new
// kubebuilder project took 9m39s with empty Go caches while the machine
// ran other work). Seconds after that first time.
func builds(script string) bool {
	for _, b := range []string{"make cluster-up", "make kind-up", "make olm-up", "scripts/build-tools.sh",
		"go build", "go test", "go vet", "go run", "make lab-check"} {
		if strings.Contains(script, b) {
			return true
		}
	}
	return false
}

// buildLimit is how long a block or a check that builds may run.
const buildLimit = 40 * time.Minute

// run runs c's commands from k.dir with `bash -euo pipefail`, as the test
// runner runs the lab's blocks, and writes "done: <name>" when they succeed,
// else "missing: <name>" and what they printed, indented. It reports
// whether the check is done.
func (k *checker) run(ctx context.Context, c check) bool {
	limit := k.timeout
	if builds(c.script) {
		limit = max(limit, buildLimit)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", failedAt+c.script)
	cmd.Dir, cmd.Env = k.dir, k.env
	// A check that hangs is stopped with everything it started (kubectl
	// under a pipe holds the output open otherwise).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err == nil {
		k.done++
		_, _ = fmt.Fprintf(k.out, "done: %s\n", c.name)
		return true
	}
	text := k.failedLine(c, strings.TrimRight(string(out), "\n"))
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		text += fmt.Sprintf("\n(stopped after %s: this check should take seconds)", limit)
	case text == "":
		text = fmt.Sprintf("(%v)", err) // bash did not start, or printed nothing
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimLeft(text, "\n"), "\n") {
		lines = append(lines, "    "+l)
	}
	_, _ = fmt.Fprintf(k.out, "missing: %s\n%s\n", c.name, strings.Join(lines, "\n"))
	return false
}

// failedLine replaces failedAt's line at the end of out, what c printed,
// with the lab's line that failed: its number in the lab and its text.
func (k *checker) failedLine(c check, out string) string {
	i := strings.LastIndex(out, failedAtMarker)
	if i < 0 || (i > 0 && out[i-1] != '\n') {
		return out
	}
	n, err := strconv.Atoi(out[i+len(failedAtMarker):])
	lines := strings.Split(c.script, "\n")
	if err != nil || n < 2 || n-2 >= len(lines) {
		return out
	}
	return fmt.Sprintf("%s(this failed: %s:%d: %s)", out[:i], k.file, c.line+n-1, strings.TrimSpace(lines[n-2]))
}

// summary is the last line make lab-check prints.
func (k *checker) summary(lab, total int) string {
	return fmt.Sprintf("lab %d: %d of %d checks done", lab, k.done, total)
}

// findLab returns the number and the file of the lab that arg (make
// lab-check's LAB: 7 or 07) names, among labs, the files labs/NN-*.md.
func findLab(labs []string, arg string) (int, string, error) {
	byNumber := map[int]string{}
	var numbers []int
	for _, l := range labs {
		prefix, _, _ := strings.Cut(filepath.Base(l), "-")
		if n, err := strconv.Atoi(prefix); err == nil {
			byNumber[n] = l
			numbers = append(numbers, n)
		}
	}
	sort.Ints(numbers)
	var known string
	for i, n := range numbers {
		if i > 0 {
			known += ", "
		}
		known += strconv.Itoa(n)
	}
	n, err := strconv.Atoi(strings.TrimSpace(arg))
	if err != nil || n < 0 {
		return 0, "", fmt.Errorf("LAB=%s is not a lab's number: make lab-check LAB=7 checks lab 7; the labs are %s (labs/README.md)", arg, known)
	}
	lab, ok := byNumber[n]
	if !ok {
		return 0, "", fmt.Errorf("LAB=%s: there is no lab %d; the labs are %s (labs/README.md)", arg, n, known)
	}
	return n, lab, nil
}
