package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/gorilla/websocket"
)

// Store keeps the accepted requests and finished trajectories of a Server made with NewOnStore, in place of the
// server's own spool and journal: a shared store (the bus, docs/scale-out.md) where any process may run a
// request's samples and any process may serve its consumer. The store's workers run the samples; the server
// only accepts, cancels and delivers. Its methods are called from many goroutines at once.
type Store interface {
	// ID names the store (welcome.spool_id): the same for every process on it and across restarts.
	ID() string
	// Submit stores an accepted request; when it returns nil the request survives a crash of this process.
	// duplicate: the consumer had submitted this id already (nothing new is stored).
	Submit(ctx context.Context, req RolloutRequest) (duplicate bool, err error)
	// Cancel cancels a running request wherever its samples run; found is false when there is no running
	// request with this id.
	Cancel(ctx context.Context, consumer, id string) (found bool, err error)
	// Requests lists the consumer's running requests and those whose request_done is stored and not acked.
	Requests(ctx context.Context, consumer string) (active, done []string, err error)
	// Drop cancels the consumer's running requests and deletes its unacked messages (hello with resume false);
	// it returns how many were deleted.
	Drop(ctx context.Context, consumer string) (int, error)
	// Outbox opens the consumer's stream of stored messages, from its oldest unacked one.
	Outbox(ctx context.Context, consumer string) (Outbox, error)
	// Emit stores a trajectory of no submitted request (the front door's); duplicate: its id is stored already.
	Emit(ctx context.Context, consumer, requestID string, f Finished) (duplicate bool, err error)
	// Events calls f with every per-turn event of the consumer's requests, wherever they run, until the func
	// returned is called. Best effort: events are not stored.
	Events(consumer string, f func(EventFrame)) (stop func(), err error)
}

// ConsumerClaimer is a Store shared by several processes (a cluster of nodes, each serving trainers): a hello
// on any of them supersedes the consumer's older connections on every other, as one process does with its own.
// A Store that one process owns need not implement it.
type ConsumerClaimer interface {
	// ClaimConsumer records session, a connection that said hello, as the consumer's newest connection
	// store-wide. superseded is called once, on its own goroutine, when a later hello of the consumer is recorded
	// anywhere; release ends the claim when the connection closes. An error means the hello was not recorded:
	// the connection is refused (no later hello could supersede it).
	ClaimConsumer(ctx context.Context, consumer, session string, superseded func()) (release func(), err error)
}

// Outbox is one connection's view of a consumer's stored messages.
type Outbox interface {
	// Next waits for the next message that is not acked (one offered to a connection that ended without an
	// ack is offered again) until ctx ends.
	Next(ctx context.Context) (StoredMessage, error)
	// Ack deletes a message Next returned; acking a request_done also lets the store forget the request.
	Ack(ctx context.Context, m StoredMessage) error
	// Release offers a message Next returned again at once (its connection ended before the ack).
	Release(m StoredMessage)
	// Unacked is the number of the consumer's messages not acked yet.
	Unacked(ctx context.Context) int
	// Close ends the connection's use of the outbox: what it offered and was not acked is offered again at once.
	Close()
}

// StoredMessage is one message of an Outbox: a trajectory, or (Done set) a request's request_done.
type StoredMessage struct {
	Seq       uint64
	RequestID string
	Finished  Finished     // a trajectory: its ids, group and JSON
	Done      *RequestDone // a request_done (its Seq is ignored)
	// Handle is the store's own (what Ack and Release need).
	Handle any
}

// frame is the message as sent: its JSON with the seq.
func (m StoredMessage) frame() ([]byte, error) {
	if m.Done != nil {
		d := *m.Done
		d.Type, d.Seq = TypeRequestDone, m.Seq
		return json.Marshal(d)
	}
	f := m.Finished
	h := tailOf(trajectoryHeader{Type: TypeTrajectory, RequestID: m.RequestID, ItemID: f.ItemID, SampleIndex: f.SampleIndex,
		GroupID: f.GroupID, TrajectoryID: f.TrajectoryID}, trajectoryPrefix)
	t := f.Trajectory
	if len(t) == 0 {
		t = json.RawMessage("null")
	}
	b := make([]byte, 0, len(h)+len(t)+64)
	b = append(b, `{"type":"trajectory","seq":`...)
	b = strconv.AppendUint(b, m.Seq, 10)
	b = append(b, h[:len(h)-1]...)
	b = append(b, `,"trajectory":`...)
	b = append(b, t...)
	b = append(b, '}')
	if !json.Valid(b) {
		return nil, fmt.Errorf("stream: stored trajectory %s is not valid JSON", f.TrajectoryID)
	}
	return b, nil
}

// ackID is what an ack by trajectory id names: the trajectory id, or "request_done:" + the request id.
func (m StoredMessage) ackID() string {
	if m.Done != nil {
		return doneIDPrefix + m.RequestID
	}
	return m.Finished.TrajectoryID
}

// delivered is what one connection has sent from its outbox and not seen acked.
type delivered struct {
	mu    sync.Mutex
	bySeq map[uint64]StoredMessage
	byID  map[string]uint64
}

func (d *delivered) add(m StoredMessage) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bySeq == nil {
		d.bySeq, d.byID = map[uint64]StoredMessage{}, map[string]uint64{}
	}
	d.bySeq[m.Seq] = m
	d.byID[m.ackID()] = m.Seq
}

// take removes and returns the messages named by seqs and ids.
func (d *delivered) take(seqs []uint64, ids []string) []StoredMessage {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []StoredMessage
	pick := func(seq uint64) {
		if m, ok := d.bySeq[seq]; ok {
			out = append(out, m)
			delete(d.bySeq, seq)
			delete(d.byID, m.ackID())
		}
	}
	for _, s := range seqs {
		pick(s)
	}
	for _, id := range ids {
		if s, ok := d.byID[id]; ok {
			pick(s)
		}
	}
	return out
}

// all removes and returns every message still unacked.
func (d *delivered) all() []StoredMessage {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]StoredMessage, 0, len(d.bySeq))
	for _, m := range d.bySeq {
		out = append(out, m)
	}
	d.bySeq, d.byID = nil, nil
	return out
}

// openStore opens the consumer's outbox and fills the store's part of the welcome.
func (c *conn) openStore() (Welcome, error) {
	s := c.s
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
	defer cancel()
	ob, err := s.store.Outbox(ctx, c.consumer)
	if err != nil {
		return Welcome{}, err
	}
	_, done, err := s.store.Requests(ctx, c.consumer)
	if err != nil {
		ob.Close()
		return Welcome{}, err
	}
	c.outbox = ob
	if done == nil {
		done = []string{}
	}
	return Welcome{Unacked: ob.Unacked(ctx), DoneRequests: done, SpoolID: s.store.ID()}, nil
}

// forwardEvent queues a per-turn event from the store, if there is room (events are best effort).
func (c *conn) forwardEvent(ev EventFrame) {
	ev.Type = TypeEvent
	if len(ev.Event) == 0 {
		ev.Event = json.RawMessage("null")
	}
	b, err := json.Marshal(ev)
	if err == nil && c.tryQueue(b) {
		c.s.eventsSent.Add(1)
		return
	}
	c.s.eventsDropped.Add(1)
}

// ackStored acks the messages this connection sent that seqs and ids name; others are ignored (a message sent
// on an earlier connection comes again and can be acked then).
func (c *conn) ackStored(seqs []uint64, ids []string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.s.cfg.WriteTimeout)
	defer cancel()
	n := 0
	for _, m := range c.sentOB.take(seqs, ids) {
		if err := c.outbox.Ack(ctx, m); err != nil {
			c.outbox.Release(m)
			return n, err
		}
		n++
	}
	return n, nil
}

// pump reads the outbox while the connection has credits and hands each message to the writer (one credit
// each); it stops when the writer exits.
func (c *conn) pump() <-chan StoredMessage {
	out := make(chan StoredMessage)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-c.dead
		cancel()
	}()
	go func() {
		for {
			for c.credits.Load() <= 0 {
				select {
				case <-c.pumpSig:
				case <-ctx.Done():
					return
				}
			}
			m, err := c.outbox.Next(ctx)
			if err != nil {
				if ctx.Err() == nil {
					c.s.log.Error("stream: outbox read failed", "consumer", c.consumer, "err", err)
					c.kick(websocket.CloseInternalServerErr, "outbox read failed")
				}
				return
			}
			c.waitAnswered(ctx, m.RequestID)
			c.credits.Add(-1)
			select {
			case out <- m:
			case <-ctx.Done():
				c.outbox.Release(m)
				return
			}
		}
	}()
	return out
}

// submitting marks a submit of request id in progress on this connection; the func returned marks it answered.
func (c *conn) submitting(id string) func() {
	ch := make(chan struct{})
	c.subMu.Lock()
	if c.subs == nil {
		c.subs = map[string]chan struct{}{}
	}
	prev := c.subs[id]
	c.subs[id] = ch
	c.subMu.Unlock()
	return func() {
		c.subMu.Lock()
		if c.subs[id] == ch {
			delete(c.subs, id)
		}
		c.subMu.Unlock()
		close(ch)
		if prev != nil {
			<-prev
		}
	}
}

// waitAnswered waits until no submit of request id is being answered on this connection.
func (c *conn) waitAnswered(ctx context.Context, id string) {
	c.subMu.Lock()
	ch := c.subs[id]
	c.subMu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
}
