package cluster

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A component that exits is started again by the supervisor, whenever it
// exits, until the plane is released; then it stays down.
func TestSupervisorStartsAnExitedComponentAgain(t *testing.T) {
	dir := t.TempDir()
	c := &component{name: "sleeper", dir: dir, pidFile: filepath.Join(dir, "sleeper.pid"),
		log: filepath.Join(dir, "sleeper.log"), args: []string{"/bin/sleep", "60"}, env: os.Environ()}
	if err := c.start(); err != nil {
		t.Fatal(err)
	}
	p := &plane{components: []*component{c}, done: make(chan struct{})}
	go p.supervise(20 * time.Millisecond)
	pid := func() (int, bool) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return c.pid, c.alive()
	}
	restarted := func(old int) int {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if now, alive := pid(); now != old && alive {
				return now
			}
		}
		t.Fatalf("pid %d killed: not started again within 5s", old)
		return 0
	}
	first, _ := pid()
	for range 2 { // a second exit, later, too
		old, _ := pid()
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		restarted(old)
	}
	if b, err := os.ReadFile(c.pidFile); err != nil || string(b) == "" {
		t.Errorf("pid file %q, %v: want the new pid, where kwokctl reads it", b, err)
	}

	p.release()
	last, _ := pid()
	if last == first {
		t.Fatalf("pid %d never changed", first)
	}
	if err := syscall.Kill(last, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if now, alive := pid(); now != last || alive {
		t.Errorf("after release the component was started again (pid %d, alive %v)", now, alive)
	}
	p.release() // twice is fine
}
