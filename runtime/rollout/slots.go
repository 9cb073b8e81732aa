package rollout

import (
	"context"
	"sync"
)

// fairSlots hands out the service's episode slots fairly between consumers (trainers), so that one consumer's
// flood of samples cannot delay another's request: when a slot frees, it goes to the waiting consumer with the
// fewest episodes running (max-min fairness); among those, to the one served least recently (round robin; a
// newcomer first). Within a consumer, waiters are served in arrival order; each request's Run waits for one
// slot at a time, so a consumer's requests take turns too. Safe for concurrent use.
type fairSlots struct {
	mu      sync.Mutex
	free    int
	running map[string]int           // slots held, per consumer
	waiting map[string][]*slotWaiter // per consumer, in arrival order
	served  map[string]uint64        // when each active consumer was last granted a slot (grant count)
	grants  uint64
	arrival uint64 // orders waiters
}

type slotWaiter struct {
	consumer string
	arrival  uint64
	ready    chan struct{} // closed when the slot is granted
	granted  bool          // guarded by fairSlots.mu
}

func newFairSlots(n int) *fairSlots {
	return &fairSlots{free: n, running: map[string]int{}, waiting: map[string][]*slotWaiter{}, served: map[string]uint64{}}
}

// enqueue asks for a slot for consumer; the returned waiter's wait blocks until it is granted. The request is in
// line when enqueue returns (that order decides who goes first).
func (q *fairSlots) enqueue(consumer string) *slotWaiter {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.arrival++
	w := &slotWaiter{consumer: consumer, arrival: q.arrival, ready: make(chan struct{})}
	q.waiting[consumer] = append(q.waiting[consumer], w)
	q.dispatch()
	return w
}

// wait returns nil once the slot is granted (the caller must release it), or ctx's error, leaving the line.
func (q *fairSlots) wait(ctx context.Context, w *slotWaiter) error {
	if ctx.Err() == nil {
		select {
		case <-w.ready:
			return nil
		case <-ctx.Done():
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if w.granted { // granted meanwhile: hand it on
		q.put(w.consumer)
	} else {
		line := q.waiting[w.consumer]
		for i, x := range line {
			if x == w {
				q.waiting[w.consumer] = append(line[:i:i], line[i+1:]...)
				break
			}
		}
		if len(q.waiting[w.consumer]) == 0 {
			delete(q.waiting, w.consumer)
		}
		q.forget(w.consumer)
	}
	q.dispatch()
	return ctx.Err()
}

// release returns a slot granted to consumer.
func (q *fairSlots) release(consumer string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.put(consumer)
	q.dispatch()
}

// put takes back a slot of consumer (mu held).
func (q *fairSlots) put(consumer string) {
	q.running[consumer]--
	if q.running[consumer] <= 0 {
		delete(q.running, consumer)
	}
	q.free++
	q.forget(consumer)
}

// forget drops what is kept of a consumer that holds and waits for nothing (mu held): when it comes back it is
// a newcomer.
func (q *fairSlots) forget(consumer string) {
	if q.running[consumer] == 0 && len(q.waiting[consumer]) == 0 {
		delete(q.served, consumer)
	}
}

// fairer reports whether waiter a goes before waiter b (heads of two consumers' lines; mu held).
func (q *fairSlots) fairer(a, b *slotWaiter) bool {
	if ra, rb := q.running[a.consumer], q.running[b.consumer]; ra != rb {
		return ra < rb
	}
	if sa, sb := q.served[a.consumer], q.served[b.consumer]; sa != sb {
		return sa < sb
	}
	return a.arrival < b.arrival
}

// dispatch grants free slots (mu held).
func (q *fairSlots) dispatch() {
	for q.free > 0 && len(q.waiting) > 0 {
		var best *slotWaiter
		for _, line := range q.waiting {
			if w := line[0]; best == nil || q.fairer(w, best) {
				best = w
			}
		}
		line := q.waiting[best.consumer][1:]
		if len(line) == 0 {
			delete(q.waiting, best.consumer)
		} else {
			q.waiting[best.consumer] = line
		}
		q.running[best.consumer]++
		q.grants++
		q.served[best.consumer] = q.grants
		q.free--
		best.granted = true
		close(best.ready)
	}
}
