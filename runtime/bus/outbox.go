package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Outbox is one trainer consumer's view of the result stream: its requests' results and done markers, in the
// order they were stored, each until it is acked. It is a durable consumer kept by the cluster, so any node can
// serve the trainer and a reconnect to another node resumes after the last ack.
type Outbox struct {
	b        *Bus
	consumer string
	c        jetstream.Consumer
}

// Delivered is one message of an outbox: a result, or (Done) the marker that every sample of Request has one.
type Delivered struct {
	Result
	Done bool
	// Seq is the message's sequence number in the result stream: increasing, the same on every node and
	// every delivery.
	Seq uint64
	m   jetstream.Msg
	log *slog.Logger
}

// Nak offers the message again at once (to the next Next of any connection of this outbox).
func (d Delivered) Nak() error {
	if err := d.m.Nak(); err != nil {
		return fmt.Errorf("bus: nak: %w", err)
	}
	return nil
}

// outboxPrefix starts the name of every outbox's durable consumer.
const outboxPrefix = "out_"

// Ack removes the message from the outbox; it is not offered again.
// An ack the server does not confirm (the outbox's leader died) is sent again with a fresh deadline, so that one
// lost confirmation does not hold the trainer's acks for the caller's whole deadline.
func (d Delivered) Ack(ctx context.Context) error {
	log := d.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	err := retryTransient(ctx, log, "ack", func(ctx context.Context) error {
		err := d.m.DoubleAck(ctx)
		if errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
			return nil // an earlier attempt was confirmed after all
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("bus: ack: %w", err)
	}
	return nil
}

// Outbox opens (creating it on first use) the outbox of a trainer consumer.
func (b *Bus) Outbox(ctx context.Context, consumer string) (*Outbox, error) {
	if consumer == "" {
		return nil, errors.New("bus: outbox: consumer is required")
	}
	cfg := jetstream.ConsumerConfig{
		Durable:       outboxPrefix + token(consumer),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       b.cfg.AckWait,
		FilterSubject: resultPrefix + token(consumer) + ".>",
		MaxAckPending: b.cfg.MaxAckPending,
	}
	var c jetstream.Consumer
	err := retry(ctx, b.log, func(ctx context.Context) (err error) {
		// An existing outbox is kept as it is (releaseOutboxes may have made it again from its ack floor).
		if c, err = b.js.Consumer(ctx, ResultStream, cfg.Durable); err == nil || !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return err
		}
		c, err = b.js.CreateOrUpdateConsumer(ctx, ResultStream, cfg)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bus: outbox of %q: %w", consumer, err)
	}
	return &Outbox{b: b, consumer: consumer, c: c}, nil
}

// Next waits for the next message (one not acked within ack_wait is offered again) until ctx ends.
//
// Each wait is a pull request the server holds for up to 5s; it is not cancelled with ctx, since the server may
// be delivering a message to it at that moment, and such a message would be lost to every other connection of
// the consumer until ack_wait (a trainer reconnecting elsewhere would get its request_done first). A message that
// arrives after ctx ended is offered again at once (nak).
func (o *Outbox) Next(ctx context.Context) (Delivered, error) {
	type fetched struct {
		m   jetstream.Msg
		err error
	}
	for {
		got := make(chan fetched, 1)
		go func() {
			m, err := o.c.Next(jetstream.FetchMaxWait(5 * time.Second))
			got <- fetched{m, err}
		}()
		var f fetched
		select {
		case f = <-got:
		case <-ctx.Done():
			go func() {
				if f := <-got; f.err == nil {
					_ = f.m.Nak()
				}
			}()
			return Delivered{}, context.Cause(ctx)
		}
		m, err := f.m, f.err
		if err == nil {
			return o.decode(m)
		}
		switch {
		case ctx.Err() != nil:
			return Delivered{}, context.Cause(ctx)
		case o.b.nc.IsClosed():
			return Delivered{}, ErrClosed
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		default:
			// A leader change or a dropped connection: ask again shortly.
			select {
			case <-ctx.Done():
				return Delivered{}, context.Cause(ctx)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

func (o *Outbox) decode(m jetstream.Msg) (Delivered, error) {
	var seq uint64
	if md, err := m.Metadata(); err == nil {
		seq = md.Sequence.Stream
	}
	// agentrt.result.<consumer>.<request>.t.<trajectory> or agentrt.result.<consumer>.<request>.done
	parts := strings.Split(strings.TrimPrefix(m.Subject(), resultPrefix), ".")
	if len(parts) < 3 {
		_ = m.Term()
		return Delivered{}, fmt.Errorf("bus: outbox: unexpected subject %q", m.Subject())
	}
	request, err := untoken(parts[1])
	if err != nil {
		_ = m.Term()
		return Delivered{}, fmt.Errorf("bus: outbox: subject %q: %w", m.Subject(), err)
	}
	if parts[2] == "done" {
		return Delivered{Result: Result{Sample: Sample{Consumer: o.consumer, Request: request}}, Done: true, Seq: seq, m: m, log: o.b.log}, nil
	}
	return Delivered{Result: decodeResult(o.consumer, request, m.Headers(), m.Data()), Seq: seq, m: m, log: o.b.log}, nil
}

// Forget removes an ended request: its results, its done marker, its count and its record. Call it once the trainer has
// acked the request's done marker; a later submit of the same id is then a new request.
func (b *Bus) Forget(ctx context.Context, consumer, request string) error {
	if err := b.results.Purge(ctx, jetstream.WithPurgeSubject(requestSubjects(consumer, request)+".>")); err != nil {
		return fmt.Errorf("bus: forget %q: %w", request, err)
	}
	counts, err := b.js.Stream(ctx, CountStream)
	if err == nil {
		err = counts.Purge(ctx, jetstream.WithPurgeSubject(countSubject(consumer, request)))
	}
	if err != nil {
		return fmt.Errorf("bus: forget %q: %w", request, err)
	}
	if err := b.requests.Purge(ctx, requestKey(consumer, request)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("bus: forget %q: %w", request, err)
	}
	return nil
}

// InProgress tells the bus the message is still offered (its connection is alive and the trainer has not acked
// it yet): it is not offered again for another ack_wait.
func (d Delivered) InProgress() error {
	if err := d.m.InProgress(); err != nil {
		return fmt.Errorf("bus: in progress: %w", err)
	}
	return nil
}

// AckWait is how long a message offered and neither acked nor touched (InProgress) stays with its connection.
func (b *Bus) AckWait() time.Duration { return b.cfg.AckWait }
