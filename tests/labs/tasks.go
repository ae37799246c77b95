package labs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/operator-workshops/workshop/tests/internal/cluster"
)

// A lab's tasks are the workshop's exercises its learner solves by writing
// code or YAML: the lab names them in a line "<!-- tasks: gordon -->", each
// the name of a directory labs/tasks/<task> holding a starter and a
// reference solution. make lab-start copies the starter into
// labs/tasks/work/<task> ($LAB_WORK/<task>), the learner's; make lab-check
// runs the task's checks on that copy, after the lab's Check section.
const tasksMarker = "<!-- tasks: "

// taskSuites are the checks of each task, by its directory's name.
var taskSuites = map[string]func(context.Context, *taskRun){
	"gordon":          gordonTasks,
	"mysql-crd":       mysqlCRDTasks,
	"mysql":           mysqlTasks,
	"sample":          sampleTasks,
	"kustomize-patch": kustomizePatchTasks,
	"kubebuilder":     kubebuilderTasks,
}

// labTasks returns the tasks lab names.
func labTasks(file string, lab []byte) ([]string, error) {
	var tasks []string
	for _, line := range strings.Split(string(lab), "\n") {
		rest, ok := strings.CutPrefix(line, tasksMarker)
		if !ok {
			continue
		}
		list, ok := strings.CutSuffix(rest, " -->")
		if !ok {
			return nil, fmt.Errorf("%s: %q: a tasks line is %sgordon -->", file, line, tasksMarker)
		}
		for _, t := range strings.Fields(list) {
			if taskSuites[t] == nil {
				return nil, fmt.Errorf("%s: task %q has no checks in tests/labs/tasks.go", file, t)
			}
			tasks = append(tasks, t)
		}
	}
	return tasks, nil
}

// workDir is where the learner's copies of the starters are, from the
// repository root: $LAB_WORK, else labs/tasks/work (inside the tasks
// module, so that `go run ./labs/tasks/work/gordon` builds).
func workDir() string {
	if w := os.Getenv("LAB_WORK"); w != "" {
		return w
	}
	return defaultWork
}

// defaultWork is the learners' folder, as the labs name it.
const defaultWork = "labs/tasks/work"

// A taskRun runs the checks of one task on one copy of its code (the
// learner's, the starter or the solution), against the cluster env points
// kubectl at, and writes a line per check as the checker does: "done: ..."
// or "missing: ..." with what went wrong, indented.
type taskRun struct {
	root    string    // where commands run: the repository root
	code    string    // the task's code, from root: labs/tasks/work/gordon
	env     []string  // the commands' environment
	out     io.Writer // where the lines go
	results []taskResult
	// blocked says why the checks left are not run: a check they build on
	// is missing (the code does not build, say).
	blocked string
}

// A taskResult is one check's outcome. A check whose name starts with
// "task" fails on the starter (the task is to make it pass; each lab shows
// make lab-check saying so); the others hold on the starter already (they
// check that the task's work kept what worked).
type taskResult struct {
	name string
	done bool
}

// check runs f, unless an earlier check blocks it, and writes its line.
func (r *taskRun) check(name string, f func() error) bool {
	var err error
	if r.blocked != "" {
		err = fmt.Errorf("not checked: %s", r.blocked)
	} else {
		err = f()
	}
	r.results = append(r.results, taskResult{name: name, done: err == nil})
	if err == nil {
		_, _ = fmt.Fprintf(r.out, "done: %s\n", name)
		return true
	}
	_, _ = fmt.Fprintf(r.out, "missing: %s\n    %s\n", name, strings.ReplaceAll(strings.TrimRight(err.Error(), "\n"), "\n", "\n    "))
	return false
}

// gate is check for a check the later ones build on: when it is missing,
// they are not run, and say why (the first reason given stands).
func (r *taskRun) gate(name, why string, f func() error) bool {
	if r.check(name, f) {
		return true
	}
	if r.blocked == "" {
		r.blocked = why
	}
	return false
}

// done counts the checks done.
func (r *taskRun) done() int {
	n := 0
	for _, res := range r.results {
		if res.done {
			n++
		}
	}
	return n
}

// allDone reports whether every check was done.
func (r *taskRun) allDone() bool { return r.done() == len(r.results) }

// summary is the line make lab-check prints after the task's checks.
func (r *taskRun) summary(task string) string {
	return fmt.Sprintf("task %s (%s): %d of %d checks done", task, r.code, r.done(), len(r.results))
}

// command is name with args, run from the repository root in r's
// environment.
func (r *taskRun) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = r.root, r.env
	return cmd
}

// kubectl runs kubectl with args, stdin on its standard input when not
// empty, and returns what it printed; its error holds the output too.
func (r *taskRun) kubectl(ctx context.Context, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := r.command(ctx, "kubectl", args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, strings.TrimRight(string(out), "\n"))
	}
	return string(out), nil
}

// refused returns nil when kubectl, given args and stdin, fails and says
// want; an error saying what happened otherwise.
func (r *taskRun) refused(ctx context.Context, stdin, want string, args ...string) error {
	out, err := r.kubectl(ctx, stdin, args...)
	switch {
	case err == nil:
		return fmt.Errorf("the API server accepted it:\n%s", strings.TrimRight(out, "\n"))
	case !strings.Contains(out, want):
		return fmt.Errorf("refused, but without saying %q:\n%s", want, strings.TrimRight(out, "\n"))
	}
	return nil
}

// until calls f until it returns nil, and returns its last error when limit
// has passed first. It calls again after untilFirst, then waits half as long
// again each time, up to 3 seconds: a check that passes soon is seen soon,
// and one that never passes (a starter's) sends about 30 kubectl commands in
// 90 seconds where a call every half second sent a hundred, each a process
// that costs the machine a sixth of a CPU second before any request.
func until(ctx context.Context, limit time.Duration, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for wait := untilFirst; ; wait = untilNext(wait) {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("after %s: %w", limit, err)
		case <-time.After(wait):
		}
	}
}

// untilFirst is until's first wait; untilNext is how long it waits after
// having waited wait.
const untilFirst = 500 * time.Millisecond

func untilNext(wait time.Duration) time.Duration {
	return min(wait*3/2, 3*time.Second)
}

// runTasks runs the checks of each of tasks on their code, code(task), and
// returns the runs.
func runTasks(ctx context.Context, root string, env []string, out io.Writer, tasks []string, code func(string) string) []*taskRun {
	var runs []*taskRun
	for _, t := range tasks {
		r := &taskRun{root: root, code: code(t), env: env, out: out}
		_, _ = fmt.Fprintf(out, "task %s, your code in %s:\n", t, r.code)
		if _, err := os.Stat(filepath.Join(root, r.code)); errors.Is(err, os.ErrNotExist) {
			r.check("your copy of the task's code", func() error {
				return fmt.Errorf("%s does not exist: make lab-start LAB=N copies the task's starter there, for you to write the task in", r.code)
			})
		} else {
			taskSuites[t](ctx, r)
		}
		runs = append(runs, r)
	}
	return runs
}

// An operatorRun is the learner's operator, built from r.code and run by
// the checks of a task, as the lab runs it, on an object in a namespace of
// the check's own.
type operatorRun struct {
	r   *taskRun
	ns  string
	log string    // its output, from the repository root (fromRoot)
	tmp string    // its binary's directory
	cmd *exec.Cmd // nil once stopped
	ran bool      // it was started
}

// fromRoot is path, a path from the repository root root or an absolute
// one, as this process may open it.
func fromRoot(root, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(root, path)
}

// createAll creates the file at path, and its directory first.
func createAll(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.Create(path)
}

// An operatorBuild says how to build and run the learner's operator.
type operatorBuild struct {
	dir string   // where go build runs, from the repository root
	pkg string   // what it builds, from dir
	env []string // more environment, for go build and the operator
	// runEnv is more environment for the operator alone.
	runEnv []string
	args   []string // the operator's, besides --health-probe-bind-address=0
}

// runOperator builds the learner's operator as b says, makes namespace ns
// anew with object (what: its name in plain words) in it, checks that
// nothing acts on it for three seconds (idle returns an error when something
// did), and starts the operator. Each of these is a check; one that fails
// blocks the checks after it.
func (r *taskRun) runOperator(ctx context.Context, ns, what, object string, idle func() error, b operatorBuild) *operatorRun {
	// The log goes beside the learner's code, in a folder of the learner's
	// own: a fixed name in /tmp is another user's once anyone else has run
	// the check on this machine.
	op := &operatorRun{r: r, ns: ns, log: filepath.Join(workDir(), ns+"-operator.log")}
	var err error
	if op.tmp, err = os.MkdirTemp("", ns+"-"); err != nil {
		r.blocked = err.Error()
	}
	bin := filepath.Join(op.tmp, "operator")
	build := "go build " + b.pkg
	if b.dir != "." {
		build = "in " + b.dir + ": " + strings.Join(append(b.env, build), " ")
	}
	env := append(slices.Clone(r.env), b.env...)
	r.gate("your operator builds: "+build, "your operator does not build", func() error {
		cmd := r.command(ctx, "go", "build", "-o", bin, b.pkg)
		cmd.Dir, cmd.Env = filepath.Join(r.root, b.dir), env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w\n%s", err, strings.TrimRight(string(out), "\n"))
		}
		return nil
	})
	r.gate("namespace "+ns+" is new, and holds "+what+" no one else handles (stop the lab's operator, and yours: the check runs your code itself)", "the check's namespace is not ready", func() error {
		if err := r.freshNamespace(ctx, ns); err != nil {
			return err
		}
		if _, err := r.kubectl(ctx, object, "apply", "-n", ns, "-f", "-"); err != nil {
			return err
		}
		// Nothing may act on the object before the learner's operator
		// runs, or what the checks see would not be its work.
		time.Sleep(3 * time.Second)
		if err := idle(); err != nil {
			return fmt.Errorf("%w in %s before the check started your operator: another operator handles it (the lab's, or yours in another terminal); stop it (Ctrl-C) and check again", err, ns)
		}
		return nil
	})
	if r.blocked != "" {
		return op
	}
	f, err := createAll(fromRoot(r.root, op.log))
	if err != nil {
		r.blocked = err.Error()
		return op
	}
	defer func() { _ = f.Close() }() // the child has its own descriptor
	// No health endpoint: its port may be taken by the lab's operator, and
	// the check does not ask it.
	cmd := exec.Command(bin, append(slices.Clone(b.args), "--health-probe-bind-address=0")...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = r.root, append(env, b.runEnv...), f, f
	if err := cluster.StartGroup(cmd); err != nil {
		r.blocked = fmt.Sprintf("start your operator: %v", err)
		return op
	}
	op.cmd, op.ran = cmd, true
	return op
}

// stop stops the operator, as Ctrl-C would; its log is whole afterwards.
func (op *operatorRun) stop() {
	if op.cmd != nil {
		cluster.StopGroup(op.cmd)
		op.cmd = nil
	}
}

// close stops the operator and deletes its binary and the check's
// namespace.
func (op *operatorRun) close() {
	op.stop()
	_ = os.RemoveAll(op.tmp)
	op.r.dropNamespace(op.ns)
}

// freshNamespace makes namespace ns anew: it deletes the one a previous
// check left, waiting for it to go, and creates it.
func (r *taskRun) freshNamespace(ctx context.Context, ns string) error {
	if _, err := r.kubectl(ctx, "", "delete", "namespace", ns, "--ignore-not-found", "--timeout=2m"); err != nil {
		return err
	}
	_, err := r.kubectl(ctx, "", "create", "namespace", ns)
	return err
}

// dropNamespace deletes namespace ns when a check is done with it, without
// waiting: the next freshNamespace waits.
func (r *taskRun) dropNamespace(ns string) {
	_, _ = r.kubectl(context.Background(), "", "delete", "namespace", ns, "--ignore-not-found", "--wait=false")
}
