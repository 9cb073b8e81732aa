package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentrt/agentrt/internal/slots"
)

// Limits are what a node splits with the other live nodes (docs/scale-out.md, "Limits across nodes"): its
// environment services' max_concurrent and creates_per_second and its model servers' in-flight bounds, which
// the user sets for the whole cluster.
type Limits interface {
	// SetShare makes every limit this node's share of it; what is in use above a lowered share finishes.
	SetShare(slots.Share)
	// Within says whether nothing above the share is in use.
	Within() bool
}

// How a node follows its share. The view is the set of live nodes (their presence, as in Control); each node
// of a view of L nodes holds the part of each limit its rank gives it (slots.Share: the parts add up to the
// limit). A node that sees the view change at once holds the smaller of its old and new parts (a node that has
// just started: nothing), and once nothing above that is in use it says so in its presence record (View). It
// takes its new part whole only when every node of the view has said so. So at no time do the nodes that count
// hold more than the limit: a node grows only after every other node has shrunk and drained. A node that dies
// stops counting when its presence record expires on the server (ack_wait after its last renewal), when its
// claims (and so its episodes' environments) are gone too; until then the others keep their smaller parts (the cluster under-uses a limit, never exceeds it).
type shares struct {
	seen map[string]presence // node name -> its presence record, as the last read of the bucket showed it

	viewNodes []string    // the view followed now
	view      string      // its key (presence.View)
	target    slots.Share // this node's part of that view
	applied   slots.Share // what it holds: target, or target and its old part while the view is not confirmed
}

// startShares reads the presence records (the node's own is stored already, and it holds nothing yet), so that
// its first view counts every node already live.
func (n *controlNode) startShares(ctx context.Context) (*shares, error) {
	sh := &shares{applied: slots.None}
	err := retryTransient(ctx, n.b.log, "read nodes", func(ctx context.Context) (err error) {
		sh.seen, err = n.readNodes(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bus: read nodes: %w", err)
	}
	return sh, nil
}

// readNodes reads every presence record stored now. The bucket's TTL is the server's: a record not renewed
// for ack_wait is gone, whatever this node's clock or watch saw (a watch that stalls while a stream's leader
// moves would make live nodes look dead, and their parts look free).
func (n *controlNode) readNodes(ctx context.Context) (map[string]presence, error) {
	w, err := n.b.nodes.WatchAll(ctx)
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	seen := map[string]presence{}
	err = currentRecords(ctx, w, func(e jetstream.KeyValueEntry) {
		var p presence
		if e.Operation() == jetstream.KeyValuePut && json.Unmarshal(e.Value(), &p) == nil && p.Node != "" {
			seen[p.Node] = p
		}
	})
	if err != nil {
		return nil, err
	}
	return seen, nil
}

// followShares keeps the node's share of the limits in step with the live nodes until ctx ends.
func (n *controlNode) followShares(ctx context.Context, sh *shares) {
	// The records change every ack_wait/4 at most; the node's own drain is seen locally, so it is checked often.
	every := n.b.presenceTTL() / 4
	drain := time.NewTicker(min(every, 100*time.Millisecond))
	defer drain.Stop()
	read := time.NewTicker(every)
	defer read.Stop()
	for {
		n.reshare(ctx, sh)
		select {
		case <-ctx.Done():
			return
		case <-read.C:
			rctx, cancel := context.WithTimeout(ctx, every)
			seen, err := n.readNodes(rctx)
			cancel()
			if err == nil {
				sh.seen = seen
			} else if ctx.Err() == nil {
				// The view stays as it was: no part grows on what could not be read.
				n.b.log.Debug("bus: could not read the live nodes; the shares stay", "node", n.name, "err", err)
			}
		case <-drain.C:
		}
	}
}

// reshare moves the node one step: to a new view's smaller part, to saying it is within it, or to its whole
// new part.
func (n *controlNode) reshare(ctx context.Context, sh *shares) {
	names := []string{n.name}
	for name := range sh.seen {
		if name != n.name {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if view := strings.Join(names, "\n"); view != sh.view {
		old := sh.applied
		sh.viewNodes, sh.view = names, view
		sh.target = slots.Share{Rank: slices.Index(names, n.name), Nodes: len(names)}
		sh.applied = sh.target
		sh.applied.Also = &old
		n.lim.SetShare(sh.applied)
		n.b.log.Info("bus: the live nodes changed; this node's share of the limits follows", "node", n.name,
			"nodes", len(names), "rank", sh.target.Rank)
	}
	n.mu.Lock()
	published := n.view
	n.mu.Unlock()
	if published != sh.view && n.lim.Within() {
		n.mu.Lock()
		n.view = sh.view
		n.mu.Unlock()
		if err := n.renew(ctx); err != nil && ctx.Err() == nil {
			n.b.log.Warn("bus: could not record this node's share of the limits", "node", n.name, "err", err)
		}
		published = sh.view
	}
	if sh.applied.Also == nil || published != sh.view {
		return
	}
	for _, name := range sh.viewNodes {
		if name != n.name && sh.seen[name].View != sh.view {
			return // not every node has made room yet
		}
	}
	sh.applied = sh.target
	n.lim.SetShare(sh.applied)
	n.b.log.Debug("bus: every live node is within the split; this node takes its whole share", "node", n.name,
		"nodes", sh.target.Nodes, "rank", sh.target.Rank)
}
