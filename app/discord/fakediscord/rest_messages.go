package fakediscord

import (
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
)

func (s *Server) readableChannel(c *call) (*channel, *guild, *apiError) {
	ch, g, err := s.channelOf(c.param("channel"))
	if err != nil {
		return nil, nil, err
	}
	if err := s.botNeeds(g, ch.c, discordgo.PermissionViewChannel|discordgo.PermissionReadMessageHistory); err != nil {
		return nil, nil, err
	}
	return ch, g, nil
}

func (s *Server) history(c *call) (int, any, *apiError) {
	ch, _, err := s.readableChannel(c)
	if err != nil {
		return 0, nil, err
	}
	q := c.r.URL.Query()
	limit, err := intQuery(q, "limit", 50, 1, MaxMessagesPerFetch)
	if err != nil {
		return 0, nil, err
	}
	before, after, around := q.Get("before"), q.Get("after"), q.Get("around")
	msgs := ch.msgs
	pos := func(id string) int { // first index with msgs[i].ID >= id
		i, _ := slices.BinarySearchFunc(msgs, id, func(m *discordgo.Message, id string) int { return cmpID(m.ID, id) })
		return i
	}
	var sel []*discordgo.Message
	switch {
	case around != "":
		i := pos(around)
		lo := max(i-limit/2, 0)
		hi := min(lo+limit, len(msgs))
		lo = max(hi-limit, 0)
		sel = msgs[lo:hi]
	case before != "":
		i := pos(before)
		sel = msgs[max(i-limit, 0):i]
	case after != "":
		i := pos(after)
		if i < len(msgs) && msgs[i].ID == after {
			i++
		}
		sel = msgs[i:min(i+limit, len(msgs))]
	default:
		sel = msgs[max(len(msgs)-limit, 0):]
	}
	out := slices.Clone(sel)
	slices.Reverse(out) // Discord answers newest first
	return 200, wires(out), nil
}

func (s *Server) getMessage(c *call) (int, any, *apiError) {
	ch, _, err := s.readableChannel(c)
	if err != nil {
		return 0, nil, err
	}
	_, m := ch.message(c.param("message"))
	if m == nil {
		return 0, nil, unknown(CodeUnknownMessage, "Message")
	}
	return 200, wire(m), nil
}

var (
	userMentionRe = regexp.MustCompile(`<@!?(\d+)>`)
	roleMentionRe = regexp.MustCompile(`<@&(\d+)>`)
)

// buildMessage validates a payload and builds the message it creates, from author into ch.
func (s *Server) buildMessage(c *call, ch *channel, author *discordgo.User) (*discordgo.Message, *apiError) {
	var b messageBody
	if err := c.decode(&b); err != nil {
		return nil, err
	}
	if err := validateMessage(&b, len(c.files), true); err != nil {
		return nil, err
	}
	var m discordgo.Message
	if err := json.Unmarshal(c.body, &m); err != nil && len(c.body) > 0 {
		return nil, invalidForm("_errors", "MODEL_TYPE_CONVERT", "Could not interpret the body as JSON.")
	}
	m.ID = s.newID()
	m.ChannelID = ch.c.ID
	m.GuildID = ch.c.GuildID
	m.Author = author
	m.Timestamp = s.now().UTC()
	m.Attachments = nil
	for _, f := range c.files {
		a := *f
		a.ID = s.newID()
		a.URL = s.URL() + "/attachments/" + ch.c.ID + "/" + a.ID + "/" + url.PathEscape(a.Filename)
		a.ProxyURL = a.URL
		m.Attachments = append(m.Attachments, &a)
	}
	if m.Embeds == nil {
		m.Embeds = []*discordgo.MessageEmbed{}
	}
	if b.MessageReference != nil && b.MessageReference.MessageID != "" {
		rc := ch
		if b.MessageReference.ChannelID != "" && b.MessageReference.ChannelID != ch.c.ID {
			rc = s.channels[b.MessageReference.ChannelID]
		}
		var ref *discordgo.Message
		if rc != nil {
			_, ref = rc.message(b.MessageReference.MessageID)
		}
		fail := b.MessageReference.FailIfNotExists == nil || *b.MessageReference.FailIfNotExists
		switch {
		case ref == nil && fail:
			return nil, invalidForm("message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message")
		case ref != nil:
			m.Type = discordgo.MessageTypeReply
			m.ReferencedMessage = ref
			m.MessageReference = &discordgo.MessageReference{MessageID: ref.ID, ChannelID: ref.ChannelID, GuildID: ref.GuildID}
		default:
			m.MessageReference = nil
		}
	}
	s.resolveMentions(&m, b.AllowedMentions)
	return &m, nil
}

// resolveMentions fills the mention fields from the content, as allowed_mentions permits.
func (s *Server) resolveMentions(m *discordgo.Message, am *discordgo.MessageAllowedMentions) {
	allowed := func(kind discordgo.AllowedMentionType, list []string, id string) bool {
		if am == nil {
			return true
		}
		return slices.Contains(am.Parse, kind) || slices.Contains(list, id)
	}
	m.Mentions = []*discordgo.User{}
	m.MentionRoles = []string{}
	for _, sm := range userMentionRe.FindAllStringSubmatch(m.Content, -1) {
		u := s.users[sm[1]]
		if u != nil && (am == nil || allowed(discordgo.AllowedMentionTypeUsers, am.Users, u.ID)) &&
			!slices.ContainsFunc(m.Mentions, func(x *discordgo.User) bool { return x.ID == u.ID }) {
			m.Mentions = append(m.Mentions, u)
		}
	}
	if m.ReferencedMessage != nil && m.ReferencedMessage.Author != nil && (am == nil || am.RepliedUser) {
		u := m.ReferencedMessage.Author
		if !slices.ContainsFunc(m.Mentions, func(x *discordgo.User) bool { return x.ID == u.ID }) {
			m.Mentions = append(m.Mentions, u)
		}
	}
	for _, sm := range roleMentionRe.FindAllStringSubmatch(m.Content, -1) {
		var roles []string
		if am != nil {
			roles = am.Roles
		}
		if am == nil || allowed(discordgo.AllowedMentionTypeRoles, roles, sm[1]) {
			m.MentionRoles = append(m.MentionRoles, sm[1])
		}
	}
	if strings.Contains(m.Content, "@everyone") || strings.Contains(m.Content, "@here") {
		m.MentionEveryone = am == nil || slices.Contains(am.Parse, discordgo.AllowedMentionTypeEveryone)
	}
}

func (s *Server) createMessage(c *call) (int, any, *apiError) {
	if dm := s.channels[c.param("channel")]; dm != nil && dm.c.Type == discordgo.ChannelTypeDM {
		return s.dmMessage(c, dm)
	}
	ch, g, err := s.channelOf(c.param("channel"))
	if err != nil {
		return 0, nil, err
	}
	need := int64(discordgo.PermissionViewChannel | discordgo.PermissionSendMessages)
	if ch.c.IsThread() {
		need = discordgo.PermissionViewChannel | discordgo.PermissionSendMessagesInThreads
	}
	if err := s.botNeeds(g, ch.c, need); err != nil {
		return 0, nil, err
	}
	if len(c.files) > 0 {
		if err := s.botNeeds(g, ch.c, discordgo.PermissionAttachFiles); err != nil {
			return 0, nil, err
		}
	}
	m, err := s.buildMessage(c, ch, s.bot)
	if err != nil {
		return 0, nil, err
	}
	s.storeMessage(ch, m)
	c.created = m
	return 200, wire(m), nil
}

// storeMessage appends a message and dispatches MESSAGE_CREATE.
func (s *Server) storeMessage(ch *channel, m *discordgo.Message) {
	ch.msgs = append(ch.msgs, m)
	ch.c.LastMessageID = m.ID
	s.dispatchMessage("MESSAGE_CREATE", m)
}

// applyEdit applies an edit payload to m (content, embeds, components, flags, attachments).
func (s *Server) applyEdit(c *call, m *discordgo.Message) *apiError {
	var b messageBody
	if err := c.decode(&b); err != nil {
		return err
	}
	if err := validateMessage(&b, len(c.files), false); err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(c.body, &fields)
	var edited discordgo.Message
	_ = json.Unmarshal(c.body, &edited)
	if _, ok := fields["content"]; ok {
		m.Content = edited.Content
		s.resolveMentions(m, b.AllowedMentions)
	}
	if _, ok := fields["embeds"]; ok {
		m.Embeds = edited.Embeds
	}
	if _, ok := fields["components"]; ok {
		m.Components = edited.Components
	}
	if _, ok := fields["flags"]; ok {
		m.Flags = edited.Flags
	}
	if _, ok := fields["attachments"]; ok {
		keep := map[string]bool{}
		for _, a := range b.Attachments {
			keep[a.ID] = true
		}
		m.Attachments = slices.DeleteFunc(m.Attachments, func(a *discordgo.MessageAttachment) bool { return !keep[a.ID] })
	}
	for _, f := range c.files {
		a := *f
		a.ID = s.newID()
		m.Attachments = append(m.Attachments, &a)
	}
	m.EditedTimestamp = ptrTime(s.now().UTC())
	return nil
}

func (s *Server) editMessage(c *call) (int, any, *apiError) {
	ch, g, err := s.channelOf(c.param("channel"))
	if err != nil {
		return 0, nil, err
	}
	_, m := ch.message(c.param("message"))
	if m == nil {
		return 0, nil, unknown(CodeUnknownMessage, "Message")
	}
	if m.Author == nil || m.Author.ID != s.opts.BotID {
		return 0, nil, &apiError{status: 403, Code: 50005, Message: "Cannot edit a message authored by another user"}
	}
	if err := s.botNeeds(g, ch.c, discordgo.PermissionViewChannel); err != nil {
		return 0, nil, err
	}
	if err := s.applyEdit(c, m); err != nil {
		return 0, nil, err
	}
	s.dispatchMessage("MESSAGE_UPDATE", m)
	return 200, wire(m), nil
}

func (s *Server) deleteMessage(c *call) (int, any, *apiError) {
	ch, g, err := s.channelOf(c.param("channel"))
	if err != nil {
		return 0, nil, err
	}
	i, m := ch.message(c.param("message"))
	if m == nil {
		return 0, nil, unknown(CodeUnknownMessage, "Message")
	}
	if m.Author == nil || m.Author.ID != s.opts.BotID {
		if err := s.botNeeds(g, ch.c, discordgo.PermissionManageMessages); err != nil {
			return 0, nil, err
		}
		s.addAudit(g, discordgo.AuditLogActionMessageDelete, m.Author.ID, c.reason())
	}
	ch.msgs = slices.Delete(ch.msgs, i, i+1)
	s.dispatchGuild(ch.c.GuildID, "MESSAGE_DELETE", &discordgo.MessageDelete{Message: &discordgo.Message{ID: m.ID, ChannelID: ch.c.ID, GuildID: ch.c.GuildID}})
	return 204, nil, nil
}

func (s *Server) bulkDelete(c *call) (int, any, *apiError) {
	ch, g, err := s.channelOf(c.param("channel"))
	if err != nil {
		return 0, nil, err
	}
	if err := s.botNeeds(g, ch.c, discordgo.PermissionManageMessages); err != nil {
		return 0, nil, err
	}
	var b struct {
		Messages []string `json:"messages"`
	}
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	if len(b.Messages) < 2 || len(b.Messages) > 100 {
		return 0, nil, &apiError{status: 400, Code: CodeBulkDeleteCount,
			Message: "You must provide at least 2 and fewer than 100 messages to delete."}
	}
	if i := repeatedID(b.Messages); i >= 0 {
		return 0, nil, invalidForm("messages."+strconv.Itoa(i), "SET_TYPE_ALREADY_CONTAINS_VALUE", "The set already contains this value")
	}
	old := s.now().Add(-14 * 24 * time.Hour)
	for _, id := range b.Messages {
		if snowflakeTime(id).Before(old) {
			return 0, nil, &apiError{status: 400, Code: CodeBulkDeleteTooOld, Message: "You can only bulk delete messages that are under 14 days old."}
		}
	}
	var gone []string
	for _, id := range b.Messages {
		if i, m := ch.message(id); m != nil {
			ch.msgs = slices.Delete(ch.msgs, i, i+1)
			gone = append(gone, id)
		}
	}
	s.addAudit(g, discordgo.AuditLogActionMessageBulkDelete, ch.c.ID, c.reason())
	s.dispatchGuild(ch.c.GuildID, "MESSAGE_DELETE_BULK", &discordgo.MessageDeleteBulk{Messages: gone, ChannelID: ch.c.ID, GuildID: ch.c.GuildID})
	return 204, nil, nil
}

// repeatedID is the index of the first id that an earlier one repeats, or
// -1: Discord refuses a bulk delete naming a message twice.
func repeatedID(ids []string) int {
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		if seen[id] {
			return i
		}
		seen[id] = true
	}
	return -1
}

func (s *Server) react(add bool) handler {
	return func(c *call) (int, any, *apiError) {
		ch, g, err := s.readableChannel(c)
		if err != nil {
			return 0, nil, err
		}
		_, m := ch.message(c.param("message"))
		if m == nil {
			return 0, nil, unknown(CodeUnknownMessage, "Message")
		}
		emoji, _ := url.PathUnescape(c.param("emoji"))
		if add {
			if err := s.botNeeds(g, ch.c, discordgo.PermissionAddReactions); err != nil {
				return 0, nil, err
			}
		}
		s.setReaction(m, emoji, s.opts.BotID, add)
		return 204, nil, nil
	}
}

// setReaction adds or removes one user's reaction and dispatches the event.
func (s *Server) setReaction(m *discordgo.Message, emoji, userID string, add bool) {
	name, id, _ := strings.Cut(emoji, ":")
	var r *discordgo.MessageReactions
	for _, x := range m.Reactions {
		if x.Emoji.Name == name {
			r = x
		}
	}
	me := userID == s.opts.BotID
	switch {
	case add && r == nil:
		r = &discordgo.MessageReactions{Emoji: &discordgo.Emoji{Name: name, ID: id}}
		m.Reactions = append(m.Reactions, r)
		fallthrough
	case add:
		r.Count++
		r.Me = r.Me || me
	case r != nil:
		r.Count--
		if me {
			r.Me = false
		}
		if r.Count <= 0 {
			m.Reactions = slices.DeleteFunc(m.Reactions, func(x *discordgo.MessageReactions) bool { return x == r })
		}
	default:
		return
	}
	ev := &discordgo.MessageReaction{UserID: userID, MessageID: m.ID, ChannelID: m.ChannelID, GuildID: m.GuildID, Emoji: discordgo.Emoji{Name: name, ID: id}}
	if add {
		s.dispatchGuild(m.GuildID, "MESSAGE_REACTION_ADD", ev)
	} else {
		s.dispatchGuild(m.GuildID, "MESSAGE_REACTION_REMOVE", ev)
	}
}

func (s *Server) listPins(c *call) (int, any, *apiError) {
	ch, _, err := s.readableChannel(c)
	if err != nil {
		return 0, nil, err
	}
	out := []*discordgo.Message{}
	for i := len(ch.pins) - 1; i >= 0; i-- {
		if _, m := ch.message(ch.pins[i]); m != nil {
			out = append(out, m)
		}
	}
	return 200, wires(out), nil
}

func (s *Server) pin(add bool) handler {
	return func(c *call) (int, any, *apiError) {
		ch, g, err := s.channelOf(c.param("channel"))
		if err != nil {
			return 0, nil, err
		}
		if err := s.botNeeds(g, ch.c, discordgo.PermissionManageMessages); err != nil {
			return 0, nil, err
		}
		_, m := ch.message(c.param("message"))
		if m == nil {
			return 0, nil, unknown(CodeUnknownMessage, "Message")
		}
		pinned := slices.Contains(ch.pins, m.ID)
		switch {
		case add && !pinned:
			if len(ch.pins) >= 50 {
				return 0, nil, &apiError{status: 400, Code: 30003, Message: "Maximum number of pins reached (50)"}
			}
			ch.pins = append(ch.pins, m.ID)
		case !add && pinned:
			ch.pins = slices.DeleteFunc(ch.pins, func(id string) bool { return id == m.ID })
		}
		m.Pinned = add
		action := discordgo.AuditLogActionMessagePin
		if !add {
			action = discordgo.AuditLogActionMessageUnpin
		}
		s.addAudit(g, action, m.ID, c.reason())
		s.dispatchGuild(g.g.ID, "CHANNEL_PINS_UPDATE", &discordgo.ChannelPinsUpdate{ChannelID: ch.c.ID, GuildID: g.g.ID, LastPinTimestamp: s.now().UTC().Format(time.RFC3339)})
		return 204, nil, nil
	}
}
