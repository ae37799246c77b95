package cluster

import (
	"path/filepath"
	"testing"
	"time"
)

// A lock held elsewhere is waited for within the bound, said through
// waiting, and taken once it is free.
func TestLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	release, err := lockFile(path, 0, func() { t.Error("waited for a free lock") })
	if err != nil {
		t.Fatal(err)
	}
	waited := false
	start := time.Now()
	if _, err := lockFile(path, 2*time.Second, func() { waited = true }); err == nil || !waited {
		t.Fatalf("a held lock: err %v, waited %v; want an error after waiting", err, waited)
	}
	if d := time.Since(start); d < 2*time.Second || d > 10*time.Second {
		t.Errorf("gave up after %s, want the bound, 2s", d)
	}
	go func() { time.Sleep(time.Second); release() }()
	again, err := lockFile(path, 5*time.Second, func() {})
	if err != nil {
		t.Fatalf("the lock released within the bound: %v", err)
	}
	again()
}
