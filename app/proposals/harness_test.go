package proposals

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// world is a real SQLite store, the guild configuration, fakediscord with
// one guild (two channels, a staff member and a plain member), a real Bot
// connected to it, and the service with the cards' handler registered.
type world struct {
	t       *testing.T
	ctx     context.Context
	st      *store.Store
	guilds  *guildcfg.Service
	fake    *fakediscord.Server
	bot     *discord.Bot
	svc     *Service
	guild   uint64
	chans   []uint64 // #general, #review
	staff   uint64
	member  uint64
	other   uint64 // a second guild's id
	otherCh uint64
	logs    *logBuffer

	mu       sync.Mutex
	notifyFn func(ctx context.Context) (settings.ProposalNotifications, error)
	webhooks []string
}

type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *logBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// Test modules: alpha takes its guild offline when its settings are invalid
// (disable_guild, the default), beta has settings too, gamma is not loaded.
func testSpecs() []sdk.Spec {
	return []sdk.Spec{
		{Name: "alpha", GuildSettings: &sdk.GuildSettingsSchema{Fields: []sdk.GuildSettingField{
			{Name: "channel_id", Kind: sdk.GuildSettingID},
			{Name: "mode", Kind: sdk.GuildSettingEnum, Default: "quiet", Choices: []string{"quiet", "loud"}},
		}, Validate: func(v map[string]any) []string {
			if v["mode"] == "loud" && v["channel_id"] == nil {
				return []string{"loud mode needs channel_id"}
			}
			return nil
		}}},
		{Name: "beta", GuildSettings: &sdk.GuildSettingsSchema{Fields: []sdk.GuildSettingField{{Name: "n", Kind: sdk.GuildSettingInt}}}},
		{Name: "gamma", GuildSettings: &sdk.GuildSettingsSchema{Fields: []sdk.GuildSettingField{{Name: "n", Kind: sdk.GuildSettingInt}}}},
	}
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{t: t, ctx: ctx, logs: &logBuffer{}}
	logger := slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	w.st = st
	w.guilds, err = guildcfg.New(ctx, st, guildcfg.Options{Modules: testSpecs(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.guilds.Close)
	w.fake = fakediscord.New(fakediscord.Options{})
	t.Cleanup(w.fake.Close)
	g := w.fake.AddGuild(fakediscord.GuildSpec{Name: "g"})
	w.guild = parse(g.ID)
	for _, name := range []string{"general", "review"} {
		w.chans = append(w.chans, parse(w.fake.AddChannel(fakediscord.ChannelSpec{GuildID: g.ID, Name: name}).ID))
	}
	staff := w.fake.AddUser(discordgo.User{Username: "staffer"})
	w.fake.AddMember(g.ID, staff.ID)
	w.staff = parse(staff.ID)
	mem := w.fake.AddUser(discordgo.User{Username: "member"})
	w.fake.AddMember(g.ID, mem.ID)
	w.member = parse(mem.ID)
	og := w.fake.AddGuild(fakediscord.GuildSpec{Name: "other"})
	w.other = parse(og.ID)
	w.otherCh = parse(w.fake.AddChannel(fakediscord.ChannelSpec{GuildID: og.ID, Name: "x"}).ID)
	w.fake.AddMember(og.ID, staff.ID)
	w.writeDoc(guildcfg.GuildTarget(w.guild), w.guildDoc(0))
	w.writeDoc(guildcfg.GuildTarget(w.other), fmt.Sprintf("---\nbot_active: true\nstaff_user_ids: [%d]\n---\n", w.staff))

	w.bot, err = discord.New(discord.Options{Store: st, Guilds: w.guilds, Logger: logger, Transport: w.fake.Transport(), Dialer: w.fake.Dialer(),
		Token: w.fake.Token(), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	w.svc, err = New(Options{Store: st, Guilds: w.guilds, Discord: discord.NewCards(w.bot), Logger: logger,
		KnownModule: func(m string) bool { return m == "alpha" || m == "beta" },
		Notify: func(ctx context.Context) (settings.ProposalNotifications, error) {
			w.mu.Lock()
			fn := w.notifyFn
			w.mu.Unlock()
			if fn == nil {
				return settings.ProposalNotifications{Mode: settings.NotifyOff}, nil
			}
			return fn(ctx)
		},
		Webhook: func(ctx context.Context, url string, payload any) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.webhooks = append(w.webhooks, fmt.Sprintf("%s %+v", url, payload))
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.svc.Close)
	w.bot.RegisterCoreHandler("proposals", Buttons{S: w.svc})
	w.bot.Start(ctx)
	t.Cleanup(func() { _ = w.bot.Close() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := w.bot.Status()
		if s.State == discord.StateConnected && len(s.Guilds) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bot did not connect: %+v", s)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return w
}

func parse(s string) uint64 {
	var v uint64
	fmt.Sscan(s, &v)
	return v
}

// guildDoc is the guild's server setup (a proposal channel when non-zero).
func (w *world) guildDoc(proposalChannel uint64) string {
	doc := fmt.Sprintf("---\nbot_active: true\nstaff_user_ids: [%d]\n", w.staff)
	if proposalChannel != 0 {
		doc += fmt.Sprintf("proposal_channel_id: %d\n", proposalChannel)
	}
	return doc + "---\n"
}

func (w *world) writeDoc(t guildcfg.Target, text string) guildcfg.Document {
	w.t.Helper()
	cur, err := w.guilds.Document(w.ctx, t)
	if err != nil {
		w.t.Fatal(err)
	}
	doc, err := w.guilds.Write(w.ctx, t, text, cur.Revision, guildcfg.Actor{Kind: guildcfg.ActorAdmin, Name: "admin"})
	if err != nil {
		w.t.Fatalf("write %s: %v", t, err)
	}
	return doc
}

func (w *world) doc(t guildcfg.Target) guildcfg.Document {
	w.t.Helper()
	d, err := w.guilds.Document(w.ctx, t)
	if err != nil {
		w.t.Fatal(err)
	}
	return d
}

func (w *world) actor() sdk.ProposalActor {
	return sdk.ProposalActor{UserID: w.member, Source: "alpha:setup", GuildID: w.guild, ChannelID: w.chans[0]}
}

func (w *world) alphaTarget() string { return sdk.GuildModuleTarget(w.guild, "alpha") }

// propose proposes alpha's settings as alpha.
func (w *world) propose(content string) sdk.ProposalRef {
	w.t.Helper()
	ref, err := w.svc.Port("alpha").Propose(w.ctx, sdk.Proposal{Target: w.alphaTarget(), Content: content, Summary: "set alpha", Actor: w.actor()})
	if err != nil {
		w.t.Fatalf("Propose: %v", err)
	}
	return ref
}

func (w *world) proposal(id string) Proposal {
	w.t.Helper()
	p, _, err := w.svc.Get(w.ctx, id)
	if err != nil {
		w.t.Fatalf("Get(%s): %v", id, err)
	}
	return p
}

// card is the card's message in fakediscord.
func (w *world) card(p Proposal) *discordgo.Message {
	w.t.Helper()
	for _, m := range w.fake.Messages(fmt.Sprint(p.Card.ChannelID)) {
		if m.ID == fmt.Sprint(p.Card.MessageID) {
			return m
		}
	}
	w.t.Fatalf("card %d not in channel %d", p.Card.MessageID, p.Card.ChannelID)
	return nil
}

// click clicks a card button as user and waits for the ephemeral reply.
func (w *world) click(p Proposal, user uint64, key string) string {
	w.t.Helper()
	iid, err := w.fake.ClickButton(fmt.Sprint(p.Card.ChannelID), fmt.Sprint(p.Card.MessageID), fmt.Sprint(user), "m:proposals:"+key+":"+p.ID)
	if err != nil {
		w.t.Fatalf("click %s: %v", key, err)
	}
	return w.reply(iid)
}

// reply waits (generously) for an interaction's answer text.
func (w *world) reply(iid string) string {
	w.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		st := w.fake.Interaction(iid)
		if st != nil {
			for _, m := range st.Followups {
				if m.Content != "" {
					return m.Content
				}
			}
			if st.Original != nil && st.Original.Content != "" {
				return st.Original.Content
			}
			if st.Response != nil && st.Response.Data != nil && st.Response.Data.Content != "" {
				return st.Response.Data.Content
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.t.Fatalf("no reply to interaction %s", iid)
	return ""
}

func (w *world) audits(action string) []string {
	w.t.Helper()
	rows, err := w.st.Reader().Query(`SELECT actor || ' ' || target || ' ' || detail FROM kimi_audit_log WHERE action = ? ORDER BY id`, action)
	if err != nil {
		w.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		out = append(out, s)
	}
	return out
}

func (w *world) count(q string, args ...any) int {
	w.t.Helper()
	var n int
	if err := w.st.Reader().QueryRow(q, args...).Scan(&n); err != nil && err != sql.ErrNoRows {
		w.t.Fatal(err)
	}
	return n
}

func buttonsOf(m *discordgo.Message) []string {
	var ids []string
	for _, row := range m.Components {
		if r, ok := row.(*discordgo.ActionsRow); ok {
			for _, c := range r.Components {
				if b, ok := c.(*discordgo.Button); ok {
					ids = append(ids, b.CustomID)
				}
			}
		}
	}
	return ids
}
