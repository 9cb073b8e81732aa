package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// RunFunc runs one sample to its end and returns its trajectory (JSON, opaque to the bus). delivery is the
// claim (1 = the first; a later one means a node that held the sample died, and the sample starts again under
// the same trajectory id: tool state and remote environments cannot be checkpointed, so a run never resumes).
// ctx ends when the node stops or has lost its claim; the runner must then return soon; what it returns is
// discarded and the sample goes to another node.
//
// An error means the sample cannot run here (a bad body, an unknown agent): it becomes a failed result with
// reason ReasonRunner, so its group still closes.
type RunFunc func(ctx context.Context, s Sample, delivery int) (json.RawMessage, error)

// ReasonRunner is the reason of a failed result whose runner returned an error.
const ReasonRunner = "runner_error"

// Node claims samples from the work stream and runs them. Pulling is the back-pressure: a node asks for at most
// as many samples as it has free slots, so a sample waits in the stream (where any node may take it) rather
// than in a busy node's queue.
type Node struct {
	// Slots is the number of samples run at once.
	Slots int
	// Run runs a sample.
	Run RunFunc
	// Failed, if set, makes the trajectory of a sample that will not run (its claims ran out, or Run failed);
	// without it the failed result has an empty trajectory and carries its status and reason in headers.
	Failed func(s Sample, reason, msg string) json.RawMessage
	// Observe, if set, is told what the node does (metrics, logs, tests). It must not block.
	Observe func(Event)
	// Drain, if set: once it is closed the node claims nothing more, and Serve returns when its runs have ended
	// (ctx still aborts them).
	Drain <-chan struct{}
	// Control, if set, applies the cluster's pause / resume / update_weights on this node (Bus.Control): the
	// node applies the current state before it claims anything, follows it while it serves, and keeps a
	// presence record that tells trainers it is live and what it has applied.
	Control Controller
	// Limits, if set (with Control), are split with the other live nodes: this node holds its share of them
	// (limits.go), so that environment max_concurrent / creates_per_second and the model servers' in-flight
	// bounds hold across the cluster.
	Limits Limits

	noHeartbeat bool // tests: a node whose claims lapse while it runs (a stalled or partitioned node)
}

// The kinds of Event.
const (
	EventClaimed   = "claimed"   // a sample was claimed and its run started
	EventHeartbeat = "heartbeat" // a running sample's claim was renewed
	EventStored    = "stored"    // its result was stored
	EventDuplicate = "duplicate" // a result was stored already (another node finished it): this one is dropped
	EventFailed    = "failed"    // a failed result was stored (claims ran out, or Run failed)
	EventFenced    = "fenced"    // the run was aborted: the connection was down longer than a claim lasts
	EventReleased  = "released"  // the node stopped before the run ended: the sample goes back (nak)
	EventDropped   = "dropped"   // the request is gone (forgotten): the sample is acked without a result
	EventError     = "error"     // storing or acking failed (the sample is redelivered)
)

// Event is one thing a node did with a sample.
type Event struct {
	Kind     string
	Sample   Sample
	Delivery int
	Err      error
}

// errFenced ends a run whose claim may have lapsed.
var errFenced = errors.New("bus: the connection to the bus was down longer than a claim lasts: the sample may run elsewhere")

// Serve claims and runs samples until ctx ends, then aborts the runs in progress, hands their samples back and
// returns nil; it returns ErrClosed if the bus is closed first.
func (b *Bus) Serve(ctx context.Context, n Node) error {
	if n.Slots < 1 || n.Run == nil {
		return fmt.Errorf("bus: serve: need Slots >= 1 and Run (got %d slots)", n.Slots)
	}
	if err := b.watchCancels(ctx); err != nil {
		return err
	}
	if n.Control != nil {
		stop, err := b.startControl(ctx, n.Control, n.Limits)
		if err != nil {
			if ctx.Err() != nil {
				return nil // stopped while starting
			}
			return err
		}
		defer stop() // after the runs have ended (the defer below runs first)
	}
	sem := make(chan struct{}, n.Slots)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return nil
		case <-n.Drain:
			return nil
		}
		free := 1
	more:
		for free < n.Slots {
			select {
			case sem <- struct{}{}:
				free++
			default:
				break more
			}
		}
		// A short poll, so slots that free up while it waits are asked for soon.
		fctx, cancel := context.WithTimeout(ctx, time.Second)
		batch, err := b.work.Fetch(free, jetstream.FetchContext(fctx))
		got := 0
		if err == nil {
			for m := range batch.Messages() {
				got++
				wg.Add(1)
				go func() {
					defer func() { <-sem; wg.Done() }()
					b.handle(ctx, n, m)
				}()
			}
			err = batch.Error()
		}
		cancel()
		for range free - got {
			<-sem
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case b.nc.IsClosed():
			return ErrClosed
		case err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout):
			// No leader for a moment (failover), or the connection is down: wait a little and ask again.
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

func (n Node) observe(kind string, s Sample, delivery int, err error) {
	if n.Observe != nil {
		n.Observe(Event{Kind: kind, Sample: s, Delivery: delivery, Err: err})
	}
}

// handle runs one claimed work item to a stored result and an ack.
func (b *Bus) handle(ctx context.Context, n Node, m jetstream.Msg) {
	delivery := 1
	if md, err := m.Metadata(); err == nil {
		delivery = int(md.NumDelivered)
	}
	var s Sample
	if err := json.Unmarshal(m.Data(), &s); err != nil || s.validate() != nil {
		// Not a work item the bus wrote: nothing can run it, and no group waits for it.
		b.log.Error("bus: dropping a malformed work item", "subject", m.Subject(), "err", err)
		_ = m.Term()
		return
	}
	// What happens after the run must not be cut short by a stop: the result is stored and acked, or not at all.
	// Once the node stops, a call still waiting (on a peer that died, a leader being elected) gets stopGrace more:
	// the sample is then redelivered, as if this node had died.
	bg, cancelBg := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancelBg()
	stopBg := context.AfterFunc(ctx, func() { time.AfterFunc(stopGrace, cancelBg) })
	defer stopBg()
	// A node that stored the result and died before its ack: the sample is done.
	if err := retryTransient(bg, b.log, "look up "+s.TrajectoryID, func(ctx context.Context) error {
		_, err := b.results.GetLastMsgForSubject(ctx, resultSubject(s.Consumer, s.Request, s.TrajectoryID))
		return err
	}); err == nil {
		n.observe(EventDuplicate, s, delivery, nil)
		if err := b.closeIfDone(bg, s); err != nil {
			n.observe(EventError, s, delivery, err)
			return // not acked: the next claim counts it
		}
		_ = m.DoubleAck(bg)
		return
	}
	// Registered before the record is read, so a cancel stored after the read is seen by the watch.
	rctx, cancel := context.WithCancelCause(ctx)
	unregister := b.addRun(requestKey(s.Consumer, s.Request), cancel)
	defer unregister()
	defer cancel(nil)
	wasCancelled, open := b.requestOpen(bg, n, m, s, delivery)
	if !open {
		return
	}
	if wasCancelled {
		b.fail(bg, n, m, s, delivery, ReasonCancelled, "the request was cancelled before this sample ran")
		return
	}
	if delivery > b.cfg.MaxDeliver {
		msg := fmt.Sprintf("claimed %d times (bus.max_deliver = %d) and never finished: the nodes running it died or lost their connection to the bus",
			delivery-1, b.cfg.MaxDeliver)
		b.fail(bg, n, m, s, delivery, ReasonNodeLost, msg)
		return
	}
	hb := make(chan struct{})
	go func() {
		defer close(hb)
		b.heartbeat(rctx, n, m, s, delivery, cancel)
	}()
	n.observe(EventClaimed, s, delivery, nil)
	traj, runErr := n.Run(rctx, s, delivery)
	fenced := errors.Is(context.Cause(rctx), errFenced)
	cancelled := errors.Is(context.Cause(rctx), errCancelled)
	cancel(nil)
	<-hb
	switch {
	case fenced:
		n.observe(EventFenced, s, delivery, errFenced)
		return
	case ctx.Err() != nil:
		// The node is stopping: another node runs the sample from the start.
		_ = m.Nak()
		n.observe(EventReleased, s, delivery, ctx.Err())
		return
	case runErr != nil && cancelled:
		b.fail(bg, n, m, s, delivery, ReasonCancelled, "the request was cancelled while this sample ran: "+runErr.Error())
		return
	case runErr != nil:
		b.fail(bg, n, m, s, delivery, ReasonRunner, runErr.Error())
		return
	}
	// A request forgotten while this sample ran (its node stalled past the whole request) takes no result.
	if _, open := b.requestOpen(bg, n, m, s, delivery); !open {
		return
	}
	dup, err := b.publishResult(bg, Result{Sample: s, Status: StatusFinished, Node: b.NodeName(), Delivery: delivery, Trajectory: traj})
	if err != nil {
		n.observe(EventError, s, delivery, err)
		return // the claim lapses and another node runs the sample again
	}
	if dup {
		n.observe(EventDuplicate, s, delivery, nil)
	} else {
		n.observe(EventStored, s, delivery, nil)
	}
	if err := ackWork(bg, b, m); err != nil && !dup {
		// Stored but not acked: the next claim finds the result and acks it.
		n.observe(EventError, s, delivery, fmt.Errorf("bus: ack %q: %w", s.TrajectoryID, err))
	}
}

// requestOpen reports whether the sample's request is still kept, and whether it is cancelled; when it is not kept
// (Forget removed it), the work item is acked and dropped. On an error reading it, the sample is left to be claimed
// again.
func (b *Bus) requestOpen(ctx context.Context, n Node, m jetstream.Msg, s Sample, delivery int) (cancelled, open bool) {
	cancelled, found, err := b.requestCancelled(ctx, s.Consumer, s.Request)
	switch {
	case err != nil:
		n.observe(EventError, s, delivery, err)
		return false, false
	case !found:
		n.observe(EventDropped, s, delivery, nil)
		_ = m.DoubleAck(ctx)
		return false, false
	}
	return cancelled, true
}

// requestCancelled reads whether a request is kept and cancelled. The record holds the whole request (every item), so
// decoding it is proportional to the request's size: each sample of a large request decoding it twice made the
// samples' cost grow with the request (a fifth of serve's CPU at 256 prompts x 8). The record is still read on every
// call (a cancel or a Forget must be seen), but decoded only when its revision is new to this node.
func (b *Bus) requestCancelled(ctx context.Context, consumer, id string) (cancelled, found bool, err error) {
	key := requestKey(consumer, id)
	var e jetstream.KeyValueEntry
	err = retryTransient(ctx, b.log, "read request "+id, func(ctx context.Context) (err error) {
		e, err = b.requests.Get(ctx, key)
		return err
	})
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("bus: request %q: %w", id, err)
	}
	b.statesMu.Lock()
	st, ok := b.states[key]
	b.statesMu.Unlock()
	if ok && st.rev == e.Revision() {
		return st.cancelled, true, nil
	}
	var r struct {
		Cancelled bool `json:"cancelled"`
	}
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return false, false, fmt.Errorf("bus: request %q: %w", id, err)
	}
	b.statesMu.Lock()
	if len(b.states) >= maxRecordStates {
		clear(b.states) // the running requests' records are read again once each
	}
	b.states[key] = recordState{rev: e.Revision(), cancelled: r.Cancelled}
	b.statesMu.Unlock()
	return r.Cancelled, true, nil
}

// recordState is what requestCancelled keeps of a request record's revision.
type recordState struct {
	rev       uint64
	cancelled bool
}

// maxRecordStates bounds requestCancelled's memory (a few dozen bytes an entry).
const maxRecordStates = 4096

// stopGrace is how long the store-and-ack calls of a finished run may still take once the node stops.
const stopGrace = 3 * time.Second

// fail stores a failed result for a sample that will not run, and acks its work item.
func (b *Bus) fail(ctx context.Context, n Node, m jetstream.Msg, s Sample, delivery int, reason, msg string) {
	var traj json.RawMessage
	if n.Failed != nil {
		traj = n.Failed(s, reason, msg)
	}
	dup, err := b.publishResult(ctx, Result{Sample: s, Status: StatusFailed, Reason: reason, Error: msg, Node: b.NodeName(), Delivery: delivery, Trajectory: traj})
	if err != nil {
		n.observe(EventError, s, delivery, err)
		return
	}
	if dup {
		n.observe(EventDuplicate, s, delivery, nil)
	} else {
		n.observe(EventFailed, s, delivery, errors.New(msg))
	}
	_ = m.DoubleAck(ctx)
}

// heartbeat renews the claim every ack_wait/4 while the run goes on, and fences the run (cancels it with
// errFenced) once the connection has been down for half a claim: by then the server may give the sample to
// another node, and a node that cannot renew its claim must not finish it as if it still held it.
func (b *Bus) heartbeat(ctx context.Context, n Node, m jetstream.Msg, s Sample, delivery int, fence context.CancelCauseFunc) {
	t := time.NewTicker(b.cfg.AckWait / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if b.disconnectedFor() >= b.cfg.AckWait/2 {
			fence(errFenced)
			return
		}
		if n.noHeartbeat {
			continue
		}
		if err := m.InProgress(); err == nil {
			n.observe(EventHeartbeat, s, delivery, nil)
		}
	}
}

// ackWork acks a work item, resending an ack the server did not confirm (its leader died) with a fresh deadline.
func ackWork(ctx context.Context, b *Bus, m jetstream.Msg) error {
	return retryTransient(ctx, b.log, "ack", func(ctx context.Context) error {
		err := m.DoubleAck(ctx)
		if errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
			return nil
		}
		return err
	})
}
