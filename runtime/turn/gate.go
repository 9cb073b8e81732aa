package turn

import (
	"context"
	"sync"
	"time"
)

// Gate holds new model calls while closed (a pause for weight updates): the episode loop's and the front door's
// alike, since both call through Model.Call. The zero value is open. Safe for concurrent use.
type Gate struct {
	mu      sync.Mutex
	closed  chan struct{} // non-nil while closed; closed (the channel) when the gate opens
	since   time.Time
	waiting int // calls held now
}

// Waiting returns how many calls the gate holds now (for status and for tests that wait on a pause).
func (g *Gate) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting
}

// Close holds every later Wait until Open.
func (g *Gate) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed == nil {
		g.closed, g.since = make(chan struct{}), time.Now()
	}
}

// Open releases the waiting calls.
func (g *Gate) Open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed != nil {
		close(g.closed)
		g.closed = nil
	}
}

// Wait returns at once while the gate is open (or g is nil), else when it opens or ctx ends.
func (g *Gate) Wait(ctx context.Context) error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	ch := g.closed
	if ch != nil {
		g.waiting++
	}
	g.mu.Unlock()
	if ch == nil {
		return nil
	}
	defer func() {
		g.mu.Lock()
		g.waiting--
		g.mu.Unlock()
	}()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
