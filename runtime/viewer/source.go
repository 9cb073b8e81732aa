package viewer

import (
	"errors"
	"sync"

	"github.com/agentrt/agentrt/tito"
)

// ErrNotFound is returned for an id the source does not hold (never received, or evicted from a Ring).
var ErrNotFound = errors.New("viewer: no such trajectory")

// Source is what the page shows: trajectories with their summaries. Ring and File implement it.
type Source interface {
	// Info says what the source is, for the page's header.
	Info() SourceInfo
	// List returns the summaries that match f, newest first, at most limit, and how many matched.
	List(f Filter, limit int) (items []Summary, matched int)
	// Get returns a trajectory by id (ErrNotFound when the source does not hold it).
	Get(id string) (*tito.Trajectory, error)
	// Group returns the trajectories of a group that the source holds, by sample index.
	Group(id string) ([]*tito.Trajectory, error)
	// Facets are the values the filters offer.
	Facets() Facets
	// Subscribe delivers the summary of each trajectory the source receives from now on.
	Subscribe() *Subscription
}

// SourceInfo describes a source.
type SourceInfo struct {
	// Kind is "live" (a Ring that a running service feeds) or "file".
	Kind string `json:"kind"`
	// Name is the service's description or the file's path.
	Name string `json:"name"`
	// Capacity is a Ring's bound on trajectories (0 for a file).
	Capacity int `json:"capacity,omitempty"`
	// Skipped counts a file's lines that are not trajectories; FirstSkip says why the first one was skipped.
	Skipped   int    `json:"skipped,omitempty"`
	FirstSkip string `json:"first_skip,omitempty"`
}

// Ring holds the most recent finished trajectories of a running service, bounded in count and memory. Add is
// what the rollout service calls for every finished episode: it never blocks on the page, never fails and keeps
// the trajectory itself (not a copy), which must not change afterwards. Safe for concurrent use.
type Ring struct {
	name     string
	max      int
	maxBytes int64

	mu  sync.Mutex
	cat catalog
	hub hub
}

// NewRing returns a ring that keeps at most max trajectories taking at most maxBytes (estimated); name describes
// the service on the page.
func NewRing(name string, max int, maxBytes int64) *Ring {
	return &Ring{name: name, max: max, maxBytes: maxBytes, cat: newCatalog(), hub: newHub()}
}

// Add keeps t as the newest trajectory (replacing one with the same id), evicts the oldest past the bounds, and
// offers t's summary to the page's subscribers.
func (r *Ring) Add(t *tito.Trajectory) {
	e := &entry{sum: summarize(t), traj: t, size: trajectorySize(t)}
	r.mu.Lock()
	r.cat.put(e)
	for r.cat.live > r.max || (r.cat.bytes > r.maxBytes && r.cat.live > 1) {
		r.cat.drop(r.cat.oldest())
	}
	sum := e.sum
	r.mu.Unlock()
	r.hub.publish(sum)
}

// trajectorySize estimates the memory a trajectory holds: 13 bytes a token (id, mask, logprob), its JSON fields,
// and a little for the rest.
func trajectorySize(t *tito.Trajectory) int64 {
	return int64(13*len(t.TokenIDs) + len(t.Messages) + len(t.Label) + len(t.Metadata) + 64*len(t.Segments) + 1024)
}

// Close ends the page's event streams.
func (r *Ring) Close() { r.hub.close() }

// Info implements Source.
func (r *Ring) Info() SourceInfo { return SourceInfo{Kind: "live", Name: r.name, Capacity: r.max} }

// List implements Source.
func (r *Ring) List(f Filter, limit int) ([]Summary, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cat.list(f, limit)
}

// Get implements Source.
func (r *Ring) Get(id string) (*tito.Trajectory, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.cat.byID[id]; e != nil {
		return e.traj, nil
	}
	return nil, ErrNotFound
}

// Group implements Source.
func (r *Ring) Group(id string) ([]*tito.Trajectory, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tito.Trajectory
	for _, e := range r.cat.group(id) {
		out = append(out, e.traj)
	}
	return out, nil
}

// Facets implements Source.
func (r *Ring) Facets() Facets {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cat.facets()
}

// Subscribe implements Source.
func (r *Ring) Subscribe() *Subscription { return r.hub.subscribe() }
