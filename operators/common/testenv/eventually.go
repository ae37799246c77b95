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

// Consistently calls check every 100 ms for d and fails the test as soon as
// it returns an error: for a negative check (nothing more happens), which
// can only be watched for a while, it fails at the first sign instead of
// sleeping and looking once.
func Consistently(t testing.TB, d time.Duration, what string, check func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		if err := check(context.Background()); err != nil {
			t.Fatalf("%s stopped holding: %v", what, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}
