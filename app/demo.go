package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kimiapp/kimi/app/admin"
	demochat "github.com/kimiapp/kimi/app/demo"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
)

// prepareDemo makes demo mode work out of the box the first time a demo data
// directory meets the demo guild: Kimi active in it with its moderators as
// staff and its regulars as regulars, its members listed as "name (<@id>)"
// in its server instructions (the demo model finds them there), a proposal
// channel, scheduled tasks
// enabled (any member's tier, UTC, the demo's text channels as their
// destinations: the demo's owner, the guild's owner, passes the tasks'
// Authorizer), and both privileged intents on (the built-in fake grants
// them). Later starts leave whatever the operator changed since: the demo
// guild keeps its ids across restarts. It reports whether this was the
// first start (serve then points the kudos module's results subscriber at
// the demo guild: prepareDemoModules).
func prepareDemo(ctx context.Context, st *store.Store, guilds *guildcfg.Service, d fakediscord.DemoGuild) (bool, error) {
	id, err := strconv.ParseUint(d.GuildID, 10, 64)
	if err != nil {
		return false, fmt.Errorf("app: demo: guild id %q: %w", d.GuildID, err)
	}
	target := guildcfg.GuildTarget(id)
	doc, err := guilds.Document(ctx, target)
	if err != nil {
		return false, fmt.Errorf("app: demo: read the demo guild's configuration: %w", err)
	}
	if doc.Exists {
		return false, nil
	}
	text := "---\n" +
		guildcfg.KeyBotActive + ": true\n" +
		guildcfg.KeyStaffRoleIDs + ": [" + d.ModRole + "]\n" +
		guildcfg.KeyRegularRoleIDs + ": [" + d.RegularRole + "]\n" +
		guildcfg.KeyProposalChannelID + ": " + d.Channels[len(d.Channels)-1] + "\n" +
		guildcfg.KeyScheduledTasks + ":\n" +
		"  " + guildcfg.TaskKeyEnabled + ": true\n" +
		"  " + guildcfg.TaskKeyMinTier + ": member\n" +
		"  " + guildcfg.TaskKeyTimezone + ": UTC\n" +
		"  " + guildcfg.TaskKeyDestinations + ": [" + strings.Join(d.Channels, ", ") + "]\n" +
		"---\nThe demo guild of `kimi serve --demo` (not on Discord).\n" + demoMembersLine(d)
	if _, err := guilds.Write(ctx, target, text, doc.Revision, guildcfg.Actor{Kind: guildcfg.ActorCLI, Name: "demo"}); err != nil {
		return false, fmt.Errorf("app: demo: activate the demo guild: %w", err)
	}
	if err := settings.SaveDiscordIntents(ctx, st, true, true, settings.Actor{Name: "demo"}); err != nil {
		return false, fmt.Errorf("app: demo: enable the privileged intents: %w", err)
	}
	return true, nil
}

// demoMembersLine lists the demo members as "name (<@id>)" in the demo
// guild's server instructions, the assistant's system prompt: the demo
// model finds a member named in a request there ("give kudos to bo").
func demoMembersLine(d fakediscord.DemoGuild) string {
	if len(d.MemberNames) != len(d.Members) || len(d.Members) == 0 {
		return ""
	}
	parts := make([]string, len(d.Members))
	for i, id := range d.Members {
		parts[i] = d.MemberNames[i] + " (<@" + id + ">)"
	}
	return "\nIts members: " + strings.Join(parts, ", ") + ".\n"
}

// The kudos module's name and its results-guild setting (kudos.Name and
// kudos.SettingResultGuild: app does not import the modules it serves).
const (
	demoKudosModule      = "reference_kudos"
	demoKudosResultGuild = "result_guild_id"
)

// demoSettings selects the modules and saves a module's deployment
// settings (*host.Host).
type demoSettings interface {
	SelectInstalled(ctx context.Context, actor string) ([]string, error)
	SaveSettings(ctx context.Context, module string, values map[string]string, actor string) error
}

// prepareDemoModules, at a demo data directory's first start and before
// the modules start, selects the installed (bundled) modules that nobody
// selected or deselected yet, so kudos and hello run in the demo guild
// (KIMI_MODULES still overrides the stored selection), and points the
// kudos module's scheduled-results subscriber (the reference subscriber)
// at the demo guild, so a task's completed run in the demo reaches it. A
// build without kudos skips the latter.
func prepareDemoModules(ctx context.Context, h demoSettings, d fakediscord.DemoGuild) error {
	if _, err := h.SelectInstalled(ctx, "demo"); err != nil {
		return fmt.Errorf("app: demo: select the bundled modules: %w", err)
	}
	err := h.SaveSettings(ctx, demoKudosModule, map[string]string{demoKudosResultGuild: d.GuildID}, "demo")
	if err != nil && !errors.Is(err, host.ErrUnknownModule) {
		return fmt.Errorf("app: demo: the kudos results subscriber: %w", err)
	}
	return nil
}

var _ demoSettings = (*host.Host)(nil)

// The admin's /demo talks to demo mode's chat through its own interface; app/demo does not
// import app/admin (the admin's tests build a Chat), so the two meet here, where serve
// composes them.
var _ admin.DemoChat = (*demochat.Chat)(nil)
