package guildcfg

import (
	"container/list"
	"encoding/json"
	"sync"
)

// Bounds of the document cache: at most this many documents, and at most
// about this many bytes of memory held by them (docCost: a document's text
// and what parsing it built, which for a frontmatter of many short keys is
// over ten times the text).
const (
	docCacheEntries = 512
	docCacheBytes   = 16 << 20
)

// docCache keeps the current revision of recently read documents, parsed,
// so that a page that shows a document does not read and parse it again on
// every view. It is a least-recently-used list bounded by count and by
// text size. Entries are only ever the current revision: every write path
// of the Service (write, Delete, Reload) replaces or drops the target's
// entry, under the Service's writer lock, once its transaction is done and
// before subscribers are told of the change (a subscriber that reads the
// document on a Change reads the revision the Change names).
//
// A reader that misses reads the database without any lock and then offers
// what it read with the generation it saw before the read; the offer is
// refused if any write finished meanwhile, since what it read may be older
// than that write.
type docCache struct {
	mu      sync.Mutex
	gen     uint64 // bumped by every write path
	entries map[string]*list.Element
	lru     list.List // front: most recently used; values *docEntry
	bytes   int       // the entries' docCost
}

type docEntry struct {
	key  string
	doc  Document
	cost int
}

func newDocCache() *docCache {
	return &docCache{entries: map[string]*list.Element{}}
}

// get returns the cached document of key, or the generation a reader must
// offer its database read with.
func (c *docCache) get(key string) (Document, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		c.lru.MoveToFront(e)
		return e.Value.(*docEntry).doc, true, c.gen
	}
	return Document{}, false, c.gen
}

// offer caches doc, read from the database, unless a write path ran since
// gen was handed out.
func (c *docCache) offer(key string, doc Document, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	c.putLocked(key, doc)
}

// set records doc as key's current revision (a committed write).
func (c *docCache) set(key string, doc Document) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.putLocked(key, doc)
}

// drop forgets key (a write whose outcome is not cached).
func (c *docCache) drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if e, ok := c.entries[key]; ok {
		c.removeLocked(e)
	}
}

// reset forgets everything (a reload from the database).
func (c *docCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.entries = map[string]*list.Element{}
	c.lru.Init()
	c.bytes = 0
}

func (c *docCache) putLocked(key string, doc Document) {
	if e, ok := c.entries[key]; ok {
		c.removeLocked(e)
	}
	cost := docCost(doc)
	if cost > docCacheBytes/4 {
		return // a few huge documents must not push out every other one
	}
	c.entries[key] = c.lru.PushFront(&docEntry{key: key, doc: doc, cost: cost})
	c.bytes += cost
	for len(c.entries) > docCacheEntries || c.bytes > docCacheBytes {
		c.removeLocked(c.lru.Back())
	}
}

func (c *docCache) removeLocked(e *list.Element) {
	ent := c.lru.Remove(e).(*docEntry)
	delete(c.entries, ent.key)
	c.bytes -= ent.cost
}

// Rough sizes, in bytes, of what a parsed document holds beside its text:
// a top-level key (its entries in Values and Lines, its place in Keys), a
// value boxed in an interface, a slice or map header, a FieldError.
const (
	costKey     = 96
	costValue   = 16
	costHeader  = 48
	costProblem = 64
)

// docCost estimates the memory a cached document holds: its text, its
// frontmatter's decoded keys and values, and its problems' and settings'
// messages. The parsed server setup and module settings hold at most a few
// hundred ids and a field per schema field, counted in the text's share.
func docCost(d Document) int {
	n := len(d.Text)
	if fm := d.Frontmatter; fm != nil {
		for k, v := range fm.Values {
			n += costKey + 2*len(k) + valueCost(v)
		}
	}
	for _, p := range d.Problems {
		n += costProblem + len(p.Field) + len(p.Message)
	}
	if d.Settings != nil {
		for _, e := range d.Settings.Errors {
			n += costValue + len(e)
		}
	}
	return n
}

// valueCost estimates a decoded frontmatter value's memory.
func valueCost(v any) int {
	switch t := v.(type) {
	case string:
		return costValue + len(t)
	case json.Number:
		return costValue + len(t)
	case []any:
		n := costHeader
		for _, e := range t {
			n += costValue + valueCost(e)
		}
		return n
	case map[string]any:
		n := costHeader
		for k, e := range t {
			n += costKey + len(k) + valueCost(e)
		}
		return n
	}
	return costValue
}

// len is the number of cached documents (for tests).
func (c *docCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
