package admin

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/web/templates"
)

// DiscordConn is what the /discord page needs of the bot; *discord.Bot
// implements it.
type DiscordConn interface {
	Status() discord.Status
	TokenSource(ctx context.Context) (string, error)
	ValidateToken(ctx context.Context, token string) (discord.TokenIdentity, error)
	Reconnect()
	ApplyCapabilities(ctx context.Context) error
	Watch(ctx context.Context) <-chan struct{}
}

var _ DiscordConn = (*discord.Bot)(nil)

// discordCheckTimeout bounds the live users/@me check of a submitted token.
const discordCheckTimeout = 10 * time.Second

// discordActionTimeout bounds an intents change (the host restarts the
// modules whose capabilities changed; each start is bounded by the host).
const discordActionTimeout = 5 * time.Minute

// Flash codes of the /discord actions (render.go's map gets them in init,
// so this page's messages stay with it).
const (
	flashDiscordToken     = "dtoken"
	flashDiscordTokenOff  = "dtokenoff"
	flashDiscordTokenEnv  = "dtokenenv"
	flashDiscordIntents   = "dintents"
	flashDiscordCache     = "dcache"
	flashDiscordReconnect = "dreconnect"
)

func init() {
	for code, f := range map[string]templates.Flash{
		flashDiscordToken:     {Kind: templates.FlashSuccess, Message: "Discord accepted the token. It is saved and Kimi is connecting with it."},
		flashDiscordTokenEnv:  {Kind: templates.FlashWarning, Message: "Discord accepted the token and it is saved, but the token from the environment stays in use until that variable is removed."},
		flashDiscordTokenOff:  {Kind: templates.FlashSuccess, Message: "The token was removed. Kimi is disconnected from Discord."},
		flashDiscordIntents:   {Kind: templates.FlashSuccess, Message: "Intents saved. Kimi is reconnecting with them; modules were started or disabled to match."},
		flashDiscordCache:     {Kind: templates.FlashSuccess, Message: "Cache sizes saved. They apply at the next start of Kimi."},
		flashDiscordReconnect: {Kind: templates.FlashSuccess, Message: "Reconnecting to Discord on a fresh session."},
	} {
		flashes[code] = f
	}
}

// requireDiscord answers 503 on the /discord pages of a server without
// the bot.
func (s *Server) requireDiscord(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.opts.Discord == nil {
			return echo.NewHTTPError(http.StatusServiceUnavailable, "The Discord connection is not available on this server.")
		}
		return next(c)
	}
}

// discordActor is the signed-in admin for the settings' audit rows.
func discordActor(c echo.Context) settings.Actor {
	return settings.Actor{Name: actor(c), IP: c.RealIP()}
}

// discordStateKind is a state's badge kind.
func discordStateKind(st discord.State) string {
	switch st {
	case discord.StateConnected:
		return "success"
	case discord.StateStopped:
		return "danger"
	case discord.StateConnecting, discord.StateResuming, discord.StateReconnecting:
		return "warning"
	}
	return "neutral"
}

// discordStatusView is the live region's model.
func (s *Server) discordStatusView(c echo.Context) templates.DiscordStatusView {
	now := time.Now()
	st := s.opts.Discord.Status()
	v := templates.DiscordStatusView{
		CSRF: s.csrfToken(c), State: string(st.State), StateKind: discordStateKind(st.State), Summary: st.Summary(now),
		Reason: st.Reason, ShardWarning: st.ShardWarning(), RateLimits: st.RateLimits,
	}
	if st.State == discord.StateStopped {
		v.Reason = ""
	}
	if st.Fatal != nil {
		v.FatalCode, v.FatalMessage, v.Disallowed = st.Fatal.Code, st.Fatal.Message, slices.Clone(st.Fatal.DisallowedIntents)
		v.WithoutMembers = st.Intents.Members && !slices.Contains(v.Disallowed, "Server Members Intent")
		v.WithoutMessageContent = st.Intents.MessageContent && !slices.Contains(v.Disallowed, "Message Content Intent")
		v.Summary = string(st.State)
	}
	if st.StartLimitStop != nil {
		v.StartBudget = st.StartLimitStop.Message()
		v.Summary = string(st.State)
	}
	names := s.namer()
	orDash := func(s string) string {
		if s == "" {
			return "—"
		}
		return s
	}
	ago := func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return humanDuration(now.Sub(t)) + " ago"
	}
	bot := st.BotName
	if st.BotID != "" {
		bot += " (" + st.BotID + ")"
	}
	startLimit := "—"
	if l := st.SessionStartLimit; l.Total > 0 {
		startLimit = fmt.Sprintf("%d of %d left, resets at %s", l.Remaining, l.Total, l.ResetAt.UTC().Format("2006-01-02 15:04 UTC"))
		if l.ResetAt.After(now) {
			startLimit += " (in " + humanDuration(l.ResetAt.Sub(now)) + ")"
		}
	}
	shards := "—"
	if st.Shards > 0 {
		shards = strconv.Itoa(st.Shards) + " recommended, 1 running"
	}
	v.Stats = []templates.Stat{
		{Label: "Connected since", Value: ago(st.ConnectedSince), TestID: "discord-since"},
		{Label: "Last heartbeat ACK", Value: ago(st.LastHeartbeatAck), TestID: "discord-heartbeat"},
		{Label: "Reconnects", Value: strconv.Itoa(st.Reconnects), TestID: "discord-reconnects"},
		{Label: "Bot", Value: orDash(bot), TestID: "discord-bot"},
		{Label: "Application", Value: orDash(st.AppID), TestID: "discord-app"},
		{Label: "Owner", Value: orDash(st.OwnerID), Names: ownerName(names, st), TestID: "discord-owner"},
		{Label: "Shards", Value: shards, TestID: "discord-shards"},
		{Label: "Session starts", Value: startLimit, TestID: "discord-session-starts"},
		{Label: "Identifies sent", Value: strconv.Itoa(st.Identifies), TestID: "discord-identifies"},
	}
	for _, l := range st.RecentRateLimits {
		v.RecentLimits = append(v.RecentLimits, templates.DiscordLimitRow{Route: l.Route, Bucket: l.Bucket,
			RetryAfter: l.RetryAfter.Round(time.Millisecond).String(), Ago: ago(l.At), Global: l.Global})
	}
	for _, g := range st.Guilds {
		members := "—"
		if g.Members > 0 {
			members = strconv.Itoa(g.Members)
		}
		ref := names.Guild(parseSnowflake(g.ID))
		if !ref.Known && g.Name != "" {
			ref.Known, ref.Label = true, g.Name
		}
		v.Guilds = append(v.Guilds, templates.DiscordGuildRow{ID: g.ID, Name: g.Name, Ref: ref, Members: members, Active: g.Active, Unavailable: g.Unavailable})
	}
	return v
}

// discordView is the whole page's model; the forms' errors are set by a
// refused POST.
func (s *Server) discordView(c echo.Context, ctx context.Context) (templates.DiscordView, error) {
	ds, err := settings.LoadDiscord(ctx, s.opts.Store)
	if err != nil {
		return templates.DiscordView{}, err
	}
	src, err := s.opts.Discord.TokenSource(ctx)
	if err != nil {
		src = "" // a conflict in the environment: the status says why
	}
	v := templates.DiscordView{
		Live: "/discord/events", Status: s.discordStatusView(c), TokenSet: ds.Token != "",
		CacheMessages: strconv.Itoa(ds.CacheMessages), CacheMembers: strconv.Itoa(ds.CacheMembers),
	}
	if src != discord.TokenFromStore && src != discord.TokenFromNowhere {
		v.TokenOverride = src
	}
	inUse := s.opts.Discord.Status().Cache
	v.CacheInUse = cacheText(inUse.Messages, "messages") + ", " + cacheText(inUse.Members, "members")
	mods := s.moduleNeeds()
	for _, in := range discord.PrivilegedIntents() {
		row := templates.DiscordIntentRow{Key: in.Key, Label: in.Label, Enables: in.Enables, Capability: in.Capability, Portal: in.Portal}
		switch in.Key {
		case form.DiscordMembers:
			row.On = ds.Members
		case form.DiscordMessageContent:
			row.On = ds.MessageContent
		}
		for _, m := range mods {
			if slices.Contains(m.caps, in.Capability) {
				row.Modules = append(row.Modules, m.name)
			}
		}
		v.Intents = append(v.Intents, row)
	}
	return v, nil
}

type moduleNeeds struct {
	name string
	caps []string
}

// moduleNeeds lists the installed modules with their activation
// capabilities (none without a module host).
func (s *Server) moduleNeeds() []moduleNeeds {
	if s.opts.Host == nil {
		return nil
	}
	var mods []moduleNeeds
	for _, m := range s.opts.Host.Modules() {
		mods = append(mods, moduleNeeds{name: m.Name, caps: m.Manifest.ActivationCapabilities})
	}
	return mods
}

func cacheText(n int, what string) string {
	if n <= 0 {
		return "default " + what
	}
	return strconv.Itoa(n) + " " + what
}

// renderDiscord renders /discord with status code, after a mutate of the
// model (a refused form's errors).
func (s *Server) renderDiscord(c echo.Context, status int, mutate func(*templates.DiscordView)) error {
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	v, err := s.discordView(c, ctx)
	if err != nil {
		return fmt.Errorf("admin: discord page: %w", err)
	}
	if mutate != nil {
		mutate(&v)
	}
	return render(c, status, templates.DiscordPage(s.chrome(c, "Discord", "discord"), v))
}

// ownerName names the application's owner as a member of one of the
// bot's guilds (nil without an owner: the page shows "—").
func ownerName(names namer, st discord.Status) []templates.Name {
	id := parseSnowflake(st.OwnerID)
	if id == 0 {
		return nil
	}
	guilds := make([]uint64, 0, len(st.Guilds))
	for _, g := range st.Guilds {
		guilds = append(guilds, parseSnowflake(g.ID))
	}
	return []templates.Name{names.User(id, guilds...)}
}
