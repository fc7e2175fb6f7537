package discord

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/llm"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
)

// usageDay is the day the /usage tests' clock reads.
var usageNow = time.Date(2031, time.March, 4, 10, 0, 0, 0, time.UTC)

type usageClock struct{}

func (usageClock) Now() time.Time { return usageNow }
func (usageClock) AfterFunc(d time.Duration, f func()) assistant.Timer {
	return time.AfterFunc(d, f)
}

type noProvider struct{}

func (noProvider) Provider() llm.Provider { return nil }

// newUsageReader is the real assistant over the world's store and guilds,
// for /usage (its turns are recAssistant's).
func newUsageReader(t *testing.T, st *store.Store, guilds *guildcfg.Service, h *host.Host) UsageReader {
	t.Helper()
	a, err := assistant.NewAssistant(assistant.AssistantOptions{Store: assistant.NewConversations(st, usageClock{}.Now), Provider: noProvider{},
		Tools: h, Guilds: guilds, Settings: st, Clock: usageClock{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	return a
}

func seedDiscordUsage(t *testing.T, st *store.Store, day, guild, user string, prompt, completion int64) {
	t.Helper()
	if err := st.Write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO kimi_assistant_usage (day, guild_id, user_id, model, calls, prompt_tokens, completion_tokens, turns)
			VALUES (?, ?, ?, 'm', 1, ?, ?, 1)`, day, int64(parseID(guild)), int64(parseID(user)), prompt, completion)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// TestUsageCommand: /usage answers ephemerally with the member's own
// tokens today and this month in that guild against their budget; staff
// also see the guild's today against its budget (the guild document's
// assistant.daily_tokens override included). In a DM with the bot it is
// the member's DM tokens (guild 0, which the per-user daily budget limits
// on its own), with no server line.
func TestUsageCommand(t *testing.T) {
	w := newAsstWorld(t, asstOpts{})
	ctx := context.Background()
	if _, err := settings.SaveAssistantLimits(ctx, w.st, settings.AssistantLimitsUpdate{UserTurnsPer10Min: "10", UserDailyTokens: "50000",
		GuildDailyTokens: "1000000", MonthlyTokens: "0"}, settings.Actor{Name: "test"}); err != nil {
		t.Fatal(err)
	}
	seedDiscordUsage(t, w.st, "2031-03-04", w.guild, w.alice, 1000, 234)
	seedDiscordUsage(t, w.st, "2031-03-01", w.guild, w.alice, 2000, 0)
	seedDiscordUsage(t, w.st, "2031-02-27", w.guild, w.alice, 9000, 0) // last month
	seedDiscordUsage(t, w.st, "2031-03-04", w.staffGuild, w.alice, 7, 0)
	seedDiscordUsage(t, w.st, "2031-03-04", w.staffGuild, w.bob, 300, 12)
	seedDiscordUsage(t, w.st, "2031-03-04", w.guild, w.bob, 40000, 0)
	seedDiscordUsage(t, w.st, "2031-03-04", "0", w.alice, 500, 5) // her DMs
	seedDiscordUsage(t, w.st, "2031-03-02", "0", w.alice, 100, 0)
	aliceDM, err := w.f.OpenDM(w.alice)
	if err != nil {
		t.Fatal(err)
	}
	bobDM, err := w.f.OpenDM(w.bob)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, channel, user, want string
	}{
		{"a member sees their own", w.general, w.alice,
			"Your assistant usage here: 1,234 tokens today of your 50,000 daily budget, 3,234 this month.\nBudgets reset at 00:00 UTC."},
		{"in another guild, that guild's", w.staffChan, w.alice,
			"Your assistant usage here: 7 tokens today of your 50,000 daily budget, 7 this month.\nBudgets reset at 00:00 UTC."},
		{"staff also see the guild's", w.staffChan, w.bob,
			"Your assistant usage here: 312 tokens today of your 50,000 daily budget, 312 this month.\n" +
				"This server: 319 tokens today of its 400,000 daily budget.\nBudgets reset at 00:00 UTC."},
		{"in a DM, their DM tokens", aliceDM, w.alice,
			"Your assistant usage in our direct messages: 505 tokens today of your 50,000 daily budget, 605 this month.\nBudgets reset at 00:00 UTC."},
		{"staff in a guild are a member in DMs: no server line", bobDM, w.bob,
			"Your assistant usage in our direct messages: 0 tokens today of your 50,000 daily budget, 0 this month.\nBudgets reset at 00:00 UTC."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := w.f.RunCommand(tt.channel, tt.user, "usage")
			if err != nil {
				t.Fatal(err)
			}
			st := ixAnswered(t, w.f, id)
			if st.Response.Data == nil || st.Response.Data.Content != tt.want {
				t.Fatalf("answer = %+v, want %q", st.Response.Data, tt.want)
			}
			if st.Response.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
				t.Fatal("the answer is not ephemeral")
			}
		})
	}
}
