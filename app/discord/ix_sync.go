package discord

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// Command sync: all modules' global commands in one bulk overwrite per
// READY, skipped when the set's hash equals the one Discord last accepted
// for the application (kimi_command_sync) and Discord's own list of the
// application's commands, hashed the same way, still matches it (a fresh
// demo fake, commands deleted on the developer portal); each guild with guild commands
// (staged, or recorded in kimi_command_guilds for a module since gone) in
// one bulk overwrite of that guild's full set. DefaultMemberPermissions is
// not set: Kimi's tiers come from its own role lists, and Discord's
// permission would hide a command from Kimi staff who lack it. Core's /ask
// and /stop carry contexts [GUILD] (usable in guilds only; the deprecated
// dm_permission is not sent), /forget and /usage [GUILD, BOT_DM]; the
// modules' commands carry none.

// syncCounter counts finished full syncs (tests wait on it).
type syncCounter = atomic.Int64

// appCommand and appOption are Discord's command JSON as Kimi sends it:
// discordgo's types omit a max_value of 0 (omitempty on a float64) and
// carry min/max as float64, so Kimi marshals its own (integers exact, 0
// kept).
type appCommand struct {
	Type        discordgo.ApplicationCommandType `json:"type"`
	Name        string                           `json:"name"`
	Description string                           `json:"description"`
	Options     []*appOption                     `json:"options,omitempty"`
	// Contexts is where the command may be used: set for core's (guild
	// only, or guild and bot DM); nil, Discord's default, for the modules'.
	Contexts []discordgo.InteractionContextType `json:"contexts,omitempty"`
}

// guildOnly is the contexts of a command usable in guilds only: core's
// /ask and /stop (in a DM, where the assistant answers only when the
// Direct messages setting allows it, a message that is exactly stop does
// /stop's work).
var guildOnly = []discordgo.InteractionContextType{discordgo.InteractionContextGuild}

// guildAndBotDM is the contexts of core's /forget and /usage: guilds and
// the DM with the bot (not group DMs). The application is installed to
// guilds (integration_types left at Discord's default, GUILD_INSTALL),
// where BOT_DM is where a member talks to the bot itself.
var guildAndBotDM = []discordgo.InteractionContextType{discordgo.InteractionContextGuild, discordgo.InteractionContextBotDM}

// allContexts is every context (guild, bot DM, private channel): what
// Discord may list for a command registered without contexts.
var allContexts = []discordgo.InteractionContextType{discordgo.InteractionContextGuild,
	discordgo.InteractionContextBotDM, discordgo.InteractionContextPrivateChannel}

type appOption struct {
	Type         discordgo.ApplicationCommandOptionType `json:"type"`
	Name         string                                 `json:"name"`
	Description  string                                 `json:"description"`
	Required     bool                                   `json:"required,omitempty"`
	Autocomplete bool                                   `json:"autocomplete,omitempty"`
	Choices      []appChoice                            `json:"choices,omitempty"`
	MinValue     *int64                                 `json:"min_value,omitempty"`
	MaxValue     *int64                                 `json:"max_value,omitempty"`
	Options      []*appOption                           `json:"options,omitempty"`
}

type appChoice struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
}

var optionKinds = map[sdk.OptionKind]discordgo.ApplicationCommandOptionType{
	sdk.OptionString:  discordgo.ApplicationCommandOptionString,
	sdk.OptionInteger: discordgo.ApplicationCommandOptionInteger,
	sdk.OptionBoolean: discordgo.ApplicationCommandOptionBoolean,
	sdk.OptionUser:    discordgo.ApplicationCommandOptionUser,
	sdk.OptionChannel: discordgo.ApplicationCommandOptionChannel,
	sdk.OptionRole:    discordgo.ApplicationCommandOptionRole,
}

// commandsOut converts specs into Discord's tree: a top-level command, or
// one group level (the group a command with a subcommand per spec; its
// description the spec's group description, else the group's name, as the
// original's discord.py Group); sorted by name so the set's hash is stable.
func commandsOut(specs []sdk.CommandSpec) []*appCommand {
	out := []*appCommand{}
	groups := map[string]*appCommand{}
	for _, sp := range specs {
		if sp.Group == "" {
			c := &appCommand{Type: discordgo.ChatApplicationCommand, Name: sp.Name,
				Description: sp.Description, Options: optionsOut(sp.Options)}
			switch { // a module's core name is refused at preflight
			case slices.Contains(dmCoreCommands, sp.Name):
				c.Contexts = guildAndBotDM
			case slices.Contains(hostkit.CoreCommands, sp.Name):
				c.Contexts = guildOnly
			}
			out = append(out, c)
			continue
		}
		g := groups[sp.Group]
		if g == nil {
			g = &appCommand{Type: discordgo.ChatApplicationCommand, Name: sp.Group, Description: sp.Group}
			groups[sp.Group] = g
			out = append(out, g)
		}
		if sp.GroupDescription != "" && g.Description == sp.Group {
			g.Description = sp.GroupDescription
		}
		g.Options = append(g.Options, &appOption{Type: discordgo.ApplicationCommandOptionSubCommand,
			Name: sp.Name, Description: sp.Description, Options: optionsOut(sp.Options)})
	}
	for _, g := range groups {
		slices.SortFunc(g.Options, func(a, b *appOption) int { return cmp.Compare(a.Name, b.Name) })
	}
	slices.SortFunc(out, func(a, b *appCommand) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// optionsOut converts options, required ones first as Discord demands
// (otherwise in declaration order).
func optionsOut(opts []sdk.CommandOption) []*appOption {
	var out []*appOption
	for _, o := range opts {
		d := &appOption{Type: optionKinds[o.Kind], Name: o.Name, Description: o.Description,
			Required: o.Required, Autocomplete: o.Autocomplete}
		for _, c := range o.Choices {
			d.Choices = append(d.Choices, appChoice{Name: c.Name, Value: choiceValue(c.Value)})
		}
		if o.MinValue != nil {
			v := *o.MinValue
			d.MinValue = &v
		}
		if o.MaxValue != nil {
			v := *o.MaxValue
			d.MaxValue = &v
		}
		out = append(out, d)
	}
	slices.SortStableFunc(out, func(a, b *appOption) int {
		switch {
		case a.Required == b.Required:
			return 0
		case a.Required:
			return -1
		}
		return 1
	})
	return out
}

// choiceValue is a choice's value as Discord takes it: a string or an
// integer (every Go integer type an SDK caller may have used).
func choiceValue(v any) any {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int8:
		return int64(n)
	case int16:
		return int64(n)
	case int32:
		return int64(n)
	case uint:
		return int64(n)
	case uint8:
		return int64(n)
	case uint16:
		return int64(n)
	case uint32:
		return int64(n)
	case uint64:
		return int64(n)
	}
	return v
}

// optionString renders a focused non-string option's current value.
func optionString(v any) string {
	switch n := v.(type) {
	case float64:
		return strconv.FormatFloat(n, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(n)
	}
	return fmt.Sprint(v)
}

// commandsHash is the hash of a converted set.
func commandsHash(cmds []*appCommand) string {
	b, _ := json.Marshal(cmds)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (x *interactions) lastHash(ctx context.Context, app string, guildID uint64) string {
	if x.st == nil {
		x.mu.Lock()
		defer x.mu.Unlock()
		return x.hashes[app+"\x00"+idString(guildID)]
	}
	var h string
	err := x.st.Reader().QueryRowContext(ctx, `SELECT hash FROM kimi_command_sync WHERE app_id = ? AND guild_id = ?`, app, int64(guildID)).Scan(&h)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		x.log.Warn("could not read the last command sync", "err", err)
	}
	return h
}

func (x *interactions) saveHash(ctx context.Context, app string, guildID uint64, hash string) {
	if x.st == nil {
		x.mu.Lock()
		x.hashes[app+"\x00"+idString(guildID)] = hash
		x.mu.Unlock()
		return
	}
	err := x.st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO kimi_command_sync (app_id, guild_id, hash, synced_ms) VALUES (?, ?, ?, ?)
			ON CONFLICT (app_id, guild_id) DO UPDATE SET hash = excluded.hash, synced_ms = excluded.synced_ms`,
			app, int64(guildID), hash, time.Now().UnixMilli())
		return err
	})
	if err != nil {
		x.log.Warn("could not record the command sync", "err", err)
	}
}

// remoteHash is the hash of the scope's commands as Discord lists them
// (ep: the scope's commands endpoint), converted as commandsOut converts
// Kimi's (its fields alone, sorted by name); "" when the list could not be
// had.
func (x *interactions) remoteHash(ctx context.Context, s *discordgo.Session, ep string) string {
	b, err := s.RequestWithBucketID(http.MethodGet, ep, nil, ep, requestOptions(ctx)...)
	if err != nil {
		x.log.Warn("could not list the registered commands", "err", err)
		return ""
	}
	var cmds []*appCommand
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber() // an integer choice's value marshals as Kimi's int64 does
	if err := d.Decode(&cmds); err != nil {
		x.log.Warn("could not read the registered commands", "err", err)
		return ""
	}
	if cmds == nil {
		cmds = []*appCommand{}
	}
	for _, c := range cmds {
		c.Contexts = remoteContexts(c.Contexts)
	}
	slices.SortFunc(cmds, func(a, b *appCommand) int { return cmp.Compare(a.Name, b.Name) })
	return commandsHash(cmds)
}

// remoteContexts is a listed command's contexts as Kimi registers them:
// every context (Discord's default for a command registered without any)
// is none, as Kimi sends it.
func remoteContexts(cs []discordgo.InteractionContextType) []discordgo.InteractionContextType {
	if len(cs) == 0 {
		return nil
	}
	set := slices.Clone(cs)
	slices.Sort(set)
	if slices.Equal(slices.Compact(set), allContexts) {
		return nil
	}
	return cs
}

// push overwrites one scope's commands (guild 0: global) unless force is
// false, its hash is the one last synced for the application and Discord's
// list still has that set.
func (x *interactions) push(ctx context.Context, s *discordgo.Session, app string, guildID uint64, specs []sdk.CommandSpec, force bool) error {
	cmds := commandsOut(specs)
	hash := commandsHash(cmds)
	ep := discordgo.EndpointApplicationGlobalCommands(app)
	if guildID != 0 {
		ep = discordgo.EndpointApplicationGuildCommands(app, idString(guildID))
	}
	if !force && x.lastHash(ctx, app, guildID) == hash {
		if x.remoteHash(ctx, s, ep) == hash {
			return nil
		}
		x.log.Info("registered commands differ from the last sync", "guild", guildID)
	}
	// ApplicationCommandBulkOverwrite's request, with Kimi's JSON.
	if _, err := s.RequestWithBucketID(http.MethodPut, ep, cmds, ep, requestOptions(ctx)...); err != nil {
		return fmt.Errorf("discord: sync commands: %w", err)
	}
	x.saveHash(ctx, app, guildID, hash)
	return nil
}

func (x *interactions) app() string {
	x.mu.Lock()
	app := x.appID
	x.mu.Unlock()
	if app == "" {
		if _, id := x.src.self(); id != 0 {
			app = idString(id)
		}
	}
	return app
}

// syncAll syncs the global commands and every guild's set, each skipped
// when unchanged.
func (x *interactions) syncAll(ctx context.Context, s *discordgo.Session) {
	h, app := x.hostNow(), x.app()
	if h == nil || app == "" || !commandsRegistered(h) {
		return
	}
	x.syncMu.Lock()
	defer x.syncMu.Unlock()
	if err := x.push(ctx, s, app, 0, x.syncedCommands(h), false); err != nil {
		x.log.Error("global command sync failed", "err", err)
	}
	guilds, err := h.CommandGuilds(ctx)
	if err != nil {
		x.log.Error("could not list the guilds with commands", "err", err)
	}
	for _, g := range guilds {
		x.syncGuildLocked(ctx, s, h, app, g, false)
	}
	x.fullSyncs.Add(1)
}

func (x *interactions) syncGuildLocked(ctx context.Context, s *discordgo.Session, h Host, app string, guildID uint64, force bool) error {
	if err := x.push(ctx, s, app, guildID, h.GuildCommands(guildID), force); err != nil {
		x.log.Error("guild command sync failed", "guild", guildID, "err", err)
		return err
	}
	if err := h.GuildCommandsSynced(ctx, guildID); err != nil {
		x.log.Warn("could not record the guild command sync", "guild", guildID, "err", err)
	}
	return nil
}

// syncGuild pushes one guild's full command set now (host.Discord's
// SyncGuildCommands); not connected is host.ErrDiscordNotConnected (the set
// stays staged for the next READY).
func (x *interactions) syncGuild(ctx context.Context, guildID uint64) error {
	s, err := x.src.session()
	h, app := x.hostNow(), x.app()
	if err != nil || h == nil || app == "" {
		return fmt.Errorf("%w: %w", host.ErrDiscordNotConnected, ErrNotConnected)
	}
	x.syncMu.Lock()
	defer x.syncMu.Unlock()
	return x.syncGuildLocked(ctx, s, h, app, guildID, true)
}

// commandsRegistered reports whether h's commands may be synced: a host
// that is no CommandGate always has them.
func commandsRegistered(h Host) bool {
	g, ok := h.(CommandGate)
	return !ok || g.CommandsRegistered()
}

// onReady syncs every command set (off the gateway goroutine).
func (x *interactions) onReady(s *discordgo.Session, r *discordgo.Ready) {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return
	}
	if r != nil && r.Application != nil && r.Application.ID != "" {
		x.appID = r.Application.ID
	}
	x.ready = true
	x.wg.Add(1)
	x.mu.Unlock()
	go func() {
		defer x.wg.Done()
		x.syncAll(x.ctx, s)
	}()
}

// onGuildCreate applies the guild's command set when it has one (or had:
// a gone module's is cleared), skipped when unchanged.
func (x *interactions) onGuildCreate(s *discordgo.Session, g *discordgo.GuildCreate) {
	if g == nil || g.Guild == nil {
		return
	}
	id := parseID(g.ID)
	x.mu.Lock()
	if x.closed || id == 0 {
		x.mu.Unlock()
		return
	}
	x.wg.Add(1)
	x.mu.Unlock()
	go func() {
		defer x.wg.Done()
		defer x.guildCreates.Add(1)
		h, app := x.hostNow(), x.app()
		if h == nil || app == "" || !commandsRegistered(h) {
			return // not yet: the host's full sync covers this guild
		}
		guilds, err := h.CommandGuilds(x.ctx)
		if err != nil || !slices.Contains(guilds, id) {
			return
		}
		x.syncMu.Lock()
		defer x.syncMu.Unlock()
		x.syncGuildLocked(x.ctx, s, h, app, id, false)
	}()
}
