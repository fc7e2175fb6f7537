package guildcfg

import (
	"container/list"
	"sync"
)

// Bounds of the document cache: at most this many documents, and at most
// this many bytes of their texts (a document may be MaxDocumentBytes).
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
	bytes   int
}

type docEntry struct {
	key string
	doc Document
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
	if len(doc.Text) > docCacheBytes/4 {
		return // a few huge documents must not push out every other one
	}
	c.entries[key] = c.lru.PushFront(&docEntry{key: key, doc: doc})
	c.bytes += len(doc.Text)
	for len(c.entries) > docCacheEntries || c.bytes > docCacheBytes {
		c.removeLocked(c.lru.Back())
	}
}

func (c *docCache) removeLocked(e *list.Element) {
	ent := c.lru.Remove(e).(*docEntry)
	delete(c.entries, ent.key)
	c.bytes -= len(ent.doc.Text)
}

// len is the number of cached documents (for tests).
func (c *docCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
