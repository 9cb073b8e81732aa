package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ConnBucket holds, per consumer, its newest trainer connection (docs/scale-out.md, "Trainer connections"): the
// node and connection that said hello last. The record's revision orders the hellos of the whole cluster; a
// connection whose record was overwritten by a later hello, on any node, is superseded.
const ConnBucket = "agentrt_connections"

// connRecord is a consumer's record in ConnBucket.
type connRecord struct {
	Node string `json:"node"`
	Conn string `json:"conn"`
}

// connClaims is this node's view of ConnBucket: the claims its connections hold and the newest revision seen
// per key. One watch serves every connection of the node.
type connClaims struct {
	mu      sync.Mutex
	ready   chan struct{} // closed when a start of the watch ended (nil: none under way)
	err     error         // why the last start failed
	started bool
	stop    func()                           // ends the watch (Bus.Close)
	newest  map[string]uint64                // key -> the newest revision the watch has shown
	claims  map[string]map[*connClaim]uint64 // key -> this node's claims -> their revisions
}

type connClaim struct {
	once       sync.Once
	superseded func()
}

func (c *connClaim) fire() { c.once.Do(func() { go c.superseded() }) }

// setupConnections creates (or updates) the connection bucket: one record per consumer, no history.
func (b *Bus) setupConnections(ctx context.Context) (err error) {
	b.conns, err = b.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: ConnBucket, Storage: jetstream.FileStorage, Replicas: b.cfg.replicas()})
	if err != nil {
		return fmt.Errorf("bucket %s: %w", ConnBucket, err)
	}
	return nil
}

// ClaimConsumer records conn, a trainer connection that said hello on this node, as its consumer's newest
// connection in the whole cluster. superseded is called once, on its own goroutine, when a later hello of the
// same consumer is recorded (on this node or another); a hello recorded before this one's claim supersedes
// nothing here. release ends the claim (the connection closed): it deletes the record unless a later hello
// overwrote it. An error means the store did not record the hello: the connection must not be served, since no
// later hello elsewhere could supersede it.
func (b *Bus) ClaimConsumer(ctx context.Context, consumer, conn string, superseded func()) (release func(), err error) {
	if err := b.watchConnections(ctx); err != nil {
		return nil, err
	}
	v, err := json.Marshal(connRecord{Node: b.NodeName(), Conn: conn})
	if err != nil {
		return nil, err
	}
	key := token(consumer)
	var rev uint64
	err = retryTransient(ctx, b.log, "claim consumer", func(ctx context.Context) (err error) {
		rev, err = b.conns.Put(ctx, key, v)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bus: record the connection of consumer %q: %w", consumer, err)
	}
	cl := &connClaim{superseded: superseded}
	cc := &b.connClaims
	cc.mu.Lock()
	if cc.newest[key] > rev {
		cl.fire() // a later hello was recorded (and watched) before this claim was registered
	} else {
		if cc.claims[key] == nil {
			cc.claims[key] = map[*connClaim]uint64{}
		}
		cc.claims[key][cl] = rev
	}
	cc.mu.Unlock()
	return func() {
		cc.mu.Lock()
		delete(cc.claims[key], cl)
		if len(cc.claims[key]) == 0 {
			delete(cc.claims, key)
		}
		cc.mu.Unlock()
		dctx, cancel := context.WithTimeout(context.Background(), stopGrace)
		defer cancel()
		// Only this hello's record: a later one keeps its own (a wrong-revision answer is that case).
		if err := b.conns.Delete(dctx, key, jetstream.LastRevision(rev)); err != nil && !isWrongRevision(err) && !b.nc.IsClosed() {
			b.log.Debug("bus: could not remove a connection record (the next hello overwrites it)", "consumer", consumer, "err", err)
		}
	}, nil
}

// watchConnections starts this node's watch of ConnBucket once: a hello recorded after a claim supersedes it.
// It returns once the watch has shown the bucket's current records, so a claim made after it sees every later
// hello, or when ctx ends first (the start goes on for the next claim; a failed start is tried again by it).
func (b *Bus) watchConnections(ctx context.Context) error {
	cc := &b.connClaims
	cc.mu.Lock()
	if cc.started {
		cc.mu.Unlock()
		return nil
	}
	if cc.ready == nil {
		cc.ready = make(chan struct{})
		go b.startConnWatch(cc.ready)
	}
	ready := cc.ready
	cc.mu.Unlock()
	select {
	case <-ready:
	case <-ctx.Done():
		return fmt.Errorf("bus: watch connections: %w", context.Cause(ctx))
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if !cc.started {
		return fmt.Errorf("bus: watch connections: %w", cc.err)
	}
	return nil
}

// connWatchShown bounds the wait for a new watch to show the bucket's current records.
const connWatchShown = 30 * time.Second

// startConnWatch makes the watch (on the bus's lifetime, not a hello's), reads the current records, then follows
// the bucket: each later hello supersedes this node's older claims of its consumer.
func (b *Bus) startConnWatch(ready chan struct{}) {
	cc := &b.connClaims
	w, stop, err := b.watchAll(context.Background(), b.conns, "watch connections") // a closed bus ends it
	newest := map[string]uint64{}
	if err == nil {
		timeout := time.NewTimer(connWatchShown)
		defer timeout.Stop()
		for shown := false; !shown && err == nil; {
			select {
			case e, ok := <-w.Updates():
				switch {
				case !ok:
					err = errors.New("the watch ended")
				case e == nil:
					shown = true // the current records have been shown
				default:
					newest[e.Key()] = max(newest[e.Key()], e.Revision())
				}
			case <-timeout.C:
				err = fmt.Errorf("the current records were not shown within %s", connWatchShown)
			}
		}
		if err != nil {
			stop()
		}
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	defer close(ready)
	if err != nil {
		cc.err, cc.ready = err, nil
		return
	}
	cc.newest, cc.claims, cc.stop, cc.started = newest, map[string]map[*connClaim]uint64{}, stop, true
	go func() {
		for e := range w.Updates() {
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue // a delete is a connection that closed: it supersedes nothing
			}
			cc.mu.Lock()
			key, rev := e.Key(), e.Revision()
			cc.newest[key] = max(cc.newest[key], rev)
			for cl, r := range cc.claims[key] {
				if r < rev {
					cl.fire()
					delete(cc.claims[key], cl)
				}
			}
			cc.mu.Unlock()
		}
	}()
}
