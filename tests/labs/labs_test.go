// Package labs runs the labs in labs/*.md as a learner would: every ```sh
// block in order, each on a local cluster of its own with a kubeconfig of its
// own. A block whose first line is "# in a second terminal" is started in the
// background and stopped with Ctrl-C (SIGINT) when the lab ends. A lab that
// holds the line "<!-- needs: real node -->" gets the local cluster's real
// node, as $E2E_REAL_NODE says (auto by default: the lab is skipped, saying
// why, on a machine that cannot run containers; required: it fails there).
package labs

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/operator-workshops/workshop/operators/common/testenv"
	"github.com/operator-workshops/workshop/tests/internal/cluster"
)

const (
	secondTerminal = "# in a second terminal"
	needsRealNode  = "<!-- needs: real node -->"
)

// blocks returns the shell blocks of a Markdown file, in order.
func blocks(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var out []string
	var cur *strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```sh":
			cur = &strings.Builder{}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("%s: a ```sh block is not closed", path)
	}
	return out
}

func TestLabs(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	labs, err := filepath.Glob(filepath.Join(root, "labs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, lab := range labs {
		if filepath.Base(lab) == "README.md" {
			continue
		}
		ran++
		t.Run(strings.TrimSuffix(filepath.Base(lab), ".md"), func(t *testing.T) { runLab(t, root, lab) })
	}
	if ran == 0 {
		t.Fatal("no lab found in labs/")
	}
}

func runLab(t *testing.T, root, lab string) {
	name := "lab-" + strings.TrimSuffix(filepath.Base(lab), ".md")
	env := append(cluster.Env(root, filepath.Join(t.TempDir(), "kubeconfig"), filepath.Join(t.TempDir(), "kubectl-cache")),
		"CLUSTER_NAME="+name)
	text, err := os.ReadFile(lab)
	if err != nil {
		t.Fatal(err)
	}
	realNode := strings.Contains(string(text), needsRealNode)
	if realNode {
		mode := os.Getenv("E2E_REAL_NODE")
		if mode == "" {
			mode = "auto"
		}
		env = append(env, "CLUSTER_REAL_NODE="+mode) // the last one counts
	}
	command := func(ctx context.Context, script string) *exec.Cmd {
		// -e: a failing command fails the block; no pipefail, so that
		// `cmd | grep` is judged by what grep finds, as a reader reads it.
		cmd := exec.CommandContext(ctx, "bash", "-eu", "-c", script)
		cmd.Dir, cmd.Env = root, env
		return cmd
	}
	t.Cleanup(func() {
		down := command(context.Background(), "scripts/cluster.sh down "+name)
		if out, err := down.CombinedOutput(); err != nil {
			t.Errorf("scripts/cluster.sh down %s: %v\n%s", name, err, out)
		}
	})

	for i, block := range blocks(t, lab) {
		if strings.HasPrefix(block, secondTerminal) {
			startBackground(t, command(context.Background(), block))
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		start := time.Now()
		out, err := command(ctx, block).CombinedOutput()
		cancel()
		t.Logf("block %d (%s):\n%s%s", i+1, time.Since(start).Round(time.Millisecond), block, out)
		if err != nil {
			t.Fatalf("block %d of %s failed: %v", i+1, filepath.Base(lab), err)
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

// startBackground runs cmd in a process group of its own, like a second
// terminal, and stops it as Ctrl-C would when the test ends.
func startBackground(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	logs := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cluster.StartGroup(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cluster.StopGroup(cmd)
		if t.Failed() {
			t.Logf("the second terminal printed:\n%s", logs)
		}
	})
}
