package discord

import (
	"slices"
	"sync"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// Default bounds of Kimi's gateway caches.
const (
	defaultCachedMessages = 5000
	defaultCachedMembers  = 100000
)

// CacheSizes bound Kimi's own gateway caches; zero fields take defaults.
type CacheSizes struct {
	// Messages is how many recent messages are kept for the before-content
	// of edits and deletes (default 5000); as many of the bot's own message
	// ids are kept for bulk deletes.
	Messages int
	// Members is how many guild members (with their roles) are kept
	// (default 100000); the least recently seen is dropped first.
	Members int
}

// Cache is Kimi's bounded cache of gateway state: recent messages, members
// and their roles, the bot's own message ids. discordgo's state keeps no
// messages by default and drops a removed member before handlers run, so
// the before-content of edits and deletes, the roles at removal and the
// bot's message ids come from here. It is safe for concurrent use: the
// gateway goroutine writes, other areas read members.
type Cache struct {
	msgMu sync.Mutex
	msgs  ringMap[cachedMessage]
	bot   ringMap[struct{}] // the bot's own message ids

	memMu   sync.Mutex
	members memberLRU

	// dir is the directory's revision per guild: the member names
	// changed here, and the guild's channels and roles (dirEvents).
	dir dirRevisions
}

// cachedMessage is what a later edit or delete needs of a message.
type cachedMessage struct {
	guild, channel, parent, author uint64
	authorBot                      bool
	content                        string
	attachments                    []sdk.AttachmentSnapshot
}

// NewCache returns an empty cache bounded by sizes.
func NewCache(sizes CacheSizes) *Cache {
	if sizes.Messages <= 0 {
		sizes.Messages = defaultCachedMessages
	}
	if sizes.Members <= 0 {
		sizes.Members = defaultCachedMembers
	}
	c := &Cache{}
	c.msgs.init(sizes.Messages)
	c.bot.init(sizes.Messages)
	c.members.init(sizes.Members)
	return c
}

// MemberRoles returns a cached member's role ids (sorted, a copy).
func (c *Cache) MemberRoles(guildID, userID uint64) ([]uint64, bool) {
	c.memMu.Lock()
	defer c.memMu.Unlock()
	m := c.members.get(memberKey{guildID, userID})
	if m == nil {
		return nil, false
	}
	return slices.Clone(m.roles), true
}

// Member returns a cached member's snapshot.
func (c *Cache) Member(guildID, userID uint64) (sdk.MemberSnapshot, bool) {
	c.memMu.Lock()
	defer c.memMu.Unlock()
	m := c.members.get(memberKey{guildID, userID})
	if m == nil {
		return sdk.MemberSnapshot{}, false
	}
	return m.snapshot(), true
}

// putMember stores or replaces a member.
func (c *Cache) putMember(m cachedMember) {
	c.memMu.Lock()
	defer c.memMu.Unlock()
	prev, had := c.members.peek(m.key)
	evicted, out := c.members.put(m)
	// The directory shows a member's names only: a message's author put
	// again as it was changes nothing the admin shows.
	if !had || prev.nick != m.nick || prev.name != m.name || prev.user != m.user {
		c.dir.bump(m.key.guild)
	}
	if out {
		c.dir.bump(evicted.guild)
	}
}

// takeMember removes a member and returns what was cached.
func (c *Cache) takeMember(guildID, userID uint64) (cachedMember, bool) {
	c.memMu.Lock()
	defer c.memMu.Unlock()
	m, ok := c.members.remove(memberKey{guildID, userID})
	if ok {
		c.dir.bump(guildID)
	}
	return m, ok
}

// peekMember returns a copy of a cached member without touching its
// recency (the returned roles are shared: do not modify them).
func (c *Cache) peekMember(guildID, userID uint64) (cachedMember, bool) {
	c.memMu.Lock()
	defer c.memMu.Unlock()
	i, ok := c.members.index[memberKey{guildID, userID}]
	if !ok {
		return cachedMember{}, false
	}
	return c.members.entries[i].cachedMember, true
}

// putMessage stores or replaces a message; own marks the bot's own.
func (c *Cache) putMessage(id uint64, m cachedMessage, own bool) {
	c.msgMu.Lock()
	defer c.msgMu.Unlock()
	c.msgs.put(id, m)
	if own {
		c.bot.put(id, struct{}{})
	}
}

// message returns a cached message.
func (c *Cache) message(id uint64) (cachedMessage, bool) {
	c.msgMu.Lock()
	defer c.msgMu.Unlock()
	return c.msgs.get(id)
}

// takeMessage removes a message, returning it and whether it was the bot's.
func (c *Cache) takeMessage(id uint64) (m cachedMessage, cached, own bool) {
	c.msgMu.Lock()
	defer c.msgMu.Unlock()
	m, cached = c.msgs.remove(id)
	_, own = c.bot.remove(id)
	return m, cached, own
}

// rememberBotMessage records a message id as the bot's own (for bulk
// deletes), e.g. right after the actions area sent it.
func (c *Cache) rememberBotMessage(id uint64) {
	c.msgMu.Lock()
	defer c.msgMu.Unlock()
	c.bot.put(id, struct{}{})
}

// dropGuild forgets every message and member of a guild (the bot left it).
func (c *Cache) dropGuild(guildID uint64) {
	c.msgMu.Lock()
	for id, m := range c.msgs.m {
		if m.guild == guildID {
			delete(c.msgs.m, id)
			delete(c.bot.m, id)
		}
	}
	c.msgMu.Unlock()
	c.memMu.Lock()
	c.members.dropGuild(guildID)
	c.memMu.Unlock()
}

// ringMap is a map bounded by a ring of its keys in insertion order: a
// put past the bound evicts the oldest key still present. Replacing a
// key keeps its place.
type ringMap[V any] struct {
	m    map[uint64]V
	ring []uint64
	next int
}

func (r *ringMap[V]) init(size int) {
	r.m = make(map[uint64]V, min(size, 1024))
	r.ring = make([]uint64, size)
}

func (r *ringMap[V]) put(id uint64, v V) {
	if _, ok := r.m[id]; ok {
		r.m[id] = v
		return
	}
	if old := r.ring[r.next]; old != 0 {
		delete(r.m, old)
	}
	r.ring[r.next] = id
	r.next = (r.next + 1) % len(r.ring)
	r.m[id] = v
}

func (r *ringMap[V]) get(id uint64) (V, bool) {
	v, ok := r.m[id]
	return v, ok
}

// remove deletes id; its ring slot stays until overwritten, so the map
// never holds more than the bound (a message id put again after its
// removal may be evicted early by its stale slot, which only shortens its
// stay).
func (r *ringMap[V]) remove(id uint64) (V, bool) {
	v, ok := r.m[id]
	if ok {
		delete(r.m, id)
	}
	return v, ok
}

// memberKey identifies a guild member.
type memberKey struct{ guild, user uint64 }

// cachedMember is what Kimi keeps of a member: ids as uint64, roles as a
// small sorted slice, times as unix integers (0 when unknown or unset).
type cachedMember struct {
	key     memberKey
	roles   []uint64
	nick    string
	name    string // the user's global name, else username
	user    string // the username ("" when it is name)
	joined  int64  // unix seconds
	timeout int64  // unix nanoseconds
	bot     bool
}

func (m *cachedMember) displayName() string {
	if m.nick != "" {
		return m.nick
	}
	return m.name
}

func (m *cachedMember) timedOutUntil() time.Time {
	if m.timeout == 0 {
		return time.Time{}
	}
	return time.Unix(0, m.timeout).UTC()
}

func (m *cachedMember) snapshot() sdk.MemberSnapshot {
	s := sdk.MemberSnapshot{GuildID: m.key.guild, UserID: m.key.user, DisplayName: m.displayName(),
		RoleIDs: slices.Clone(m.roles), IsBot: m.bot, TimedOutUntil: m.timedOutUntil()}
	if m.joined != 0 {
		s.JoinedAt = time.Unix(m.joined, 0).UTC()
	}
	return s
}

// memberLRU is a bounded least-recently-used set of members: entries in a
// slice linked by index (no pointer per entry for the GC to trace), an
// index map from key to slot, and a free list of slots.
type memberLRU struct {
	index      map[memberKey]int32
	entries    []lruEntry
	head, tail int32 // most and least recent; -1 when empty
	free       []int32
	size       int
}

type lruEntry struct {
	cachedMember
	prev, next int32
}

func (l *memberLRU) init(size int) {
	l.size = size
	l.index = make(map[memberKey]int32, min(size, 4096))
	l.head, l.tail = -1, -1
}

func (l *memberLRU) unlink(i int32) {
	e := &l.entries[i]
	if e.prev >= 0 {
		l.entries[e.prev].next = e.next
	} else {
		l.head = e.next
	}
	if e.next >= 0 {
		l.entries[e.next].prev = e.prev
	} else {
		l.tail = e.prev
	}
	e.prev, e.next = -1, -1
}

func (l *memberLRU) pushFront(i int32) {
	e := &l.entries[i]
	e.prev, e.next = -1, l.head
	if l.head >= 0 {
		l.entries[l.head].prev = i
	}
	l.head = i
	if l.tail < 0 {
		l.tail = i
	}
}

// get returns the member (marking it recent), nil when absent.
func (l *memberLRU) get(k memberKey) *cachedMember {
	i, ok := l.index[k]
	if !ok {
		return nil
	}
	l.unlink(i)
	l.pushFront(i)
	return &l.entries[i].cachedMember
}

// peek returns the member cached under k, its recency untouched.
func (l *memberLRU) peek(k memberKey) (cachedMember, bool) {
	i, ok := l.index[k]
	if !ok {
		return cachedMember{}, false
	}
	return l.entries[i].cachedMember, true
}

// put stores m, most recent; a full cache evicts its least recent member,
// whose key it returns.
func (l *memberLRU) put(m cachedMember) (evicted memberKey, out bool) {
	if i, ok := l.index[m.key]; ok {
		l.entries[i].cachedMember = m
		l.unlink(i)
		l.pushFront(i)
		return memberKey{}, false
	}
	var i int32
	switch {
	case len(l.free) > 0:
		i = l.free[len(l.free)-1]
		l.free = l.free[:len(l.free)-1]
	case len(l.entries) < l.size:
		l.entries = append(l.entries, lruEntry{})
		i = int32(len(l.entries) - 1)
	default: // full: reuse the least recent
		i = l.tail
		l.unlink(i)
		evicted, out = l.entries[i].key, true
		delete(l.index, evicted)
	}
	l.entries[i] = lruEntry{cachedMember: m, prev: -1, next: -1}
	l.index[m.key] = i
	l.pushFront(i)
	return evicted, out
}

func (l *memberLRU) remove(k memberKey) (cachedMember, bool) {
	i, ok := l.index[k]
	if !ok {
		return cachedMember{}, false
	}
	m := l.entries[i].cachedMember
	l.unlink(i)
	delete(l.index, k)
	l.entries[i] = lruEntry{prev: -1, next: -1}
	l.free = append(l.free, i)
	return m, true
}

func (l *memberLRU) dropGuild(guildID uint64) {
	for k := range l.index {
		if k.guild == guildID {
			l.remove(k)
		}
	}
}

func (l *memberLRU) len() int { return len(l.index) }

// searchMembers returns at most limit of the guild's cached members that
// match (a scan of the cache under its lock).
func (c *Cache) searchMembers(guildID uint64, match func(*cachedMember) bool, limit int) []MemberInfo {
	c.memMu.Lock()
	defer c.memMu.Unlock()
	var out []MemberInfo
	for k, i := range c.members.index {
		if k.guild != guildID {
			continue
		}
		m := &c.members.entries[i].cachedMember
		if match(m) {
			out = append(out, MemberInfo{ID: k.user, DisplayName: m.displayName(), Username: m.user})
			if len(out) == limit {
				break
			}
		}
	}
	return out
}
