package testenv

import (
	"context"
	"testing"
	"time"
)

// Timeout bounds how long Eventually waits; generous, since the control
// plane shares two cores with the compiler in CI.
const Timeout = 60 * time.Second

// Eventually calls check until it returns nil, and fails the test with the
// last error when Timeout passes first. what says what is awaited.
func Eventually(t testing.TB, what string, check func(ctx context.Context) error) {
	t.Helper()
	EventuallyWithin(t, Timeout, what, check)
}

// EventuallyWithin is Eventually for waits that are known to be longer than
// Timeout, like pods of real containers starting; it checks every second.
func EventuallyWithin(t testing.TB, timeout time.Duration, what string, check func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	interval := 100 * time.Millisecond
	if timeout > Timeout {
		interval = time.Second
	}
	var err error
	for {
		if err = check(ctx); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
		case <-time.After(interval):
		}
	}
}
