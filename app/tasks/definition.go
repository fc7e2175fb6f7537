package tasks

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kimiapp/kimi/app/guildcfg"
)

// This file is a task's definition as an admin saves it on /tasks and its
// validation with per-field messages. Pure code but for the Checker, which
// asks Discord about the guild's channels and permissions.

// Limits of a definition.
const (
	// MaxNameLength is the longest task name, in code points.
	MaxNameLength = 100
	// MaxDestinations is the most destination channels of one task (one
	// post each per run: Output's MaxPosts).
	MaxDestinations = MaxPosts
	// MaxMentions bounds each mention list (users, roles).
	MaxMentions = 100
	// MaxAttachments is the most files of one definition (they all go on
	// the first chunk of every post).
	MaxAttachments = MaxPostFiles
	// MaxAttachmentName is the longest attachment file name, in bytes.
	MaxAttachmentName = 200
	// maxID is the largest Discord id SQLite's INTEGER holds.
	maxID = 1<<63 - 1
)

// The field names of a definition in a form and in FieldErrors, besides
// the schedule's (FieldKind, FieldAt, ...), which keep their names.
const (
	FieldGuild        = "guild"
	FieldName         = "name"
	FieldOwner        = "owner"
	FieldDestinations = "destinations"
	FieldContent      = "content"
	FieldEmbed        = "embed"
	FieldMentionUsers = "mention_users"
	FieldMentionRoles = "mention_roles"
	FieldAttachments  = "attachments"
	FieldLogChannel   = "log_channel"
)

// MsgDisabled is the error of Create when the guild's task policy is off.
const MsgDisabled = "Scheduled tasks are disabled in this server"

// ErrDisabled reports a guild whose scheduled_tasks policy is not enabled.
var ErrDisabled = errors.New(MsgDisabled)

// ChannelKind is what a channel is, as the Checker sees it.
type ChannelKind string

// The channel kinds. Only text, announcement and thread channels take a
// task's posts.
const (
	// ChannelMissing is a channel that is not in the guild (deleted,
	// another guild's, a DM or unknown).
	ChannelMissing      ChannelKind = ""
	ChannelText         ChannelKind = "text"
	ChannelAnnouncement ChannelKind = "announcement"
	ChannelThread       ChannelKind = "thread"
	ChannelForum        ChannelKind = "forum"
	ChannelDM           ChannelKind = "dm"
	ChannelOther        ChannelKind = "other"
)

// postable reports whether a task may post in a channel of kind k.
func (k ChannelKind) postable() bool {
	return k == ChannelText || k == ChannelAnnouncement || k == ChannelThread
}

// BotUser is the user id CanPost is asked about for the bot itself.
const BotUser uint64 = 0

// Needs is what a post needs in a channel beyond viewing it and sending
// messages (SEND_MESSAGES_IN_THREADS in a thread): Kimi and the owner must
// both have what the post uses, and no more, so a member who may post text
// can own a text-only task.
type Needs uint8

const (
	// NeedFiles: the post uploads files (ATTACH_FILES).
	NeedFiles Needs = 1 << iota
	// NeedEmbeds: the post carries an embed (EMBED_LINKS).
	NeedEmbeds
)

// Permissions names, for a refusal, the permissions a post with n needs.
func (n Needs) Permissions() string {
	p := []string{"view the channel", "send messages"}
	if n&NeedFiles != 0 {
		p = append(p, "attach files")
	}
	if n&NeedEmbeds != 0 {
		p = append(p, "embed links")
	}
	return strings.Join(p[:len(p)-1], ", ") + " and " + p[len(p)-1]
}

// Needs is what the definition's posts need: files when it has
// attachments, embeds when it has an embed. Its log lines need neither.
func (d Definition) Needs() Needs {
	return needsOf(len(d.Files) > 0 || len(d.Attachments) > 0, d.Embed != nil)
}

// needsOf is the needs of a message with files, with an embed.
func needsOf(files, embed bool) Needs {
	var n Needs
	if files {
		n |= NeedFiles
	}
	if embed {
		n |= NeedEmbeds
	}
	return n
}

// Checker answers what a definition's validation asks Discord: the kind of
// a channel in a guild, whether a user (BotUser: the bot) can post there,
// and the guild's upload limit in bytes. Real Discord comes at wiring time.
type Checker interface {
	// ChannelKind returns what channel is in guild; ChannelMissing when it
	// is not one of guild's channels or threads.
	ChannelKind(ctx context.Context, guild, channel uint64) (ChannelKind, error)
	// CanPost reports whether user (BotUser: the bot) can send messages
	// in channel of guild, with what needs adds (files, embeds).
	CanPost(ctx context.Context, guild, user, channel uint64, needs Needs) (bool, error)
	// UploadLimit returns the largest file the bot may upload in guild.
	UploadLimit(ctx context.Context, guild uint64) (int64, error)
}

// Lack is what a user lacks to post in a channel: the permissions, as
// Discord's client names them ("Attach Files"), and the channel's name
// ("" when unknown).
type Lack struct {
	Permissions []string
	Channel     string
}

// PermissionExplainer is a Checker that also names the permissions a
// refused post lacks; with one, a refusal reads "the owner lacks Attach
// Files in #general" instead of listing everything the post needs.
type PermissionExplainer interface {
	// MissingPermissions returns what user (BotUser: the bot) lacks to
	// post in channel of guild with needs; no Permissions when nothing is
	// missing or a permission is not what stops the post.
	MissingPermissions(ctx context.Context, guild, user, channel uint64, needs Needs) (Lack, error)
}

// refusal is why who cannot post in ch: the permissions it lacks when chk
// can name them, else what the post needs (because ends the sentence:
// "the post needs", "this message needs").
func refusal(ctx context.Context, chk Checker, guild, user, ch uint64, needs Needs, who, because string) string {
	if e, ok := chk.(PermissionExplainer); ok {
		if l, err := e.MissingPermissions(ctx, guild, user, ch, needs); err == nil && len(l.Permissions) > 0 {
			where := fmt.Sprintf("channel %d", ch)
			if l.Channel != "" {
				where = "#" + l.Channel
			}
			return fmt.Sprintf("%s lacks %s in %s", who, joinAnd(l.Permissions), where)
		}
	}
	return fmt.Sprintf("%s cannot post in channel %d (%s: %s)", who, ch, because, needs.Permissions())
}

// joinAnd joins words as a sentence lists them: "a", "a and b", "a, b and c".
func joinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// AttachmentMeta describes a definition's file without its bytes (the
// stored definition's JSON; the bytes are kept beside it).
type AttachmentMeta struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
}

// Definition is what an admin defines for a task: one revision of it.
type Definition struct {
	// GuildID is the guild the task posts in (> 0); it is fixed at
	// creation.
	GuildID uint64 `json:"guild_id"`
	// Name is 1..MaxNameLength code points.
	Name string `json:"name"`
	// OwnerID is the Discord user whose authority the task runs with.
	OwnerID uint64 `json:"owner_id"`
	// Schedule is the schedule as form fields (ParseSchedule reads it;
	// the service stores Schedule.Fields of the parsed, anchored one).
	Schedule map[string]string `json:"schedule"`
	// Template is the content template (TemplateComposer's).
	Template string `json:"template"`
	// Embed is the optional embed template.
	Embed *Embed `json:"embed,omitempty"`
	// Files are the attachments with their bytes; the stored JSON keeps
	// their metadata (Attachments) and the bytes go to kimi_task_files.
	Files []Attachment `json:"-"`
	// Attachments is the files' metadata as stored (filled on save and on
	// read).
	Attachments []AttachmentMeta `json:"attachments,omitempty"`
	// Destinations are the channels or threads each run posts to.
	Destinations []uint64 `json:"destinations"`
	// MentionUsers and MentionRoles are who the posts may ping.
	MentionUsers []uint64 `json:"mention_users,omitempty"`
	MentionRoles []uint64 `json:"mention_roles,omitempty"`
	// LogChannelID is an optional channel for a line per run (0: none).
	LogChannelID uint64 `json:"log_channel_id,omitempty"`
}

// ParsedSchedule parses d.Schedule.
func (d Definition) ParsedSchedule() (Schedule, FieldErrors) {
	return ParseSchedule(d.Schedule)
}

// withPolicyZone returns d with the policy's time zone in a schedule that
// names none (the guild's scheduled_tasks.timezone is its tasks' default).
func (d Definition) withPolicyZone(policy guildcfg.TaskPolicy) Definition {
	if strings.TrimSpace(d.Schedule[FieldTimezone]) == "" && policy.Timezone != "" {
		d.Schedule = maps.Clone(d.Schedule)
		if d.Schedule == nil {
			d.Schedule = map[string]string{}
		}
		d.Schedule[FieldTimezone] = policy.Timezone
	}
	return d
}

// Allowed is what the definition permits its runs' posts.
func (d Definition) Allowed() Allowed {
	return Allowed{Destinations: slices.Clone(d.Destinations), Users: slices.Clone(d.MentionUsers), Roles: slices.Clone(d.MentionRoles)}
}

// Composer is the definition's TemplateComposer.
func (d Definition) Composer() TemplateComposer {
	return TemplateComposer{Template: d.Template, Embed: d.Embed, Files: d.Files}
}

// clone copies d deeply enough that the caller's slices and maps are not
// shared.
func (d Definition) clone() Definition {
	d.Schedule = maps.Clone(d.Schedule)
	d.Destinations = slices.Clone(d.Destinations)
	d.MentionUsers = slices.Clone(d.MentionUsers)
	d.MentionRoles = slices.Clone(d.MentionRoles)
	d.Files = slices.Clone(d.Files)
	d.Attachments = slices.Clone(d.Attachments)
	if d.Embed != nil {
		e := *d.Embed
		e.Fields = slices.Clone(e.Fields)
		d.Embed = &e
	}
	return d
}

// DefinitionError is a definition that failed Validate: nothing was saved.
type DefinitionError struct {
	Fields FieldErrors
}

// Error lists the problems in field order.
func (e *DefinitionError) Error() string {
	keys := slices.Sorted(maps.Keys(e.Fields))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + e.Fields[k]
	}
	return "tasks: invalid definition: " + strings.Join(parts, "; ")
}

// Validate checks the definition against the guild's task policy and what
// chk says of Discord, and returns one message per field in trouble (nil
// when the definition may be saved). A schedule without a time zone takes
// the policy's. A Checker error is reported on the field it was asked for
// (the admin can try again); nothing is saved.
func (d Definition) Validate(ctx context.Context, policy guildcfg.TaskPolicy, chk Checker) FieldErrors {
	d = d.withPolicyZone(policy)
	fe := FieldErrors{}
	add := func(field, format string, args ...any) {
		if _, ok := fe[field]; !ok {
			fe[field] = fmt.Sprintf(format, args...)
		}
	}

	name := strings.TrimSpace(d.Name)
	switch n := utf8.RuneCountInString(d.Name); {
	case !utf8.ValidString(d.Name):
		add(FieldName, "name must be valid UTF-8 text")
	case name == "":
		add(FieldName, "name is required")
	case name != d.Name:
		add(FieldName, "name must not start or end with spaces")
	case n > MaxNameLength:
		add(FieldName, "name is %d characters, at most %d", n, MaxNameLength)
	case strings.ContainsAny(d.Name, "\r\n\t"):
		add(FieldName, "name must be one line")
	}

	if d.GuildID == 0 || d.GuildID > maxID {
		add(FieldGuild, "the task needs a server (guild id)")
	}
	if d.OwnerID == 0 || d.OwnerID > maxID {
		add(FieldOwner, "owner must be a Discord user id")
	}

	sched, sfe := ParseSchedule(d.Schedule)
	for k, v := range sfe {
		add(k, "%s", v)
	}

	// Destinations.
	switch n := len(d.Destinations); {
	case n == 0:
		add(FieldDestinations, "at least one destination channel is required")
	case n > MaxDestinations:
		add(FieldDestinations, "%d destinations, at most %d", n, MaxDestinations)
	}
	seen := map[uint64]bool{}
	for _, ch := range d.Destinations {
		if len(d.Destinations) > MaxDestinations {
			break // refused on its count: Discord is not asked about each of a pasted list
		}
		if seen[ch] {
			add(FieldDestinations, "channel %d is listed twice", ch)
			continue
		}
		seen[ch] = true
		if len(policy.Destinations) > 0 && !slices.Contains(policy.Destinations, ch) {
			add(FieldDestinations, "channel %d is not one of this server's task destinations (scheduled_tasks.destinations)", ch)
			continue
		}
		if msg := d.checkChannel(ctx, chk, ch, d.Needs()); msg != "" {
			add(FieldDestinations, "%s", msg)
		}
	}

	// Log channel: optional, the same channel rules (not the policy's
	// destination list: it takes log lines, not posts).
	if d.LogChannelID != 0 {
		if msg := d.checkChannel(ctx, chk, d.LogChannelID, 0); msg != "" {
			add(FieldLogChannel, "%s", msg)
		}
	}

	// Content, after the template with the longest values a run gives it.
	tz := sched.Timezone
	if tz == "" || sfe[FieldTimezone] != "" {
		tz = "UTC"
	}
	run := RunContext{Task: d.Name, Run: strings.Repeat("f", 32), Due: time.Date(2026, time.September, 30, 23, 59, 0, 0, time.UTC), Timezone: tz}
	r, err := run.replacer()
	if err != nil {
		add(FieldContent, "the content could not be rendered: %v", err)
	} else {
		content := r.Replace(d.Template)
		switch n := runes(content); {
		case !utf8.ValidString(d.Template):
			add(FieldContent, "content must be valid UTF-8 text")
		case strings.TrimSpace(content) == "":
			add(FieldContent, "content is required (1 to %d characters)", MaxPostContent)
		case n > MaxPostContent:
			add(FieldContent, "content is %d characters after its placeholders, at most %d", n, MaxPostContent)
		}
		if d.Embed != nil {
			e := *d.Embed
			e.Title, e.Description, e.URL = r.Replace(e.Title), r.Replace(e.Description), r.Replace(e.URL)
			e.Fields = make([]EmbedField, len(d.Embed.Fields))
			for i, f := range d.Embed.Fields {
				e.Fields[i] = EmbedField{Name: r.Replace(f.Name), Value: r.Replace(f.Value), Inline: f.Inline}
			}
			if errs := e.problems(); len(errs) > 0 {
				add(FieldEmbed, "%v", errs[0])
			}
		}
	}

	// Mentions.
	for _, l := range []struct {
		field, what string
		ids         []uint64
	}{{FieldMentionUsers, "user", d.MentionUsers}, {FieldMentionRoles, "role", d.MentionRoles}} {
		if len(l.ids) > MaxMentions {
			add(l.field, "%d %ss, at most %d", len(l.ids), l.what, MaxMentions)
		}
		for _, id := range l.ids {
			if id == 0 || id > maxID {
				add(l.field, "%s id %d is not a Discord id", l.what, id)
			}
		}
	}

	// Attachments.
	if len(d.Files) > MaxAttachments {
		add(FieldAttachments, "%d attachments, at most %d", len(d.Files), MaxAttachments)
	}
	var total int64
	names := map[string]bool{}
	var limit int64 = -1
	for i, f := range d.Files {
		switch {
		case f.Name == "" || strings.ContainsAny(f.Name, "/\\\x00\r\n") || strings.TrimSpace(f.Name) != f.Name || !utf8.ValidString(f.Name):
			add(FieldAttachments, "attachment %d has no valid file name (%q)", i+1, quoted(f.Name))
		case len(f.Name) > MaxAttachmentName:
			add(FieldAttachments, "attachment %d's name is longer than %d bytes", i+1, MaxAttachmentName)
		case names[f.Name]:
			add(FieldAttachments, "two attachments are named %q", f.Name)
		}
		names[f.Name] = true
		size := int64(len(f.Data))
		total += size
		if limit < 0 && chk != nil && d.GuildID != 0 {
			l, err := chk.UploadLimit(ctx, d.GuildID)
			if err != nil {
				add(FieldAttachments, "the server's upload limit could not be checked; try again")
				limit = 0
				continue
			}
			limit = l
		}
		if limit > 0 && size > limit {
			add(FieldAttachments, "%s is %d bytes, more than this server's upload limit of %d bytes", quoted(f.Name), size, limit)
		}
	}
	if total > MaxOutputFileBytes {
		add(FieldAttachments, "the attachments total %d bytes, more than %d bytes (25 MiB)", total, MaxOutputFileBytes)
	}

	if len(fe) == 0 {
		return nil
	}
	return fe
}

// checkChannel returns why a task cannot post in ch ("" when it can) what
// needs names.
func (d Definition) checkChannel(ctx context.Context, chk Checker, ch uint64, needs Needs) string {
	if ch == 0 || ch > maxID {
		return fmt.Sprintf("%d is not a Discord channel id", ch)
	}
	if chk == nil || d.GuildID == 0 {
		return fmt.Sprintf("channel %d could not be checked", ch)
	}
	kind, err := chk.ChannelKind(ctx, d.GuildID, ch)
	if err != nil {
		return fmt.Sprintf("channel %d could not be checked; try again", ch)
	}
	switch {
	case kind == ChannelMissing:
		return fmt.Sprintf("channel %d is not a channel of this server", ch)
	case kind == ChannelDM:
		return fmt.Sprintf("channel %d is a direct message; tasks post only in this server's channels", ch)
	case kind == ChannelForum:
		return fmt.Sprintf("channel %d is a forum; choose a text or announcement channel or a thread", ch)
	case !kind.postable():
		return fmt.Sprintf("channel %d is not a text or announcement channel or a thread", ch)
	}
	for _, who := range []struct {
		user uint64
		name string
	}{{BotUser, "Kimi"}, {d.OwnerID, "the owner"}} {
		if who.user == 0 && who.name != "Kimi" {
			continue // no owner: reported on its field
		}
		ok, err := chk.CanPost(ctx, d.GuildID, who.user, ch, needs)
		if err != nil {
			return fmt.Sprintf("channel %d could not be checked; try again", ch)
		}
		if !ok {
			return refusal(ctx, chk, d.GuildID, who.user, ch, needs, who.name, "the post needs")
		}
	}
	return ""
}
