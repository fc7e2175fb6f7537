package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/tasks"
)

// This file is the scheduled tasks' adapter (app/tasks): Poster, the
// tasks' Poster (a chunk sent, its error classified as a
// *tasks.PostError), their Checker (the definitions are validated with it
// and the deliveries re-checked against it) and their Readiness (a
// bounded wait for the connection and a guild), on the tasks' own types.

// coreTasks names the scheduled tasks in the actions' logs.
const coreTasks = "tasks"

// Poster is the scheduled tasks' adapter over the bot: it implements
// tasks.Poster, tasks.Checker (channels and members from the session
// state, else from REST) and tasks.Readiness.
type Poster struct {
	a *actions
	// bot is waited for by WaitGuild and Post; nil: no wait.
	bot *Bot
}

var (
	_ tasks.Poster    = (*Poster)(nil)
	_ tasks.Checker   = (*Poster)(nil)
	_ tasks.Readiness = (*Poster)(nil)
)

// NewPoster returns the scheduled tasks' adapter over b.
func NewPoster(b *Bot) *Poster { return &Poster{a: b.act, bot: b} }

// taskReadyWait bounds how long a delivery waits for the bot to be
// connected with the task's guild available.
const taskReadyWait = 30 * time.Second

// WaitGuild waits (up to taskReadyWait or ctx) until the bot is connected
// and guildID is available to it (its GUILD_CREATE came): the runner
// resumes deliveries at start, before the bot connected, and a check or
// send then would fail the row (and put the task in needs_attention) for
// a connection a moment away. Past the wait the check or send runs anyway
// and fails with its reason.
func (p *Poster) WaitGuild(ctx context.Context, guildID uint64) {
	b := p.bot
	if b == nil {
		return
	}
	ready := func() bool {
		st := b.Status()
		if st.State != StateConnected {
			return false
		}
		id := strconv.FormatUint(guildID, 10)
		return slices.ContainsFunc(st.Guilds, func(g GuildStatus) bool { return g.ID == id && !g.Unavailable })
	}
	if ready() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, taskReadyWait)
	defer cancel()
	changed := b.Watch(ctx)
	for !ready() {
		select {
		case _, ok := <-changed:
			if !ok {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// Post sends chunk c to channelID, which must be a channel (or a thread
// whose parent is a channel) of guildID, an active guild, once WaitGuild
// returned, and returns the message id and the embed Discord returned as
// JSON ("" for none). Its error is a *tasks.PostError (postError).
func (p *Poster) Post(ctx context.Context, guildID, channelID uint64, c tasks.PostChunk) (uint64, string, error) {
	p.WaitGuild(ctx, guildID)
	id, embed, err := p.a.sendTaskMessage(ctx, guildID, channelID, c)
	if err != nil {
		return 0, "", postError(err)
	}
	return id, embed, nil
}

// postError maps a send's error (classify) to the deliverer's classification:
//   - a 429 Kimi's transport gave up on (maxAttempts sends, each a 429:
//     discordgo's RateLimitError) is Status 429 with Discord's wait;
//   - an uncertain send (IsUncertain: a 5xx or a broken connection after
//     the request was written, an unreadable answer) is Started with the
//     5xx (0: no answer): never re-posted;
//   - Discord's 4xx (a RESTError) is that status, not started: failed;
//   - anything else failed before a request reached Discord (no session,
//     an inactive guild, a channel of another guild, a refused dial, an
//     ended ctx): Status 0, not started. The deliverer fails such a row
//     (it does not retry it by itself), which is right: nothing reached
//     Discord, so the operator may retry it by hand without a duplicate,
//     and a cause that lasts (the channel gone, the guild inactive) is
//     not retried for ever.
func postError(err error) *tasks.PostError {
	f := classify(err)
	pe := &tasks.PostError{Status: f.status, Started: f.uncertain, Err: err}
	if f.rateLimited {
		pe.RetryAfter = f.retryAfter
	}
	return pe
}

// taskEmbed converts a chunk's embed (nil: none).
func taskEmbed(e *tasks.Embed) *discordgo.MessageEmbed {
	if e == nil {
		return nil
	}
	out := &discordgo.MessageEmbed{Type: discordgo.EmbedTypeRich, Title: e.Title, Description: e.Description, URL: e.URL, Color: e.Color}
	for _, f := range e.Fields {
		out.Fields = append(out.Fields, &discordgo.MessageEmbedField{Name: f.Name, Value: f.Value, Inline: f.Inline})
	}
	return out
}

func (a *actions) tasksActions() *moduleActions {
	return &moduleActions{a: a, module: coreTasks, log: a.log.With("module", coreTasks)}
}

// sendTaskMessage posts chunk m (Post's send). It sends POST
// /channels/{id}/messages through Kimi's transport (rate limits,
// UncertainError): JSON without files, multipart/form-data (payload_json
// and files[n]) with them; the allowed mentions exactly as given (Parse
// must not name "everyone"). Errors: a *discordgo.RESTError for Discord's
// 4xx, a *discordgo.RateLimitError for a 429 the transport gave up on, an
// *UncertainError (IsUncertain) when the request was sent and its outcome
// is unknown (a 5xx, a broken connection, an answer that could not be
// read); any other error means nothing was sent.
func (a *actions) sendTaskMessage(ctx context.Context, guildID, channelID uint64, m tasks.PostChunk) (uint64, string, error) {
	if slices.Contains(m.AllowedMentions.Parse, string(discordgo.AllowedMentionTypeEveryone)) {
		return 0, "", errors.New("discord: a task's allowed mentions never parse @everyone")
	}
	mod := a.tasksActions()
	if _, _, err := mod.guild(guildID); err != nil {
		return 0, "", err
	}
	s, c, err := mod.refChannel(ctx, guildID, channelID)
	if isNotFound(err) {
		// Deleted after the task was saved: say so, not "not in an
		// active guild" (the post fails, never uncertain: nothing sent).
		return 0, "", actionError(err, "channel %d no longer exists (Discord: Unknown Channel); edit the task's destinations", channelID)
	}
	if err != nil {
		return 0, "", err
	}
	if isThread(c.Type) {
		p, err := lookupChannel(ctx, s, parseID(c.ParentID))
		if err != nil {
			return 0, "", fmt.Errorf("discord: the parent of thread %d: %w", channelID, err)
		}
		if p == nil || parseID(p.GuildID) != guildID {
			return 0, "", actionError(nil, "the parent of thread %d is not in guild %d", channelID, guildID)
		}
	}
	embed := taskEmbed(m.Embed)
	if err := checkContent(m.Content, embed); err != nil {
		return 0, "", err
	}
	am := &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
	for _, p := range m.AllowedMentions.Parse {
		am.Parse = append(am.Parse, discordgo.AllowedMentionType(p))
	}
	for _, u := range m.AllowedMentions.Users {
		am.Users = append(am.Users, idString(u))
	}
	for _, r := range m.AllowedMentions.Roles {
		am.Roles = append(am.Roles, idString(r))
	}
	data := &discordgo.MessageSend{Content: m.Content, AllowedMentions: am}
	if embed != nil {
		data.Embeds = []*discordgo.MessageEmbed{embed}
	}
	endpoint := discordgo.EndpointChannelMessages(idString(channelID))
	var sent discordgo.Message
	if len(m.Files) == 0 {
		err = restJSON(ctx, s, http.MethodPost, endpoint, data, &sent)
	} else {
		files := make([]*discordgo.File, 0, len(m.Files))
		for _, f := range m.Files {
			files = append(files, &discordgo.File{Name: f.Name, ContentType: "application/octet-stream", Reader: bytes.NewReader(f.Data)})
		}
		ct, body, merr := discordgo.MultipartBodyWithJSON(data, files)
		if merr != nil {
			return 0, "", fmt.Errorf("discord: encode a task's message: %w", merr)
		}
		err = restBody(ctx, s, http.MethodPost, endpoint, ct, body, &sent)
	}
	if err != nil {
		return 0, "", sendOutcome(err)
	}
	id := parseID(sent.ID)
	if id == 0 {
		return 0, "", &UncertainError{Method: http.MethodPost, Route: "POST /channels/{channel}/messages", Err: errors.New("the answer has no message id")}
	}
	published := ""
	if len(sent.Embeds) > 0 && sent.Embeds[0] != nil {
		if b, err := json.Marshal(sent.Embeds[0]); err == nil {
			published = string(b)
		}
	}
	return id, published, nil
}

// sendOutcome classifies the error of a task's POST: the transport's
// UncertainError, Discord's answers (RESTError, RateLimitError) and a
// request that never went out (*url.Error from the client: the transport
// returns an UncertainError, inside it, for one that was written) keep
// theirs; anything else came after Discord answered (the answer could
// not be read or decoded), so the message may exist: uncertain.
func sendOutcome(err error) error {
	var (
		u    *UncertainError
		rest *discordgo.RESTError
		rl   *discordgo.RateLimitError
		ue   *url.Error
	)
	switch {
	case errors.As(err, &u), errors.As(err, &rest), errors.As(err, &rl), errors.As(err, &ue):
		return err
	}
	return &UncertainError{Method: http.MethodPost, Route: "POST /channels/{channel}/messages", Err: err}
}

// ChannelKind returns what channel is in guild: ChannelMissing when it is
// unknown to Discord (404) or another guild's, ChannelDM for a DM the
// session state holds (one it does not is answered 404: missing).
func (p *Poster) ChannelKind(ctx context.Context, guild, channel uint64) (tasks.ChannelKind, error) {
	s, err := p.a.src.session()
	if err != nil {
		return tasks.ChannelMissing, err
	}
	c, err := lookupChannel(ctx, s, channel)
	if isNotFound(err) {
		return tasks.ChannelMissing, nil
	}
	if err != nil {
		return tasks.ChannelMissing, fmt.Errorf("discord: channel %d: %w", channel, err)
	}
	if c == nil {
		return tasks.ChannelMissing, nil
	}
	if c.Type == discordgo.ChannelTypeDM || c.Type == discordgo.ChannelTypeGroupDM {
		return tasks.ChannelDM, nil
	}
	if parseID(c.GuildID) != guild {
		return tasks.ChannelMissing, nil
	}
	return taskChannelKind(c.Type), nil
}

// taskChannelKind maps a guild channel's type.
func taskChannelKind(t discordgo.ChannelType) tasks.ChannelKind {
	switch t {
	case discordgo.ChannelTypeGuildText:
		return tasks.ChannelText
	case discordgo.ChannelTypeGuildNews:
		return tasks.ChannelAnnouncement
	case discordgo.ChannelTypeGuildPublicThread, discordgo.ChannelTypeGuildPrivateThread, discordgo.ChannelTypeGuildNewsThread:
		return tasks.ChannelThread
	case discordgo.ChannelTypeGuildForum, discordgo.ChannelTypeGuildMedia:
		return tasks.ChannelForum
	}
	return tasks.ChannelOther // voice, stage, category, directory
}

// taskPosting is what posting a task's message needs in a channel; a
// thread takes SEND_MESSAGES_IN_THREADS instead of SEND_MESSAGES.
const taskPosting = discordgo.PermissionViewChannel | discordgo.PermissionSendMessages

// taskPermissions is the permission bits a post with needs takes.
func taskPermissions(needs tasks.Needs) int64 {
	p := int64(taskPosting)
	if needs&tasks.NeedFiles != 0 {
		p |= discordgo.PermissionAttachFiles
	}
	if needs&tasks.NeedEmbeds != 0 {
		p |= discordgo.PermissionEmbedLinks
	}
	return p
}

// CanPost reports whether user (tasks.BotUser: the bot) can post a task's
// messages in channel of guild: VIEW_CHANNEL, SEND_MESSAGES (in a thread
// SEND_MESSAGES_IN_THREADS, computed on its parent), with files
// ATTACH_FILES, with an embed EMBED_LINKS, as channelPermissions computes
// them, and a private thread's membership. A member not in the state is fetched through REST;
// one that is not in the guild (404) cannot post. False for a channel of
// another guild; an error when the guild is not active or Discord is not
// connected.
func (p *Poster) CanPost(ctx context.Context, guild, user, channel uint64, needs tasks.Needs) (bool, error) {
	ok, _, _, err := p.postCheck(ctx, guild, user, channel, needs)
	return ok, err
}

// MissingPermissions names what user (tasks.BotUser: the bot) lacks to
// post a task's messages in channel of guild, as Discord's client names
// the permissions ("Attach Files"), with the channel's name: none when
// CanPost is true or the refusal is not a permission (not a member, not
// in a private thread, not this guild's channel).
func (p *Poster) MissingPermissions(ctx context.Context, guild, user, channel uint64, needs tasks.Needs) (tasks.Lack, error) {
	ok, lack, c, err := p.postCheck(ctx, guild, user, channel, needs)
	if err != nil || ok || lack == 0 {
		return tasks.Lack{}, err
	}
	l := tasks.Lack{Channel: c.Name}
	for _, n := range taskPermissionNames {
		if lack&n.bit != 0 {
			l.Permissions = append(l.Permissions, n.name)
		}
	}
	return l, nil
}

var _ tasks.PermissionExplainer = (*Poster)(nil)

// taskPermissionNames are the names Discord's client gives the permissions a
// task's post takes, in its settings' order.
var taskPermissionNames = []struct {
	bit  int64
	name string
}{
	{discordgo.PermissionViewChannel, "View Channel"},
	{discordgo.PermissionSendMessages, "Send Messages"},
	{discordgo.PermissionSendMessagesInThreads, "Send Messages in Threads"},
	{discordgo.PermissionEmbedLinks, "Embed Links"},
	{discordgo.PermissionAttachFiles, "Attach Files"},
}

// postCheck is CanPost's answer with the permission bits user lacks (0
// when no permission is what stops the post) and the channel posted in.
func (p *Poster) postCheck(ctx context.Context, guild, user, channel uint64, needs tasks.Needs) (ok bool, lack int64, c *discordgo.Channel, err error) {
	mod := p.a.tasksActions()
	if user == tasks.BotUser {
		user, _ = p.a.src.self()
		if user == 0 {
			return false, 0, nil, errors.New("discord: the bot's user id is unknown (Discord never connected)")
		}
	}
	s, g, err := mod.guild(guild)
	if err != nil {
		return false, 0, nil, err
	}
	s.State.RLock()
	unavailable := g.Unavailable
	s.State.RUnlock()
	if unavailable {
		// READY's placeholder, before GUILD_CREATE brings its roles:
		// unknown, not a refusal.
		return false, 0, nil, fmt.Errorf("discord: guild %d is not available yet", guild)
	}
	c, err = lookupChannel(ctx, s, channel)
	if isNotFound(err) {
		return false, 0, nil, nil
	}
	if err != nil {
		return false, 0, nil, fmt.Errorf("discord: channel %d: %w", channel, err)
	}
	if c == nil || parseID(c.GuildID) != guild {
		return false, 0, nil, nil
	}
	mem, err := member(ctx, s, guild, user)
	if err != nil {
		return false, 0, nil, fmt.Errorf("discord: member %d of guild %d: %w", user, guild, err)
	}
	if mem == nil {
		return false, 0, nil, nil
	}
	need := taskPermissions(needs)
	base := c
	if isThread(c.Type) {
		need = need&^discordgo.PermissionSendMessages | discordgo.PermissionSendMessagesInThreads
		p, err := lookupChannel(ctx, s, parseID(c.ParentID))
		if err != nil && !isNotFound(err) {
			return false, 0, nil, fmt.Errorf("discord: the parent of thread %d: %w", channel, err)
		}
		if p == nil || parseID(p.GuildID) != guild {
			return false, 0, nil, nil
		}
		base = p
	}
	s.State.RLock()
	perms := channelPermissions(g, base, idString(user), mem.Roles)
	s.State.RUnlock()
	if perms&discordgo.PermissionAdministrator != 0 {
		perms = ^int64(0) // discordgo's PermissionAll predates SEND_MESSAGES_IN_THREADS
	}
	if perms&need != need {
		return false, need &^ perms, c, nil
	}
	if c.Type == discordgo.ChannelTypeGuildPrivateThread {
		return mod.threadMember(ctx, s, c, user), 0, c, nil
	}
	return true, 0, c, nil
}

// Discord's upload limits per file, by the guild's boost (premium) tier:
// 10 MiB without boosts (raised from 8 MiB) and at tier 1, 50 MiB at tier
// 2, 100 MiB at tier 3 (as client libraries apply them, e.g. concord's
// capabilities.rs and nyxx's Guild.fileUploadLimit; Discord's API docs
// give no table). A task's stored file is at most 25 MiB anyway
// (kimi_task_files).
const (
	uploadLimitFree  = 10 << 20
	uploadLimitTier2 = 50 << 20
	uploadLimitTier3 = 100 << 20
)

// uploadLimit returns the upload limit of a guild of premium tier t.
func uploadLimit(t discordgo.PremiumTier) int64 {
	switch {
	case t >= discordgo.PremiumTier3:
		return uploadLimitTier3
	case t == discordgo.PremiumTier2:
		return uploadLimitTier2
	}
	return uploadLimitFree
}

// UploadLimit returns the largest file the bot may upload in guild, by
// the guild's premium tier in the session state.
func (p *Poster) UploadLimit(ctx context.Context, guild uint64) (int64, error) {
	s, g, err := p.a.tasksActions().guild(guild)
	if err != nil {
		return 0, err
	}
	s.State.RLock()
	tier := g.PremiumTier
	s.State.RUnlock()
	return uploadLimit(tier), nil
}
