package labs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/operator-workshops/workshop/operators/common/testenv"
	"github.com/operator-workshops/workshop/tests/internal/cluster"
)

// readLab parses the lab at path, named by its path from the repository
// root in errors.
func readLab(t *testing.T, root, path string) []step {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	name, err := filepath.Rel(root, path)
	if err != nil {
		name = path
	}
	steps, err := parse(name, f)
	if err != nil {
		t.Fatal(err)
	}
	return steps
}

// TestLabs runs every ```sh block of every lab in order, each lab on a
// local cluster of its own with a kubeconfig of its own, the blocks one
// after another in one bash, the learner's terminal (terminal.go): what a
// block does to the shell (cd, export) holds for the next, and a failing
// command, or a failing command anywhere in a pipeline, fails the lab. A
// block whose first line is "# in a second terminal" is started in a bash
// of its own, from the repository root, in the background, must still run
// after each block that follows, and is stopped with Ctrl-C (SIGINT) when
// the lab ends. A
// ```text block under a ```sh block is the output that block must print
// (markdown.go). A step's check, a ```sh block starting with "# check: ",
// runs before its step too, where it must fail (checkBefore). After the
// last block of the "## Check" section, the checker of make lab-check
// (check.go) runs the lab's checks on the same cluster and must say every
// one is done, and the checks of the lab's tasks run on their reference
// solutions and must all be done (runSolutions). A lab that holds the line
// "<!-- needs: real node -->" gets the local cluster's real node, as
// $E2E_REAL_NODE says (auto by default: the lab is skipped, saying why, on a
// machine that cannot run containers; required: it fails there). With
// E2E_PROVIDER=kind each lab runs on a kind cluster of its own instead, as
// its "On kind" line says (scripts/kind.sh).
func TestLabs(t *testing.T) {
	if testing.Short() {
		t.Skip("the labs need a cluster; -short runs the lab parser's tests only")
	}
	root, labs := labFiles(t)
	for _, lab := range labs {
		t.Run(strings.TrimSuffix(filepath.Base(lab), ".md"), func(t *testing.T) { runLab(t, root, lab) })
	}
}

// labFiles returns the repository root and its labs, README.md aside.
func labFiles(t *testing.T) (string, []string) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	all, err := filepath.Glob(filepath.Join(root, "labs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var labs []string
	for _, lab := range all {
		if filepath.Base(lab) != "README.md" {
			labs = append(labs, lab)
		}
	}
	if len(labs) == 0 {
		t.Fatal("no lab found in labs/")
	}
	return root, labs
}

func runLab(t *testing.T, root, lab string) {
	name := "lab-" + strings.TrimSuffix(filepath.Base(lab), ".md")
	file := filepath.Join("labs", filepath.Base(lab))
	// make lab-start, in a lab with tasks, copies their starters into a
	// directory of the test's own, never into a developer's
	// labs/tasks/work: LAB_WORK (tasks.go).
	// Of the provider's own too: make test runs labs on kind beside the
	// same labs on the local cluster.
	work := filepath.Join(defaultWork, "test-"+name)
	if os.Getenv("E2E_PROVIDER") == "kind" {
		work = filepath.Join(defaultWork, "test-kind-"+name)
	}
	env := append(learnerEnv(cluster.Env(root, filepath.Join(t.TempDir(), "kubeconfig"), filepath.Join(t.TempDir(), "kubectl-cache"))),
		"CLUSTER_NAME="+name, "LAB_WORK="+work)
	removeWork := func() {
		if err := os.RemoveAll(filepath.Join(root, work)); err != nil {
			t.Error(err)
		}
	}
	removeWork()
	t.Cleanup(removeWork)
	text, err := os.ReadFile(lab)
	if err != nil {
		t.Fatal(err)
	}
	steps := readLab(t, root, lab)
	if err := startsCluster(file, steps); err != nil {
		t.Fatal(err)
	}
	// The lab's commands name the learner's folder, labs/tasks/work/; the
	// test's is work.
	workCommands := strings.NewReplacer(defaultWork+"/", work+"/")
	for i := range steps {
		steps[i].script = workCommands.Replace(steps[i].script)
	}
	kind := os.Getenv("E2E_PROVIDER") == "kind"
	kindCommands := strings.NewReplacer() // none but on kind
	if kind {
		if kindCommands, err = kindReplacer(file, text); err != nil {
			t.Fatal(err)
		}
		for i := range steps {
			steps[i].script = kindCommands.Replace(steps[i].script)
		}
	}
	realNode := bytes.Contains(text, []byte(needsRealNode))
	if realNode {
		mode := os.Getenv("E2E_REAL_NODE")
		if mode == "" {
			mode = "auto"
		}
		env = append(env, "CLUSTER_REAL_NODE="+mode) // the last one counts
	}
	command := func(ctx context.Context, script string) *exec.Cmd {
		// pipefail: `cmd | grep` fails when cmd fails, so an error can no
		// longer hide behind a grep that finds something (README.md says
		// how a lab shows an expected failure instead).
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
		cmd.Dir, cmd.Env = root, env
		return cmd
	}
	downCommand := "scripts/cluster.sh down " + name
	if kind {
		downCommand = "scripts/kind.sh down " + name
	}
	down := func() {
		if out, err := command(context.Background(), downCommand).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", downCommand, err, out)
		}
	}
	// A run killed before its cleanup leaves its cluster behind: the lab
	// starts from nothing, as a learner's first try does, not from what an
	// earlier run left (a Subscription already upgraded, say).
	down()
	t.Cleanup(down)

	// After the lab's own Check blocks pass, make lab-check must say every
	// check is done on the same cluster: the checker learners run is run
	// here too, on every lab.
	cs, err := checks(file, bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := labTasks(file, text)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cs {
		cs[i].script = kindCommands.Replace(workCommands.Replace(cs[i].script))
	}
	lastCheck := -1
	for i, s := range steps {
		if s.section == checkSection {
			lastCheck = i
		}
	}

	// The host lock (another lab's or the README's steps use this
	// machine's ports and /tmp files) is taken once the first block has
	// started the cluster, and released before the cluster is deleted
	// (t's cleanups run last first): another lab's steps go on while this
	// one's cluster starts and stops.
	var held bool
	holdHost := func() {
		if !held {
			cluster.HoldHost(t)
			held = true
		}
	}
	// The first terminal, where the learner pastes every block not meant
	// for a second one.
	term, err := openTerminal(root, env, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(term.close)
	// The lab's work starts after its first block, which starts its
	// cluster, or with it in a lab whose work is its cluster.
	workStarts := 1
	if bytes.Contains(text, []byte(workIsCluster)) {
		workStarts = 0
	}
	var second []*background
	for i, s := range steps {
		if i > 0 {
			holdHost()
		}
		if s.background {
			second = append(second, startBackground(t, file, s, command(context.Background(), s.script)))
			continue
		}
		if i == workStarts {
			checkerBefore(t, file, root, env, cs)
		}
		if s.check == "" {
			checkBefore(t, file, steps, i, term)
		}
		ctx, cancel := context.WithTimeout(context.Background(), blockLimit(s.script))
		start := time.Now()
		out, err := term.run(ctx, s.script)
		cancel()
		t.Logf("%s:%d (%s):\n%s%s", file, s.line, time.Since(start).Round(time.Millisecond), s.script, out)
		// A second terminal that died is more likely the cause of a
		// failure than its symptom, so it is reported first.
		for _, b := range second {
			b.checkRunning(t)
		}
		if err != nil {
			failWithCluster(t, command, "%s:%d: the block failed (%v); its commands and their whole output are logged above, and it ended with:\n%s", file, s.line, err, lastLines(out, 15))
		}
		if s.wantLine != 0 && !matches(s.want, string(out)) {
			failWithCluster(t, command, "%s:%d: the block's output is not what the ```text block of line %d shows (its lines in order, \"...\" for lines or text left out, runs of spaces as one):\n--- shown:\n%s\n--- printed:\n%s\n--- %s",
				file, s.line, s.wantLine, strings.Join(s.want, "\n"), out, partsAt(s.want, string(out)))
		}
		if i == lastCheck {
			holdHost()
			runChecker(t, file, root, env, cs)
			runSolutions(t, root, env, tasks)
		}
		if realNode && i == 0 {
			// The first block starts the cluster: has it the real node?
			// (NodeKinds holds no single quote.)
			nodes, err := command(context.Background(), "kubectl get nodes -o '"+cluster.NodeKinds+"'").Output()
			if err != nil {
				t.Fatal(err)
			}
			if !cluster.HasRealNode(string(nodes)) {
				t.Skip("needs a real node, and the cluster has fake nodes only: this machine cannot run containers (scripts/cluster.sh up says why; E2E_REAL_NODE=required makes this a failure)")
			}
		}
	}
}

// blockLimit is how long a block may run before the runner calls it
// hung. A learner waits for a block as long as it takes; the limit only
// ends one that never would: ten minutes, or buildLimit for a block that
// builds.
func blockLimit(script string) time.Duration {
	if builds(script) {
		return buildLimit
	}
	return 10 * time.Minute
}

// clusterState shows, after a block failed, what the cluster's pods and
// their conditions look like and what happened to them last: a kubelet's
// Event (a failed probe, a restart) often says why a pod a block shows was
// not as the lab says. It is best effort: the cluster may be down.
const clusterState = `set +e
kubectl get pods -A -o wide
kubectl get pods -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}:{range .status.conditions[*]} {.type}={.status}@{.lastTransitionTime}{end}{"\n"}{end}'
kubectl get events -A --sort-by=.metadata.creationTimestamp | tail -n 40`

// failWithCluster logs the cluster's state, then fails the test with the
// message format: the message comes last, where make test's summary of a
// failed test shows it (scripts/gotest.sh keeps the end of its log), and
// the cluster's state, which can run to a hundred lines, does not push it
// out of there.
func failWithCluster(t *testing.T, command func(context.Context, string) *exec.Cmd, format string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := command(ctx, clusterState).CombinedOutput()
	if err != nil {
		out = fmt.Appendf(out, "(%v)\n", err)
	}
	t.Logf("the cluster when the block failed:\n%s", out)
	t.Fatalf(format, args...)
}

// lastLines returns the last n lines of out.
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// learnerEnv is env without what make passes to the commands it runs
// (make test runs the labs): a learner types the labs' commands in a shell,
// where a make says nothing of the directories it enters.
func learnerEnv(env []string) []string {
	return slices.DeleteFunc(env, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "MAKELEVEL" || name == "MAKEFLAGS" || name == "MFLAGS" || name == "MAKEOVERRIDES"
	})
}

// checkBefore runs the checks of steps[i] (the ```sh blocks that follow it
// and start with stepCheck) before it, and fails the test when one passes:
// a check that holds before its step is done would hold without the step's
// work. After the step, the runner runs them as any block, and they must
// pass.
func checkBefore(t *testing.T, file string, steps []step, i int, term *terminal) {
	t.Helper()
	for _, c := range steps[i+1:] {
		if c.check == "" {
			return
		}
		// A check reads and answers at once: it waits for nothing.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := term.try(ctx, c.script)
		cancel()
		if err == nil {
			t.Fatalf("%s:%d: the check %q passes before its step (line %d) ran, so it would pass without the step's work: make it test what the step does\n%s", file, c.line, c.check, steps[i].line, out)
		}
		t.Logf("%s:%d: before its step (line %d), the check %q fails, as it must (%v):\n%s", file, c.line, steps[i].line, c.check, err, out)
	}
}

// checkerBefore runs make lab-check's checker on the lab's cluster once its
// first block has started it, before the lab's work, as a learner who runs
// make lab-check first: every check must be missing, or it would pass
// without the work (a file an earlier run left in /tmp, a check that
// reads a name the cluster always has). A lab whose work is its cluster
// (workIsCluster) is checked before its first block.
func checkerBefore(t *testing.T, file, root string, env []string, cs []check) {
	t.Helper()
	var out strings.Builder
	k := &checker{file: file, dir: root, env: env, out: &out, timeout: time.Minute}
	var passed []string
	for _, c := range cs {
		if k.run(context.Background(), c) {
			passed = append(passed, fmt.Sprintf("%s:%d %q", file, c.line, c.name))
		}
	}
	t.Logf("before the lab's work, make lab-check says:\n%s", out.String())
	if len(passed) > 0 {
		t.Fatalf("before the lab's work, these checks pass already, so they would pass without it: make each test what the lab does\n%s", strings.Join(passed, "\n"))
	}
}

// runChecker runs make lab-check's checker on the lab's cluster, whose
// Check blocks just passed, and fails unless it says every check is done.
func runChecker(t *testing.T, file, root string, env []string, cs []check) {
	t.Helper()
	n, err := strconv.Atoi(strings.SplitN(filepath.Base(file), "-", 2)[0])
	if err != nil {
		t.Fatalf("%s: a lab's file name starts with its number: %v", file, err)
	}
	var out strings.Builder
	k := &checker{file: file, dir: root, env: env, out: &out, timeout: 5 * time.Minute}
	for _, c := range cs {
		k.run(context.Background(), c)
	}
	out.WriteString(k.summary(n, len(cs)) + "\n")
	t.Logf("make lab-check LAB=%d says:\n%s", n, out.String())
	if k.done != len(cs) {
		t.Fatalf("%s: make lab-check finds checks missing on the cluster whose Check blocks just passed (see above)", file)
	}
}

// runSolutions runs the checks of make lab-check on the reference solution
// of each of tasks, on the lab's cluster, and fails unless every check is
// done. (The lab itself runs make lab-check on the starter, and shows what
// it must say: each task's checks missing.)
func runSolutions(t *testing.T, root string, env []string, tasks []string) {
	t.Helper()
	var out strings.Builder
	runs := runTasks(context.Background(), root, env, &out, tasks, func(task string) string {
		return filepath.Join("labs", "tasks", task, "solution")
	})
	for i, r := range runs {
		out.WriteString(r.summary(tasks[i]) + "\n")
		if !r.allDone() {
			t.Errorf("task %s: the reference solution fails checks of make lab-check (see below)", tasks[i])
		}
	}
	t.Logf("make lab-check's task checks on the reference solutions say:\n%s", out.String())
}

// A background is a block run in a second terminal.
type background struct {
	file     string
	step     step
	cmd      *exec.Cmd
	logs     *strings.Builder // read only once cmd was waited for
	reported bool
}

// startBackground runs cmd in a process group of its own, like a second
// terminal, and stops it as Ctrl-C would when the test ends.
func startBackground(t *testing.T, file string, s step, cmd *exec.Cmd) *background {
	t.Helper()
	b := &background{file: file, step: s, cmd: cmd, logs: &strings.Builder{}}
	cmd.Stdout, cmd.Stderr = b.logs, b.logs
	if err := cluster.StartGroup(cmd); err != nil {
		t.Fatalf("%s:%d: %v", file, s.line, err)
	}
	t.Cleanup(func() {
		cluster.StopGroup(cmd)
		if t.Failed() && !b.reported {
			t.Logf("%s:%d, in a second terminal, printed:\n%s", file, s.line, b.logs)
		}
	})
	return b
}

// checkRunning fails the test when the block has ended: a second terminal
// runs until the lab ends (an operator, kubectl proxy), and a lab that goes
// on without it would fail later with a symptom, or pass for a wrong reason.
func (b *background) checkRunning(t *testing.T) {
	t.Helper()
	if !exited(b.cmd.Process.Pid) {
		return
	}
	// StopGroup waits for it, and stops what it started that still runs.
	cluster.StopGroup(b.cmd)
	status := "exited"
	if b.cmd.ProcessState != nil {
		status = b.cmd.ProcessState.String()
	}
	b.reported = true
	t.Fatalf("%s:%d: the block in a second terminal ended (%s) before the lab did; it printed:\n%s", b.file, b.step.line, status, b.logs)
}

// exited reports whether the process pid, a child of this one, has ended.
// It reads /proc (the local cluster runs on Linux only) instead of waiting
// for the process, which would take its exit from cluster.StopGroup: an
// ended child stays a zombie until it is waited for.
func exited(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command's name, in parentheses, which may hold
	// any character.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	state := stat[i+2]
	return state == 'Z' || state == 'X'
}

// startsCluster fails unless the lab's first block starts its cluster
// (make cluster-up, and what the lab needs on it before it begins: OLM,
// the images) and uses nothing of this machine that another lab's steps
// use too: runLab runs it before it takes the host lock. (Clusters started
// side by side are safe: scripts/cluster.sh creates one at a time, under a
// lock of its own, and kind picks its API server's port itself.)
func startsCluster(file string, steps []step) error {
	if len(steps) == 0 || !strings.Contains(steps[0].script, "make cluster-up") {
		return fmt.Errorf("%s: the lab's first block must start its cluster (make cluster-up)", file)
	}
	first := steps[0]
	if first.background {
		return fmt.Errorf("%s:%d: the lab's first block starts its cluster before the host lock is taken, so it must not run in a second terminal", file, first.line)
	}
	for _, shared := range []string{"/tmp/", "localhost", "127.0.0.1", "go run", "make run"} {
		if strings.Contains(first.script, shared) {
			return fmt.Errorf("%s:%d: the lab's first block starts its cluster before the host lock is taken, so it must not use what another lab's steps use (%q)", file, first.line, shared)
		}
	}
	return nil
}
