package labs

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/operator-workshops/workshop/tests/internal/cluster"
)

// A terminal is the learner's terminal: one bash that runs a lab's blocks
// one after another, so that what a block does to the shell (cd, export, a
// variable) holds for the blocks after it, as it does for a learner who
// pastes them. Each block runs with errexit, nounset and pipefail, which a
// learner does not set: a command that fails stops the block (and the
// terminal, which the lab cannot go on without) instead of leaving a later
// block to fail with a symptom.
type terminal struct {
	cmd    *exec.Cmd
	input  io.WriteCloser
	dir    string // the blocks' scripts
	done   string // the line that ends each block's output; no lab prints it
	blocks int

	mu     sync.Mutex
	output []byte        // what bash printed and send has not taken yet
	more   chan struct{} // signalled when output grows

	exited chan struct{} // closed when bash has ended
	exit   error         // how, once exited is closed
}

// openTerminal starts bash in dir with env, as a learner opens a terminal
// there.
func openTerminal(dir string, env []string, scripts string) (*terminal, error) {
	nonce := make([]byte, 8)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	t := &terminal{dir: scripts, done: fmt.Sprintf("lab-block-done-%x", nonce),
		more: make(chan struct{}, 1), exited: make(chan struct{})}
	t.cmd = exec.Command("bash", "--noprofile", "--norc")
	t.cmd.Dir, t.cmd.Env = dir, env
	var err error
	if t.input, err = t.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	// One pipe for both streams: what a block prints comes in the order
	// it printed it, and ends with the line done, which follows it.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	t.cmd.Stdout, t.cmd.Stderr = w, w
	if err := cluster.StartGroup(t.cmd); err != nil {
		_ = r.Close()
		_ = w.Close()
		return nil, err
	}
	_ = w.Close()
	go t.read(r)
	// What a block started in the background (cmd &) may hold the output
	// open after bash ended: bash's end is watched for itself.
	go func() { t.exit = t.cmd.Wait(); close(t.exited) }()
	return t, nil
}

// read collects bash's output until it ends.
func (t *terminal) read(r *os.File) {
	defer func() { _ = r.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		t.mu.Lock()
		t.output = append(t.output, buf[:n]...)
		t.mu.Unlock()
		select {
		case t.more <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// run runs script in the terminal, within ctx, and returns what it printed.
// A block that fails ends the terminal: bash exits, as errexit asks.
func (t *terminal) run(ctx context.Context, script string) ([]byte, error) {
	return t.send(ctx, script, "set -euo pipefail; source %s </dev/null; set +eu +o pipefail; printf '\\n%s 0\\n'")
}

// try runs script in a subshell of the terminal: it sees what the blocks
// before it did to the shell and changes nothing of it, and its failure
// leaves the terminal as it was (a step's check, run before its step).
func (t *terminal) try(ctx context.Context, script string) ([]byte, error) {
	return t.send(ctx, script, "(set -euo pipefail; source %s) </dev/null; printf '\\n%s %%d\\n' $?")
}

// send writes script to a file of its own and has bash run the command
// line format makes of the file's name and the line done: reading the
// script from a file, not from bash's input, leaves that input to the
// runner, and a command of the block that reads its input reads nothing.
func (t *terminal) send(ctx context.Context, script, format string) ([]byte, error) {
	t.blocks++
	file := filepath.Join(t.dir, fmt.Sprintf("block-%d.sh", t.blocks))
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		return nil, err
	}
	line := fmt.Sprintf(format, strconv.Quote(file), t.done) + "\n"
	if _, err := io.WriteString(t.input, line); err != nil {
		return t.take(), t.ended()
	}
	marker := []byte("\n" + t.done + " ")
	for {
		t.mu.Lock()
		i := bytes.Index(t.output, marker)
		t.mu.Unlock()
		if i >= 0 {
			return t.finish(i, len(marker))
		}
		select {
		case <-t.more:
		case <-t.exited:
			// What it printed last may still be in the pipe.
			time.Sleep(100 * time.Millisecond)
			return t.take(), t.ended()
		case <-ctx.Done():
			t.close()
			return t.take(), fmt.Errorf("the block ran for longer than it may: %w", ctx.Err())
		}
	}
}

// finish takes the output before the line done, which starts at i, and that
// line, whose end holds the block's exit status.
func (t *terminal) finish(i, n int) ([]byte, error) {
	for {
		t.mu.Lock()
		rest := t.output[i+n:]
		end := bytes.IndexByte(rest, '\n')
		if end >= 0 {
			out := append([]byte(nil), t.output[:i]...)
			status, err := strconv.Atoi(string(rest[:end]))
			t.output = append([]byte(nil), rest[end+1:]...)
			t.mu.Unlock()
			if err != nil {
				return out, fmt.Errorf("the terminal's status line %q: %w", rest[:end], err)
			}
			if status != 0 {
				return out, fmt.Errorf("exit status %d", status)
			}
			return out, nil
		}
		t.mu.Unlock()
		select {
		case <-t.more:
		case <-t.exited:
			return t.take(), t.ended()
		}
	}
}

// take returns what bash printed and run has not taken yet.
func (t *terminal) take() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.output
	t.output = nil
	return out
}

// ended says how bash ended: a block failed, and errexit ended it.
func (t *terminal) ended() error {
	<-t.exited
	if t.exit == nil {
		return errors.New("the terminal's bash exited")
	}
	return fmt.Errorf("the terminal's bash ended: %w", t.exit)
}

// close ends the terminal and what its blocks left running, as closing a
// terminal window does: SIGHUP to its process group, SIGKILL to what is
// left after fifteen seconds.
func (t *terminal) close() {
	_ = t.input.Close()
	pgid := t.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGHUP)
	select {
	case <-t.exited:
	case <-time.After(15 * time.Second):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-t.exited
}
