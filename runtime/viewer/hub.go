package viewer

import (
	"sync"
	"sync/atomic"
)

// subscriptionBuffer is how many summaries a page's event stream may fall behind before it is told to reload.
const subscriptionBuffer = 256

// Subscription receives the summaries of trajectories as a source receives them.
type Subscription struct {
	// C delivers the summaries. A subscriber that falls subscriptionBuffer behind misses some: Lagged then
	// reports it once, and the page reloads its list.
	C      <-chan Summary
	c      chan Summary
	lagged atomic.Bool
	done   chan struct{}
	h      *hub
}

// Done is closed when the source closes.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Lagged reports (once) whether summaries were dropped since the last call.
func (s *Subscription) Lagged() bool { return s.lagged.Swap(false) }

// Close ends the subscription.
func (s *Subscription) Close() { s.h.unsubscribe(s) }

// hub fans summaries out to subscriptions without ever blocking the publisher.
type hub struct {
	mu     sync.Mutex
	subs   map[*Subscription]struct{}
	closed bool
	done   chan struct{}
}

func newHub() hub { return hub{subs: map[*Subscription]struct{}{}, done: make(chan struct{})} }

func (h *hub) subscribe() *Subscription {
	c := make(chan Summary, subscriptionBuffer)
	s := &Subscription{C: c, c: c, done: h.done, h: h}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.subs[s] = struct{}{}
	}
	return s
}

func (h *hub) unsubscribe(s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, s)
}

// publish offers sum to every subscription; a full one drops it and is marked lagged.
func (h *hub) publish(sum Summary) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		select {
		case s.c <- sum:
		default:
			s.lagged.Store(true)
		}
	}
}

// lag marks every subscription lagged and wakes it (with sum): the source changed under them (a file replaced).
func (h *hub) lag(sum Summary) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.lagged.Store(true)
		select {
		case s.c <- sum:
		default:
		}
	}
}

func (h *hub) subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		h.subs = map[*Subscription]struct{}{}
		close(h.done)
	}
}
