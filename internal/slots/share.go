package slots

// Share is a node's part of a limit that holds across a cluster (docs/scale-out.md, "Limits across nodes"): of
// Nodes live nodes, this one is the Rank-th by name. A limit of n is split so that the parts add up to n exactly:
// n/Nodes each, and one more for the first n%Nodes ranks (so a node may get 0 when n < Nodes). While the
// cluster's membership changes, a node holds the smaller of its old and new parts (Also), so no two views can
// add up to more than n.
//
// The zero Share is the whole limit (one node); None is nothing.
type Share struct {
	Rank, Nodes int
	None        bool   // no part at all (a node that has not joined the split yet)
	Also        *Share // the part held is also at most this one's
}

// None is the share of a node that must not use any of a limit yet.
var None = Share{None: true}

// Of is the share's part of a limit of n (0: unlimited stays unlimited).
func (s Share) Of(n int) int {
	if n <= 0 {
		return n
	}
	p := n
	switch {
	case s.None:
		p = 0
	case s.Nodes > 1:
		p = n / s.Nodes
		if s.Rank < n%s.Nodes {
			p++
		}
	}
	if s.Also != nil {
		p = min(p, s.Also.Of(n))
	}
	return p
}

// OfRate is the share's part of a rate (per second; 0: unpaced stays unpaced).
func (s Share) OfRate(r float64) float64 {
	if r <= 0 {
		return r
	}
	p := r
	switch {
	case s.None:
		p = 0
	case s.Nodes > 1:
		p = r / float64(s.Nodes)
	}
	if s.Also != nil {
		p = min(p, s.Also.OfRate(r))
	}
	return p
}
