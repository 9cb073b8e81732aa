package rollout

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// granted reports whether w has its slot (without waiting).
func granted(w *slotWaiter) bool {
	select {
	case <-w.ready:
		return true
	default:
		return false
	}
}

// TestFairSlotsFavourTheConsumerWithFewestRunning: one slot; a flooding consumer holds it and has five more
// waiting; a second consumer that arrives after them gets the next slot, then they alternate.
func TestFairSlotsFavourTheConsumerWithFewestRunning(t *testing.T) {
	q := newFairSlots(1)
	first := q.enqueue("flood")
	if !granted(first) {
		t.Fatal("a free slot was not granted at once")
	}
	var flood []*slotWaiter
	for range 5 {
		flood = append(flood, q.enqueue("flood"))
	}
	other := q.enqueue("other")
	var order []*slotWaiter
	seen := map[*slotWaiter]bool{}
	holder := "flood"
	for len(order) < 6 {
		q.release(holder)
		var next *slotWaiter
		for _, w := range append([]*slotWaiter{other}, flood...) {
			if granted(w) && !seen[w] {
				if next != nil {
					t.Fatalf("two slots granted for one release")
				}
				next = w
			}
		}
		if next == nil {
			t.Fatalf("release granted nothing after %d grants", len(order))
		}
		seen[next] = true
		holder = next.consumer
		order = append(order, next)
	}
	// The newcomer first (it has nothing running), then the flood in arrival order.
	if want := append([]*slotWaiter{other}, flood...); !slices.Equal(order, want) {
		var got []string
		for _, w := range order {
			got = append(got, fmt.Sprintf("%s#%d", w.consumer, w.arrival))
		}
		t.Fatalf("grant order %v", got)
	}
}

// TestFairSlotsShareBetweenFloods: two slots, two consumers with many waiters each: they hold one slot each
// whatever the arrival order.
func TestFairSlotsShareBetweenFloods(t *testing.T) {
	q := newFairSlots(2)
	var a, b []*slotWaiter
	for range 6 {
		a = append(a, q.enqueue("a"))
	}
	for range 6 {
		b = append(b, q.enqueue("b"))
	}
	// Both first slots went to a (b was not waiting yet); from the first release on, b gets its share.
	q.release("a")
	for round := range 4 {
		if q.running["a"] != 1 || q.running["b"] != 1 {
			t.Fatalf("round %d: running %v, want one each", round, q.running)
		}
		q.release("a")
		q.release("b")
	}
}

// TestFairSlotsCancel: a waiter that gives up leaves the line; one granted just as it gave up hands the slot on.
func TestFairSlotsCancel(t *testing.T) {
	q := newFairSlots(1)
	a := q.enqueue("a")
	b := q.enqueue("b")
	c := q.enqueue("c")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := q.wait(ctx, b); err == nil {
		t.Fatal("a cancelled wait returned nil")
	}
	q.release(a.consumer)
	if granted(b) || !granted(c) {
		t.Fatalf("after b left the line, the slot went to b=%v c=%v", granted(b), granted(c))
	}
	d := q.enqueue("d")
	if err := q.wait(ctx, c); err == nil { // c holds the slot; its cancelled wait gives it back
		t.Fatal("cancelled wait of a granted waiter returned nil")
	}
	if !granted(d) {
		t.Fatal("the slot a cancelled waiter gave back was not handed on")
	}
	q.release(d.consumer)
	if q.free != 1 || len(q.running) != 0 || len(q.waiting) != 0 {
		t.Fatalf("after everything: free %d running %v waiting %v", q.free, q.running, q.waiting)
	}
}
