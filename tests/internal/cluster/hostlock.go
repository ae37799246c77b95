package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// HostLockFile is the lock of the steps that run a learner's commands on
// this machine itself: operators started with go run on their default ports
// (8081 to 8084, lab 7's metrics on 8080) and files of fixed names in /tmp,
// as a learner's shell would. make test runs labs on kind beside the labs
// and the README on the local cluster: one such step at a time.
var HostLockFile = filepath.Join(os.TempDir(), "workshop-host-steps.lock")

// LockHost takes the host lock, waiting for another run that holds it and
// saying so through logf, with how long it waited (scripts/gotest.sh
// prints that line: where make test's time goes); release gives it back.
func LockHost(logf func(format string, args ...any)) (release func(), err error) {
	var start time.Time
	release, err = lockFile(HostLockFile, 0, func() {
		logf("waiting for %s: another run's lab or README steps use this machine's ports and /tmp files", HostLockFile)
		start = time.Now()
	})
	if err == nil && !start.IsZero() {
		logf("waited %s for the host lock", time.Since(start).Round(time.Second))
	}
	return release, err
}

// lockFile takes an exclusive lock (flock) on the file at path, made if
// missing, and returns its release. When another process holds it, it
// calls waiting, then waits: for at most bound, or for as long as it takes
// when bound is 0. The file is opened for reading only, which flock needs
// no more than: a run as another user (root's and a learner's on one
// machine) takes turns on the same file, whoever made it.
func lockFile(path string, bound time.Duration, waiting func()) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	err = syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
	if err != nil && errors.Is(err, syscall.EWOULDBLOCK) {
		waiting()
		if bound == 0 {
			err = syscall.Flock(fd, syscall.LOCK_EX)
		}
		for end := time.Now().Add(bound); bound > 0 && errors.Is(err, syscall.EWOULDBLOCK) && time.Now().Before(end); {
			time.Sleep(time.Second)
			err = syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(fd, syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

// HoldHost takes the host lock for the rest of t, saying in its log lines
// which test waited.
func HoldHost(t testing.TB) {
	t.Helper()
	release, err := LockHost(func(format string, args ...any) {
		t.Logf("%s: %s", t.Name(), fmt.Sprintf(format, args...))
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
}
