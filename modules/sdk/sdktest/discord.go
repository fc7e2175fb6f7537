package sdktest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// DiscordCall is one recorded call of a FakeDiscordActions. Args are the
// call's arguments after ctx, in signature order, for example
// SendMessage → [channelID uint64, msg sdk.OutgoingMessage] and
// Ban → [guildID, userID uint64, mod sdk.Moderation, deleteMessages time.Duration].
type DiscordCall struct {
	Action sdk.DiscordAction
	Args   []any
}

// GuildUser keys per-member fake data.
type GuildUser struct{ GuildID, UserID uint64 }

// GuildChannel keys per-channel fake data.
type GuildChannel struct{ GuildID, ChannelID uint64 }

// MemberChannel keys FakeDiscordActions.ChannelAccess.
type MemberChannel struct{ GuildID, UserID, ChannelID uint64 }

// FakeDiscordActions is an sdk.DiscordActions that enforces the module's
// declared actions (an undeclared one fails with *sdk.UndeclaredDiscordActionError
// before anything happens), records every declared call, and answers reads
// from the maps below, which a test fills before acting. Lock Mu around
// direct map access while the module may be running concurrently.
type FakeDiscordActions struct {
	module string

	// Mu guards every field below.
	Mu            sync.Mutex
	declared      map[sdk.DiscordAction]bool
	calls         []DiscordCall
	nextMessageID uint64
	failures      map[sdk.DiscordAction][]error // FailNext's causes

	Messages      map[sdk.MessageRef]sdk.MessageSnapshot
	Members       map[GuildUser]sdk.MemberSnapshot
	Channels      map[GuildChannel]sdk.ChannelSnapshot
	Histories     map[GuildChannel][]sdk.MessageSnapshot
	Pins          map[GuildChannel][]sdk.MessageSnapshot
	PublicThreads map[GuildChannel][]sdk.ChannelSnapshot
	Roles         map[uint64][]sdk.RoleSnapshot
	Invites       map[uint64][]sdk.InviteSnapshot
	// ChannelAccess answers CanViewChannel; absent means false.
	ChannelAccess map[MemberChannel]bool
}

var _ sdk.DiscordActions = (*FakeDiscordActions)(nil)

// NewFakeDiscordActions returns a fake for module that allows exactly the
// declared actions; nil declares all 16.
func NewFakeDiscordActions(module string, declared []sdk.DiscordAction) *FakeDiscordActions {
	f := &FakeDiscordActions{
		module:        module,
		nextMessageID: 1000,
		Messages:      map[sdk.MessageRef]sdk.MessageSnapshot{},
		Members:       map[GuildUser]sdk.MemberSnapshot{},
		Channels:      map[GuildChannel]sdk.ChannelSnapshot{},
		Histories:     map[GuildChannel][]sdk.MessageSnapshot{},
		Pins:          map[GuildChannel][]sdk.MessageSnapshot{},
		PublicThreads: map[GuildChannel][]sdk.ChannelSnapshot{},
		Roles:         map[uint64][]sdk.RoleSnapshot{},
		Invites:       map[uint64][]sdk.InviteSnapshot{},
		ChannelAccess: map[MemberChannel]bool{},
	}
	if declared == nil {
		declared = sdk.AllDiscordActions()
	}
	f.SetDeclared(declared...)
	return f
}

// SetDeclared replaces the declared actions; with none, every call fails.
// Narrowing is how a test simulates a failing Discord call.
func (f *FakeDiscordActions) SetDeclared(actions ...sdk.DiscordAction) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.declared = make(map[sdk.DiscordAction]bool, len(actions))
	for _, a := range actions {
		f.declared[a] = true
	}
}

// record checks the declaration and appends the call.
func (f *FakeDiscordActions) record(action sdk.DiscordAction, args ...any) error {
	if err := f.check(action); err != nil {
		return err
	}
	f.calls = append(f.calls, DiscordCall{Action: action, Args: args})
	return nil
}

// check is record's declaration check alone, for actions that validate
// their arguments before recording: a refused call is never recorded.
func (f *FakeDiscordActions) check(action sdk.DiscordAction) error {
	if !f.declared[action] {
		return hostkit.NewUndeclaredDiscordActionError(f.module, action)
	}
	return nil
}

// Calls returns every recorded call, oldest first.
func (f *FakeDiscordActions) Calls() []DiscordCall {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return slices.Clone(f.calls)
}

// CallsFor returns the recorded calls of one action.
func (f *FakeDiscordActions) CallsFor(action sdk.DiscordAction) []DiscordCall {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	var out []DiscordCall
	for _, c := range f.calls {
		if c.Action == action {
			out = append(out, c)
		}
	}
	return out
}

// RefusedError is a Discord action the host refuses before calling
// Discord; Message is the host's text.
type RefusedError struct{ Message string }

func (e *RefusedError) Error() string { return e.Message }

// refRefused is the host's refusal of a message ref without a guild (the
// ref's channel is checked against the ref's guild), nil for a good ref.
func refRefused(ref sdk.MessageRef) error {
	if ref.GuildID == 0 {
		return &RefusedError{Message: fmt.Sprintf("channel %d is not in guild 0", ref.ChannelID)}
	}
	return nil
}

// channelGuild is the guild of a channel in Channels (0 when absent).
func (f *FakeDiscordActions) channelGuild(channelID uint64) uint64 {
	for k := range f.Channels {
		if k.ChannelID == channelID {
			return k.GuildID
		}
	}
	return 0
}

// SendMessage records the call and returns MessageRef{guild, channel,
// 1001…}, the guild taken from Channels (0 when the channel is not there:
// add it for refs a module reuses). As in the host, a reply target must be
// in the destination channel and carry its guild ("reply target is not in
// the destination channel"); a refused call is not recorded.
func (f *FakeDiscordActions) SendMessage(ctx context.Context, channelID uint64, msg sdk.OutgoingMessage) (sdk.MessageRef, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.check(sdk.ActionSendMessage); err != nil {
		return sdk.MessageRef{}, err
	}
	guildID := f.channelGuild(channelID)
	if r := msg.ReplyTo; r != nil && (r.GuildID == 0 || r.ChannelID != channelID || (guildID != 0 && r.GuildID != guildID)) {
		return sdk.MessageRef{}, &RefusedError{Message: "reply target is not in the destination channel"}
	}
	if err := hostkit.ValidateMessageControls(f.module, msg.Components, nil); err != nil {
		return sdk.MessageRef{}, err // refused: not sent, so not recorded
	}
	f.calls = append(f.calls, DiscordCall{Action: sdk.ActionSendMessage, Args: []any{channelID, cloneOutgoing(msg)}})
	if cause := f.failure(sdk.ActionSendMessage); cause != nil {
		return sdk.MessageRef{}, failed(sdk.ActionSendMessage, cause, channelID)
	}
	f.nextMessageID++
	return sdk.MessageRef{GuildID: guildID, ChannelID: channelID, MessageID: f.nextMessageID}, nil
}

// SendDM records the call and reports success.
func (f *FakeDiscordActions) SendDM(ctx context.Context, userID uint64, content string, embed *sdk.OutgoingEmbed) (bool, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.record(sdk.ActionSendDM, userID, content, cloneEmbed(embed)); err != nil {
		return false, err
	}
	return f.failure(sdk.ActionSendDM) == nil, nil
}

// EditMessage records the call; a ref without a guild is refused as in the
// host ("channel C is not in guild 0", not recorded).
func (f *FakeDiscordActions) EditMessage(ctx context.Context, ref sdk.MessageRef, content string, embed *sdk.OutgoingEmbed) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.check(sdk.ActionEditMessage); err != nil {
		return err
	}
	if err := refRefused(ref); err != nil {
		return err
	}
	if err := f.record(sdk.ActionEditMessage, ref, content, cloneEmbed(embed)); err != nil {
		return err
	}
	if cause := f.failure(sdk.ActionEditMessage); cause != nil {
		return failed(sdk.ActionEditMessage, cause, ref.ChannelID)
	}
	return nil
}

// DeleteMessage records the call and forgets the message; a ref without a
// guild is refused as EditMessage's.
func (f *FakeDiscordActions) DeleteMessage(ctx context.Context, ref sdk.MessageRef, reason string) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.check(sdk.ActionDeleteMessage); err != nil {
		return err
	}
	if err := refRefused(ref); err != nil {
		return err
	}
	if err := f.record(sdk.ActionDeleteMessage, ref, reason); err != nil {
		return err
	}
	if cause := f.failure(sdk.ActionDeleteMessage); cause != nil && !errors.Is(cause, sdk.ErrUnknownMessage) {
		return failed(sdk.ActionDeleteMessage, cause, ref.ChannelID)
	}
	delete(f.Messages, ref)
	return nil
}

// Ban records the call.
func (f *FakeDiscordActions) Ban(ctx context.Context, guildID, userID uint64, mod sdk.Moderation, deleteMessages time.Duration) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return f.fail(sdk.ActionBan, 0, f.record(sdk.ActionBan, guildID, userID, mod, deleteMessages))
}

// Kick records the call.
func (f *FakeDiscordActions) Kick(ctx context.Context, guildID, userID uint64, mod sdk.Moderation) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return f.fail(sdk.ActionKick, 0, f.record(sdk.ActionKick, guildID, userID, mod))
}

// Timeout records the call; a non-positive duration fails as in the host
// ("timeout duration must be positive").
func (f *FakeDiscordActions) Timeout(ctx context.Context, guildID, userID uint64, mod sdk.Moderation, duration time.Duration) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.record(sdk.ActionTimeout, guildID, userID, mod, duration); err != nil {
		return err
	}
	if duration <= 0 {
		return &sdk.ModuleContractError{Message: "timeout duration must be positive"}
	}
	return f.fail(sdk.ActionTimeout, 0, nil)
}

// FetchMessage returns Messages[ref] or nil; a ref without a guild is
// nil, as the host answers a refused fetch (not recorded).
func (f *FakeDiscordActions) FetchMessage(ctx context.Context, ref sdk.MessageRef) (*sdk.MessageSnapshot, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.check(sdk.ActionFetchMessage); err != nil {
		return nil, err
	}
	if refRefused(ref) != nil {
		return nil, nil
	}
	if err := f.record(sdk.ActionFetchMessage, ref); err != nil {
		return nil, err
	}
	if f.failure(sdk.ActionFetchMessage) != nil {
		return nil, nil
	}
	if m, ok := f.Messages[ref]; ok {
		m = cloneMessage(m)
		return &m, nil
	}
	return nil, nil
}

// FetchMember returns Members[{guild, user}] or nil.
func (f *FakeDiscordActions) FetchMember(ctx context.Context, guildID, userID uint64) (*sdk.MemberSnapshot, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.record(sdk.ActionFetchMember, guildID, userID); err != nil || f.failure(sdk.ActionFetchMember) != nil {
		return nil, err
	}
	if m, ok := f.Members[GuildUser{guildID, userID}]; ok {
		m = cloneMember(m)
		return &m, nil
	}
	return nil, nil
}

// FetchChannel returns Channels[{guild, channel}] or nil.
func (f *FakeDiscordActions) FetchChannel(ctx context.Context, guildID, channelID uint64) (*sdk.ChannelSnapshot, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.record(sdk.ActionFetchChannel, guildID, channelID); err != nil || f.failure(sdk.ActionFetchChannel) != nil {
		return nil, err
	}
	if c, ok := f.Channels[GuildChannel{guildID, channelID}]; ok {
		c = cloneChannel(c)
		return &c, nil
	}
	return nil, nil
}

// FetchMessages pages Histories[{guild, channel}] exactly as the reference
// kit does: messages sorted ascending by id; with After, the first Limit
// messages newer than After and NextCursor the newest of them; otherwise
// the last Limit messages older than Before (or the newest, when Before is
// 0) and NextCursor the oldest of them; HasMore when candidates were left
// out. As in the host, Limit is clamped to 1..100 (0 means 100) and
// setting both After and Before fails.
func (f *FakeDiscordActions) FetchMessages(ctx context.Context, guildID, channelID uint64, q sdk.HistoryQuery) (sdk.MessagePage, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.record(sdk.ActionFetchMessages, guildID, channelID, q); err != nil {
		return sdk.MessagePage{}, err
	}
	if err := q.Validate(); err != nil {
		return sdk.MessagePage{}, err
	}
	if err := f.fail(sdk.ActionFetchMessages, channelID, nil); err != nil {
		return sdk.MessagePage{}, err
	}
	limit := q.ClampedLimit()
	messages := slices.Clone(f.Histories[GuildChannel{guildID, channelID}])
	slices.SortStableFunc(messages, func(a, b sdk.MessageSnapshot) int {
		switch {
		case a.Ref.MessageID < b.Ref.MessageID:
			return -1
		case a.Ref.MessageID > b.Ref.MessageID:
			return 1
		}
		return 0
	})
	var candidates, selected []sdk.MessageSnapshot
	var cursor uint64
	if q.After != 0 {
		for _, m := range messages {
			if m.Ref.MessageID > q.After {
				candidates = append(candidates, m)
			}
		}
		selected = candidates[:min(limit, len(candidates))]
		if len(selected) > 0 {
			cursor = selected[len(selected)-1].Ref.MessageID
		}
	} else {
		for _, m := range messages {
			if q.Before == 0 || m.Ref.MessageID < q.Before {
				candidates = append(candidates, m)
			}
		}
		selected = candidates[max(0, len(candidates)-limit):]
		if len(selected) > 0 {
			cursor = selected[0].Ref.MessageID
		}
	}
	return sdk.MessagePage{Messages: cloneMessages(selected), NextCursor: cursor, HasMore: len(candidates) > len(selected)}, nil
}

// FetchPins returns Pins[{guild, channel}].
func (f *FakeDiscordActions) FetchPins(ctx context.Context, guildID, channelID uint64) ([]sdk.MessageSnapshot, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.fail(sdk.ActionFetchPins, channelID, f.record(sdk.ActionFetchPins, guildID, channelID)); err != nil {
		return nil, err
	}
	return cloneMessages(f.Pins[GuildChannel{guildID, channelID}]), nil
}

// FetchPublicThreads returns PublicThreads[{guild, parent}].
func (f *FakeDiscordActions) FetchPublicThreads(ctx context.Context, guildID, parentChannelID uint64) ([]sdk.ChannelSnapshot, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.record(sdk.ActionFetchPublicThreads, guildID, parentChannelID); err != nil {
		return nil, err
	}
	if cause := f.failure(sdk.ActionFetchPublicThreads); errors.Is(cause, sdk.ErrUnknownChannel) {
		return nil, failed(sdk.ActionFetchPublicThreads, cause, parentChannelID)
	}
	return cloneChannels(f.PublicThreads[GuildChannel{guildID, parentChannelID}]), nil
}

// FetchRoles returns Roles[guild].
func (f *FakeDiscordActions) FetchRoles(ctx context.Context, guildID uint64) ([]sdk.RoleSnapshot, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.fail(sdk.ActionFetchRoles, 0, f.record(sdk.ActionFetchRoles, guildID)); err != nil {
		return nil, err
	}
	return slices.Clone(f.Roles[guildID]), nil
}

// FetchInvites returns Invites[guild].
func (f *FakeDiscordActions) FetchInvites(ctx context.Context, guildID uint64) ([]sdk.InviteSnapshot, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.fail(sdk.ActionFetchInvites, 0, f.record(sdk.ActionFetchInvites, guildID)); err != nil {
		return nil, err
	}
	return cloneInvites(f.Invites[guildID]), nil
}

// CanViewChannel returns ChannelAccess[{guild, user, channel}] (false when
// absent).
func (f *FakeDiscordActions) CanViewChannel(ctx context.Context, guildID, userID, channelID uint64) (bool, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.record(sdk.ActionCanViewChannel, guildID, userID, channelID); err != nil {
		return false, err
	}
	if cause := f.failure(sdk.ActionCanViewChannel); cause != nil {
		if errors.Is(cause, sdk.ErrUnknownChannel) {
			return false, failed(sdk.ActionCanViewChannel, cause, channelID)
		}
		return false, &ActionError{Message: fmt.Sprintf("the member %d of guild %d could not be fetched", userID, guildID), Err: cause}
	}
	return f.ChannelAccess[MemberChannel{guildID, userID, channelID}], nil
}
