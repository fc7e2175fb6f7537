package auth

import (
	"sync"
	"time"
)

// SessionCacheTTL bounds how long a validated session is served from memory
// before the database is asked again. Everything this process does to a
// session (logout, rotation, password change, revocation) invalidates the
// cache at once; a change made by another process (`kimi admin
// reset-password` while serving) takes effect within this window.
const SessionCacheTTL = 5 * time.Second

const sessionCacheMax = 4096

// sessionCache keeps recently validated sessions so an admin page view needs
// no database round trip for authentication. Entries keep the secret hash,
// so a cached entry is still checked against the presented cookie.
type sessionCache struct {
	mu      sync.RWMutex
	gen     uint64 // bumped by every invalidation; stale loads are not stored
	entries map[string]cachedSession
}

type cachedSession struct {
	sess       Session
	secretHash []byte
	loaded     time.Time
}

func (c *sessionCache) get(id string, now time.Time) (cachedSession, bool) {
	c.mu.RLock()
	e, ok := c.entries[id]
	c.mu.RUnlock()
	if !ok || now.Sub(e.loaded) >= SessionCacheTTL || now.Before(e.loaded) {
		return cachedSession{}, false
	}
	return e, true
}

func (c *sessionCache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// put stores e unless an invalidation happened since gen was read.
func (c *sessionCache) put(e cachedSession, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.entries == nil || len(c.entries) >= sessionCacheMax {
		c.entries = make(map[string]cachedSession)
	}
	c.entries[e.sess.ID] = e
}

// setLastSeen records a refresh this process wrote.
func (c *sessionCache) setLastSeen(id string, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[id]; ok {
		e.sess.LastSeenAt = t
		c.entries[id] = e
	}
}

func (c *sessionCache) dropID(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.entries, id)
}

func (c *sessionCache) dropAdmin(adminID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for id, e := range c.entries {
		if e.sess.AdminID == adminID {
			delete(c.entries, id)
		}
	}
}

func (c *sessionCache) dropAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
}
