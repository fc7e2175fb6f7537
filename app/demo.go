package app

import (
	"context"
	"fmt"
	"strconv"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
)

// prepareDemo makes demo mode work out of the box the first time a demo data
// directory meets the demo guild: Kimi active in it with its moderators as
// staff and its regulars as regulars, a proposal channel, and both privileged
// intents on (the built-in fake grants them). Later starts leave whatever
// the operator changed since: the demo guild keeps its ids across restarts.
func prepareDemo(ctx context.Context, st *store.Store, guilds *guildcfg.Service, d fakediscord.DemoGuild) error {
	id, err := strconv.ParseUint(d.GuildID, 10, 64)
	if err != nil {
		return fmt.Errorf("app: demo: guild id %q: %w", d.GuildID, err)
	}
	target := guildcfg.GuildTarget(id)
	doc, err := guilds.Document(ctx, target)
	if err != nil {
		return fmt.Errorf("app: demo: read the demo guild's configuration: %w", err)
	}
	if doc.Exists {
		return nil
	}
	text := "---\n" +
		guildcfg.KeyBotActive + ": true\n" +
		guildcfg.KeyStaffRoleIDs + ": [" + d.ModRole + "]\n" +
		guildcfg.KeyRegularRoleIDs + ": [" + d.RegularRole + "]\n" +
		guildcfg.KeyProposalChannelID + ": " + d.Channels[len(d.Channels)-1] + "\n" +
		"---\nThe demo guild of `kimi serve --demo` (not on Discord).\n"
	if _, err := guilds.Write(ctx, target, text, doc.Revision, guildcfg.Actor{Kind: guildcfg.ActorCLI, Name: "demo"}); err != nil {
		return fmt.Errorf("app: demo: activate the demo guild: %w", err)
	}
	if err := settings.SaveDiscordIntents(ctx, st, true, true, settings.Actor{Name: "demo"}); err != nil {
		return fmt.Errorf("app: demo: enable the privileged intents: %w", err)
	}
	return nil
}
