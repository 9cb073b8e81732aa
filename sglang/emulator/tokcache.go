package emulator

import (
	"container/list"
	"encoding/binary"
	"strings"
	"sync"
)

// lru is a small mutex-guarded least-recently-used map.
type lru[V any] struct {
	mu  sync.Mutex
	cap int
	m   map[string]*list.Element
	l   list.List
}

type lruEntry[V any] struct {
	k string
	v V
}

func newLRU[V any](capacity int) *lru[V] {
	return &lru[V]{cap: capacity, m: make(map[string]*list.Element, capacity)}
}

func (c *lru[V]) get(k string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[k]; ok {
		c.l.MoveToFront(e)
		return e.Value.(*lruEntry[V]).v, true
	}
	var zero V
	return zero, false
}

func (c *lru[V]) put(k string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[k]; ok {
		e.Value.(*lruEntry[V]).v = v
		c.l.MoveToFront(e)
		return
	}
	c.m[k] = c.l.PushFront(&lruEntry[V]{k, v})
	for c.l.Len() > c.cap {
		e := c.l.Back()
		c.l.Remove(e)
		delete(c.m, e.Value.(*lruEntry[V]).k)
	}
}

// tokCache memoises the tokenizer calls of the policies: prompts are decoded message by message (split before
// each turn-opening special token, which decodes on its own), so a conversation's earlier messages (the system
// prompt, the tool specs) are decoded once; reply texts are encoded once.
type tokCache struct {
	tok        Tokenizer
	boundaries []int32
	decoded    *lru[string]
	encoded    *lru[[]int32]
	tools      *lru[[]toolSpec] // by message text
}

func newTokCache(tok Tokenizer) *tokCache {
	c := &tokCache{tok: tok, decoded: newLRU[string](4096), encoded: newLRU[[]int32](4096), tools: newLRU[[]toolSpec](256)}
	for _, s := range []string{"<|im_start|>", "<|start_header_id|>", mistralInst, mistralResults,
		kimiSystem, kimiUser, kimiAssistant, minimaxMsg, seedBOS} {
		if ids := tok.Encode(s, false); len(ids) == 1 && tok.Decode(ids, false) == s {
			c.boundaries = append(c.boundaries, ids[0])
		}
	}
	return c
}

func idsKey(ids []int32) string {
	b := make([]byte, 4*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(id))
	}
	return string(b)
}

// decodePrompt is tok.Decode(ids, false), one message at a time through the cache.
func (c *tokCache) decodePrompt(ids []int32) string {
	if len(c.boundaries) == 0 {
		return c.tok.Decode(ids, false)
	}
	var b strings.Builder
	start := 0
	flush := func(end int) {
		if end <= start {
			return
		}
		seg := ids[start:end]
		k := idsKey(seg)
		t, ok := c.decoded.get(k)
		if !ok {
			t = c.tok.Decode(seg, false)
			c.decoded.put(k, t)
		}
		b.WriteString(t)
		start = end
	}
	for i, id := range ids {
		for _, bd := range c.boundaries {
			if id == bd {
				flush(i)
			}
		}
	}
	flush(len(ids))
	return b.String()
}

// encode is tok.Encode(text, false) through the cache; the result must not be modified.
func (c *tokCache) encode(text string) []int32 {
	if ids, ok := c.encoded.get(text); ok {
		return ids
	}
	ids := c.tok.Encode(text, false)
	c.encoded.put(text, ids)
	return ids
}

// decode is tok.Decode through the cache (reply texts repeat across episodes).
func (c *tokCache) decode(ids []int32, skipSpecialTokens bool) string {
	k := idsKey(ids)
	if skipSpecialTokens {
		k += "s"
	}
	if t, ok := c.decoded.get(k); ok {
		return t
	}
	t := c.tok.Decode(ids, skipSpecialTokens)
	c.decoded.put(k, t)
	return t
}
