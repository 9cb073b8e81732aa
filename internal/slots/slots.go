// Package slots bounds concurrent work: a counting semaphore whose size can change while callers wait (a
// worker's adaptive in-flight bound, an environment service's max_concurrent as the cluster's nodes come and
// go), and a node's share of a cluster-wide limit.
package slots

import (
	"container/list"
	"context"
	"sync"
)

// Limiter is a counting semaphore of a changeable size. Waiters are served in arrival order. The zero value
// admits nothing until SetLimit.
type Limiter struct {
	mu      sync.Mutex
	limit   int
	inUse   int
	waiters list.List // of chan struct{}, closed when granted
}

// New returns a Limiter of n slots.
func New(n int) *Limiter { return &Limiter{limit: n} }

// TryAcquire takes a slot if one is free and nobody waits.
func (l *Limiter) TryAcquire() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inUse < l.limit && l.waiters.Len() == 0 {
		l.inUse++
		return true
	}
	return false
}

// Acquire waits for a slot until ctx ends.
func (l *Limiter) Acquire(ctx context.Context) error {
	l.mu.Lock()
	if l.inUse < l.limit && l.waiters.Len() == 0 {
		l.inUse++
		l.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	e := l.waiters.PushBack(ch)
	l.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		defer l.mu.Unlock()
		select {
		case <-ch: // granted meanwhile: give it back
			l.inUse--
			l.grantLocked()
		default:
			l.waiters.Remove(e)
		}
		return context.Cause(ctx)
	}
}

// Release returns a slot.
func (l *Limiter) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inUse--
	l.grantLocked()
}

// SetLimit changes the size: a larger one admits waiters at once; a smaller one lets the holders finish and
// grants nothing until fewer than n are in use.
func (l *Limiter) SetLimit(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limit = n
	l.grantLocked()
}

// Limit is the size now.
func (l *Limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit
}

// InUse is the slots held now.
func (l *Limiter) InUse() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inUse
}

// Waiting is the callers waiting now.
func (l *Limiter) Waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiters.Len()
}

// Within says whether no more slots are held than the size (false for a while after SetLimit lowered it).
func (l *Limiter) Within() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inUse <= l.limit
}

func (l *Limiter) grantLocked() {
	for l.inUse < l.limit && l.waiters.Len() > 0 {
		e := l.waiters.Front()
		l.waiters.Remove(e)
		l.inUse++
		close(e.Value.(chan struct{}))
	}
}
