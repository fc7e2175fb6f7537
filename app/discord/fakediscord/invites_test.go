package fakediscord

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
)

// TestJoinWithInviteCountsUses: a member joining through an invite raises
// that invite's uses as GET /guilds/{guild}/invites shows them (the other
// invites keep theirs), an invite reaching its max uses is gone, and an
// expired, used-up or foreign code, or a member joining again, counts no
// use. The guild's vanity code counts on its vanity-url uses.
func TestJoinWithInviteCountsUses(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	w := newWorld(t, Options{Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	s := w.rest()
	invite := func(maxAge, maxUses int) string {
		t.Helper()
		inv, err := s.ChannelInviteCreate(w.text, discordgo.Invite{MaxAge: maxAge, MaxUses: maxUses})
		if err != nil {
			t.Fatal(err)
		}
		return inv.Code
	}
	reusable, other, once, short := invite(0, 0), invite(0, 0), invite(0, 1), invite(60, 0)
	foreignGuild := w.fake.AddGuild(GuildSpec{Name: "elsewhere"}).ID
	foreignChannel := w.fake.AddChannel(ChannelSpec{GuildID: foreignGuild, Name: "general"}).ID
	foreign, err := s.ChannelInviteCreate(foreignChannel, discordgo.Invite{})
	if err != nil {
		t.Fatal(err)
	}
	w.fake.SetVanityURL(w.guild, "kimi", 3)

	steps := []struct {
		name    string
		user    string // a new user when ""
		code    string
		advance time.Duration
		wantErr error
		want    map[string]int // the guild's invites and their uses after the step
	}{
		{name: "first join", code: reusable, want: map[string]int{reusable: 1, other: 0, once: 0, short: 0}},
		{name: "second join, same invite", code: reusable, want: map[string]int{reusable: 2, other: 0, once: 0, short: 0}},
		{name: "another invite", code: other, want: map[string]int{reusable: 2, other: 1, once: 0, short: 0}},
		{name: "a member joins again", user: w.alice, code: reusable, wantErr: ErrAlreadyMember, want: map[string]int{reusable: 2, other: 1, once: 0, short: 0}},
		{name: "reaching max uses deletes the invite", code: once, want: map[string]int{reusable: 2, other: 1, short: 0}},
		{name: "a used-up invite", code: once, wantErr: ErrUnknownInvite, want: map[string]int{reusable: 2, other: 1, short: 0}},
		{name: "another guild's invite", code: foreign.Code, wantErr: ErrUnknownInvite, want: map[string]int{reusable: 2, other: 1, short: 0}},
		{name: "an unknown code", code: "nope", wantErr: ErrUnknownInvite, want: map[string]int{reusable: 2, other: 1, short: 0}},
		{name: "within max age", code: short, advance: 59 * time.Second, want: map[string]int{reusable: 2, other: 1, short: 1}},
		{name: "an expired invite", code: short, advance: time.Second, wantErr: ErrUnknownInvite, want: map[string]int{reusable: 2, other: 1, short: 1}},
		{name: "the vanity code", code: "kimi", want: map[string]int{reusable: 2, other: 1, short: 1}},
	}
	for i, st := range steps {
		mu.Lock()
		now = now.Add(st.advance)
		mu.Unlock()
		user := st.user
		if user == "" {
			user = w.fake.AddUser(discordgo.User{Username: "joiner" + string(rune('a'+i))}).ID
		}
		m, err := w.fake.JoinWithInvite(w.guild, user, st.code)
		if !errors.Is(err, st.wantErr) {
			t.Fatalf("%s: JoinWithInvite = %v, want %v", st.name, err, st.wantErr)
		}
		if isMember := w.fake.Member(w.guild, user) != nil; err == nil && (m == nil || !isMember) {
			t.Errorf("%s: joined, but %s is not a member", st.name, user)
		} else if err != nil && st.user == "" && isMember {
			t.Errorf("%s: refused, but %s became a member", st.name, user)
		}
		list, lerr := s.GuildInvites(w.guild)
		if lerr != nil {
			t.Fatal(lerr)
		}
		got := map[string]int{}
		for _, inv := range list {
			got[inv.Code] = inv.Uses
		}
		if len(got) != len(st.want) {
			t.Errorf("%s: invites %v, want %v", st.name, got, st.want)
			continue
		}
		for code, uses := range st.want {
			if g, ok := got[code]; !ok || g != uses {
				t.Errorf("%s: invites %v, want %v", st.name, got, st.want)
				break
			}
		}
	}
	url := discordgo.EndpointGuild(w.guild) + "/vanity-url"
	if body, err := s.RequestWithBucketID("GET", url, nil, url); err != nil || string(body) != `{"code":"kimi","uses":4}` {
		t.Errorf("vanity = %s, %v; want its uses counted up to 4", body, err)
	}
}
