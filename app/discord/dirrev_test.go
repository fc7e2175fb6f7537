package discord

import "testing"

// TestDirectoryRevisionFollowsTheMemberCache: a member's revision moves
// when the cache learns a member, a shown name changes, a member leaves
// or is evicted, and stays when a member is put again as it was (every
// message's author is).
func TestDirectoryRevisionFollowsTheMemberCache(t *testing.T) {
	c := NewCache(CacheSizes{Members: 2})
	ada := cachedMember{key: memberKey{guild: 1, user: 10}, name: "Ada", user: "ada"}
	steps := []struct {
		name  string
		do    func()
		guild uint64
		moves bool
	}{
		{"a new member", func() { c.putMember(ada) }, 1, true},
		{"the same member again", func() { c.putMember(ada) }, 1, false},
		{"new roles only", func() { m := ada; m.roles = []uint64{5}; c.putMember(m) }, 1, false},
		{"a nickname", func() { m := ada; m.nick = "Countess"; c.putMember(m) }, 1, true},
		{"another guild's member", func() { c.putMember(cachedMember{key: memberKey{guild: 2, user: 11}, name: "Bo"}) }, 1, false},
		{"an eviction", func() { c.putMember(cachedMember{key: memberKey{guild: 2, user: 12}, name: "Cy"}) }, 1, true},
		{"a member who left", func() { c.takeMember(2, 12) }, 2, true},
		{"one not cached left", func() { c.takeMember(2, 99) }, 2, false},
		{"a new session", func() { c.dir.epoch.Add(1) }, 1, true},
	}
	for _, s := range steps {
		before := c.dir.revision(s.guild)
		s.do()
		if moved := c.dir.revision(s.guild) != before; moved != s.moves {
			t.Errorf("%s: revision moved = %v, want %v", s.name, moved, s.moves)
		}
	}
}
