package labs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func newTerminal(t *testing.T) (*terminal, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	term, err := openTerminal(dir, os.Environ(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(term.close)
	return term, dir
}

func runIn(t *testing.T, term *terminal, script string) string {
	t.Helper()
	out, err := term.run(context.Background(), script)
	if err != nil {
		t.Fatalf("%q: %v\n%s", script, err, out)
	}
	return string(out)
}

// What a block does to the shell holds for the next, as in a learner's
// terminal; what a block prints is its own.
func TestTerminalKeepsTheShell(t *testing.T) {
	term, dir := newTerminal(t)
	runIn(t, term, "cd sub\nexport GREETING=hello\nname=world")
	out := runIn(t, term, `echo "$PWD $GREETING $name"; echo to stderr >&2`)
	if want := filepath.Join(dir, "sub") + " hello world\nto stderr\n"; out != want {
		t.Errorf("the next block printed %q, want %q", out, want)
	}
	// A command that reads its input reads nothing: the terminal's input
	// is the runner's.
	if out := runIn(t, term, "cat; echo read"); out != "read\n" {
		t.Errorf("a block reading its input printed %q", out)
	}
}

// A step's check tried before its step sees the shell and changes nothing
// of it, and its failure is reported without ending the terminal.
func TestTerminalTryLeavesTheShell(t *testing.T) {
	term, dir := newTerminal(t)
	runIn(t, term, "cd sub")
	out, err := term.try(context.Background(), "cd ..; echo $PWD; false; echo after")
	if err == nil || strings.Contains(string(out), "after") || !strings.Contains(string(out), dir) {
		t.Errorf("a failing check printed %q (%v): want it stopped at its failure, with an error", out, err)
	}
	if out := runIn(t, term, "echo $PWD"); out != filepath.Join(dir, "sub")+"\n" {
		t.Errorf("after the check the terminal is in %q", out)
	}
}

// A command that fails stops the block and ends the terminal, as errexit
// asks; so does a failure inside a pipeline, or an unset variable.
func TestTerminalStopsAtAFailure(t *testing.T) {
	for _, script := range []string{"echo before; false; echo after", "false | cat; echo after", "echo $UNSET_IN_THE_LAB; echo after"} {
		term, _ := newTerminal(t)
		out, err := term.run(context.Background(), script)
		if err == nil || strings.Contains(string(out), "after") {
			t.Errorf("%q printed %q (%v): want it stopped at its failure, with an error", script, out, err)
		}
		if _, err := term.run(context.Background(), "true"); err == nil {
			t.Errorf("after %q failed, the terminal runs on", script)
		}
	}
}

// A block left running in the background does not keep a failure from
// being seen, nor a block from ending.
func TestTerminalBackgroundCommands(t *testing.T) {
	term, _ := newTerminal(t)
	runIn(t, term, "sleep 600 &")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := term.run(ctx, "exit 3"); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("a block that ended bash, with a command still in the background: %v", err)
	}
}

// A block that runs for longer than its context allows is stopped.
func TestTerminalTimeout(t *testing.T) {
	term, _ := newTerminal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := term.run(ctx, "echo started; sleep 600"); err == nil {
		t.Error("a block past its time did not fail")
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("stopping the block took %s", d)
	}
}
