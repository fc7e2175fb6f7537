package discord

import (
	"reflect"
	"sync"
	"testing"
)

func evMember(guild, user uint64, roles ...uint64) cachedMember {
	return cachedMember{key: memberKey{guild, user}, roles: roles}
}

func TestCacheMembersLRUBound(t *testing.T) {
	c := NewCache(CacheSizes{Members: 3})
	for u := uint64(1); u <= 3; u++ {
		c.putMember(evMember(1, u, u*10))
	}
	// Reading member 1 makes it recent: member 2 is now the least recent.
	if _, ok := c.MemberRoles(1, 1); !ok {
		t.Fatal("member 1 missing")
	}
	c.putMember(evMember(1, 4, 40))
	if _, ok := c.MemberRoles(1, 2); ok {
		t.Fatal("the least recently used member was not evicted")
	}
	for _, u := range []uint64{1, 3, 4} {
		if roles, ok := c.MemberRoles(1, u); !ok || !reflect.DeepEqual(roles, []uint64{u * 10}) {
			t.Fatalf("member %d = %v %v", u, roles, ok)
		}
	}
	if n := c.members.len(); n != 3 {
		t.Fatalf("%d members cached, bound 3", n)
	}
	// Removal frees a slot reused without eviction.
	if _, ok := c.takeMember(1, 3); !ok {
		t.Fatal("take member 3")
	}
	c.putMember(evMember(1, 5, 50))
	for _, u := range []uint64{1, 4, 5} {
		if _, ok := c.MemberRoles(1, u); !ok {
			t.Fatalf("member %d evicted though a slot was free", u)
		}
	}
	if len(c.members.entries) != 3 {
		t.Fatalf("%d slots allocated for 3 members", len(c.members.entries))
	}
	// The returned roles are a copy.
	roles, _ := c.MemberRoles(1, 5)
	roles[0] = 99
	if again, _ := c.MemberRoles(1, 5); again[0] != 50 {
		t.Fatal("MemberRoles returned the cache's own slice")
	}
}

func TestCacheMessagesRingBound(t *testing.T) {
	c := NewCache(CacheSizes{Messages: 2})
	c.putMessage(1, cachedMessage{content: "one"}, true)
	c.putMessage(2, cachedMessage{content: "two"}, false)
	c.putMessage(1, cachedMessage{content: "one again"}, true) // a replacement keeps its place
	c.putMessage(3, cachedMessage{content: "three"}, false)
	if _, ok := c.message(1); ok {
		t.Fatal("the oldest message was not evicted")
	}
	if m, ok := c.message(3); !ok || m.content != "three" {
		t.Fatal("newest message missing")
	}
	if len(c.msgs.m) > 2 {
		t.Fatalf("%d messages cached, bound 2", len(c.msgs.m))
	}
	if _, _, own := c.takeMessage(2); own {
		t.Fatal("a user's message counted as the bot's")
	}
}

// TestCacheConcurrentReaders runs the gateway's writes against other
// areas' reads (go test -race shows any unguarded access).
func TestCacheConcurrentReaders(t *testing.T) {
	c := NewCache(CacheSizes{Members: 64, Messages: 64})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for u := uint64(0); u < 100; u++ {
					c.MemberRoles(1, u)
					c.Member(1, u)
				}
			}
		}()
	}
	for i := uint64(0); i < 20000; i++ {
		c.putMember(evMember(1+i%2, i%100, i))
		c.putMessage(i+1, cachedMessage{guild: 1 + i%2}, i%3 == 0)
		if i%1000 == 0 {
			c.dropGuild(2)
		}
		if i%7 == 0 {
			c.takeMember(1, i%100)
		}
	}
	close(stop)
	wg.Wait()
	if c.members.len() > 64 || len(c.msgs.m) > 64 || len(c.bot.m) > 64 {
		t.Fatalf("bounds exceeded: %d members, %d messages, %d bot ids", c.members.len(), len(c.msgs.m), len(c.bot.m))
	}
	// The LRU's links agree with its index.
	n := 0
	for i := c.members.head; i >= 0; i = c.members.entries[i].next {
		n++
		if got, ok := c.members.index[c.members.entries[i].key]; !ok || got != i {
			t.Fatalf("slot %d not indexed", i)
		}
	}
	if n != c.members.len() {
		t.Fatalf("list holds %d members, index %d", n, c.members.len())
	}
}

func TestCacheMemberSnapshot(t *testing.T) {
	c := NewCache(CacheSizes{})
	c.putMember(cachedMember{key: memberKey{1, 2}, roles: []uint64{3}, name: "Global", bot: true, joined: 1700000000})
	s, ok := c.Member(1, 2)
	if !ok || s.DisplayName != "Global" || !s.IsBot || s.JoinedAt.Unix() != 1700000000 || !s.TimedOutUntil.IsZero() || !reflect.DeepEqual(s.RoleIDs, []uint64{3}) {
		t.Fatalf("snapshot = %+v %v", s, ok)
	}
}
