package discord

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/modules/sdk"
)

// The Discord actions port (reference §2.5): the 16 actions with the
// original's guild, channel and message-ref checks and its safe failure
// messages. The host has already refused undeclared actions; everything
// here runs for a declared one.

// ActionError is a Discord action's failure. Error is the message safe for
// staff (the original's DiscordActionError); Unwrap exposes the cause for
// errors.Is/As: the SDK's typed cause where Discord said why
// (discordCause: *sdk.RateLimitError, *sdk.MissingPermissionError,
// *sdk.UncertainDeliveryError, the sdk.ErrUnknown* sentinels), and under it
// a ctx error, an *UncertainError, discordgo's error.
type ActionError struct {
	Message string
	Err     error
}

// Error returns the safe message.
func (e *ActionError) Error() string { return e.Message }

// Unwrap returns the cause (nil for a refused check).
func (e *ActionError) Unwrap() error { return e.Err }

func actionError(cause error, format string, args ...any) *ActionError {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	return &ActionError{Message: msg, Err: discordCause(cause, nil)}
}

// requestError is the ActionError of a request Discord refused or failed:
// msg over the typed cause, perm naming a 50013's permission.
func requestError(cause error, perm func() string, msg string) *ActionError {
	return &ActionError{Message: msg, Err: discordCause(cause, perm)}
}

type actions struct {
	log    *slog.Logger
	src    sessionSource
	guilds GuildConfig
	cache  *Cache
	now    func() time.Time
}

func newActions(log *slog.Logger, src sessionSource, guilds GuildConfig, cache *Cache) *actions {
	if log == nil {
		log = slog.Default()
	}
	return &actions{log: log, src: src, guilds: guilds, cache: cache, now: time.Now}
}

// forModule returns module's view of the Discord actions (audit reasons
// carry its name) under the target policy.
func (a *actions) forModule(module string) sdk.DiscordActions {
	return a.forModulePolicy(module, false)
}

// forModulePolicy is forModule for a module whose permissions may carry
// override_target_policy (sdk.Permissions.OverrideTargetPolicy).
func (a *actions) forModulePolicy(module string, override bool) sdk.DiscordActions {
	return &moduleActions{a: a, module: module, override: override, log: a.log.With("module", module)}
}

// ActionsFor returns module's Discord actions with its permissions'
// override_target_policy flag; the host prefers it to Actions.
func (b *Bot) ActionsFor(module string, perms sdk.Permissions) sdk.DiscordActions {
	return b.act.forModulePolicy(module, perms.OverrideTargetPolicy)
}

type moduleActions struct {
	a        *actions
	module   string
	override bool
	log      *slog.Logger
}

var _ sdk.DiscordActions = (*moduleActions)(nil)

// guild checks an active guild known to the session state.
func (m *moduleActions) guild(guildID uint64) (*discordgo.Session, *discordgo.Guild, error) {
	s, err := m.a.src.session()
	if err != nil {
		return nil, nil, err
	}
	if m.a.guilds == nil || !m.a.guilds.Active(guildID) {
		return nil, nil, actionError(nil, "guild %d is not active for this bot", guildID)
	}
	g, err := s.State.Guild(idString(guildID))
	if err != nil || g == nil {
		return nil, nil, actionError(err, "guild %d is not available", guildID)
	}
	return s, g, nil
}

// lookupChannel returns a channel from the state (a copy made under its
// lock), else from REST.
func lookupChannel(ctx context.Context, s *discordgo.Session, channelID uint64) (*discordgo.Channel, error) {
	if c := stateChannel(s, idString(channelID)); c != nil {
		return c, nil
	}
	var c *discordgo.Channel
	if err := restJSON(ctx, s, http.MethodGet, discordgo.EndpointChannel(idString(channelID)), nil, &c); err != nil {
		return nil, err
	}
	return c, nil
}

// channel fetches a channel, which must be in an active guild.
func (m *moduleActions) channel(ctx context.Context, s *discordgo.Session, channelID uint64) (*discordgo.Channel, error) {
	c, err := lookupChannel(ctx, s, channelID)
	if err != nil || c == nil || c.GuildID == "" || m.a.guilds == nil || !m.a.guilds.Active(parseID(c.GuildID)) {
		return nil, actionError(err, "channel %d is not in an active guild", channelID)
	}
	return c, nil
}

// refChannel is channel for a message ref or a (guild, channel) pair: the
// channel's guild must be the ref's.
func (m *moduleActions) refChannel(ctx context.Context, guildID, channelID uint64) (*discordgo.Session, *discordgo.Channel, error) {
	s, err := m.a.src.session()
	if err != nil {
		return nil, nil, err
	}
	c, err := m.channel(ctx, s, channelID)
	if err != nil {
		return nil, nil, err
	}
	if parseID(c.GuildID) != guildID {
		return nil, nil, actionError(nil, "channel %d is not in guild %d", channelID, guildID)
	}
	return s, c, nil
}

func parentOf(c *discordgo.Channel) uint64 {
	if isThread(c.Type) {
		return parseID(c.ParentID)
	}
	return 0
}

// isNotFound reports a 404 from Discord.
func isNotFound(err error) bool {
	var rest *discordgo.RESTError
	return errors.As(err, &rest) && rest.Response != nil && rest.Response.StatusCode == http.StatusNotFound
}

func (m *moduleActions) SendMessage(ctx context.Context, channelID uint64, msg sdk.OutgoingMessage) (sdk.MessageRef, error) {
	s, err := m.a.src.session()
	if err != nil {
		return sdk.MessageRef{}, err
	}
	c, err := m.channel(ctx, s, channelID)
	if err != nil {
		return sdk.MessageRef{}, err
	}
	guildID := parseID(c.GuildID)
	if r := msg.ReplyTo; r != nil && (r.GuildID != guildID || r.ChannelID != channelID) {
		return sdk.MessageRef{}, actionError(nil, "reply target is not in the destination channel")
	}
	embed := embedOut(msg.Embed, m.a.now())
	if err := checkContent(msg.Content, embed); err != nil {
		return sdk.MessageRef{}, err
	}
	rows, err := componentsOut(m.module, msg.Components, nil)
	if err != nil {
		return sdk.MessageRef{}, err
	}
	data := &discordgo.MessageSend{Content: msg.Content, Components: rows, AllowedMentions: noMentions()}
	if embed != nil {
		data.Embeds = []*discordgo.MessageEmbed{embed}
	}
	if r := msg.ReplyTo; r != nil {
		no := false
		data.Reference = &discordgo.MessageReference{MessageID: idString(r.MessageID), ChannelID: idString(r.ChannelID), GuildID: idString(r.GuildID), FailIfNotExists: &no}
	}
	var sent discordgo.Message
	if err := restJSON(ctx, s, http.MethodPost, discordgo.EndpointChannelMessages(idString(channelID)), data, &sent); err != nil {
		m.log.Warn("send message failed", "channel", channelID, "err", err)
		return sdk.MessageRef{}, requestError(sendOutcome(err), m.missingPermission(s, guildID, c, sendNeeds(c, msg)...), "sending the message failed")
	}
	return sdk.MessageRef{GuildID: guildID, ChannelID: channelID, MessageID: parseID(sent.ID), ParentChannelID: parentOf(c)}, nil
}

func (m *moduleActions) SendDM(ctx context.Context, userID uint64, content string, embed *sdk.OutgoingEmbed) (bool, error) {
	e := embedOut(embed, m.a.now())
	if err := checkContent(content, e); err != nil {
		return false, err
	}
	s, err := m.a.src.session()
	if err != nil {
		m.log.Info("send DM: not connected", "user", userID)
		return false, nil
	}
	var dm discordgo.Channel
	if err := restJSON(ctx, s, http.MethodPost, discordgo.EndpointUserChannels("@me"), map[string]string{"recipient_id": idString(userID)}, &dm); err != nil || dm.ID == "" {
		m.log.Info("send DM: opening the DM channel failed", "user", userID, "err", err)
		return false, nil
	}
	data := &discordgo.MessageSend{Content: content, AllowedMentions: noMentions()}
	if e != nil {
		data.Embeds = []*discordgo.MessageEmbed{e}
	}
	if err := restJSON(ctx, s, http.MethodPost, discordgo.EndpointChannelMessages(dm.ID), data, nil); err != nil {
		m.log.Info("send DM failed", "user", userID, "err", err)
		return false, nil
	}
	return true, nil
}

func (m *moduleActions) EditMessage(ctx context.Context, ref sdk.MessageRef, content string, embed *sdk.OutgoingEmbed) error {
	s, c, err := m.refChannel(ctx, ref.GuildID, ref.ChannelID)
	if err != nil {
		return err
	}
	e := embedOut(embed, m.a.now())
	if err := checkContent(content, e); err != nil {
		return err
	}
	embeds := []*discordgo.MessageEmbed{} // always sent: an empty list clears the embed
	if e != nil {
		embeds = append(embeds, e)
	}
	edit := &discordgo.MessageEdit{Content: &content, Embeds: &embeds, AllowedMentions: noMentions()}
	if err := restJSON(ctx, s, http.MethodPatch, discordgo.EndpointChannelMessage(idString(ref.ChannelID), idString(ref.MessageID)), edit, nil); err != nil {
		m.log.Warn("edit message failed", "channel", ref.ChannelID, "message", ref.MessageID, "err", err)
		needs := []int64{discordgo.PermissionViewChannel}
		if e != nil {
			needs = append(needs, discordgo.PermissionEmbedLinks)
		}
		return requestError(err, m.missingPermission(s, ref.GuildID, c, needs...), "editing the message failed")
	}
	return nil
}

func (m *moduleActions) DeleteMessage(ctx context.Context, ref sdk.MessageRef, reason string) error {
	s, c, err := m.refChannel(ctx, ref.GuildID, ref.ChannelID)
	if err != nil {
		return err
	}
	err = restJSON(ctx, s, http.MethodDelete, discordgo.EndpointChannelMessage(idString(ref.ChannelID), idString(ref.MessageID)), nil, nil)
	switch {
	case err == nil:
		m.log.Info("message deleted", "channel", ref.ChannelID, "message", ref.MessageID, "reason", reason)
	case isNotFound(err):
		m.log.Info("message to delete was already gone", "channel", ref.ChannelID, "message", ref.MessageID, "reason", reason)
	default:
		m.log.Warn("delete message failed", "channel", ref.ChannelID, "message", ref.MessageID, "err", err)
		return requestError(err, m.missingPermission(s, ref.GuildID, c, discordgo.PermissionManageMessages, discordgo.PermissionViewChannel), "deleting the message failed")
	}
	return nil
}

func (m *moduleActions) FetchMessage(ctx context.Context, ref sdk.MessageRef) (*sdk.MessageSnapshot, error) {
	s, c, err := m.refChannel(ctx, ref.GuildID, ref.ChannelID)
	if err != nil {
		m.log.Debug("fetch message refused", "err", err)
		return nil, nil
	}
	var msg *discordgo.Message
	if err := restJSON(ctx, s, http.MethodGet, discordgo.EndpointChannelMessage(idString(ref.ChannelID), idString(ref.MessageID)), nil, &msg); err != nil || msg == nil {
		m.log.Debug("fetch message failed", "channel", ref.ChannelID, "message", ref.MessageID, "err", err)
		return nil, nil
	}
	snap := messageSnapshot(msg, ref.GuildID, parentOf(c))
	return &snap, nil
}

// member returns a guild member from the state (a copy made under its
// lock), else from REST (nil, nil when absent).
func member(ctx context.Context, s *discordgo.Session, guildID, userID uint64) (*discordgo.Member, error) {
	if mem := stateMember(s, idString(guildID), idString(userID)); mem != nil {
		return mem, nil
	}
	var mem *discordgo.Member
	if err := restJSON(ctx, s, http.MethodGet, discordgo.EndpointGuildMember(idString(guildID), idString(userID)), nil, &mem); err != nil {
		if isNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return mem, nil
}

func (m *moduleActions) FetchMember(ctx context.Context, guildID, userID uint64) (*sdk.MemberSnapshot, error) {
	s, _, err := m.guild(guildID)
	if err != nil {
		return nil, nil
	}
	mem, err := member(ctx, s, guildID, userID)
	if err != nil || mem == nil {
		return nil, nil
	}
	snap := memberSnapshot(guildID, mem)
	if snap.UserID == 0 {
		snap.UserID = userID
	}
	return &snap, nil
}

func (m *moduleActions) FetchChannel(ctx context.Context, guildID, channelID uint64) (*sdk.ChannelSnapshot, error) {
	s, _, err := m.guild(guildID)
	if err != nil {
		return nil, err
	}
	c, err := lookupChannel(ctx, s, channelID)
	if err != nil || c == nil || parseID(c.GuildID) != guildID {
		return nil, nil
	}
	snap, ok := channelSnapshot(c, parentTags(ctx, s, c))
	if !ok {
		return nil, nil
	}
	return &snap, nil
}

// parentTags are a thread's parent forum's tags (nil otherwise).
func parentTags(ctx context.Context, s *discordgo.Session, c *discordgo.Channel) []discordgo.ForumTag {
	if !isThread(c.Type) || len(c.AppliedTags) == 0 || c.ParentID == "" {
		return nil
	}
	p, err := lookupChannel(ctx, s, parseID(c.ParentID))
	if err != nil || p == nil {
		return nil
	}
	return p.AvailableTags
}

func (m *moduleActions) FetchMessages(ctx context.Context, guildID, channelID uint64, q sdk.HistoryQuery) (sdk.MessagePage, error) {
	if err := q.Validate(); err != nil {
		return sdk.MessagePage{}, err
	}
	if _, _, err := m.guild(guildID); err != nil {
		return sdk.MessagePage{}, err
	}
	s, c, err := m.refChannel(ctx, guildID, channelID)
	if err != nil {
		return sdk.MessagePage{}, err
	}
	limit := q.ClampedLimit()
	history := func(n int, before, after uint64) ([]*discordgo.Message, error) {
		v := url.Values{"limit": {strconv.Itoa(n)}}
		if before != 0 {
			v.Set("before", idString(before))
		}
		if after != 0 {
			v.Set("after", idString(after))
		}
		var out []*discordgo.Message
		err := restJSON(ctx, s, http.MethodGet, withQuery(discordgo.EndpointChannelMessages(idString(channelID)), v), nil, &out)
		return out, err
	}
	// limit+1 tells has_more; Discord answers at most 100 a request, so a
	// full page of 100 asks once more for the one beyond it.
	msgs, err := history(min(limit+1, sdk.MaxHistoryLimit), q.Before, q.After)
	byID := func(x, y *discordgo.Message) int { return cmp.Compare(parseID(x.ID), parseID(y.ID)) }
	if err == nil && limit == sdk.MaxHistoryLimit && len(msgs) == limit {
		slices.SortFunc(msgs, byID)
		var more []*discordgo.Message
		if q.After != 0 {
			more, err = history(1, 0, parseID(msgs[len(msgs)-1].ID))
		} else {
			more, err = history(1, parseID(msgs[0].ID), 0)
		}
		msgs = append(msgs, more...)
	}
	if err != nil {
		m.log.Warn("fetch messages failed", "channel", channelID, "err", err)
		return sdk.MessagePage{}, requestError(err, m.missingPermission(s, guildID, c, discordgo.PermissionReadMessageHistory, discordgo.PermissionViewChannel), "fetching the message history failed")
	}
	slices.SortFunc(msgs, byID)
	page := sdk.MessagePage{HasMore: len(msgs) > limit}
	if page.HasMore {
		if q.After != 0 {
			msgs = msgs[:limit] // the oldest after the cursor
		} else {
			msgs = msgs[len(msgs)-limit:] // the newest before it
		}
	}
	parent := parentOf(c)
	for _, msg := range msgs {
		page.Messages = append(page.Messages, messageSnapshot(msg, guildID, parent))
	}
	if n := len(page.Messages); n > 0 {
		if q.After != 0 {
			page.NextCursor = page.Messages[n-1].Ref.MessageID
		} else {
			page.NextCursor = page.Messages[0].Ref.MessageID
		}
	}
	return page, nil
}

func (m *moduleActions) FetchPins(ctx context.Context, guildID, channelID uint64) ([]sdk.MessageSnapshot, error) {
	s, _, err := m.guild(guildID)
	if err != nil {
		return nil, err
	}
	c, err := m.channel(ctx, s, channelID)
	if err != nil {
		return nil, err
	}
	if parseID(c.GuildID) != guildID {
		return nil, nil
	}
	var pins []*discordgo.Message
	if err := restJSON(ctx, s, http.MethodGet, discordgo.EndpointChannelMessagesPins(idString(channelID)), nil, &pins); err != nil {
		m.log.Warn("fetch pins failed", "channel", channelID, "err", err)
		return nil, requestError(err, m.missingPermission(s, guildID, c, discordgo.PermissionReadMessageHistory, discordgo.PermissionViewChannel), "fetching the pinned messages failed")
	}
	out := make([]sdk.MessageSnapshot, 0, len(pins))
	for _, p := range pins {
		out = append(out, messageSnapshot(p, guildID, parentOf(c)))
	}
	return out, nil
}

func (m *moduleActions) FetchPublicThreads(ctx context.Context, guildID, parentChannelID uint64) ([]sdk.ChannelSnapshot, error) {
	s, g, err := m.guild(guildID)
	if err != nil {
		return nil, err
	}
	parent, err := m.channel(ctx, s, parentChannelID)
	if err != nil {
		return nil, err
	}
	if parseID(parent.GuildID) != guildID {
		return nil, nil
	}
	pid := idString(parentChannelID)
	seen := map[string]bool{}
	var out []sdk.ChannelSnapshot
	add := func(c *discordgo.Channel) {
		if c == nil || c.ParentID != pid || c.Type == discordgo.ChannelTypeGuildPrivateThread || !isThread(c.Type) || seen[c.ID] {
			return
		}
		if snap, ok := channelSnapshot(c, parent.AvailableTags); ok {
			seen[c.ID] = true
			out = append(out, snap)
		}
	}
	s.State.RLock()
	threads := slices.Clone(g.Threads)
	s.State.RUnlock()
	for _, c := range threads {
		if c.ThreadMetadata == nil || !c.ThreadMetadata.Archived {
			add(c)
		}
	}
	var active, archived *discordgo.ThreadsList
	if err := restJSON(ctx, s, http.MethodGet, discordgo.EndpointGuildActiveThreads(idString(guildID)), nil, &active); err == nil && active != nil {
		for _, c := range active.Threads {
			add(c)
		}
	} else if err != nil {
		m.log.Debug("fetch active threads failed; the cached ones are used", "guild", guildID, "err", err)
	}
	if err := restJSON(ctx, s, http.MethodGet, withQuery(discordgo.EndpointChannelPublicArchivedThreads(pid), url.Values{"limit": {"100"}}), nil, &archived); err == nil && archived != nil {
		for _, c := range archived.Threads {
			add(c)
		}
	} else if err != nil {
		m.log.Warn("fetch archived public threads failed; the active ones are returned", "channel", parentChannelID, "err", err)
	}
	slices.SortFunc(out, func(x, y sdk.ChannelSnapshot) int { return cmp.Compare(x.ChannelID, y.ChannelID) })
	return out, nil
}

func (m *moduleActions) FetchRoles(ctx context.Context, guildID uint64) ([]sdk.RoleSnapshot, error) {
	s, _, err := m.guild(guildID)
	if err != nil {
		return nil, err
	}
	var roles []*discordgo.Role
	if err := restJSON(ctx, s, http.MethodGet, discordgo.EndpointGuildRoles(idString(guildID)), nil, &roles); err != nil {
		m.log.Warn("fetch roles failed", "guild", guildID, "err", err)
		return nil, actionError(err, "fetching the roles failed")
	}
	out := make([]sdk.RoleSnapshot, 0, len(roles))
	for _, r := range roles {
		out = append(out, roleSnapshot(guildID, r))
	}
	return out, nil
}

func (m *moduleActions) FetchInvites(ctx context.Context, guildID uint64) ([]sdk.InviteSnapshot, error) {
	s, g, err := m.guild(guildID)
	if err != nil {
		return nil, err
	}
	var invites []*discordgo.Invite
	if err := restJSON(ctx, s, http.MethodGet, discordgo.EndpointGuildInvites(idString(guildID)), nil, &invites); err != nil {
		m.log.Warn("fetch invites failed", "guild", guildID, "err", err)
		return nil, requestError(err, m.missingPermission(s, guildID, nil, discordgo.PermissionManageGuild), "fetching the invites failed")
	}
	out := make([]sdk.InviteSnapshot, 0, len(invites)+1)
	for _, in := range invites {
		out = append(out, inviteSnapshot(guildID, in))
	}
	s.State.RLock()
	vanity := g.VanityURLCode != "" || slices.Contains(g.Features, discordgo.GuildFeatureVanityURL)
	s.State.RUnlock()
	if vanity {
		if v, err := vanityInvite(ctx, s, guildID); err == nil {
			out = append(out, v)
		} else {
			m.log.Debug("fetch vanity invite failed", "guild", guildID, "err", err)
		}
	}
	return out, nil
}

// vanityInvite reads the guild's vanity invite (GET /guilds/{id}/vanity-url;
// discordgo has no call for it).
func vanityInvite(ctx context.Context, s *discordgo.Session, guildID uint64) (sdk.InviteSnapshot, error) {
	var v struct {
		Code string `json:"code"`
		Uses int    `json:"uses"`
	}
	if err := restJSON(ctx, s, http.MethodGet, discordgo.EndpointGuild(idString(guildID))+"/vanity-url", nil, &v); err != nil {
		return sdk.InviteSnapshot{}, err
	}
	if v.Code == "" {
		return sdk.InviteSnapshot{}, errors.New("discord: the guild has no vanity invite")
	}
	uses := v.Uses
	return sdk.InviteSnapshot{GuildID: guildID, Code: v.Code, Uses: &uses}, nil
}
