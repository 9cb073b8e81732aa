// Package testutil holds the waits that tests share: each one names what it waits for and, when it gives up,
// fails with that name and a dump of every goroutine, so a hang under load can be read from the log alone.
// Only tests import it (internal/house checks); it imports nothing of this module.
//
// Not for tests inside a testing/synctest bubble: there time is fake and jumps ahead whenever every goroutine
// blocks, so a Patience timer would fire at once.
package testutil

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// Patience is how long a wait lasts before the test is declared hung. It is not a timing assertion: it only
// has to be longer than anything a loaded machine makes a correct test wait, and shorter than `go test`'s own
// -timeout (10 min), so that the failure names what was awaited. AGENTRT_TEST_PATIENCE (a Go duration)
// overrides it.
var Patience = patience()

func patience() time.Duration {
	if s := os.Getenv("AGENTRT_TEST_PATIENCE"); s != "" {
		if d, err := time.ParseDuration(s); err == nil && d > 0 {
			return d
		}
	}
	return 3 * time.Minute
}

// pollEvery is how often Until re-checks its condition.
const pollEvery = 2 * time.Millisecond

// Recv returns the next value from ch; it fails the test if none arrives within Patience. ok is false when ch
// was closed.
func Recv[T any](t testing.TB, what string, ch <-chan T) (v T, ok bool) {
	t.Helper()
	timer := time.NewTimer(Patience)
	defer timer.Stop()
	select {
	case v, ok = <-ch:
		return v, ok
	case <-timer.C:
		Hung(t, what)
	}
	return v, false
}

// Wait returns when done is closed (or yields a value); it fails the test after Patience.
func Wait[T any](t testing.TB, what string, done <-chan T) {
	t.Helper()
	Recv(t, what, done)
}

// Until polls cond until it holds: for states that no channel announces (a counter reaching a value).
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Patience)
	for !cond() {
		if time.Now().After(deadline) {
			Hung(t, what)
		}
		time.Sleep(pollEvery)
	}
}

// Hung fails the test: it waited Patience for what, in vain. The goroutine dump goes to the test log.
func Hung(t testing.TB, what string) {
	t.Helper()
	t.Fatalf("timed out after %s waiting for %s\n%s", Patience, what, Goroutines())
}

// Goroutines returns the stacks of all goroutines.
func Goroutines() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return "goroutines:\n" + string(buf[:n])
		}
		if len(buf) >= 64<<20 {
			return "goroutines (cut at 64 MiB):\n" + string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}
