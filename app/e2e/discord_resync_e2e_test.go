package e2e

import (
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// TestE2ECommandsResyncedAfterARestart: `kimi serve --demo` restarted on
// its data directory connects to a fresh fake Discord that has no
// commands; the command-set hash saved by the first run matches, but
// Discord's own list does not, so the second run registers the commands
// again and `/kudos give` works there.
func TestE2ECommandsResyncedAfterARestart(t *testing.T) {
	var seeded []int // the commands each start's fresh fake held when handed over
	o := e2eOptions{specs: []sdk.Spec{kudos.Spec()}, modules: kudos.Name,
		docs: map[guildcfg.Target]string{guildcfg.GuildTarget(e2eID(t, e2eGuild)): e2eGuildDoc},
		seed: func(f *fakediscord.Server) { e2eSeed(f); seeded = append(seeded, len(f.Commands(""))) }}
	a := startE2E(t, o)
	a.waitConnected(a.signIn(), "kudos")

	a.Restart()
	if len(seeded) != 2 || seeded[1] != 0 {
		t.Fatalf("the fakes held %v commands when handed over, want the restart's to hold none", seeded)
	}
	a.waitConnected(a.signIn(), "kudos")
	if len(a.Discord().RequestsTo("PUT /applications/{app}/commands")) == 0 {
		t.Fatal("the restart sent no global command overwrite")
	}
	id, err := a.Discord().RunCommand(e2eChannel, e2eAnn, "kudos", &discordgo.ApplicationCommandInteractionDataOption{
		Name: "give", Type: discordgo.ApplicationCommandOptionSubCommand, Options: []*discordgo.ApplicationCommandInteractionDataOption{
			{Name: "member", Type: discordgo.ApplicationCommandOptionUser, Value: e2eBob},
			{Name: "reason", Type: discordgo.ApplicationCommandOptionString, Value: "restarting cleanly"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	if r := a.answered(id).Response; r.Type != discordgo.InteractionResponseChannelMessageWithSource || r.Data == nil ||
		r.Data.Content != "Kudos to <@"+e2eBob+">: restarting cleanly" {
		t.Fatalf("/kudos give after the restart = %+v", r)
	}
}
