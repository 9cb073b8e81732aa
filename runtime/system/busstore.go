package system

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/agentrt/agentrt/internal/slots"
	"github.com/agentrt/agentrt/runtime/bus"
	"github.com/agentrt/agentrt/runtime/envtool"
	"github.com/agentrt/agentrt/runtime/rollout"
	"github.com/agentrt/agentrt/runtime/stream"
	"github.com/agentrt/agentrt/sglang"
)

// busStore is the stream.Store of `agentrt serve`: accepted requests and finished trajectories live on the bus
// (docs/scale-out.md), so any node runs a request's samples and any node serves its trainer.
type busStore struct {
	b  *bus.Bus
	id string
}

var (
	_ stream.Store           = (*busStore)(nil)
	_ stream.ConsumerClaimer = (*busStore)(nil)
)

func newBusStore(ctx context.Context, b *bus.Bus) (*busStore, error) {
	id, err := b.ID(ctx)
	if err != nil {
		return nil, err
	}
	return &busStore{b: b, id: id}, nil
}

func (s *busStore) ID() string { return s.id }

func (s *busStore) Submit(ctx context.Context, req stream.RolloutRequest) (bool, error) {
	r, samples, err := rollout.BusSamples(req)
	if err != nil {
		return false, err
	}
	out, err := s.b.Submit(ctx, r, samples)
	return out.Duplicate, err
}

func (s *busStore) Cancel(ctx context.Context, consumer, id string) (bool, error) {
	return s.b.Cancel(ctx, consumer, id)
}

func (s *busStore) Requests(ctx context.Context, consumer string) (active, done []string, err error) {
	active, done, _, err = s.b.Requests(ctx, consumer)
	return active, done, err
}

func (s *busStore) Drop(ctx context.Context, consumer string) (int, error) {
	active, done, acked, err := s.b.Requests(ctx, consumer)
	if err != nil {
		return 0, err
	}
	done = append(done, acked...)
	for _, id := range active {
		if _, err := s.b.Cancel(ctx, consumer, id); err != nil {
			return 0, err
		}
	}
	n, err := s.b.DropOutbox(ctx, consumer)
	if err != nil {
		return 0, err
	}
	// Their request_done was deleted with the rest: nothing will ack it, so the bus forgets them now.
	for _, id := range done {
		if err := s.b.Forget(ctx, consumer, id); err != nil {
			return n, err
		}
	}
	return n, nil
}

func (s *busStore) Emit(ctx context.Context, consumer, requestID string, f stream.Finished) (bool, error) {
	return s.b.StoreTrajectory(ctx, consumer, requestID, bus.Sample{ItemID: f.ItemID, Index: f.SampleIndex,
		GroupID: f.GroupID, TrajectoryID: f.TrajectoryID}, f.Trajectory)
}

func (s *busStore) Events(consumer string, f func(stream.EventFrame)) (func(), error) {
	return s.b.SubscribeEvents(consumer, func(data []byte) {
		var ev stream.EventFrame
		if json.Unmarshal(data, &ev) == nil {
			f(ev)
		}
	})
}

// publishEvent is the rollout service's event sink: the event goes to the node serving the consumer.
func (s *busStore) publishEvent(consumer string, ev stream.EventFrame) {
	if b, err := json.Marshal(ev); err == nil {
		s.b.PublishEvent(consumer, b)
	}
}

func (s *busStore) Outbox(ctx context.Context, consumer string) (stream.Outbox, error) {
	o, err := s.b.Outbox(ctx, consumer)
	if err != nil {
		return nil, err
	}
	ob := &busOutbox{s: s, o: o, consumer: consumer, out: map[uint64]bus.Delivered{}, held: map[uint64]bus.Delivered{},
		stop: make(chan struct{})}
	go ob.touch()
	return ob, nil
}

// busOutbox is one connection's outbox. A message it has offered stays with it (touched every ack_wait/4) until
// the trainer acks it or the connection ends (it is then offered again at once). A request_done the trainer acked
// is held the same way, not acked on the bus, until every other message of the consumer is acked: then its
// request is forgotten (results, marker, count and record go). So a restart or another node never loses a
// trajectory the trainer has not acked, and the marker of an acked request_done is never sent twice.
type busOutbox struct {
	s        *busStore
	o        *bus.Outbox
	consumer string

	mu   sync.Mutex
	out  map[uint64]bus.Delivered // offered, not acked
	held map[uint64]bus.Delivered // request_done markers acked by the trainer
	stop chan struct{}
	once sync.Once
}

func (o *busOutbox) Next(ctx context.Context) (stream.StoredMessage, error) {
	for {
		d, err := o.o.Next(ctx)
		if err != nil {
			return stream.StoredMessage{}, err
		}
		m := stream.StoredMessage{Seq: d.Seq, RequestID: d.Request, Handle: d}
		if !d.Done {
			m.Finished = stream.Finished{ItemID: d.ItemID, SampleIndex: d.Index, GroupID: d.GroupID, TrajectoryID: d.TrajectoryID,
				Trajectory: d.Trajectory}
			o.mu.Lock()
			o.out[d.Seq] = d
			o.mu.Unlock()
			return m, nil
		}
		r, found, err := o.s.b.Request(ctx, o.consumer, d.Request)
		switch {
		case err != nil:
			_ = d.Nak()
			return stream.StoredMessage{}, err
		case !found:
			// Forgotten already: nothing to send.
			_ = d.Ack(ctx)
			continue
		case r.DoneAcked:
			o.mu.Lock()
			o.held[d.Seq] = d
			o.mu.Unlock()
			o.forgetIfAllAcked(ctx)
			continue
		}
		status := stream.RequestCompleted
		if r.Cancelled {
			status = stream.RequestCancelled
		}
		m.Done = &stream.RequestDone{RequestID: d.Request, Status: status, Trajectories: r.Samples}
		o.mu.Lock()
		o.out[d.Seq] = d
		o.mu.Unlock()
		return m, nil
	}
}

func (o *busOutbox) Ack(ctx context.Context, m stream.StoredMessage) error {
	d, ok := m.Handle.(bus.Delivered)
	if !ok {
		return errors.New("system: ack of a message of another store")
	}
	if m.Done != nil {
		if err := o.s.b.MarkDoneAcked(ctx, o.consumer, m.RequestID); err != nil {
			return err
		}
		o.mu.Lock()
		delete(o.out, d.Seq)
		o.held[d.Seq] = d
		o.mu.Unlock()
	} else {
		if err := d.Ack(ctx); err != nil {
			return err
		}
		o.mu.Lock()
		delete(o.out, d.Seq)
		o.mu.Unlock()
	}
	o.forgetIfAllAcked(ctx)
	return nil
}

// forgetIfAllAcked forgets the requests whose request_done this outbox holds once nothing else of the consumer
// waits for an ack.
func (o *busOutbox) forgetIfAllAcked(ctx context.Context) {
	o.mu.Lock()
	held := len(o.held)
	o.mu.Unlock()
	if held == 0 {
		return
	}
	n, err := o.o.Unacked(ctx)
	if err != nil || n > held {
		return
	}
	o.mu.Lock()
	ds := make([]bus.Delivered, 0, len(o.held))
	for _, d := range o.held {
		ds = append(ds, d)
	}
	clear(o.held)
	o.mu.Unlock()
	for _, d := range ds {
		// Forget purges the marker too; its ack then finds nothing, which is fine.
		if err := o.s.b.Forget(ctx, o.consumer, d.Request); err != nil {
			o.mu.Lock()
			o.held[d.Seq] = d
			o.mu.Unlock()
			continue
		}
		_ = d.Ack(ctx)
	}
}

func (o *busOutbox) Release(m stream.StoredMessage) {
	if d, ok := m.Handle.(bus.Delivered); ok {
		o.mu.Lock()
		delete(o.out, d.Seq)
		o.mu.Unlock()
		_ = d.Nak()
	}
}

// Unacked counts the consumer's messages on the bus that the trainer has not acked: the request_done markers it
// acked (held until their request is forgotten) do not count.
func (o *busOutbox) Unacked(ctx context.Context) int {
	n, err := o.o.Unacked(ctx)
	if err != nil {
		return 0
	}
	_, _, acked, err := o.s.b.Requests(ctx, o.consumer)
	if err != nil {
		return n
	}
	return max(0, n-len(acked))
}

// Close hands everything this outbox holds back to the bus at once.
func (o *busOutbox) Close() {
	o.once.Do(func() { close(o.stop) })
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, d := range o.out {
		_ = d.Nak()
	}
	for _, d := range o.held {
		_ = d.Nak()
	}
	clear(o.out)
	clear(o.held)
}

// touch keeps what the outbox holds with it while the connection lives.
func (o *busOutbox) touch() {
	t := time.NewTicker(o.s.b.AckWait() / 4)
	defer t.Stop()
	for {
		select {
		case <-o.stop:
			return
		case <-t.C:
		}
		o.mu.Lock()
		ds := make([]bus.Delivered, 0, len(o.out)+len(o.held))
		for _, d := range o.out {
			ds = append(ds, d)
		}
		for _, d := range o.held {
			ds = append(ds, d)
		}
		o.mu.Unlock()
		for _, d := range ds {
			_ = d.InProgress()
		}
	}
}

// clusterRunner is the rollout service as the stream's runner on the bus: a trainer's pause / resume /
// update_weights go to every node of the cluster (bus.Control) and are acknowledged once every live node has
// applied them, rather than acting on this process's service alone.
type clusterRunner struct {
	*rollout.Service
	b *bus.Bus
}

func (r clusterRunner) Pause(ctx context.Context, mode string) error {
	return r.b.Control(ctx, bus.Control{Op: bus.OpPause, Mode: mode})
}

func (r clusterRunner) Resume(ctx context.Context) error {
	return r.b.Control(ctx, bus.Control{Op: bus.OpResume})
}

func (r clusterRunner) UpdateWeights(ctx context.Context, req stream.UpdateWeightsRequest) error {
	return r.b.Control(ctx, bus.Control{Op: bus.OpUpdateWeights,
		Weights: &bus.Weights{ModelPath: req.ModelPath, WeightVersion: req.WeightVersion, Options: req.Options}})
}

// nodeControl applies the cluster's controls to this node's service (its pause gate and its model servers).
type nodeControl struct{ svc *rollout.Service }

func (c nodeControl) Pause(ctx context.Context, mode string) error { return c.svc.Pause(ctx, mode) }

func (c nodeControl) Resume(ctx context.Context) error { return c.svc.Resume(ctx) }

func (c nodeControl) UpdateWeights(ctx context.Context, w bus.Weights) error {
	return c.svc.UpdateWeights(ctx, stream.UpdateWeightsRequest{ModelPath: w.ModelPath, WeightVersion: w.WeightVersion, Options: w.Options})
}

// nodeLimits is what this node splits with the other live nodes of the bus (bus.Limits): its environment
// services' max_concurrent and creates_per_second (envtool's, process-wide) and its model servers' in-flight
// bounds.
type nodeLimits struct{ client *sglang.Client }

func (l nodeLimits) SetShare(s slots.Share) {
	envtool.SetShare(s)
	l.client.SetShare(s)
}

func (l nodeLimits) Within() bool { return envtool.Within() && l.client.Within() }

// ClaimConsumer makes a hello on this node supersede the consumer's connections on every node
// (stream.ConsumerClaimer).
func (s *busStore) ClaimConsumer(ctx context.Context, consumer, session string, superseded func()) (func(), error) {
	return s.b.ClaimConsumer(ctx, consumer, session, superseded)
}
