package sglang

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync"
	"time"
)

// Affinity values: what keeps requests together on one worker.
const (
	// AffinityGroup keeps a group's samples on one worker (the group given with WithGroup): the group's shared
	// first prompt is cached where they all run (a sample that arrives while another's prefill of it is still
	// running prefills it too, as under SGLang's default FCFS scheduling), and each episode's later turns follow it
	// there. Requests without a group route by their episode.
	AffinityGroup = "group"
	// AffinityEpisode routes each episode by itself: the samples of a group may land on different workers, and each
	// prefills the shared prompt.
	AffinityEpisode = "episode"
)

// Placement values: how a key (a group or an episode) finds its worker.
const (
	// PlacementLeastLoaded sends a new key to the worker with the fewest tokens in flight and queued from this
	// client (with [sglang.adaptive], the higher of that and the used and waiting tokens the worker's /v1/loads
	// reported), then keeps it there until it has been idle for Config.PlacementTTL.
	PlacementLeastLoaded = "least_loaded"
	// PlacementRendezvous ranks the workers by rendezvous hashing of the key: stateless, and every client process
	// agrees on the order, but blind to load (long groups can pile up on one worker).
	PlacementRendezvous = "rendezvous"
)

type groupCtxKey struct{}

// WithGroup returns a ctx whose Generate calls belong to group, the n samples of one prompt: under AffinityGroup
// they share a worker, and with a Gateway the group is the X-SMG-Routing-Key. It is routing data, like a header;
// an empty group returns ctx.
func WithGroup(ctx context.Context, group string) context.Context {
	if group == "" {
		return ctx
	}
	return context.WithValue(ctx, groupCtxKey{}, group)
}

func groupOf(ctx context.Context) string {
	g, _ := ctx.Value(groupCtxKey{}).(string)
	return g
}

// routeKey is the key a request routes by: its group under AffinityGroup when it has one, else its episode.
func (c *Client) routeKey(ctx context.Context, episodeID string) string {
	if c.cfg.Affinity != AffinityEpisode {
		if g := groupOf(ctx); g != "" {
			return g
		}
	}
	return episodeID
}

// placements remembers where each key was placed (PlacementLeastLoaded): groups and episodes, each with the time
// of its last request, dropped after ttl idle.
type placements struct {
	ttl   time.Duration
	mu    sync.Mutex
	m     map[placeKey]*placement
	swept time.Time
}

type placeKey struct {
	group bool
	id    string
}

type placement struct {
	w    *worker
	used time.Time
}

func (p *placements) get(k placeKey, now time.Time) *worker {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.m[k]
	if e == nil || now.Sub(e.used) > p.ttl {
		return nil
	}
	e.used = now
	return e.w
}

func (p *placements) set(k placeKey, w *worker, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.m[k]; e != nil {
		e.w, e.used = w, now
	} else {
		p.m[k] = &placement{w: w, used: now}
	}
	if now.Sub(p.swept) > max(p.ttl/4, time.Second) {
		p.swept = now
		for k, e := range p.m {
			if now.Sub(e.used) > p.ttl {
				delete(p.m, k)
			}
		}
	}
}

func (p *placements) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}

// load is what least-loaded placement compares, in tokens (the KV cache a worker's requests hold, which bounds how
// many it can run and, with long contexts, how long its decode steps take): the input tokens of this client's
// requests in flight and queued on w, or, when the adaptive controller read the worker's /v1/loads within the last
// two intervals, its used and waiting tokens if more (other clients' included). The client's own count is always
// current, so a burst of placements between two readings spreads instead of piling onto one worker.
func (c *Client) load(w *worker, now time.Time) int {
	n := int(w.inFlightTokens.Load() + w.queuedTokens.Load())
	if at := w.loadAt.Load(); at != 0 && now.Sub(time.Unix(0, at)) <= 2*c.cfg.Adaptive.Interval {
		n = max(n, int(w.serverLoad.Load()))
	}
	return n
}

// leastLoaded is the healthy worker with the lowest load; ties go to the highest rendezvous score of key, so an
// idle cluster places keys as rendezvous hashing would. nil if no worker is healthy.
func (c *Client) leastLoaded(key string, now time.Time) *worker {
	h := hashString(key)
	var best *worker
	bestLoad, bestScore := math.MaxInt, uint64(0)
	for _, w := range c.generators {
		if !w.healthy(now) {
			continue
		}
		l, s := c.load(w, now), mix64(h^w.seed)
		if l < bestLoad || (l == bestLoad && s > bestScore) {
			best, bestLoad, bestScore = w, l, s
		}
	}
	return best
}

// acquireSticky is acquire under PlacementLeastLoaded. The episode's own worker comes first (its later turns find
// their history cached there), then its group's, then the least-loaded healthy worker, which becomes the group's
// (and the episode's) home. A home without a free slot spills to the least-loaded other worker with one (the
// episode then stays there: its history is cached there now); with none free the request queues at home.
func (c *Client) acquireSticky(ctx context.Context, episodeID string, tokens int) (*worker, error) {
	now := time.Now()
	group := ""
	if c.cfg.Affinity != AffinityEpisode {
		group = groupOf(ctx)
	}
	ek, gk := placeKey{id: episodeID}, placeKey{group: true, id: group}
	var home, gh *worker
	if episodeID != "" {
		home = c.places.get(ek, now)
	}
	if group != "" {
		gh = c.places.get(gk, now) // looked up (and kept alive) even when the episode has its own worker
	}
	if home == nil || !home.healthy(now) {
		home = gh
	}
	if home == nil || !home.healthy(now) {
		key := group
		if key == "" {
			key = episodeID
		}
		home = c.leastLoaded(key, now)
		if home == nil { // every worker is marked unhealthy: try the key's rendezvous first rather than fail
			var buf [16]*worker
			home = c.rank(buf[:0], key)[0]
		}
		if group != "" {
			c.places.set(gk, home, now)
		}
	}
	w := home
	if !w.tryAcquire() {
		if w = c.spill(home, now); w == nil {
			if err := home.acquire(ctx, tokens); err != nil {
				return nil, err
			}
			w = home
		}
	}
	if episodeID != "" {
		c.places.set(ek, w, now)
	}
	return w, nil
}

// spill takes a slot on the least-loaded healthy worker other than home that has one free; nil if none has.
func (c *Client) spill(home *worker, now time.Time) *worker {
	type cand struct {
		w    *worker
		load int
	}
	var buf [16]cand
	cs := buf[:0]
	for _, w := range c.generators {
		if w != home && w.healthy(now) {
			cs = append(cs, cand{w, c.load(w, now)})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return cmp.Compare(a.load, b.load) })
	for _, x := range cs {
		if x.w.tryAcquire() {
			return x.w
		}
	}
	return nil
}
