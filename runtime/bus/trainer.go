package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// What a trainer's server needs of the bus beyond Submit and the Outbox: cancel a request cluster-wide, list a
// consumer's requests, store a trajectory that belongs to no request (the front door's), and name the store.

// ReasonCancelled is the reason of a failed result of a sample whose request was cancelled before the sample ran.
const ReasonCancelled = "cancelled"

// errCancelled ends the runs of a cancelled request's samples.
var errCancelled = errors.New("bus: the request was cancelled")

// Cancel marks a request cancelled in its record. Every node watches the records: runs of its samples are
// cancelled wherever they run (the runner returns its aborted trajectory, which is stored as usual), and a
// sample claimed after the cancel becomes a failed result with reason ReasonCancelled, so the request still
// closes with one result per sample. found is false for a request the bus does not keep (never submitted, or
// forgotten) or whose done marker is stored (it has ended).
func (b *Bus) Cancel(ctx context.Context, consumer, id string) (found bool, err error) {
	return b.updateRequest(ctx, consumer, id, true, func(r *Request) bool {
		if r.Cancelled {
			return false
		}
		r.Cancelled = true
		return true
	})
}

// MarkDoneAcked records that the trainer acked the request's request_done. The request is forgotten (ForgetAcked)
// once the trainer has acked everything else too; until then Requests lists it as neither active nor done.
func (b *Bus) MarkDoneAcked(ctx context.Context, consumer, id string) error {
	_, err := b.updateRequest(ctx, consumer, id, false, func(r *Request) bool {
		if r.DoneAcked {
			return false
		}
		r.DoneAcked = true
		return true
	})
	return err
}

// updateRequest changes a request's record with f (compare-and-set, read again on a conflict); f returns false
// when there is nothing to change. found is false when the bus does not keep the request, or (running only) when
// its done marker is stored.
func (b *Bus) updateRequest(ctx context.Context, consumer, id string, running bool, f func(r *Request) bool) (found bool, err error) {
	key := requestKey(consumer, id)
	for {
		e, err := b.requests.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("bus: request %q: %w", id, err)
		}
		if running {
			if _, err := b.results.GetLastMsgForSubject(ctx, doneSubject(consumer, id)); err == nil {
				return false, nil
			} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
				return false, fmt.Errorf("bus: request %q: %w", id, err)
			}
		}
		var r Request
		if err := json.Unmarshal(e.Value(), &r); err != nil {
			return false, fmt.Errorf("bus: request %q: stored record: %w", id, err)
		}
		if !f(&r) {
			return true, nil
		}
		val, err := json.Marshal(r)
		if err != nil {
			return false, err
		}
		_, err = b.requests.Update(ctx, key, val, e.Revision())
		if err == nil {
			return true, nil
		}
		var api *jetstream.APIError
		if !errors.As(err, &api) || (api.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence && api.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
			return false, fmt.Errorf("bus: request %q: %w", id, err)
		}
		// The record changed in between (its fan-out finished): read it again.
	}
}

// Requests lists a consumer's requests the bus keeps: active ones (no done marker yet), done ones (the marker is
// stored, the trainer has not acked it) and acked ones (MarkDoneAcked, not forgotten yet). It tries again while
// the cluster elects a leader, until ctx ends.
func (b *Bus) Requests(ctx context.Context, consumer string) (active, done, acked []string, err error) {
	err = retry(ctx, b.log, func(ctx context.Context) error {
		active, done, acked = nil, nil, nil
		// The bucket's subjects, read from its stream's state: one request to the stream's leader (listing the
		// keys would make a consumer, which waits on the meta leader).
		kv, err := b.js.Stream(ctx, "KV_"+RequestBucket)
		if err != nil {
			return err
		}
		prefix := "$KV." + RequestBucket + "." + token(consumer) + "."
		si, err := kv.Info(ctx, jetstream.WithSubjectFilter(prefix+"*"))
		if err != nil {
			return err
		}
		for subj := range si.State.Subjects {
			id, err := untoken(strings.TrimPrefix(subj, prefix))
			if err != nil {
				continue
			}
			r, found, err := b.Request(ctx, consumer, id)
			switch {
			case err != nil:
				return err
			case !found: // forgotten (its purge marker keeps the subject)
				continue
			case r.DoneAcked:
				acked = append(acked, id)
				continue
			}
			if _, err := b.results.GetLastMsgForSubject(ctx, doneSubject(consumer, id)); err == nil {
				done = append(done, id)
			} else if errors.Is(err, jetstream.ErrMsgNotFound) {
				active = append(active, id)
			} else {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("bus: requests of %q: %w", consumer, err)
	}
	slices.Sort(active)
	slices.Sort(done)
	slices.Sort(acked)
	return active, done, acked, nil
}

// StoreTrajectory stores a trajectory that belongs to no submitted request (no work item, no count, no done
// marker) in consumer's outbox under request; dup is true when one with its trajectory id is stored already.
func (b *Bus) StoreTrajectory(ctx context.Context, consumer, request string, s Sample, traj json.RawMessage) (dup bool, err error) {
	s.Consumer, s.Request = consumer, request
	if consumer == "" || request == "" || s.TrajectoryID == "" {
		return false, errors.New("bus: store trajectory: consumer, request and trajectory id are required")
	}
	m := resultMsg(Result{Sample: s, Status: StatusFinished, Node: b.NodeName(), Delivery: 1, Trajectory: traj})
	_, err = b.js.PublishMsg(ctx, m, jetstream.WithExpectStream(ResultStream))
	if isSubjectFull(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("bus: store the trajectory %q: %w", s.TrajectoryID, err)
	}
	return false, nil
}

// ID names the store: the result stream and when it was created. It stays the same across restarts (embedded)
// and across the nodes of a cluster; another ID means the trajectories the trainer has not acked were lost.
func (b *Bus) ID(ctx context.Context) (string, error) {
	si, err := b.results.Info(ctx)
	if err != nil {
		return "", fmt.Errorf("bus: id: %w", err)
	}
	return "jetstream-" + strconv.FormatInt(si.Created.UnixNano(), 36), nil
}

// releaseOutboxes (embedded mode, at start) makes every outbox offer again at once what the previous process
// had sent and not seen acked: a killed process's deliveries would otherwise wait out ack_wait. Each outbox
// consumer is made again from its ack floor; messages acked above the floor are offered again (trainers
// dedupe by trajectory id).
func (b *Bus) releaseOutboxes(ctx context.Context) error {
	if b.results == nil {
		return nil
	}
	var infos []*jetstream.ConsumerInfo
	lister := b.results.ListConsumers(ctx)
	for ci := range lister.Info() {
		if strings.HasPrefix(ci.Name, outboxPrefix) && ci.NumAckPending > 0 {
			infos = append(infos, ci)
		}
	}
	if err := lister.Err(); err != nil {
		return fmt.Errorf("bus: outboxes: %w", err)
	}
	for _, ci := range infos {
		if err := b.js.DeleteConsumer(ctx, ResultStream, ci.Name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return fmt.Errorf("bus: outbox %s: %w", ci.Name, err)
		}
		cfg := ci.Config
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = ci.AckFloor.Stream + 1
		if _, err := b.js.CreateConsumer(ctx, ResultStream, cfg); err != nil {
			return fmt.Errorf("bus: outbox %s: %w", ci.Name, err)
		}
	}
	return nil
}

// watchCancels starts (once) the watch of the request records that cancels the runs of a cancelled request.
func (b *Bus) watchCancels(ctx context.Context) error {
	var err error
	b.watchOn.Do(func() {
		var w jetstream.KeyWatcher
		w, err = b.requests.WatchAll(context.WithoutCancel(ctx), jetstream.UpdatesOnly())
		if err != nil {
			err = fmt.Errorf("bus: watch requests: %w", err)
			return
		}
		go func() {
			for e := range w.Updates() {
				if e == nil || e.Operation() != jetstream.KeyValuePut {
					continue
				}
				var r Request
				if json.Unmarshal(e.Value(), &r) == nil && r.Cancelled {
					b.cancelRuns(e.Key())
				}
			}
		}()
	})
	return err
}

// addRun registers a run of a sample of the request with key; the func returned removes it.
func (b *Bus) addRun(key string, cancel context.CancelCauseFunc) func() {
	b.runMu.Lock()
	defer b.runMu.Unlock()
	if b.running == nil {
		b.running = map[string]map[*context.CancelCauseFunc]struct{}{}
	}
	if b.running[key] == nil {
		b.running[key] = map[*context.CancelCauseFunc]struct{}{}
	}
	b.running[key][&cancel] = struct{}{}
	return func() {
		b.runMu.Lock()
		defer b.runMu.Unlock()
		delete(b.running[key], &cancel)
		if len(b.running[key]) == 0 {
			delete(b.running, key)
		}
	}
}

func (b *Bus) cancelRuns(key string) {
	b.runMu.Lock()
	defer b.runMu.Unlock()
	for c := range b.running[key] {
		(*c)(errCancelled)
	}
}

// eventPrefix starts the subject of a consumer's per-turn events (core NATS: not stored, best effort).
const eventPrefix = "agentrt.event."

// PublishEvent sends a per-turn event (opaque JSON) to whichever node serves consumer now; nothing is stored,
// and an event nobody listens to is lost.
func (b *Bus) PublishEvent(consumer string, data []byte) {
	_ = b.nc.Publish(eventPrefix+token(consumer), data)
}

// SubscribeEvents calls f with every event published for consumer until stop is called.
func (b *Bus) SubscribeEvents(consumer string, f func(data []byte)) (stop func(), err error) {
	sub, err := b.nc.Subscribe(eventPrefix+token(consumer), func(m *nats.Msg) { f(m.Data) })
	if err != nil {
		return nil, fmt.Errorf("bus: events of %q: %w", consumer, err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// Unacked is the number of the outbox's messages not acked yet (waiting or offered).
func (o *Outbox) Unacked(ctx context.Context) (int, error) {
	ci, err := o.c.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("bus: outbox of %q: %w", o.consumer, err)
	}
	return int(ci.NumPending) + ci.NumAckPending, nil
}

// Backlog is the number of messages in every trainer's outbox not acked yet (waiting or offered): what the bbolt
// spool's record count was, the same figure on every node.
func (b *Bus) Backlog(ctx context.Context) (int, error) {
	n := 0
	lister := b.results.ListConsumers(ctx)
	for ci := range lister.Info() {
		if strings.HasPrefix(ci.Name, outboxPrefix) {
			n += int(ci.NumPending) + ci.NumAckPending
		}
	}
	if err := lister.Err(); err != nil {
		return 0, fmt.Errorf("bus: outboxes: %w", err)
	}
	return n, nil
}

// DropOutbox deletes what consumer's outbox holds (a trainer that starts afresh): the outbox is made again so
// that it offers only results stored from now on. It returns how many messages it held.
func (b *Bus) DropOutbox(ctx context.Context, consumer string) (int, error) {
	o, err := b.Outbox(ctx, consumer)
	if err != nil {
		return 0, err
	}
	n, err := o.Unacked(ctx)
	if err != nil {
		return 0, err
	}
	ci, err := o.c.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("bus: outbox of %q: %w", consumer, err)
	}
	if err := b.js.DeleteConsumer(ctx, ResultStream, ci.Name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return 0, fmt.Errorf("bus: outbox of %q: %w", consumer, err)
	}
	cfg := ci.Config
	cfg.DeliverPolicy = jetstream.DeliverNewPolicy
	if _, err := b.js.CreateConsumer(ctx, ResultStream, cfg); err != nil {
		return 0, fmt.Errorf("bus: outbox of %q: %w", consumer, err)
	}
	return n, nil
}
