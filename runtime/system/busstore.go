package system

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/runtime/bus"
	"github.com/agentrt/agentrt/runtime/rollout"
	"github.com/agentrt/agentrt/runtime/stream"
)

// busStore is the stream.Store of `agentrt serve`: accepted requests and finished trajectories live on the bus
// (docs/scale-out.md), so any node runs a request's samples and any node serves its trainer.
type busStore struct {
	b  *bus.Bus
	id string
}

var _ stream.Store = (*busStore)(nil)

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
	return s.b.Requests(ctx, consumer)
}

func (s *busStore) Drop(ctx context.Context, consumer string) (int, error) {
	active, done, err := s.b.Requests(ctx, consumer)
	if err != nil {
		return 0, err
	}
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
	return &busOutbox{s: s, o: o, consumer: consumer}, nil
}

type busOutbox struct {
	s        *busStore
	o        *bus.Outbox
	consumer string
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
			return m, nil
		}
		r, found, err := o.s.b.Request(ctx, o.consumer, d.Request)
		switch {
		case err != nil:
			_ = d.Nak()
			return stream.StoredMessage{}, err
		case !found:
			// Forgotten already (its request_done was acked through another node): nothing to send.
			_ = d.Ack(ctx)
			continue
		}
		status := stream.RequestCompleted
		if r.Cancelled {
			status = stream.RequestCancelled
		}
		m.Done = &stream.RequestDone{RequestID: d.Request, Status: status, Trajectories: r.Samples}
		return m, nil
	}
}

func (o *busOutbox) Ack(ctx context.Context, m stream.StoredMessage) error {
	d, ok := m.Handle.(bus.Delivered)
	if !ok {
		return errors.New("system: ack of a message of another store")
	}
	if err := d.Ack(ctx); err != nil {
		return err
	}
	if m.Done != nil {
		// Every message of the request is acked (request_done comes after its trajectories): the bus forgets it.
		if err := o.s.b.Forget(ctx, o.consumer, m.RequestID); err != nil {
			return fmt.Errorf("system: forget request %s: %w", m.RequestID, err)
		}
	}
	return nil
}

func (o *busOutbox) Release(m stream.StoredMessage) {
	if d, ok := m.Handle.(bus.Delivered); ok {
		_ = d.Nak()
	}
}

func (o *busOutbox) Unacked(ctx context.Context) int {
	n, _ := o.o.Unacked(ctx)
	return n
}
