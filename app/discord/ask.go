package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// Core commands: /ask, /stop and /usage, routed here before the module
// host, and /forget, routed to its registered handler (RegisterCoreCommand);
// synced with the modules' commands while an assistant is attached
// (hostkit.CoreCommands: a module declaring one is refused at preflight).

// dmCoreCommands are the core commands also offered in a DM with the bot
// (contexts GUILD and BOT_DM): /forget deletes the caller's DM
// conversations there, /usage shows their DM tokens. /ask and /stop stay
// guild only.
var dmCoreCommands = []string{hostkit.CommandForget, hostkit.CommandUsage}

// coreCommandSpecs are the core commands' definitions.
func coreCommandSpecs() []sdk.CommandSpec {
	return []sdk.CommandSpec{
		{Name: hostkit.CommandAsk, Description: "Ask Kimi's assistant a question", MinTier: sdk.TierMember, Options: []sdk.CommandOption{
			{Name: "question", Kind: sdk.OptionString, Description: "What to ask", Required: true},
			{Name: "private", Kind: sdk.OptionBoolean, Description: "Answer only you (ephemeral)"},
		}},
		{Name: hostkit.CommandStop, Description: "Stop the assistant's work for you in this channel", MinTier: sdk.TierMember},
		{Name: hostkit.CommandForget, Description: "Delete your conversations with the assistant here (this server, or our DMs)", MinTier: sdk.TierMember},
		{Name: hostkit.CommandUsage, Description: "Your assistant tokens today and this month against your budget", MinTier: sdk.TierMember},
	}
}

// syncedCommands are the global commands to sync: the modules' and, with
// an assistant attached, core's.
func (x *interactions) syncedCommands(h Host) []sdk.CommandSpec {
	cmds := h.Commands()
	if x.assistantPort() != nil {
		cmds = append(cmds[:len(cmds):len(cmds)], coreCommandSpecs()...)
	}
	return cmds
}

// runCoreCommand answers /ask, /stop, /usage and a registered core
// command; ok is false for any other command (or without an assistant),
// which goes to the module host.
func (x *interactions) runCoreCommand(ctx context.Context, name string, tier sdk.TrustTier, in *interaction) (bool, error) {
	p := x.assistantPort()
	if p == nil || !slices.Contains(hostkit.CoreCommands, name) {
		return false, nil
	}
	if in.guildID == 0 && !slices.Contains(dmCoreCommands, name) {
		return true, in.Respond(ctx, sdk.Response{Content: replyNotAllowed, Ephemeral: true})
	}
	switch name {
	case hostkit.CommandAsk:
	case hostkit.CommandStop:
		return true, stopCommand(ctx, p.Assistant, in)
	case hostkit.CommandUsage:
		return true, x.usageCommand(ctx, p, tier, in)
	default:
		return true, x.runRegisteredCommand(ctx, name, tier, in)
	}
	var parentID uint64
	channelName := ""
	if in.s != nil && in.s.State != nil {
		if ch, err := in.s.State.Channel(idString(in.channelID)); err == nil && ch != nil {
			channelName = ch.Name
			if isThread(ch.Type) {
				parentID = parseID(ch.ParentID)
			}
		}
	}
	owner := x.owner != nil && in.userID != 0 && in.userID == x.owner()
	pol, active := p.Policies.AssistantFor(in.guildID, in.channelID, parentID)
	switch {
	case !active || !pol.Enabled || !p.Assistant.Ready():
		// Without a provider Handle drops the question: deferring would
		// leave "thinking" that nothing answers.
		return true, in.Respond(ctx, sdk.Response{Content: replyUnavailable, Ephemeral: true})
	case !pol.ChannelAllowed || !pol.Allows(tier, owner):
		return true, in.Respond(ctx, sdk.Response{Content: replyNotAllowed, Ephemeral: true})
	}
	question, _ := in.opts["question"].(string)
	private, _ := in.opts["private"].(bool)
	if err := in.Defer(ctx, private); err != nil {
		return true, err
	}
	var member *discordgo.Member
	if in.i.Member != nil {
		member = in.i.Member
	}
	inc := assistant.Incoming{Kind: assistant.KindAsk, MessageID: parseID(in.i.ID), UserID: in.userID, Tier: tier, Owner: owner,
		Place:       assistant.Place{GuildID: in.guildID, ChannelID: in.channelID, ParentID: parentID},
		DisplayName: displayName(interactionUser(in.i), member), Text: strings.TrimSpace(question), Private: private,
		GuildName: in.guildName, ChannelName: channelName}
	// The turn outlives the dispatch (Handle returns at once): its surface
	// is bounded by the interaction token's lifetime, not the dispatch's.
	tctx, cancel := context.WithTimeout(x.ctx, interactionLifetime)
	p.Assistant.Handle(tctx, inc, &askSurface{in: in, private: private, caller: idString(in.userID), cancel: cancel})
	return true, nil
}

// replyUsageUnavailable answers /usage when the usage cannot be read.
const replyUsageUnavailable = "I couldn't read the usage right now. Please try again in a moment."

// usageCommand is /usage: the caller's tokens today and this month
// against their budget (staff also see the guild's), ephemeral, from the
// port's Usage.
func (x *interactions) usageCommand(ctx context.Context, p *ResponderPort, tier sdk.TrustTier, in *interaction) error {
	if p.Usage == nil {
		return in.Respond(ctx, sdk.Response{Content: replyUnavailable, Ephemeral: true})
	}
	owner := x.owner != nil && in.userID != 0 && in.userID == x.owner()
	text, err := p.Usage.UsageText(ctx, in.guildID, in.userID, tier, owner)
	if err != nil {
		x.log.Warn("reading the usage failed", "err", err)
		text = replyUsageUnavailable
	}
	return in.Respond(ctx, sdk.Response{Content: text, Ephemeral: true})
}

// stopCommand is /stop: the STOP lane's cancel and texts, answered
// ephemerally. With work stopped it defers first (the summary waits for
// the cleanup, up to assistant.StopWait) and starts with 🛑, the reaction
// an ephemeral answer cannot carry.
func stopCommand(ctx context.Context, a Responder, in *interaction) error {
	stopped := a.Cancel(in.userID, in.channelID)
	if stopped.N == 0 {
		return in.Respond(ctx, sdk.Response{Content: stopped.Reply(ctx), Ephemeral: true})
	}
	if err := in.Defer(ctx, true); err != nil {
		return err
	}
	return in.Respond(ctx, sdk.Response{Content: assistant.ReactStopped + " " + stopped.Reply(ctx), Ephemeral: true})
}

// askSurface is a turn's Surface for /ask: the deferred response is the
// status and then the answer's first chunk (or 🛑/❌ for a turn that
// ended without one); later chunks are follow-ups; ephemeral when private.
type askSurface struct {
	in      *interaction
	private bool
	caller  string
	cancel  context.CancelFunc

	mu        sync.Mutex
	delivered bool
}

var _ assistant.Surface = (*askSurface)(nil)

// React shows an ending without an answer (🛑 stopped, ❌ failed before
// it could run) as the deferred response, whose status would otherwise
// stand; a stopped answer's chunks already sent stay as they are, and
// every other reaction does nothing.
func (a *askSurface) React(ctx context.Context, emoji string) error {
	if emoji != assistant.ReactStopped && emoji != assistant.ReactFailed {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.delivered {
		return nil
	}
	a.delivered = true
	_, err := a.edit(ctx, emoji, noMentions())
	return err
}

// Unreact does nothing: /ask shows no reactions.
func (a *askSurface) Unreact(context.Context, string) error { return nil }

// Status edits the deferred response (mentions off) until the answer; it
// has no status message of its own (id 0).
func (a *askSurface) Status(ctx context.Context, text string) (uint64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.delivered {
		return 0, nil
	}
	_, err := a.edit(ctx, text, noMentions())
	return 0, err
}

// ClearStatus does nothing: the answer replaces the status.
func (a *askSurface) ClearStatus(context.Context) error { return nil }

// Deliver edits the deferred response with the first chunk, sends later
// ones as follow-ups; allowed mentions the caller only.
func (a *askSurface) Deliver(ctx context.Context, chunk string, first bool) (uint64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if first || !a.delivered {
		a.delivered = true
		return a.edit(ctx, chunk, callerOnly(a.caller))
	}
	var flags discordgo.MessageFlags
	if a.private {
		flags = discordgo.MessageFlagsEphemeral
	}
	m, err := a.in.s.FollowupMessageCreate(a.in.i, true, &discordgo.WebhookParams{Content: chunk, Flags: flags,
		AllowedMentions: callerOnly(a.caller)}, requestOptions(ctx)...)
	if err != nil {
		return 0, fmt.Errorf("discord: ask follow-up: %w", err)
	}
	return parseID(m.ID), nil
}

// Busy answers in the deferred response.
func (a *askSurface) Busy(ctx context.Context, text string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.delivered = true
	_, err := a.edit(ctx, text, noMentions())
	return err
}

// edit patches the deferred response and returns its message id.
func (a *askSurface) edit(ctx context.Context, content string, am *discordgo.MessageAllowedMentions) (uint64, error) {
	ep := discordgo.EndpointInteractionResponseActions(a.in.i.AppID, a.in.i.Token)
	body := map[string]any{"content": content, "allowed_mentions": am}
	raw, err := a.in.s.RequestWithBucketID(http.MethodPatch, ep, body, ep, requestOptions(ctx)...)
	if err != nil {
		return 0, fmt.Errorf("discord: edit the ask response: %w", err)
	}
	var m struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return 0, fmt.Errorf("discord: read the ask response: %w", err)
	}
	return parseID(m.ID), nil
}
