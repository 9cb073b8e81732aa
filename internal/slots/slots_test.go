package slots

import (
	"context"
	"errors"
	"testing"

	"github.com/agentrt/agentrt/internal/testutil"
)

// The limiter grants in arrival order, follows a raised limit at once and a lowered one as requests finish, and
// forgets a waiter whose context ends.
func TestLimiter(t *testing.T) {
	l := New(2)
	if !l.TryAcquire() || !l.TryAcquire() || l.TryAcquire() {
		t.Fatal("want two slots of two")
	}
	granted := make(chan int, 3)
	for i := range 2 {
		go func() {
			if err := l.Acquire(context.Background()); err == nil {
				granted <- i
			}
		}()
		testutil.Until(t, "the waiter to queue", func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.waiters.Len() == i+1 })
	}
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- l.Acquire(ctx) }()
	testutil.Until(t, "the third waiter to queue", func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.waiters.Len() == 3 })
	l.SetLimit(3)
	if i, _ := testutil.Recv(t, "the first waiter to be granted by the raised limit", granted); i != 0 {
		t.Fatalf("waiter %d granted first, want 0", i)
	}
	cancel()
	if err, _ := testutil.Recv(t, "the cancelled waiter to give up", gaveUp); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	l.SetLimit(1) // 3 in use: the next grant waits until only 0 remain in use
	l.Release()
	l.Release()
	select {
	case i := <-granted:
		t.Fatalf("waiter %d granted above the lowered limit", i)
	default:
	}
	l.Release()
	if i, _ := testutil.Recv(t, "the second waiter to be granted under the lowered limit", granted); i != 1 {
		t.Fatalf("waiter %d granted, want 1", i)
	}
	if l.inUse != 1 || l.waiters.Len() != 0 {
		t.Fatalf("in use %d, waiting %d", l.inUse, l.waiters.Len())
	}
}
