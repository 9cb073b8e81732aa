package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentrt/agentrt/internal/slots"
)

// The buckets of the cluster-wide controls (docs/scale-out.md, "Pause, resume and weight updates").
const (
	// ControlBucket holds one record, the cluster's control state: paused or not (and how), and the last
	// weights asked for. Every node watches it; a node that starts reads it first.
	ControlBucket = "agentrt_control"
	// NodeBucket holds one record per live node (its presence): renewed every ack_wait/4, gone ack_wait after
	// the node's last renewal (the bucket's TTL) or at once when the node stops; it says which control state the
	// node has applied.
	NodeBucket = "agentrt_nodes"

	controlKey = "state"
)

// The control operations.
const (
	OpPause         = "pause"
	OpResume        = "resume"
	OpUpdateWeights = "update_weights"
)

// Weights is an update_weights control: what the model servers load.
type Weights struct {
	ModelPath     string          `json:"model_path"`
	WeightVersion string          `json:"weight_version,omitempty"`
	Options       json.RawMessage `json:"options,omitempty"`
}

// Control is one control message of a trainer.
type Control struct {
	Op      string   // OpPause, OpResume or OpUpdateWeights
	Mode    string   // OpPause: SGLang's pause mode
	Weights *Weights // OpUpdateWeights
}

// Controller applies the cluster's controls on one node: its pause gate and its model servers (the rollout
// service). Its methods are those a single node's trainer connection calls.
type Controller interface {
	Pause(ctx context.Context, mode string) error
	Resume(ctx context.Context) error
	UpdateWeights(ctx context.Context, w Weights) error
}

// controlState is the control record. Seq counts the controls sent (each one, even a repeated pause, is a new
// state every node applies); WeightsSeq is the Seq of the last update_weights.
type controlState struct {
	Seq        uint64   `json:"seq"`
	Op         string   `json:"op"`
	Paused     bool     `json:"paused"`
	Mode       string   `json:"mode,omitempty"`
	Weights    *Weights `json:"weights,omitempty"`
	WeightsSeq uint64   `json:"weights_seq,omitempty"`
}

// presence is a node's record in NodeBucket.
type presence struct {
	Node    string `json:"node"`
	Applied uint64 `json:"applied"`           // the control Seq this node has applied (or failed to)
	ErrSeq  uint64 `json:"err_seq,omitempty"` // the Seq whose application failed here, with
	Err     string `json:"error,omitempty"`   // its error
	// View is the live nodes (names, sorted, one per line) whose split of the limits this node is within
	// (limits.go): it holds at most its share of that view, and nothing above it is in use.
	View string `json:"view,omitempty"`
}

// setupControl creates (or updates) the control and presence buckets.
func (b *Bus) setupControl(ctx context.Context) (err error) {
	r := b.cfg.replicas()
	if b.control, err = b.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: ControlBucket, Storage: jetstream.FileStorage, Replicas: r}); err != nil {
		return fmt.Errorf("bucket %s: %w", ControlBucket, err)
	}
	if b.nodes, err = b.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: NodeBucket, Storage: jetstream.FileStorage, Replicas: r, TTL: b.presenceTTL()}); err != nil {
		return fmt.Errorf("bucket %s: %w", NodeBucket, err)
	}
	if b.cfg.Mode == ModeEmbedded && b.ownSrv {
		// One process is the only node: a killed predecessor's presence (its server name may differ) would hold
		// the first controls back until it lapsed.
		st, err := b.js.Stream(ctx, "KV_"+NodeBucket)
		if err != nil {
			return fmt.Errorf("bucket %s: %w", NodeBucket, err)
		}
		if err := st.Purge(ctx); err != nil {
			return fmt.Errorf("bucket %s: %w", NodeBucket, err)
		}
	}
	return nil
}

// presenceTTL is how long a node's presence lasts without a renewal: a claim's length, so a dead node stops
// counting for controls when its samples go to other nodes.
func (b *Bus) presenceTTL() time.Duration { return b.cfg.AckWait }

// Control sends a trainer's control to every node and returns once every live node has applied it: pause
// (every node's gate is closed and its model servers paused), resume, or update_weights. A node is live while
// its presence record is renewed; a node that dies stops counting ack_wait after its last renewal, so it cannot
// hold a control back for longer. A node that starts later reads the state first (a cluster that is paused
// stays paused on it; the last weights asked for are loaded on its servers). An error names each node that
// could not apply the control, with its reason.
func (b *Bus) Control(ctx context.Context, c Control) error {
	switch c.Op {
	case OpPause, OpResume:
	case OpUpdateWeights:
		if c.Weights == nil {
			return errors.New("bus: update_weights without weights")
		}
	default:
		return fmt.Errorf("bus: unknown control %q", c.Op)
	}
	var st controlState
	err := retryTransient(ctx, b.log, "control "+c.Op, func(ctx context.Context) error {
		var err error
		st, err = b.putControl(ctx, c)
		return err
	})
	if err != nil {
		return fmt.Errorf("bus: control %s: %w", c.Op, err)
	}
	return b.awaitApplied(ctx, st.Seq)
}

// putControl stores the state after c, compare-and-set on the record's revision (controls sent at once from
// several nodes each get their own Seq).
func (b *Bus) putControl(ctx context.Context, c Control) (controlState, error) {
	for {
		var st controlState
		var rev uint64
		e, err := b.control.Get(ctx, controlKey)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return st, err
		default:
			if err := json.Unmarshal(e.Value(), &st); err != nil {
				return st, fmt.Errorf("the control record: %w", err)
			}
			rev = e.Revision()
		}
		st.Seq++
		st.Op = c.Op
		switch c.Op {
		case OpPause:
			st.Paused, st.Mode = true, c.Mode
		case OpResume:
			st.Paused, st.Mode = false, ""
		case OpUpdateWeights:
			st.Weights, st.WeightsSeq = c.Weights, st.Seq
		}
		v, err := json.Marshal(st)
		if err != nil {
			return st, err
		}
		if rev == 0 {
			_, err = b.control.Create(ctx, controlKey, v)
		} else {
			_, err = b.control.Update(ctx, controlKey, v, rev)
		}
		if isWrongRevision(err) {
			continue // another control was stored in between: apply ours on top of it
		}
		return st, err
	}
}

func isWrongRevision(err error) bool {
	var api *jetstream.APIError
	return errors.Is(err, jetstream.ErrKeyExists) || (errors.As(err, &api) &&
		(api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant))
}

// awaitApplied waits until every live node has applied control seq (or failed to). Liveness is seen here: a
// node counts while its presence record was renewed within the TTL by this process's clock (the watch shows
// every renewal), and stops counting when its record is deleted (it stopped).
func (b *Bus) awaitApplied(ctx context.Context, seq uint64) error {
	w, stopWatch, err := b.watchAll(ctx, b.nodes, "watch nodes")
	if err != nil {
		return fmt.Errorf("bus: watch nodes: %w", err)
	}
	defer stopWatch()
	type seen struct {
		p  presence
		at time.Time
	}
	live := map[string]seen{}
	ttl := b.presenceTTL()
	tick := time.NewTicker(ttl / 4)
	defer tick.Stop()
	initial := true
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("bus: the watch of the nodes ended: %w", context.Cause(ctx))
			}
			if e == nil {
				initial = false
				break
			}
			if e.Operation() != jetstream.KeyValuePut {
				delete(live, e.Key())
				break
			}
			var p presence
			if json.Unmarshal(e.Value(), &p) != nil {
				delete(live, e.Key())
				break
			}
			live[e.Key()] = seen{p: p, at: time.Now()}
		case <-tick.C:
		case <-ctx.Done():
			var waiting []string
			for k, s := range live {
				if s.p.Applied < seq {
					waiting = append(waiting, k)
				}
			}
			slices.Sort(waiting)
			return fmt.Errorf("bus: control %d not applied by nodes %v: %w", seq, waiting, context.Cause(ctx))
		}
		if initial {
			continue
		}
		var failed []string
		pending := false
		for k, s := range live {
			switch {
			case time.Since(s.at) > ttl:
				b.log.Warn("bus: a node stopped renewing its presence: it no longer counts for controls", "node", s.p.Node)
				delete(live, k)
			case s.p.ErrSeq >= seq:
				failed = append(failed, s.p.Node+": "+s.p.Err)
			case s.p.Applied < seq:
				pending = true
			}
		}
		if !pending {
			if len(failed) > 0 {
				slices.Sort(failed)
				return fmt.Errorf("bus: control not applied on every node: %s", strings.Join(failed, "; "))
			}
			return nil
		}
	}
}

// watchAll watches every key of kv until ctx ends or stop is called. The watch (a consumer, made through the
// meta leader) is created in attempts of 2-16 s: a request lost with a dead leader would otherwise wait for ctx's
// whole deadline. The watch lives as long as the context it was created with, so each attempt has its own,
// cancelled when the attempt times out.
func (b *Bus) watchAll(ctx context.Context, kv jetstream.KeyValue, what string) (jetstream.KeyWatcher, func(), error) {
	for wait, attempt := 2*time.Second, 1; ; wait, attempt = min(2*wait, 16*time.Second), attempt+1 {
		wctx, cancel := context.WithCancel(ctx)
		timer := time.AfterFunc(wait, cancel)
		w, err := kv.WatchAll(wctx)
		if timer.Stop() && err == nil {
			return w, func() { w.Stop(); cancel() }, nil
		}
		cancel()
		if err == nil {
			w.Stop()
			err = context.DeadlineExceeded // the attempt timed out as it succeeded
		}
		if ctx.Err() != nil || (!transient(err) && !errors.Is(err, context.Canceled)) {
			return nil, nil, err
		}
		b.log.Warn("bus: the store did not answer, trying again", "op", what, "attempt", attempt, "attempt_timeout", wait, "err", err)
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// currentRecords reads what a new watch shows first, the records stored when it started (a nil entry ends them),
// calling f with each, until ctx ends.
func currentRecords(ctx context.Context, w jetstream.KeyWatcher, f func(jetstream.KeyValueEntry)) error {
	for {
		select {
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				return errors.New("the watch ended")
			case e == nil:
				return nil
			}
			f(e)
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// controlNode applies the cluster's control state on one serving node and keeps its presence record.
type controlNode struct {
	b    *Bus
	ctl  Controller
	key  string
	name string
	lim  Limits // nil: the node splits no limits

	// apply runs on one goroutine at a time (startControl's, then the watch's); mu guards the fields below
	// for renew, which never waits on an application (a long weight load must not let the presence lapse).
	mu      sync.Mutex
	applied controlState
	started bool
	errSeq  uint64
	err     string
	view    string // presence.View
}

// startControl registers the node's presence, applies the control state before the node claims anything (a
// node that starts while the cluster is paused starts paused), then follows the state and renews the presence
// until ctx ends. The func returned deletes the presence record (the node no longer counts for controls).
func (b *Bus) startControl(ctx context.Context, ctl Controller, lim Limits) (stop func(), err error) {
	n := &controlNode{b: b, ctl: ctl, lim: lim, name: b.NodeName(), key: token(b.NodeName())}
	var sh *shares
	if lim != nil {
		// Nothing of the limits is used until the other nodes have made room, and the node is present before it
		// reads who else is: of two nodes starting at once, one sees the other (limits.go).
		lim.SetShare(slots.None)
		if err := n.renew(ctx); err != nil {
			return nil, fmt.Errorf("bus: register node %s: %w", n.name, err)
		}
		if sh, err = n.startShares(ctx); err != nil {
			return nil, err
		}
	}
	w, stopWatch, err := b.watchAll(ctx, b.control, "watch controls")
	if err != nil {
		return nil, fmt.Errorf("bus: watch controls: %w", err)
	}
	// The current state comes first; apply it before serving.
	var first jetstream.KeyValueEntry
	if err := currentRecords(ctx, w, func(e jetstream.KeyValueEntry) { first = e }); err != nil {
		stopWatch()
		return nil, fmt.Errorf("bus: watch controls: %w", err)
	}
	if first != nil {
		n.apply(ctx, first)
	}
	if err := n.renew(ctx); err != nil {
		stopWatch()
		return nil, fmt.Errorf("bus: register node %s: %w", n.name, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if sh != nil {
		wg.Go(func() { n.followShares(wctx, sh) })
	}
	wg.Go(func() {
		defer stopWatch()
		for {
			select {
			case <-wctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e != nil && e.Operation() == jetstream.KeyValuePut {
					n.apply(wctx, e)
					if err := n.renew(wctx); err != nil && wctx.Err() == nil {
						b.log.Warn("bus: could not record the control applied here", "node", n.name, "err", err)
					}
				}
			}
		}
	})
	wg.Go(func() {
		t := time.NewTicker(b.presenceTTL() / 4)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
				if err := n.renew(wctx); err != nil && wctx.Err() == nil {
					b.log.Warn("bus: could not renew the node's presence", "node", n.name, "err", err)
				}
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
		dctx, dcancel := context.WithTimeout(context.Background(), stopGrace)
		defer dcancel()
		if err := n.b.nodes.Delete(dctx, n.key); err != nil && !b.nc.IsClosed() {
			b.log.Warn("bus: could not remove the node's presence (it lapses after ack_wait)", "node", n.name, "err", err)
		}
	}, nil
}

// apply brings the node to the state in e: a node that starts applies the whole state (pause, the last
// weights); a running node applies the control sent (a pause or a resume is applied even when the node is in
// that state already, as one process applies it) and, if it missed some, what changed since the last it applied.
func (n *controlNode) apply(ctx context.Context, e jetstream.KeyValueEntry) {
	var st controlState
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		n.b.log.Error("bus: a control record this node cannot read", "node", n.name, "err", err)
		return
	}
	n.mu.Lock()
	was, started := n.applied, n.started
	n.mu.Unlock()
	if started && st.Seq <= was.Seq {
		return
	}
	if !started {
		was = controlState{}
	}
	var errs []error
	if st.Paused && (!was.Paused || st.Op == OpPause) {
		if err := n.ctl.Pause(ctx, st.Mode); err != nil {
			errs = append(errs, fmt.Errorf("pause: %w", err))
		}
	}
	if st.Weights != nil && st.WeightsSeq != was.WeightsSeq {
		if err := n.ctl.UpdateWeights(ctx, *st.Weights); err != nil {
			errs = append(errs, fmt.Errorf("update_weights: %w", err))
		}
	}
	if !st.Paused && (was.Paused || (started && st.Op == OpResume)) { // a resume is sent on, as one process does
		if err := n.ctl.Resume(ctx); err != nil {
			errs = append(errs, fmt.Errorf("resume: %w", err))
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.applied, n.started = st, true
	if err := errors.Join(errs...); err != nil {
		n.errSeq, n.err = st.Seq, err.Error()
		n.b.log.Warn("bus: a control failed on this node", "node", n.name, "seq", st.Seq, "op", st.Op, "err", err)
	}
}

// renew writes the node's presence record.
func (n *controlNode) renew(ctx context.Context) error {
	n.mu.Lock()
	p := presence{Node: n.name, Applied: n.applied.Seq, ErrSeq: n.errSeq, Err: n.err, View: n.view}
	n.mu.Unlock()
	v, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return retryTransient(ctx, n.b.log, "presence", func(ctx context.Context) error {
		_, err := n.b.nodes.Put(ctx, n.key, v)
		return err
	})
}
