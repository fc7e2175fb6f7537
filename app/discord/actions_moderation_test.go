package discord

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/modules/sdk"
)

func TestActTargetPolicy(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	ctx := context.Background()
	cases := []struct {
		name     string
		override bool
		user     uint64
		actor    uint64
		want     string
	}{
		{"the bot itself", false, w.bot, 0, "the bot cannot moderate itself"},
		{"the bot itself, overridden", true, w.bot, 0, "the bot cannot moderate itself"},
		{"the actor", false, w.regular, w.regular, "a member cannot be moderated by themselves"},
		{"the actor, overridden", true, w.regular, w.regular, "a member cannot be moderated by themselves"},
		{"an absent member", false, w.absent, 0, "member " + idString(w.absent) + " is not in guild " + idString(w.guild)},
		{"a bot", false, w.botUser, 0, "bots cannot be moderated by modules"},
		{"a bot, overridden", true, w.botUser, 0, "bots cannot be moderated by modules"},
		{"same tier (regular)", false, w.regular2, w.regular, "target's trust tier is not below the actor's"},
		{"same tier (member)", false, w.member2, w.member, "target's trust tier is not below the actor's"},
		{"above the actor", false, w.staff, w.regular, "target's trust tier is not below the actor's"},
		{"automated (actor 0 is staff) on staff", false, w.staff, 0, "target's trust tier is not below the actor's"},
		{"inactive guild", false, 0, 0, "guild " + idString(w.other) + " is not active for this bot"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(w.f.Requests())
			mod := w.a.forModulePolicy("mod", tc.override)
			guild := w.guild
			if tc.user == 0 {
				guild, tc.user = w.other, w.member
			}
			m := sdk.Moderation{ActorID: tc.actor, Reason: "spam"}
			for name, err := range map[string]error{
				"ban":     mod.Ban(ctx, guild, tc.user, m, 0),
				"kick":    mod.Kick(ctx, guild, tc.user, m),
				"timeout": mod.Timeout(ctx, guild, tc.user, m, time.Minute),
			} {
				wantErr(t, err, tc.want)
				var p *TargetProtectedError
				if tc.want != "guild "+idString(w.other)+" is not active for this bot" && !errors.As(err, &p) {
					t.Fatalf("%s: %T, want *TargetProtectedError", name, err)
				}
			}
			for _, r := range w.f.Requests()[before:] {
				if r.Method != "GET" {
					t.Fatalf("a refused moderation reached Discord: %s %s", r.Method, r.Path)
				}
			}
		})
	}
}

func TestActModerationRequests(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	ctx := context.Background()
	mod := w.a.forModule("mod")
	reason := "  spam\n and   ünïcode  "
	wantReason := "[mod] spam and ünïcode"
	header := func(r fakediscord.Request) string {
		h, err := url.PathUnescape(r.Header.Get("X-Audit-Log-Reason"))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}

	// A staff actor times a regular out, capped at 28 days.
	if err := mod.Timeout(ctx, w.guild, w.regular, sdk.Moderation{ActorID: w.staff, Reason: reason}, 40*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	patch := w.f.RequestsTo("PATCH /guilds/{guild}/members/{user}")
	if len(patch) != 1 || header(patch[0]) != wantReason {
		t.Fatalf("timeout requests = %+v", patch)
	}
	var tb struct {
		Until time.Time `json:"communication_disabled_until"`
	}
	if err := json.Unmarshal(patch[0].Body, &tb); err != nil || tb.Until.After(time.Now().Add(sdk.MaxTimeout)) || tb.Until.Before(time.Now().Add(sdk.MaxTimeout-time.Hour)) {
		t.Fatalf("timeout body = %s (%v), want 28 days from now", patch[0].Body, err)
	}
	if err := mod.Timeout(ctx, w.guild, w.regular, sdk.Moderation{}, 0); err == nil || err.Error() != "timeout duration must be positive" {
		t.Fatalf("zero timeout: %v", err)
	}

	// Automated (actor 0) kick of a member.
	if err := mod.Kick(ctx, w.guild, w.member2, sdk.Moderation{Reason: reason}); err != nil {
		t.Fatal(err)
	}
	kicks := w.f.RequestsTo("DELETE /guilds/{guild}/members/{user}")
	if len(kicks) != 1 || header(kicks[0]) != wantReason || w.f.Member(idString(w.guild), idString(w.member2)) != nil {
		t.Fatalf("kick requests = %+v", kicks)
	}

	// Bans send delete_message_seconds, clamped to 0..604800.
	for _, c := range []struct {
		user uint64
		del  time.Duration
		want int
	}{{w.member, 30 * 24 * time.Hour, 604800}, {w.regular2, -time.Hour, 0}, {w.regular, 90 * time.Second, 90}} {
		before := len(w.f.RequestsTo("PUT /guilds/{guild}/bans/{user}"))
		if err := mod.Ban(ctx, w.guild, c.user, sdk.Moderation{ActorID: w.staff, Reason: reason}, c.del); err != nil {
			t.Fatal(err)
		}
		bans := w.f.RequestsTo("PUT /guilds/{guild}/bans/{user}")[before:]
		var bb map[string]any
		_ = json.Unmarshal(bans[0].Body, &bb)
		if len(bans) != 1 || header(bans[0]) != wantReason || bb["delete_message_seconds"] != float64(c.want) || bb["delete_message_days"] != nil || len(bb) != 1 {
			t.Fatalf("ban of %d: %s %s", c.user, bans[0].Body, bans[0].Header.Get("X-Audit-Log-Reason"))
		}
		if b := w.f.Ban(idString(w.guild), idString(c.user)); b == nil || b.Reason != wantReason {
			t.Fatalf("ban recorded = %+v", b)
		}
	}

	// The override bans an absent user by id; the reason still carries the module.
	if err := w.a.forModulePolicy("mod", true).Ban(ctx, w.guild, w.absent, sdk.Moderation{ActorID: w.member, Reason: "raid"}, 0); err != nil {
		t.Fatal(err)
	}
	if b := w.f.Ban(idString(w.guild), idString(w.absent)); b == nil || b.Reason != "[mod] raid" {
		t.Fatalf("override ban = %+v", b)
	}
}

func TestActTier(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	w.cfg.staffUsers = []uint64{w.absent}
	ctx := context.Background()
	for _, c := range []struct {
		guild, user uint64
		want        sdk.TrustTier
	}{
		{w.guild, w.staff, sdk.TierStaff},
		{w.guild, w.regular, sdk.TierRegular},
		{w.guild, w.member, sdk.TierMember},
		{w.guild, 31337, sdk.TierMember},   // unknown member
		{w.guild, w.absent, sdk.TierStaff}, // unknown member in the staff ids
		{w.other, w.staff, sdk.TierMember}, // not a member there
	} {
		got, err := w.a.tier(ctx, c.guild, c.user)
		if err != nil || got != c.want {
			t.Fatalf("tier(%d, %d) = %v, %v; want %v", c.guild, c.user, got, err, c.want)
		}
	}
	// Not in the session state: fetched over REST.
	w.s.State.MemberRemove(mustMember(t, w, w.regular))
	before := len(w.f.RequestsTo("GET /guilds/{guild}/members/{user}"))
	if got, _ := w.a.tier(ctx, w.guild, w.regular); got != sdk.TierRegular {
		t.Fatalf("fetched tier = %v", got)
	}
	if n := len(w.f.RequestsTo("GET /guilds/{guild}/members/{user}")) - before; n != 1 {
		t.Fatalf("member fetches = %d, want 1", n)
	}
}

func mustMember(t *testing.T, w *actWorld, user uint64) *discordgo.Member {
	t.Helper()
	m, err := w.s.State.Member(idString(w.guild), idString(user))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
