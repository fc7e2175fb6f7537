package fakediscord

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
)

// Errors of the user-action helpers.
var (
	ErrUnknownGuild     = errors.New("fakediscord: unknown guild")
	ErrUnknownChannel   = errors.New("fakediscord: unknown channel")
	ErrUnknownUser      = errors.New("fakediscord: unknown user")
	ErrNotMember        = errors.New("fakediscord: user is not a member of the guild")
	ErrUnknownMessage   = errors.New("fakediscord: unknown message")
	ErrUnknownComponent = errors.New("fakediscord: the message has no component with that custom id")
	ErrUnknownCommand   = errors.New("fakediscord: no such command is registered")
	ErrBadOptions       = errors.New("fakediscord: the options do not match the command")
	ErrNoModal          = errors.New("fakediscord: the interaction was not answered with a modal")
	ErrNotAutocomplete  = errors.New("fakediscord: the option is not an autocomplete option of the command")
	ErrNoChoices        = errors.New("fakediscord: the autocomplete was not answered with valid choices")
	ErrUnknownInvite    = errors.New("fakediscord: no usable invite of the guild has that code")
	ErrAlreadyMember    = errors.New("fakediscord: user is already a member of the guild")
	ErrNotInContext     = errors.New("fakediscord: the command is not offered in this context (its contexts)")
)

// dmAppPermissions are the app_permissions of an interaction in a DM with the bot (Discord
// sends the permissions the bot has there: view, send, embed, attach, history, reactions).
const dmAppPermissions = discordgo.PermissionViewChannel | discordgo.PermissionSendMessages | discordgo.PermissionEmbedLinks |
	discordgo.PermissionAttachFiles | discordgo.PermissionReadMessageHistory | discordgo.PermissionAddReactions

// interactor is actor for an interaction: in a DM channel with the bot the user is its
// recipient, and there is no guild (nil). s.mu held.
func (s *Server) interactor(channelID, userID string) (*channel, *guild, *discordgo.User, error) {
	ch := s.channels[channelID]
	if ch == nil || ch.c.Type != discordgo.ChannelTypeDM {
		return s.actor(channelID, userID)
	}
	u := s.users[userID]
	if u == nil {
		return nil, nil, nil, fmt.Errorf("%w %s", ErrUnknownUser, userID)
	}
	if len(ch.c.Recipients) != 1 || ch.c.Recipients[0].ID != userID {
		return nil, nil, nil, ErrNotMember
	}
	return ch, nil, u, nil
}

// offeredIn reports whether Discord offers cmd in the context: every context when it was
// registered without contexts, else the ones it lists.
func offeredIn(cmd *discordgo.ApplicationCommand, ctx discordgo.InteractionContextType) bool {
	return cmd.Contexts == nil || len(*cmd.Contexts) == 0 || slices.Contains(*cmd.Contexts, ctx)
}

// OpenDM opens (or returns) the bot's DM channel with a user, as the user opening it, and
// returns its id.
func (s *Server) OpenDM(userID string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[userID]
	if u == nil || u.ID == s.opts.BotID {
		return "", ErrUnknownUser
	}
	ch := s.dmOf(userID)
	if ch == nil {
		c := &discordgo.Channel{ID: s.newID(), Type: discordgo.ChannelTypeDM, Recipients: []*discordgo.User{u}}
		ch = &channel{c: c}
		s.channels[c.ID] = ch
	}
	return ch.c.ID, nil
}

// actor checks that userID may act in channelID: the channel exists, the user is known and a
// member of its guild. s.mu held.
func (s *Server) actor(channelID, userID string) (*channel, *guild, *discordgo.User, error) {
	ch := s.channels[channelID]
	if ch == nil {
		return nil, nil, nil, fmt.Errorf("%w %s", ErrUnknownChannel, channelID)
	}
	u := s.users[userID]
	if u == nil {
		return nil, nil, nil, fmt.Errorf("%w %s", ErrUnknownUser, userID)
	}
	g := s.guilds[ch.c.GuildID]
	if g == nil || g.members[userID] == nil {
		return nil, nil, nil, ErrNotMember
	}
	return ch, g, u, nil
}

// PostMessage posts content in a channel as a user: MESSAGE_CREATE (content stripped for
// sessions without the message-content intent, unless it mentions the bot).
func (s *Server) PostMessage(channelID, userID, content string) (*discordgo.Message, error) {
	return s.PostReply(channelID, userID, content, "")
}

// PostReply posts content as a user, replying to replyTo ("" for none)
// with the ping toggle on (the replied-to author is mentioned).
func (s *Server) PostReply(channelID, userID, content, replyTo string) (*discordgo.Message, error) {
	return s.postReply(channelID, userID, content, replyTo, true)
}

// PostReplyNoPing is PostReply with the ping toggle off: the replied-to
// author is not in mentions, so without the message-content intent the
// reply arrives blank (unless it mentions the bot otherwise).
func (s *Server) PostReplyNoPing(channelID, userID, content, replyTo string) (*discordgo.Message, error) {
	return s.postReply(channelID, userID, content, replyTo, false)
}

// PostDM sends content from a user to the bot in their DM channel (opened
// when none is): MESSAGE_CREATE without a guild, to sessions with the
// direct-messages intent, its content always present (Discord's rule).
func (s *Server) PostDM(userID, content string) (*discordgo.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[userID]
	if u == nil || u.ID == s.opts.BotID {
		return nil, ErrNotMember
	}
	ch := s.dmOf(userID)
	if ch == nil {
		c := &discordgo.Channel{ID: s.newID(), Type: discordgo.ChannelTypeDM, Recipients: []*discordgo.User{u}}
		ch = &channel{c: c}
		s.channels[c.ID] = ch
	}
	m := &discordgo.Message{ID: s.newID(), ChannelID: ch.c.ID, Author: u, Content: content, Timestamp: s.now().UTC(),
		Embeds: []*discordgo.MessageEmbed{}, Attachments: []*discordgo.MessageAttachment{}}
	s.resolveMentions(m, nil)
	s.storeMessage(ch, m)
	return cloneMessage(m), nil
}

func (s *Server) postReply(channelID, userID, content, replyTo string, ping bool) (*discordgo.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, _, u, err := s.actor(channelID, userID)
	if err != nil {
		return nil, err
	}
	m := &discordgo.Message{ID: s.newID(), ChannelID: ch.c.ID, GuildID: ch.c.GuildID, Author: u, Content: content,
		Timestamp: s.now().UTC(), Embeds: []*discordgo.MessageEmbed{}, Attachments: []*discordgo.MessageAttachment{}}
	if replyTo != "" {
		_, ref := ch.message(replyTo)
		if ref == nil {
			return nil, ErrUnknownMessage
		}
		m.Type = discordgo.MessageTypeReply
		m.ReferencedMessage = ref
		m.MessageReference = &discordgo.MessageReference{MessageID: ref.ID, ChannelID: ref.ChannelID, GuildID: ref.GuildID}
	}
	if g := s.guilds[ch.c.GuildID]; g != nil {
		m.Member = &discordgo.Member{Roles: g.members[userID].Roles, JoinedAt: g.members[userID].JoinedAt, Nick: g.members[userID].Nick}
	}
	var am *discordgo.MessageAllowedMentions
	if !ping {
		am = &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{discordgo.AllowedMentionTypeUsers,
			discordgo.AllowedMentionTypeRoles, discordgo.AllowedMentionTypeEveryone}}
	}
	s.resolveMentions(m, am)
	s.storeMessage(ch, m)
	return cloneMessage(m), nil
}

// EditAsUser edits a user's own message: MESSAGE_UPDATE.
func (s *Server) EditAsUser(channelID, messageID, content string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channels[channelID]
	if ch == nil {
		return ErrUnknownChannel
	}
	_, m := ch.message(messageID)
	if m == nil {
		return ErrUnknownMessage
	}
	m.Content = content
	m.EditedTimestamp = ptrTime(s.now().UTC())
	s.resolveMentions(m, nil)
	s.dispatchMessage("MESSAGE_UPDATE", m)
	return nil
}

// DeleteAsUser deletes a message as its author: MESSAGE_DELETE.
func (s *Server) DeleteAsUser(channelID, messageID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channels[channelID]
	if ch == nil {
		return ErrUnknownChannel
	}
	i, m := ch.message(messageID)
	if m == nil {
		return ErrUnknownMessage
	}
	ch.msgs = slices.Delete(ch.msgs, i, i+1)
	s.dispatchGuild(ch.c.GuildID, "MESSAGE_DELETE", &discordgo.MessageDelete{Message: &discordgo.Message{ID: m.ID, ChannelID: ch.c.ID, GuildID: ch.c.GuildID}})
	return nil
}

// BulkDeleteAsUser deletes messages of a channel at once, as a
// moderation tool acting for userID (a member) purges them through
// Discord's bulk-delete: MESSAGE_DELETE_BULK, with an audit log entry
// naming userID. Discord's limits hold: 2 to 100 messages, none named
// twice, none older than 14 days; ids the channel no longer holds are left
// out of the dispatch.
func (s *Server) BulkDeleteAsUser(channelID, userID string, messageIDs []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, g, _, err := s.actor(channelID, userID)
	if err != nil {
		return err
	}
	if len(messageIDs) < 2 || len(messageIDs) > 100 {
		return fmt.Errorf("fakediscord: bulk delete %d messages: at least 2 and at most 100", len(messageIDs))
	}
	if i := repeatedID(messageIDs); i >= 0 {
		return fmt.Errorf("fakediscord: bulk delete: %s named twice", messageIDs[i])
	}
	old := s.now().Add(-14 * 24 * time.Hour)
	for _, id := range messageIDs {
		if snowflakeTime(id).Before(old) {
			return fmt.Errorf("fakediscord: bulk delete %s: older than 14 days", id)
		}
	}
	var gone []string
	for _, id := range messageIDs {
		if i, m := ch.message(id); m != nil {
			ch.msgs = slices.Delete(ch.msgs, i, i+1)
			gone = append(gone, id)
		}
	}
	s.addAuditBy(g, userID, discordgo.AuditLogActionMessageBulkDelete, ch.c.ID, "")
	s.dispatchGuild(ch.c.GuildID, "MESSAGE_DELETE_BULK", &discordgo.MessageDeleteBulk{Messages: gone, ChannelID: ch.c.ID, GuildID: ch.c.GuildID})
	return nil
}

// React adds a user's reaction (a unicode emoji, or name:id): MESSAGE_REACTION_ADD.
func (s *Server) React(channelID, messageID, userID, emoji string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, _, _, err := s.actor(channelID, userID)
	if err != nil {
		return err
	}
	_, m := ch.message(messageID)
	if m == nil {
		return ErrUnknownMessage
	}
	s.setReaction(m, emoji, userID, true)
	return nil
}

// JoinGuild makes a known user join a guild: GUILD_MEMBER_ADD.
func (s *Server) JoinGuild(guildID, userID string) (*discordgo.Member, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guilds[guildID]
	if g == nil {
		return nil, ErrUnknownGuild
	}
	u := s.users[userID]
	if u == nil {
		return nil, ErrUnknownUser
	}
	m := s.addMemberLocked(g, u, nil)
	s.dispatchGuild(guildID, "GUILD_MEMBER_ADD", m)
	return clone(m), nil
}

// JoinWithInvite makes a known user join a guild through the invite code, as
// Discord counts it: the invite's Uses goes up by one (GET
// /guilds/{guild}/invites shows it, which is how a logging module guesses the
// invite a member joined with), then GUILD_MEMBER_ADD. The guild's vanity
// code counts on its vanity-url uses. An invite that reaches its MaxUses is
// deleted (INVITE_DELETE); an expired or used-up invite, or one of another
// guild, is ErrUnknownInvite, and a member joining again is ErrAlreadyMember
// (neither counts a use).
func (s *Server) JoinWithInvite(guildID, userID, code string) (*discordgo.Member, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guilds[guildID]
	if g == nil {
		return nil, ErrUnknownGuild
	}
	u := s.users[userID]
	if u == nil {
		return nil, ErrUnknownUser
	}
	inv := s.invites[code]
	if inv != nil && (inv.Guild.ID != guildID || inv.MaxUses > 0 && inv.Uses >= inv.MaxUses ||
		inv.MaxAge > 0 && !s.now().Before(inv.CreatedAt.Add(time.Duration(inv.MaxAge)*time.Second))) {
		inv = nil
	}
	v, vanityOK := s.side.vanity[guildID]
	vanityOK = vanityOK && code != "" && v.code == code
	if inv == nil && !vanityOK {
		return nil, ErrUnknownInvite
	}
	if g.members[userID] != nil {
		return nil, ErrAlreadyMember
	}
	if inv != nil {
		inv.Uses++
		if inv.MaxUses > 0 && inv.Uses >= inv.MaxUses {
			delete(s.invites, inv.Code)
			s.dispatchGuild(guildID, "INVITE_DELETE", &discordgo.InviteDelete{ChannelID: inv.Channel.ID, GuildID: guildID, Code: inv.Code})
		}
	} else {
		v.uses++
		s.side.vanity[guildID] = v
	}
	m := s.addMemberLocked(g, u, nil)
	s.dispatchGuild(guildID, "GUILD_MEMBER_ADD", m)
	return clone(m), nil
}

// LeaveGuild makes a member leave: GUILD_MEMBER_REMOVE.
func (s *Server) LeaveGuild(guildID, userID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guilds[guildID]
	if g == nil {
		return ErrUnknownGuild
	}
	if g.members[userID] == nil {
		return ErrNotMember
	}
	s.removeMember(g, userID)
	return nil
}

// newInteraction records and dispatches an INTERACTION_CREATE (g nil: in a DM with the bot).
// s.mu held.
func (s *Server) newInteraction(t discordgo.InteractionType, ch *channel, g *guild, u *discordgo.User, data discordgo.InteractionData, msg *discordgo.Message) *Interaction {
	id := s.newID()
	in := &Interaction{ID: id, Token: "fake-interaction-token-" + id, Type: t, ChannelID: ch.c.ID, UserID: u.ID,
		ephemeral: map[string]*discordgo.Message{}, Created: s.now(), called: make(chan struct{}), Data: data}
	if msg != nil {
		in.SourceMessageID = msg.ID
	}
	raw := &discordgo.Interaction{ID: id, AppID: s.opts.AppID, Type: t, Data: data, ChannelID: ch.c.ID,
		Message: msg, Token: in.Token, Version: 1, Locale: discordgo.EnglishUS}
	if g == nil {
		// A DM with the bot: no guild_id, the user as user (no member), context BOT_DM.
		raw.User, raw.Context, raw.AppPermissions = u, discordgo.InteractionContextBotDM, dmAppPermissions
	} else {
		member := *g.members[u.ID]
		member.Permissions = s.permissions(g, u.ID, ch.c)
		in.GuildID, raw.GuildID, raw.Member, raw.Context = g.g.ID, g.g.ID, &member, discordgo.InteractionContextGuild
		raw.AppPermissions = s.permissions(g, s.opts.BotID, ch.c)
	}
	in.raw = raw
	s.inters[id] = in
	s.byToken[in.Token] = in
	s.dispatchGuild(in.GuildID, "INTERACTION_CREATE", wireInter(raw))
	return in
}

// findComponent reports whether a component tree holds customID, and its type.
func findComponent(cs []discordgo.MessageComponent, customID string) (discordgo.ComponentType, bool) {
	for _, c := range cs {
		switch v := c.(type) {
		case *discordgo.ActionsRow:
			if t, ok := findComponent(v.Components, customID); ok {
				return t, true
			}
		case *discordgo.Button:
			if v.CustomID == customID {
				return v.Type(), true
			}
		case *discordgo.SelectMenu:
			if v.CustomID == customID {
				return v.Type(), true
			}
		case *discordgo.Container:
			if t, ok := findComponent(v.Components, customID); ok {
				return t, true
			}
		case *discordgo.Section:
			if v.Accessory != nil {
				if t, ok := findComponent([]discordgo.MessageComponent{v.Accessory}, customID); ok {
					return t, true
				}
			}
		}
	}
	return 0, false
}

// ClickButton clicks a button (or picks select values) on a message as a user — a message of
// the channel, or an ephemeral response that user was shown: INTERACTION_CREATE of type 3
// (from a DM channel as RunCommand's). It returns the interaction's id for Interaction.
func (s *Server) ClickButton(channelID, messageID, userID, customID string, values ...string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, g, u, err := s.interactor(channelID, userID)
	if err != nil {
		return "", err
	}
	_, m := ch.message(messageID)
	if m == nil {
		m = s.ephemeralOf(ch.c.ID, userID, messageID)
	}
	if m == nil {
		return "", ErrUnknownMessage
	}
	t, ok := findComponent(m.Components, customID)
	if !ok {
		return "", ErrUnknownComponent
	}
	data := discordgo.MessageComponentInteractionData{CustomID: customID, ComponentType: t, Values: values}
	return s.newInteraction(discordgo.InteractionMessageComponent, ch, g, u, data, m).ID, nil
}

// ephemeralOf finds an ephemeral response a user was shown in a channel (only they can click
// its components). s.mu held.
func (s *Server) ephemeralOf(channelID, userID, messageID string) *discordgo.Message {
	for _, in := range s.inters {
		if in.ChannelID == channelID && in.UserID == userID && in.ephemeral[messageID] != nil {
			return in.ephemeral[messageID]
		}
	}
	return nil
}

// RunCommand runs a slash command (guild or global) as a user: INTERACTION_CREATE of type 2.
// In the user's DM channel with the bot (OpenDM) it arrives as Discord's does from there:
// no guild_id, the user as user instead of member, context BOT_DM, and only for a global
// command offered there (ErrNotInContext otherwise; a guild needs the GUILD context).
// Options are checked against the registered command (known names, required present).
func (s *Server) RunCommand(channelID, userID, name string, options ...*discordgo.ApplicationCommandInteractionDataOption) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, g, u, err := s.interactor(channelID, userID)
	if err != nil {
		return "", err
	}
	var cmds []*discordgo.ApplicationCommand
	where := discordgo.InteractionContextBotDM
	if g != nil {
		cmds, where = slices.Clone(g.commands), discordgo.InteractionContextGuild
	}
	var cmd *discordgo.ApplicationCommand
	for _, c := range append(cmds, s.global...) {
		if c.Name == name && (c.Type == discordgo.ChatApplicationCommand || c.Type == 0) {
			cmd = c
			break
		}
	}
	if cmd == nil {
		return "", fmt.Errorf("%w: /%s", ErrUnknownCommand, name)
	}
	if !offeredIn(cmd, where) {
		return "", fmt.Errorf("%w: /%s", ErrNotInContext, name)
	}
	if err := checkOptions(cmd.Options, options); err != nil {
		return "", err
	}
	data := discordgo.ApplicationCommandInteractionData{ID: cmd.ID, Name: cmd.Name, CommandType: discordgo.ChatApplicationCommand, Options: options}
	return s.newInteraction(discordgo.InteractionApplicationCommand, ch, g, u, data, nil).ID, nil
}

func checkOptions(decl []*discordgo.ApplicationCommandOption, given []*discordgo.ApplicationCommandInteractionDataOption) error {
	for _, o := range given {
		i := slices.IndexFunc(decl, func(d *discordgo.ApplicationCommandOption) bool { return d.Name == o.Name })
		if i < 0 {
			return fmt.Errorf("%w: unknown option %q", ErrBadOptions, o.Name)
		}
		if o.Type == 0 {
			o.Type = decl[i].Type
		}
		if len(o.Options) > 0 {
			if err := checkOptions(decl[i].Options, o.Options); err != nil {
				return err
			}
		}
	}
	for _, d := range decl {
		if d.Required && !slices.ContainsFunc(given, func(o *discordgo.ApplicationCommandInteractionDataOption) bool { return o.Name == d.Name }) {
			return fmt.Errorf("%w: option %q is required", ErrBadOptions, d.Name)
		}
	}
	return nil
}

// SubmitModal submits the modal an interaction was answered with, as its user, with a value
// per text input custom id: INTERACTION_CREATE of type 5.
func (s *Server) SubmitModal(interactionID string, values map[string]string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.inters[interactionID]
	if prev == nil || prev.Response == nil || prev.Response.Type != discordgo.InteractionResponseModal || prev.Response.Data == nil {
		return "", ErrNoModal
	}
	ch, g, u, err := s.interactor(prev.ChannelID, prev.UserID)
	if err != nil {
		return "", err
	}
	data := discordgo.ModalSubmitInteractionData{CustomID: prev.Response.Data.CustomID}
	for _, row := range prev.Response.Data.Components {
		ar, ok := row.(*discordgo.ActionsRow)
		if !ok {
			continue
		}
		out := &discordgo.ActionsRow{}
		for _, c := range ar.Components {
			if ti, ok := c.(*discordgo.TextInput); ok {
				out.Components = append(out.Components, &discordgo.TextInput{CustomID: ti.CustomID, Value: values[ti.CustomID]})
			}
		}
		data.Components = append(data.Components, out)
	}
	var msg *discordgo.Message
	if prev.SourceMessageID != "" {
		msg, _ = s.interMessage(prev, prev.SourceMessageID)
	}
	in := s.newInteraction(discordgo.InteractionModalSubmit, ch, g, u, data, msg)
	in.SourceMessageID = prev.SourceMessageID
	prev.ModalSubmitIDs = append(prev.ModalSubmitIDs, in.ID)
	return in.ID, nil
}

// AutocompleteWait bounds how long Autocomplete waits for the client's answer.
const AutocompleteWait = 30 * time.Second

// Autocomplete types current into an autocomplete option of a slash command as a user:
// INTERACTION_CREATE of type 4 with focusedOption focused. name is the command, or a group's
// subcommand as Discord shows it ("kudos give"); options are the other options already filled
// in, at the (sub)command's level. It waits for the client's type-8 callback and returns its
// choices (validated as Discord does: at most 25, names 1–100); a refused or missing answer is
// ErrNoChoices.
func (s *Server) Autocomplete(channelID, userID, name, focusedOption, current string, options ...*discordgo.ApplicationCommandInteractionDataOption) ([]*discordgo.ApplicationCommandOptionChoice, error) {
	in, err := s.startAutocomplete(channelID, userID, name, focusedOption, current, options)
	if err != nil {
		return nil, err
	}
	select {
	case <-in.called:
	case <-time.After(AutocompleteWait):
	}
	st := s.Interaction(in.ID)
	if st == nil || st.Response == nil || st.Response.Data == nil {
		return nil, ErrNoChoices
	}
	return st.Response.Data.Choices, nil
}

// startAutocomplete checks the command and its option and dispatches the interaction.
func (s *Server) startAutocomplete(channelID, userID, name, focusedOption, current string, options []*discordgo.ApplicationCommandInteractionDataOption) (*Interaction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, g, u, err := s.actor(channelID, userID)
	if err != nil {
		return nil, err
	}
	top, sub, _ := strings.Cut(name, " ")
	var cmd *discordgo.ApplicationCommand
	for _, c := range append(slices.Clone(g.commands), s.global...) {
		if c.Name == top && (c.Type == discordgo.ChatApplicationCommand || c.Type == 0) {
			cmd = c
			break
		}
	}
	if cmd == nil {
		return nil, fmt.Errorf("%w: /%s", ErrUnknownCommand, name)
	}
	decl := cmd.Options
	if sub != "" {
		i := slices.IndexFunc(decl, func(o *discordgo.ApplicationCommandOption) bool {
			return o.Name == sub && o.Type == discordgo.ApplicationCommandOptionSubCommand
		})
		if i < 0 {
			return nil, fmt.Errorf("%w: /%s", ErrUnknownCommand, name)
		}
		decl = decl[i].Options
	}
	i := slices.IndexFunc(decl, func(o *discordgo.ApplicationCommandOption) bool { return o.Name == focusedOption })
	if i < 0 || !decl[i].Autocomplete {
		return nil, fmt.Errorf("%w: %q", ErrNotAutocomplete, focusedOption)
	}
	opts := append(slices.Clone(options), &discordgo.ApplicationCommandInteractionDataOption{
		Name: focusedOption, Type: decl[i].Type, Value: current, Focused: true})
	for _, o := range opts { // known names; required ones may still be missing while typing
		j := slices.IndexFunc(decl, func(d *discordgo.ApplicationCommandOption) bool { return d.Name == o.Name })
		if j < 0 {
			return nil, fmt.Errorf("%w: unknown option %q", ErrBadOptions, o.Name)
		}
		if o.Type == 0 {
			o.Type = decl[j].Type
		}
	}
	if sub != "" {
		opts = []*discordgo.ApplicationCommandInteractionDataOption{{Name: sub, Type: discordgo.ApplicationCommandOptionSubCommand, Options: opts}}
	}
	data := discordgo.ApplicationCommandInteractionData{ID: cmd.ID, Name: cmd.Name, CommandType: discordgo.ChatApplicationCommand, Options: opts}
	in := s.newInteraction(discordgo.InteractionApplicationCommandAutocomplete, ch, g, u, data, nil)
	return in, nil
}
