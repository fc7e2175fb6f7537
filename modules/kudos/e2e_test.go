package kudos_test

import (
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/kimitest"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// digestChannel is #kudos, the digest's channel in the seeded guild.
const digestChannel = "920000000000000099"

func startKudos(t *testing.T, settings string) *kimitest.Appliance {
	t.Helper()
	return kimitest.Start(t, kimitest.WithModules(kudos.Spec()), kimitest.WithControlledClock(),
		kimitest.WithModuleSettings(kudos.Name, settings),
		kimitest.WithDiscord(func(f *fakediscord.Server) {
			f.AddChannel(fakediscord.ChannelSpec{ID: digestChannel, GuildID: kimitest.GuildID, Name: "kudos"})
		}))
}

// TestKudosOnTheAppliance: on the real appliance, Ann gives Bob kudos with
// /kudos give, the public answer carries the Thank back button, which
// only Bob may press; his thanks are a kudos to Ann; a week later (the
// controlled clock) the digest job posts the leaderboard to #kudos.
func TestKudosOnTheAppliance(t *testing.T) {
	t.Parallel()
	a := startKudos(t, "---\ndigest_channel_id: "+digestChannel+"\n---\n")
	a.WaitJobs() // the digest's first run, at the start: nothing to post yet
	// The kudos are given past the first run's jitter, so that the next
	// run, a week after the first, has them in its week's window (the
	// module reads the controlled clock too: sdk.Runtime.Now).
	a.Advance(2 * kudos.DigestJitter)
	give := a.WaitResponse(a.Command(kimitest.ChannelID, kimitest.Ann, "kudos", kimitest.SubCommand("give",
		kimitest.UserOption("member", kimitest.Bob), kimitest.StringOption("reason", "fixing the build"))))
	if d := give.Response.Data; d == nil || d.Content != "Kudos to <@"+kimitest.Bob.ID+">: fixing the build" || d.Flags&discordgo.MessageFlagsEphemeral != 0 {
		t.Fatalf("/kudos give answered %+v", give.Response)
	}
	btn := give.Original.Components[0].(*discordgo.ActionsRow).Components[0].(*discordgo.Button)
	if btn.Label != "Thank back" {
		t.Fatalf("the button is %+v", btn)
	}
	self := a.WaitResponse(a.Click(kimitest.ChannelID, give.Original.ID, kimitest.Ann, btn.CustomID))
	if d := self.Response.Data; d == nil || d.Content != "Only the person thanked can thank back." {
		t.Fatalf("Ann's own click answered %+v", self.Response)
	}
	back := a.WaitResponse(a.Click(kimitest.ChannelID, give.Original.ID, kimitest.Bob, btn.CustomID))
	if d := back.Response.Data; d == nil || d.Content != "Kudos to <@"+kimitest.Ann.ID+">: thanks for the kudos!" {
		t.Fatalf("Bob's thank back answered %+v", back.Response)
	}

	// The digest runs at the start (nothing to post then) and every week,
	// up to DigestJitter late: by now it is due.
	a.Advance(7*24*time.Hour - kudos.DigestJitter)
	digest := a.WaitMessage(digestChannel, func(m *discordgo.Message) bool { return len(m.Embeds) == 1 })
	e := digest.Embeds[0]
	if !strings.HasPrefix(e.Title, "Kudos, last 7 day") || !strings.Contains(e.Description, "<@"+kimitest.Bob.ID+"> — 1") ||
		!strings.Contains(e.Description, "<@"+kimitest.Ann.ID+"> — 1") {
		t.Fatalf("the digest = %+v", e)
	}
}

// TestKudosSetupProposalApproved: staff's /kudos setup proposes the digest
// channel instead of writing it; the operator approves the proposal and
// the module's settings document then names the channel.
func TestKudosSetupProposalApproved(t *testing.T) {
	t.Parallel()
	a := startKudos(t, "---\nallow_thank_back: true\n---\n")
	st := a.WaitResponse(a.Command(kimitest.ChannelID, kimitest.Bob, "kudos", kimitest.SubCommand("setup",
		kimitest.ChannelOption("channel", digestChannel))))
	if d := st.Response.Data; d == nil || !strings.HasPrefix(d.Content, "Proposed (`") {
		t.Fatalf("/kudos setup answered %+v", st.Response)
	}
	if doc := a.Document(kimitest.ModuleSettings(kudos.Name)); strings.Contains(doc, digestChannel) {
		t.Fatalf("the settings changed before the approval:\n%s", doc)
	}
	pending := a.Proposals(sdk.ProposalPending)
	if len(pending) != 1 || pending[0].Module != kudos.Name {
		t.Fatalf("pending proposals: %+v", pending)
	}
	if out := a.Approve(pending[0].ID); !out.Applied {
		t.Fatalf("the approval: %+v", out)
	}
	if doc := a.Document(kimitest.ModuleSettings(kudos.Name)); !strings.Contains(doc, "digest_channel_id: "+"\""+digestChannel+"\"") && !strings.Contains(doc, "digest_channel_id: "+digestChannel) {
		t.Fatalf("the settings after the approval:\n%s", doc)
	}
}
