package discord

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// This file converts between the SDK's types and discordgo's, both ways,
// for every area: outgoing messages (embeds, components, layouts, modals,
// the no-mentions policy, Discord's limits checked before sending) and
// incoming snapshots (messages, members, channels, roles, invites).

// Discord's message limits, checked before sending.
const (
	maxContent          = 2000
	maxEmbedTitle       = 256
	maxEmbedDescription = 4096
	maxEmbedFields      = 25
	maxEmbedFieldName   = 256
	maxEmbedFieldValue  = 1024
	maxEmbedFooter      = 2048
	maxEmbedTotal       = 6000
)

// parseID parses a snowflake; 0 when empty or malformed.
func parseID(s string) uint64 {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// idString formats a snowflake.
func idString(v uint64) string { return strconv.FormatUint(v, 10) }

// parseIDs parses snowflakes, dropping malformed ones, sorted ascending.
func parseIDs(ss []string) []uint64 {
	out := make([]uint64, 0, len(ss))
	for _, s := range ss {
		if v := parseID(s); v != 0 {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// noMentions is the allowed_mentions of everything Kimi sends for a module:
// nothing pings (an empty parse list, always serialized).
func noMentions() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
}

// embedOut converts an SDK embed (nil stays nil); now stamps Timestamp.
func embedOut(e *sdk.OutgoingEmbed, now time.Time) *discordgo.MessageEmbed {
	if e == nil {
		return nil
	}
	out := &discordgo.MessageEmbed{Title: e.Title, Description: e.Description, Color: e.Color}
	for _, f := range e.Fields {
		out.Fields = append(out.Fields, &discordgo.MessageEmbedField{Name: f.Name, Value: f.Value, Inline: f.Inline})
	}
	if e.Footer != "" {
		out.Footer = &discordgo.MessageEmbedFooter{Text: e.Footer}
	}
	if e.Timestamp {
		out.Timestamp = now.UTC().Format(time.RFC3339)
	}
	return out
}

func runes(s string) int { return utf8.RuneCountInString(s) }

// checkContent refuses what Discord would refuse: content over 2000
// characters and embeds over Discord's limits.
func checkContent(content string, embed *discordgo.MessageEmbed) error {
	if n := runes(content); n > maxContent {
		return fmt.Errorf("discord: message content is %d characters, more than Discord's %d", n, maxContent)
	}
	if embed == nil {
		return nil
	}
	total := runes(embed.Title) + runes(embed.Description)
	switch {
	case runes(embed.Title) > maxEmbedTitle:
		return fmt.Errorf("discord: embed title is longer than %d characters", maxEmbedTitle)
	case runes(embed.Description) > maxEmbedDescription:
		return fmt.Errorf("discord: embed description is longer than %d characters", maxEmbedDescription)
	case len(embed.Fields) > maxEmbedFields:
		return fmt.Errorf("discord: an embed has at most %d fields", maxEmbedFields)
	}
	for _, f := range embed.Fields {
		if f == nil {
			continue
		}
		if runes(f.Name) > maxEmbedFieldName || runes(f.Value) > maxEmbedFieldValue {
			return fmt.Errorf("discord: embed field names are at most %d characters and values %d", maxEmbedFieldName, maxEmbedFieldValue)
		}
		total += runes(f.Name) + runes(f.Value)
	}
	if embed.Footer != nil {
		if runes(embed.Footer.Text) > maxEmbedFooter {
			return fmt.Errorf("discord: embed footer is longer than %d characters", maxEmbedFooter)
		}
		total += runes(embed.Footer.Text)
	}
	if total > maxEmbedTotal {
		return fmt.Errorf("discord: embed text totals %d characters, more than Discord's %d", total, maxEmbedTotal)
	}
	return nil
}

var buttonStyles = map[sdk.ButtonStyle]discordgo.ButtonStyle{
	"":                  discordgo.SecondaryButton,
	sdk.ButtonPrimary:   discordgo.PrimaryButton,
	sdk.ButtonSecondary: discordgo.SecondaryButton,
	sdk.ButtonSuccess:   discordgo.SuccessButton,
	sdk.ButtonDanger:    discordgo.DangerButton,
}

// componentsOut validates a module's controls (hostkit.ValidateMessageControls,
// so the host refuses what the SDK fakes refuse) and converts them to action
// rows: buttons packed five per row, each select on its own row, in order.
// layout is only used for the component-count check.
func componentsOut(module string, cs []sdk.Component, layout *sdk.OutgoingLayout) ([]discordgo.MessageComponent, error) {
	if err := hostkit.ValidateMessageControls(module, cs, layout); err != nil {
		return nil, err
	}
	var rows []discordgo.MessageComponent
	var buttons []discordgo.MessageComponent
	flush := func() {
		if len(buttons) > 0 {
			rows = append(rows, discordgo.ActionsRow{Components: buttons})
			buttons = nil
		}
	}
	for _, c := range cs {
		switch spec := deref(c).(type) {
		case sdk.ButtonSpec:
			id, err := sdk.BuildCustomID(module, spec.Key, spec.Parts...)
			if err != nil {
				return nil, err
			}
			b := discordgo.Button{Label: spec.Label, Style: buttonStyles[spec.Style], Disabled: spec.Disabled, CustomID: id}
			if spec.Emoji != "" {
				b.Emoji = &discordgo.ComponentEmoji{Name: spec.Emoji}
			}
			if len(buttons) == 5 {
				flush()
			}
			buttons = append(buttons, b)
		case sdk.SelectSpec:
			flush()
			id, err := sdk.BuildCustomID(module, spec.Key, spec.Parts...)
			if err != nil {
				return nil, err
			}
			lo, hi := spec.Bounds()
			m := discordgo.SelectMenu{MenuType: discordgo.StringSelectMenu, CustomID: id, Placeholder: spec.Placeholder, MinValues: &lo, MaxValues: hi}
			for _, o := range spec.Options {
				m.Options = append(m.Options, discordgo.SelectMenuOption{Label: o.Label, Value: o.Value, Description: o.Description})
			}
			rows = append(rows, discordgo.ActionsRow{Components: []discordgo.MessageComponent{m}})
		default:
			return nil, fmt.Errorf("discord: unsupported component %T", c)
		}
	}
	flush()
	return rows, nil
}

// deref turns *ButtonSpec / *SelectSpec into their values.
func deref(c sdk.Component) sdk.Component {
	switch v := c.(type) {
	case *sdk.ButtonSpec:
		if v != nil {
			return *v
		}
	case *sdk.SelectSpec:
		if v != nil {
			return *v
		}
	}
	return c
}

// layoutOut converts a Components V2 layout into its container followed by
// the action rows; a message carrying it must set MessageFlagsIsComponentsV2
// and no content or embeds.
func layoutOut(l *sdk.OutgoingLayout, rows []discordgo.MessageComponent) []discordgo.MessageComponent {
	c := discordgo.Container{AccentColor: l.AccentColor}
	for _, it := range l.Items {
		switch v := it.(type) {
		case sdk.LayoutText:
			c.Components = append(c.Components, discordgo.TextDisplay{Content: v.Content})
		case sdk.LayoutSeparator:
			divider := !v.Hidden
			spacing := discordgo.SeparatorSpacingSizeSmall
			if v.Spacing == sdk.SpacingLarge {
				spacing = discordgo.SeparatorSpacingSizeLarge
			}
			c.Components = append(c.Components, discordgo.Separator{Divider: &divider, Spacing: &spacing})
		case sdk.LayoutGallery:
			g := discordgo.MediaGallery{}
			for _, u := range v.URLs {
				g.Items = append(g.Items, discordgo.MediaGalleryItem{Media: discordgo.UnfurledMediaItem{URL: u}})
			}
			c.Components = append(c.Components, g)
		case sdk.LayoutSection:
			s := discordgo.Section{Accessory: discordgo.Thumbnail{Media: discordgo.UnfurledMediaItem{URL: v.ThumbnailURL}}}
			for _, t := range v.Texts {
				s.Components = append(s.Components, discordgo.TextDisplay{Content: t})
			}
			c.Components = append(c.Components, s)
		}
	}
	return append([]discordgo.MessageComponent{c}, rows...)
}

// modalOut validates a modal (hostkit.ValidateModal) and converts it: the
// modal's custom id is m:<module>:<key>[:part…], each input's is its key.
func modalOut(module string, m sdk.ModalSpec) (*discordgo.InteractionResponseData, error) {
	if err := hostkit.ValidateModal(module, m); err != nil {
		return nil, err
	}
	id, err := sdk.BuildCustomID(module, m.Key, m.Parts...)
	if err != nil {
		return nil, err
	}
	data := &discordgo.InteractionResponseData{CustomID: id, Title: m.Title}
	for _, in := range m.Inputs {
		style := discordgo.TextInputShort
		if in.Style == sdk.TextInputParagraph {
			style = discordgo.TextInputParagraph
		}
		data.Components = append(data.Components, discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.TextInput{CustomID: in.Key, Label: in.Label, Style: style, Placeholder: in.Placeholder,
				Value: in.Default, Required: !in.Optional, MinLength: in.MinLength, MaxLength: in.MaxLength},
		}})
	}
	return data, nil
}

// jumpURL is a message's link.
func jumpURL(guildID, channelID, messageID uint64) string {
	return "https://discord.com/channels/" + idString(guildID) + "/" + idString(channelID) + "/" + idString(messageID)
}

// displayName is the member's nickname, else the user's global name, else
// the username ("" when both are nil).
func displayName(u *discordgo.User, m *discordgo.Member) string {
	if m != nil && m.Nick != "" {
		return m.Nick
	}
	if u == nil && m != nil {
		u = m.User
	}
	if u == nil {
		return ""
	}
	return u.DisplayName()
}

// messageSnapshot converts a message of guildID; parent is the thread's
// parent channel (0 when the channel is not a thread). Nil-safe on every
// optional field.
func messageSnapshot(m *discordgo.Message, guildID, parent uint64) sdk.MessageSnapshot {
	if guildID == 0 {
		guildID = parseID(m.GuildID)
	}
	ref := sdk.MessageRef{GuildID: guildID, ChannelID: parseID(m.ChannelID), MessageID: parseID(m.ID), ParentChannelID: parent}
	s := sdk.MessageSnapshot{
		Ref:       ref,
		Content:   m.Content,
		JumpURL:   jumpURL(ref.GuildID, ref.ChannelID, ref.MessageID),
		CreatedAt: m.Timestamp,
		Pinned:    m.Pinned,
	}
	if m.Author != nil {
		s.AuthorID = parseID(m.Author.ID)
		s.AuthorIsBot = m.Author.Bot
	}
	s.AuthorDisplayName = displayName(m.Author, m.Member)
	if m.EditedTimestamp != nil {
		s.EditedAt = *m.EditedTimestamp
	}
	if m.MessageReference != nil {
		s.ReplyToMessageID = parseID(m.MessageReference.MessageID)
	}
	s.Attachments = attachmentSnapshots(m.Attachments)
	for _, e := range m.Embeds {
		if e == nil {
			continue
		}
		if e.Image != nil {
			if u := cmpOr(e.Image.ProxyURL, e.Image.URL); u != "" {
				s.EmbedImageURLs = append(s.EmbedImageURLs, u)
			}
		}
		s.EmbedTexts = append(s.EmbedTexts, embedText(e))
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// attachmentSnapshots converts attachments (nil entries skipped).
func attachmentSnapshots(as []*discordgo.MessageAttachment) []sdk.AttachmentSnapshot {
	var out []sdk.AttachmentSnapshot
	for _, a := range as {
		if a == nil {
			continue
		}
		out = append(out, sdk.AttachmentSnapshot{AttachmentID: parseID(a.ID), Filename: a.Filename, URL: a.URL, Size: int64(a.Size), ContentType: a.ContentType})
	}
	return out
}

// embedText joins an embed's title, description, author, url, "name:
// value" fields and footer with " — ".
func embedText(e *discordgo.MessageEmbed) string {
	var parts []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	add(e.Title)
	add(e.Description)
	if e.Author != nil {
		add(e.Author.Name)
	}
	add(e.URL)
	for _, f := range e.Fields {
		if f != nil {
			add(f.Name + ": " + f.Value)
		}
	}
	if e.Footer != nil {
		add(e.Footer.Text)
	}
	return strings.Join(parts, " — ")
}

// memberSnapshot converts a member of guildID (m.User may be nil on partial
// payloads: the user id is then 0).
func memberSnapshot(guildID uint64, m *discordgo.Member) sdk.MemberSnapshot {
	s := sdk.MemberSnapshot{GuildID: guildID, RoleIDs: parseIDs(m.Roles), JoinedAt: m.JoinedAt, DisplayName: displayName(m.User, m)}
	if m.User != nil {
		s.UserID = parseID(m.User.ID)
		s.IsBot = m.User.Bot
	}
	if m.CommunicationDisabledUntil != nil {
		s.TimedOutUntil = *m.CommunicationDisabledUntil
	}
	return s
}

// channelKind maps a Discord channel type to the port's kinds: text (and
// announcement), forum, thread (public, private, announcement); false for
// every other kind (voice, category, stage, DM…).
func channelKind(t discordgo.ChannelType) (sdk.ChannelKind, bool) {
	switch t {
	case discordgo.ChannelTypeGuildText, discordgo.ChannelTypeGuildNews:
		return sdk.ChannelText, true
	case discordgo.ChannelTypeGuildForum:
		return sdk.ChannelForum, true
	case discordgo.ChannelTypeGuildPublicThread, discordgo.ChannelTypeGuildPrivateThread, discordgo.ChannelTypeGuildNewsThread:
		return sdk.ChannelThread, true
	}
	return "", false
}

// isThread reports whether t is a thread type.
func isThread(t discordgo.ChannelType) bool {
	return t == discordgo.ChannelTypeGuildPublicThread || t == discordgo.ChannelTypeGuildPrivateThread || t == discordgo.ChannelTypeGuildNewsThread
}

// channelSnapshot converts a channel; parentTags are the parent forum's
// tags (nil when unknown) to name AppliedTags. False for unsupported kinds.
func channelSnapshot(c *discordgo.Channel, parentTags []discordgo.ForumTag) (sdk.ChannelSnapshot, bool) {
	kind, ok := channelKind(c.Type)
	if !ok {
		return sdk.ChannelSnapshot{}, false
	}
	s := sdk.ChannelSnapshot{
		GuildID: parseID(c.GuildID), ChannelID: parseID(c.ID), Kind: kind, Name: c.Name,
		ParentChannelID: parseID(c.ParentID), Topic: c.Topic,
		Private: c.Type == discordgo.ChannelTypeGuildPrivateThread,
	}
	if c.ThreadMetadata != nil {
		s.Archived = c.ThreadMetadata.Archived
	}
	for _, id := range c.AppliedTags {
		for _, t := range parentTags {
			if t.ID == id {
				s.AppliedTags = append(s.AppliedTags, t.Name)
			}
		}
	}
	return s, true
}

// roleSnapshot converts a role of guildID.
func roleSnapshot(guildID uint64, r *discordgo.Role) sdk.RoleSnapshot {
	return sdk.RoleSnapshot{GuildID: guildID, RoleID: parseID(r.ID), Name: r.Name, Position: r.Position, Managed: r.Managed}
}

// inviteSnapshot converts a full invite (REST) of guildID.
func inviteSnapshot(guildID uint64, in *discordgo.Invite) sdk.InviteSnapshot {
	uses, maxUses, temporary := in.Uses, in.MaxUses, in.Temporary
	s := sdk.InviteSnapshot{
		GuildID: guildID, Code: in.Code, Uses: &uses, MaxUses: &maxUses, Temporary: &temporary,
		MaxAge: time.Duration(in.MaxAge) * time.Second, CreatedAt: in.CreatedAt,
	}
	if in.Channel != nil {
		s.ChannelID = parseID(in.Channel.ID)
	}
	if in.Inviter != nil {
		s.InviterID = parseID(in.Inviter.ID)
	}
	if in.ExpiresAt != nil {
		s.ExpiresAt = *in.ExpiresAt
	} else if in.MaxAge > 0 && !in.CreatedAt.IsZero() {
		s.ExpiresAt = in.CreatedAt.Add(s.MaxAge)
	}
	return s
}
