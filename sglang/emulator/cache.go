package emulator

import (
	"slices"
	"sync"
)

// radixCache models SGLang's radix prefix cache: token sequences in a compressed trie, namespaced by extra_key,
// bounded by a token capacity with least-recently-used leaf eviction. It only counts; it stores no KV.
type radixCache struct {
	mu       sync.Mutex
	roots    map[string]*rnode
	capacity int
	size     int
	clock    uint64
}

type rnode struct {
	key      []int32
	children map[int32]*rnode
	parent   *rnode
	last     uint64
}

func newRadixCache(capacity int) *radixCache {
	return &radixCache{roots: map[string]*rnode{}, capacity: capacity}
}

// match returns the length of the longest cached prefix of ids and marks it used.
func (c *radixCache) match(ns string, ids []int32) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clock++
	n := c.roots[ns]
	matched := 0
	for n != nil && matched < len(ids) {
		child := n.children[ids[matched]]
		if child == nil {
			break
		}
		k := commonPrefix(child.key, ids[matched:])
		matched += k
		child.last = c.clock
		if k < len(child.key) {
			break
		}
		n = child
	}
	return matched
}

// insert adds ids, splitting edges as needed, then evicts down to capacity.
func (c *radixCache) insert(ns string, ids []int32) {
	if c.capacity == 0 || len(ids) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clock++
	n := c.roots[ns]
	if n == nil {
		n = &rnode{children: map[int32]*rnode{}}
		c.roots[ns] = n
	}
	for len(ids) > 0 {
		child := n.children[ids[0]]
		if child == nil {
			leaf := &rnode{key: slices.Clone(ids), children: map[int32]*rnode{}, parent: n, last: c.clock}
			n.children[ids[0]] = leaf
			c.size += len(ids)
			break
		}
		k := commonPrefix(child.key, ids)
		child.last = c.clock
		if k < len(child.key) {
			// split child at k
			mid := &rnode{key: child.key[:k:k], children: map[int32]*rnode{}, parent: n, last: c.clock}
			child.key = child.key[k:]
			child.parent = mid
			mid.children[child.key[0]] = child
			n.children[mid.key[0]] = mid
			child = mid
		}
		ids = ids[k:]
		n = child
	}
	if c.size > c.capacity {
		c.evict(c.capacity * 9 / 10)
	}
}

// evict removes least recently used leaves until size <= target.
func (c *radixCache) evict(target int) {
	for c.size > target {
		var leaves []*rnode
		var walk func(n *rnode)
		walk = func(n *rnode) {
			for _, ch := range n.children {
				if len(ch.children) == 0 {
					leaves = append(leaves, ch)
				} else {
					walk(ch)
				}
			}
		}
		for _, r := range c.roots {
			walk(r)
		}
		if len(leaves) == 0 {
			return
		}
		slices.SortFunc(leaves, func(a, b *rnode) int {
			switch {
			case a.last < b.last:
				return -1
			case a.last > b.last:
				return 1
			}
			return 0
		})
		for _, l := range leaves {
			if c.size <= target {
				return
			}
			delete(l.parent.children, l.key[0])
			c.size -= len(l.key)
		}
	}
}

func (c *radixCache) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.roots = map[string]*rnode{}
	c.size = 0
}

func (c *radixCache) tokens() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
