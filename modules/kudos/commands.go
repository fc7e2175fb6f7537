package kudos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/kimiapp/kimi/modules/sdk"
)

// registerInteractions adds /kudos give|top|setup and the persistent
// "Thank back" button.
func (m *module) registerInteractions(in sdk.Interactions) error {
	minDays, maxDays := int64(1), int64(maxBoardDays)
	commands := []struct {
		spec    sdk.CommandSpec
		handler sdk.CommandHandler
	}{
		{sdk.CommandSpec{
			Name: "give", Description: "Thank a member for something they did.",
			Group: CommandGroup, GroupDescription: "Member-to-member recognition.",
			// Everyone may run the command; the guild's own giver_min_tier is
			// enforced inside give, with a clearer message than the gate's.
			MinTier: sdk.TierMember,
			Options: []sdk.CommandOption{
				{Name: "member", Kind: sdk.OptionUser, Description: "Who deserves it.", Required: true},
				{Name: "reason", Kind: sdk.OptionString, Description: "What they did.", Required: true},
			},
		}, m.commandGive},
		{sdk.CommandSpec{
			Name: "top", Description: "Show who received the most kudos recently.",
			Group: CommandGroup, MinTier: sdk.TierMember,
			Options: []sdk.CommandOption{
				{Name: "days", Kind: sdk.OptionInteger, Description: "Window in days.", MinValue: &minDays, MaxValue: &maxDays},
			},
		}, m.commandTop},
		{sdk.CommandSpec{
			Name: "setup", Description: "Propose the channel that receives the kudos digest.",
			Group: CommandGroup, MinTier: sdk.TierStaff,
			Options: []sdk.CommandOption{
				{Name: "channel", Kind: sdk.OptionChannel, Description: "Digest channel.", Required: true},
			},
		}, m.commandSetup},
	}
	for _, c := range commands {
		reg, err := in.AddCommand(c.spec, c.handler, nil)
		if err != nil {
			return err
		}
		m.keep(reg)
	}
	// A persistent button: the host routes clicks by the key in the custom
	// id, so a button posted before a restart keeps working as long as this
	// registration happens on every start.
	reg, err := in.RegisterComponent(sdk.ComponentButton, ButtonThankBack, m.buttonThankBack, sdk.ComponentOptions{MinTier: sdk.TierMember})
	if err != nil {
		return err
	}
	m.keep(reg)
	return nil
}

// replyEphemeral answers only the person who asked.
func replyEphemeral(ctx context.Context, in sdk.Interaction, text string) error {
	return in.Respond(ctx, sdk.Response{Content: text, Ephemeral: true})
}

// commandGive: /kudos give member reason.
func (m *module) commandGive(ctx context.Context, in sdk.Interaction) error {
	rt, _, err := m.started()
	if err != nil {
		return err
	}
	opts := in.Options()
	receiver, ok := opts.ID("member") // user options arrive as ids, never objects
	if !ok {
		// Discord enforces required options; a missing one is a host bug.
		return errors.New("kudos: /kudos give arrived without its member option")
	}
	reason, _ := opts.String("reason")
	// The same read-only lookup core uses for its own tiers.
	tier, err := rt.Trust.Tier(ctx, in.GuildID(), in.UserID())
	if err != nil {
		return err
	}
	k, err := m.give(ctx, in.GuildID(), in.UserID(), receiver, reason, tier)
	if msg, refused := asRefused(err); refused {
		return replyEphemeral(ctx, in, msg)
	}
	if err != nil {
		return err
	}
	reply := sdk.Response{Content: summary(k)}
	settings, err := m.guildSettings(ctx, rt, in.GuildID())
	if err != nil {
		return err
	}
	if thankBackAllowed(rt, settings) {
		reply.Components = []sdk.Component{sdk.ButtonSpec{
			Key: ButtonThankBack, Label: "Thank back", Style: sdk.ButtonSuccess,
			// Parts ride inside the custom id, so the handler finds the
			// original kudos after a restart, with no memory of its own.
			Parts: []string{strconv.FormatInt(k.ID, 10)},
		}}
	}
	return in.Respond(ctx, reply)
}

// thankBackAllowed reads allow_thank_back (default on; on without a
// guild-settings port).
func thankBackAllowed(rt *sdk.Runtime, s sdk.GuildSettingsSnapshot) bool {
	if rt.GuildSettings == nil {
		return true
	}
	v, ok := s.Values[FieldAllowThankBack].(bool)
	return !ok || v
}

// commandTop: /kudos top [days]. Public when there is something to show.
func (m *module) commandTop(ctx context.Context, in sdk.Interaction) error {
	days := defaultBoardDays
	if n, ok := in.Options().Int("days"); ok {
		days = clampDays(n)
	}
	entries, err := m.leaderboard(ctx, in.GuildID(), days, m.cfg.boardSize)
	if err != nil {
		return err
	}
	return in.Respond(ctx, sdk.Response{Embed: m.boardEmbed(entries, days), Ephemeral: len(entries) == 0})
}

// commandSetup proposes a guild-settings change instead of writing
// configuration. Modules never write configuration directly: the proposal
// port records the current document as a rollback baseline, asks staff to
// review, and applies the change on approval.
func (m *module) commandSetup(ctx context.Context, in sdk.Interaction) error {
	rt, _, err := m.started()
	if err != nil {
		return err
	}
	if rt.Proposals == nil {
		return replyEphemeral(ctx, in, "Configuration proposals are unavailable.")
	}
	channel, ok := in.Options().ID("channel")
	if !ok {
		return errors.New("kudos: /kudos setup arrived without its channel option")
	}
	guildID := in.GuildID()
	actor := sdk.ProposalActor{UserID: in.UserID(), Source: Name + ":setup", GuildID: guildID, ChannelID: in.ChannelID()}
	target := sdk.GuildModuleTarget(guildID, Name)
	// Pin the proposal to the document as it is before we read it: an edit
	// that lands after this snapshot makes Propose fail instead of being
	// silently overwritten.
	snapshot, err := rt.Proposals.Snapshot(ctx, target, actor)
	if err != nil {
		return proposalFailed(ctx, in, err)
	}
	current, err := m.guildSettings(ctx, rt, guildID)
	if err != nil {
		return err
	}
	proposed := make(map[string]any, len(current.Values)+1)
	maps.Copy(proposed, current.Values)
	proposed[FieldDigestChannel] = channel
	content, err := sdk.RenderGuildSettings(proposed)
	if err != nil {
		return err
	}
	ref, err := rt.Proposals.Propose(ctx, sdk.Proposal{
		Target: target, Content: content, Actor: actor,
		Summary:          fmt.Sprintf("Post the kudos digest in <#%d>", channel),
		ExpectedRevision: snapshot.Revision,
	})
	if err != nil {
		return proposalFailed(ctx, in, err)
	}
	return replyEphemeral(ctx, in, fmt.Sprintf("Proposed (`%s`). Staff can approve it from the review card.", ref.ID))
}

// proposalFailed tells the member why a proposal was refused (a
// *sdk.ProposalError: another guild's target, a stale revision, a limit);
// any other error is an outage for the host to report.
func proposalFailed(ctx context.Context, in sdk.Interaction, err error) error {
	var perr *sdk.ProposalError
	if errors.As(err, &perr) {
		return replyEphemeral(ctx, in, "Could not propose the change: "+perr.Message)
	}
	return err
}

// buttonThankBack lets the receiver of a kudos give one back to its giver.
func (m *module) buttonThankBack(ctx context.Context, in sdk.Interaction) error {
	rt, ledger, err := m.started()
	if err != nil {
		return err
	}
	const gone = "That kudos is no longer available."
	id, ok := kudosIDFromCustomID(in.CustomID())
	if !ok {
		return replyEphemeral(ctx, in, gone)
	}
	original, err := ledger.get(ctx, id)
	if err != nil {
		return err
	}
	// A custom id is user-supplied input: a kudos of another guild is as
	// unavailable as a missing one.
	if original == nil || original.GuildID != in.GuildID() {
		return replyEphemeral(ctx, in, gone)
	}
	settings, err := m.guildSettings(ctx, rt, in.GuildID())
	if err != nil {
		return err
	}
	if !thankBackAllowed(rt, settings) {
		return replyEphemeral(ctx, in, "Thanking back is turned off here.")
	}
	if in.UserID() != original.ReceiverID {
		return replyEphemeral(ctx, in, "Only the person thanked can thank back.")
	}
	tier, err := rt.Trust.Tier(ctx, in.GuildID(), in.UserID())
	if err != nil {
		return err
	}
	k, err := m.give(ctx, in.GuildID(), in.UserID(), original.GiverID, "thanks for the kudos!", tier)
	if msg, refused := asRefused(err); refused {
		return replyEphemeral(ctx, in, msg)
	}
	if err != nil {
		return err
	}
	return in.Respond(ctx, sdk.Response{Content: summary(k)})
}

// kudosIDFromCustomID reads the kudos id from m:<module>:thank_back:<id>:
// ASCII digits only, 1..2^63-1.
func kudosIDFromCustomID(customID string) (int64, bool) {
	parsed, ok := sdk.ParseCustomID(customID)
	if !ok || len(parsed.Parts) == 0 {
		return 0, false
	}
	part := parsed.Parts[0]
	if part == "" || strings.Trim(part, "0123456789") != "" {
		return 0, false
	}
	id, err := strconv.ParseInt(part, 10, 64)
	if err != nil || id < 1 { // ParseInt refuses ids of 2^63 and more
		return 0, false
	}
	return id, true
}
