package viewer

import (
	"slices"

	"github.com/agentrt/agentrt/tito"
)

// entry is one trajectory a source holds: in memory (a Ring's) or as a line of a file (a File's).
type entry struct {
	sum  Summary
	traj *tito.Trajectory // Ring
	off  int64            // File: the line's offset and length
	n    int
	size int64 // Ring: the memory it is taken to hold
	gone bool  // replaced or evicted; dropped from order at the next compaction
}

// catalog indexes a source's entries by id and in arrival order. Not safe for concurrent use: its source locks.
type catalog struct {
	seq   uint64
	order []*entry // arrival order, gone entries included until compact
	byID  map[string]*entry
	live  int
	bytes int64
}

func newCatalog() catalog { return catalog{byID: map[string]*entry{}} }

// put adds e (numbering it) and drops an entry with the same id: a trajectory delivered again replaces the earlier.
func (c *catalog) put(e *entry) {
	c.seq++
	e.sum.Seq = c.seq
	if old := c.byID[e.sum.ID]; old != nil {
		c.drop(old)
	}
	c.byID[e.sum.ID] = e
	c.order = append(c.order, e)
	c.live++
	c.bytes += e.size
}

func (c *catalog) drop(e *entry) {
	if e.gone {
		return
	}
	e.gone = true
	c.live--
	c.bytes -= e.size
	if c.byID[e.sum.ID] == e {
		delete(c.byID, e.sum.ID)
	}
	if gone := len(c.order) - c.live; gone > 64 && gone > c.live {
		c.order = slices.DeleteFunc(c.order, func(e *entry) bool { return e.gone })
	}
}

// oldest returns the oldest live entry, or nil.
func (c *catalog) oldest() *entry {
	for i, e := range c.order {
		if !e.gone {
			c.order = c.order[i:]
			return e
		}
	}
	c.order = c.order[:0]
	return nil
}

func (c *catalog) reset() {
	*c = catalog{seq: c.seq, byID: map[string]*entry{}}
}

// list returns the summaries that match f, newest first, at most limit of them, and how many matched.
func (c *catalog) list(f Filter, limit int) ([]Summary, int) {
	var out []Summary
	matched := 0
	for i := len(c.order) - 1; i >= 0; i-- {
		e := c.order[i]
		if e.gone || !f.match(&e.sum) {
			continue
		}
		matched++
		if len(out) < limit {
			out = append(out, e.sum)
		}
	}
	return out, matched
}

// group returns a group's entries by sample index.
func (c *catalog) group(id string) []*entry {
	var out []*entry
	for _, e := range c.order {
		if !e.gone && e.sum.GroupID == id {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b *entry) int { return a.sum.SampleIndex - b.sum.SampleIndex })
	return out
}

func (c *catalog) facets() Facets {
	f := Facets{Total: c.live, Statuses: map[string]int{}, Agents: []string{}}
	seen := map[string]bool{}
	for _, e := range c.order {
		if e.gone {
			continue
		}
		f.Statuses[e.sum.Status]++
		if a := e.sum.Agent; a != "" && !seen[a] {
			seen[a] = true
			f.Agents = append(f.Agents, a)
		}
	}
	slices.Sort(f.Agents)
	return f
}
