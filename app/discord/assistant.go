package discord

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/modules/sdk"
)

// The assistant's Discord side: which MESSAGE_CREATE starts a turn (the
// original's eligibility and invocation gates, reference §2), the STOP
// lane, and the Surface a turn answers through (assistant_surface.go);
// /ask and /stop are in ask.go.

// Responder is what the bot needs of the assistant (app/assistant's turn,
// wired by the caller of AttachAssistant). Handle returns at once (the
// turn runs on its own); Cancel cancels the caller's turns in a channel
// at once and reports them (its Reply waits for their cleanup); Ready
// reports whether a turn can start at all (a model provider is
// configured), so /ask is refused rather than deferred with no answer.
type Responder interface {
	Handle(ctx context.Context, in assistant.Incoming, s assistant.Surface)
	Cancel(userID, channelID uint64) assistant.Stopped
	Ready() bool
}

var _ Responder = (*assistant.Assistant)(nil)

// PlacePolicies is the guilds' assistant policy; *guildcfg.Service
// implements it.
type PlacePolicies interface {
	AssistantFor(guildID, channelID, parentID uint64) (guildcfg.AssistantPolicy, bool)
}

var _ PlacePolicies = (*guildcfg.Service)(nil)

// ResponderPort is what AttachAssistant wires: the assistant, the guilds'
// policy and the configured assistant name (a text invocation's name
// besides the bot user's own names; nil or "" for none), read from memory
// on every message (app/assistant.Service.AssistantName).
type ResponderPort struct {
	Assistant Responder
	Policies  PlacePolicies
	Name      func() string
	// Usage answers /usage (nil: /usage says the assistant is
	// unavailable).
	Usage UsageReader
}

// UsageReader is /usage's text for a member of a guild (tier and owner as
// resolved for the interaction); *assistant.Assistant implements it.
type UsageReader interface {
	UsageText(ctx context.Context, guildID, userID uint64, tier sdk.TrustTier, owner bool) (string, error)
}

var _ UsageReader = (*assistant.Assistant)(nil)

// The STOP lane's words (the original's work_cancellation.py); its texts
// are assistant.Stopped.Reply's, the same on /stop.
var stopWords = []string{"stop", "cancel", "abort"}

// emojiEmpty answers a bare mention (the original's 👋).
const emojiEmpty = "👋"

// AttachAssistant sets the assistant messages and /ask are handed to; a
// port without an Assistant or Policies detaches it. Without one nothing
// is answered and /ask and /stop are not synced. Call it before Start (a
// later call takes effect at the next command sync).
func (b *Bot) AttachAssistant(p ResponderPort) {
	if p.Assistant == nil || p.Policies == nil {
		b.ix.asst.Store(nil)
		return
	}
	b.ix.asst.Store(&p)
	b.ix.owner = b.Owner
}

// assistantPort is the attached port (nil: none).
func (x *interactions) assistantPort() *ResponderPort { return x.asst.Load() }

// asstHolder is the attached port, shared by the message path and the
// interactions' /ask.
type asstHolder = atomic.Pointer[ResponderPort]

// onAssistantMessage is the MESSAGE_CREATE handler. The gates read
// memory only (a DM reads its setting from SQLite), Cancel and Handle
// return at once, and REST calls (👋, the STOP reply) run off the gateway
// goroutine, so messages are taken in their gateway order.
func (b *Bot) onAssistantMessage(s *discordgo.Session, m *discordgo.MessageCreate) {
	p := b.ix.assistantPort()
	if p == nil || m == nil || m.Message == nil || !b.isCurrent(s) {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			b.log.Error("assistant message handling panicked", "panic", r)
		}
	}()
	b.assistantMessage(b.stopREST, s, p, m.Message)
}

// assistantMessage runs the gates, the STOP lane and Handle.
func (b *Bot) assistantMessage(ctx context.Context, s *discordgo.Session, p *ResponderPort, m *discordgo.Message) {
	if m.GuildID == "" {
		in, ok := b.assistantDM(ctx, s, m)
		if !ok {
			return
		}
		if b.stopLane(ctx, s, p, m, in, false) { // in DMs only with work running, as the original
			return
		}
		p.Assistant.Handle(ctx, in, b.messageSurface(s, m, in.UserID))
		return
	}
	in, trig, ok := b.assistantTrigger(s, p, m)
	if !ok {
		return
	}
	if b.stopLane(ctx, s, p, m, in, trig != triggerNone) || trig == triggerNone {
		return
	}
	if strings.TrimSpace(in.Text) == "" {
		if trig == triggerMention {
			b.reactTo(ctx, s, m, emojiEmpty) // a bare mention: seen, nothing to answer
		}
		return // an unpinged reply without the Message Content intent is blank
	}
	p.Assistant.Handle(ctx, in, b.messageSurface(s, m, in.UserID))
}

// stopLane cancels the author's work in the channel when the text is a
// stop word, before admission (on the gateway goroutine, so no later
// message of theirs is admitted first): 🛑 on the stop message and the
// original's summary once the cleanup ended (or StopWait passed); with
// nothing running, "I couldn't find active work" to a trigger, nothing
// otherwise (an unpinged reply is no trigger). It reports whether the
// message was taken as a STOP (then it is not a question either).
func (b *Bot) stopLane(ctx context.Context, s *discordgo.Session, p *ResponderPort, m *discordgo.Message, in assistant.Incoming, triggered bool) bool {
	if !slices.Contains(stopWords, strings.ToLower(strings.TrimSpace(in.Text))) {
		return false
	}
	stopped := p.Assistant.Cancel(in.UserID, in.Place.ChannelID)
	if stopped.N == 0 && in.ContinuationOnly {
		return true // an unpinged reply is no trigger of its own: nothing to stop, nothing to say
	}
	if stopped.N == 0 && !triggered {
		return false
	}
	if stopped.N > 0 {
		b.reactTo(ctx, s, m, assistant.ReactStopped)
	}
	go func() {
		text := stopped.Reply(ctx)
		if _, err := s.ChannelMessageSendComplex(m.ChannelID, &discordgo.MessageSend{Content: text, AllowedMentions: noMentions(),
			Reference: &discordgo.MessageReference{MessageID: m.ID, ChannelID: m.ChannelID, GuildID: m.GuildID, FailIfNotExists: ptr(false)}}, requestOptions(ctx)...); err != nil {
			b.log.Warn("could not answer a stop", "err", err)
		}
	}()
	return true
}

// reactTo adds emoji to m off the gateway goroutine.
func (b *Bot) reactTo(ctx context.Context, s *discordgo.Session, m *discordgo.Message, emoji string) {
	go func() {
		if err := s.MessageReactionAdd(m.ChannelID, m.ID, emoji, requestOptions(ctx)...); err != nil {
			b.log.Debug("could not react", "emoji", emoji, "err", err)
		}
	}()
}

// eligible is the original's first gate: not the bot itself, not a bot,
// a default or reply message.
func eligible(botID uint64, m *discordgo.Message) bool {
	if m.Author == nil || m.Author.Bot || parseID(m.Author.ID) == botID {
		return false
	}
	return m.Type == discordgo.MessageTypeDefault || m.Type == discordgo.MessageTypeReply
}

// assistantTrigger applies the guild gates in the original's order and
// detects the trigger. ok is false for a gated message (it costs
// nothing); triggered says whether a trigger was found (an eligible
// message without one may still be a STOP).
func (b *Bot) assistantTrigger(s *discordgo.Session, p *ResponderPort, m *discordgo.Message) (in assistant.Incoming, trig trigger, ok bool) {
	botID, _ := b.self()
	if !eligible(botID, m) {
		return in, triggerNone, false
	}
	guildID, channelID := parseID(m.GuildID), parseID(m.ChannelID)
	var parentID uint64
	var guildName, channelName string
	if s.State != nil {
		if ch, err := s.State.Channel(m.ChannelID); err == nil && ch != nil {
			channelName = ch.Name
			if isThread(ch.Type) {
				parentID = parseID(ch.ParentID)
			}
		}
		if g, err := s.State.Guild(m.GuildID); err == nil && g != nil {
			guildName = g.Name
		}
	}
	if b.opts.Guilds == nil || !b.opts.Guilds.Active(guildID) {
		return in, triggerNone, false
	}
	pol, active := p.Policies.AssistantFor(guildID, channelID, parentID)
	if !active || !pol.Enabled || !pol.ChannelAllowed {
		return in, triggerNone, false
	}
	userID := parseID(m.Author.ID)
	in = assistant.Incoming{Kind: assistant.KindMessage, MessageID: parseID(m.ID), UserID: userID,
		Place:       assistant.Place{GuildID: guildID, ChannelID: channelID, ParentID: parentID},
		DisplayName: displayName(m.Author, m.Member), GuildName: guildName, ChannelName: channelName}
	in.Text, trig = b.detect(s, p, m, botID)
	if m.MessageReference != nil && m.ReferencedMessage != nil && m.MessageReference.ChannelID == m.ChannelID {
		in.ReplyToID = parseID(m.ReferencedMessage.ID)
		in.ReplyTo = quoted(botID, m.ReferencedMessage)
	}
	// An unpinged reply to the bot is answered only when it replies to one
	// of the assistant's answers (not to a module's post): the assistant
	// routes it.
	in.ContinuationOnly = trig == triggerReply
	var roles []uint64
	if m.Member != nil {
		roles = nonNil(parseIDs(m.Member.Roles))
	}
	in.Tier = b.opts.Guilds.Resolve(guildID, userID, roles)
	in.Owner = userID != 0 && userID == b.Owner()
	if !pol.Allows(in.Tier, in.Owner) {
		return in, triggerNone, false
	}
	parent := ""
	if parentID != 0 {
		parent = idString(parentID)
	}
	if !b.canSend(s, botID, m.GuildID, m.ChannelID, parent) {
		b.log.Info("the assistant cannot send in the channel; message skipped", "channel", channelID)
		return in, triggerNone, false
	}
	return in, trig, true
}

// detect finds the trigger and the question: a mention of the bot user
// (its id in mentions: never @everyone, @here or a role; a pinged reply
// puts the bot there), a reply to one of the bot's messages (routing
// decides whether it continues a conversation), or a text invocation.
func (b *Bot) detect(s *discordgo.Session, p *ResponderPort, m *discordgo.Message, botID uint64) (string, trigger) {
	text := stripMention(m.Content, botID)
	if slices.ContainsFunc(m.Mentions, func(u *discordgo.User) bool { return u != nil && parseID(u.ID) == botID }) {
		return text, triggerMention
	}
	if q, ok := invocation(text, b.assistantNames(s, p)); ok {
		return q, triggerInvocation
	}
	if m.ReferencedMessage != nil && m.ReferencedMessage.Author != nil && parseID(m.ReferencedMessage.Author.ID) == botID {
		return text, triggerReply
	}
	return text, triggerNone
}

// trigger is what made a message a trigger.
type trigger int

const (
	triggerNone       trigger = iota
	triggerMention            // the bot's id in mentions (a pinged reply too)
	triggerInvocation         // hey|hi <name>, <name> help
	triggerReply              // an unpinged reply to one of the bot's messages
)

// assistantNames are the configured name and the bot user's names.
func (b *Bot) assistantNames(s *discordgo.Session, p *ResponderPort) []string {
	names := make([]string, 0, 3)
	if p.Name != nil {
		names = append(names, p.Name())
	}
	if s.State != nil {
		s.State.RLock()
		if u := s.State.User; u != nil {
			names = append(names, u.GlobalName, u.Username)
		}
		s.State.RUnlock()
	}
	return names
}

// stripMention removes <@id> and <@!id> of the bot.
func stripMention(text string, botID uint64) string {
	id := idString(botID)
	text = strings.ReplaceAll(text, "<@"+id+">", "")
	text = strings.ReplaceAll(text, "<@!"+id+">", "")
	return strings.TrimSpace(text)
}

// invocationRE is the compiled text invocation for one set of names.
type invocationRE struct {
	key       string
	hey, help *regexp.Regexp
}

// invocationCache keeps the last compiled set (the names change only
// when the bot is renamed or the setting changes).
var invocationCache atomic.Pointer[invocationRE]

// invocation matches the original's text invocation: hey|hi <name> …, or
// <name> help … (which keeps "help …" as the question), case-insensitive,
// names longest first, separators whitespace or ,!:;-.
func invocation(text string, names []string) (string, bool) {
	ns := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return strings.TrimSpace(n) == "" })
	if len(ns) == 0 {
		return "", false
	}
	key := strings.Join(ns, "\x00")
	re := invocationCache.Load()
	if re == nil || re.key != key {
		re = compileInvocation(key, ns)
		invocationCache.Store(re)
	}
	if mt := re.hey.FindStringSubmatch(text); mt != nil {
		return strings.TrimSpace(mt[1]), true
	}
	if mt := re.help.FindStringSubmatch(text); mt != nil {
		return strings.TrimSpace(mt[1]), true
	}
	return "", false
}

func compileInvocation(key string, ns []string) *invocationRE {
	slices.SortStableFunc(ns, func(a, b string) int { return len(b) - len(a) })
	alt := make([]string, len(ns))
	for i, n := range ns {
		alt[i] = regexp.QuoteMeta(strings.TrimSpace(n))
	}
	const sep = `[\s,!:;\-]`
	names := "(?:" + strings.Join(alt, "|") + ")"
	return &invocationRE{key: key,
		hey:  regexp.MustCompile(`(?is)^(?:hey|hi)` + sep + `+` + names + `(?:` + sep + `+(.*)|$)`),
		help: regexp.MustCompile(`(?is)^` + names + sep + `+(help(?:` + sep + `.*)?)$`)}
}

// quoted is the replied-to message as untrusted context: FromBot only
// for Kimi's own message (another bot's is quoted under its name).
func quoted(botID uint64, r *discordgo.Message) *assistant.Quoted {
	q := &assistant.Quoted{Text: r.Content}
	if r.Author != nil {
		q.AuthorID, q.DisplayName = parseID(r.Author.ID), displayName(r.Author, r.Member)
		q.FromBot = botID != 0 && q.AuthorID == botID
	}
	return q
}

// canSend reports whether the bot may send in the channel (in threads
// send_messages_in_threads, the parent's overwrites), from the state and
// Kimi's member cache; permissions that cannot be resolved pass, as the
// original's can_send_reply.
func (b *Bot) canSend(s *discordgo.Session, botID uint64, guildID, channelID, parentID string) bool {
	if s.State == nil || b.cache == nil {
		return true
	}
	roles, ok := b.cache.MemberRoles(parseID(guildID), botID)
	if !ok {
		return true
	}
	g, err := s.State.Guild(guildID)
	if err != nil || g == nil {
		return true
	}
	base := channelID
	need := int64(discordgo.PermissionViewChannel | discordgo.PermissionSendMessages)
	if parentID != "" {
		base = parentID
		need = discordgo.PermissionViewChannel | discordgo.PermissionSendMessagesInThreads
	}
	c, err := s.State.Channel(base)
	if err != nil || c == nil {
		return true
	}
	ids := make([]string, len(roles))
	for i, r := range roles {
		ids[i] = idString(r)
	}
	s.State.RLock()
	perms := channelPermissions(g, c, idString(botID), ids)
	s.State.RUnlock()
	return perms&discordgo.PermissionAdministrator != 0 || perms&need == need
}

// assistantDM admits a direct message when the Direct messages setting
// allows its author (everyone else is dropped silently): no trigger
// needed, GuildID 0.
func (b *Bot) assistantDM(ctx context.Context, s *discordgo.Session, m *discordgo.Message) (assistant.Incoming, bool) {
	botID, _ := b.self()
	if !eligible(botID, m) || b.opts.Store == nil {
		return assistant.Incoming{}, false
	}
	beh, err := settings.LoadAssistantBehaviour(ctx, b.opts.Store)
	if err != nil {
		b.log.Warn("could not read the assistant's DM setting", "err", err)
		return assistant.Incoming{}, false
	}
	userID := parseID(m.Author.ID)
	if !beh.AllowsDM(userID, b.Owner()) {
		return assistant.Incoming{}, false
	}
	in := assistant.Incoming{Kind: assistant.KindMessage, MessageID: parseID(m.ID), UserID: userID, Tier: sdk.TierMember,
		Owner: userID == b.Owner(), Place: assistant.Place{ChannelID: parseID(m.ChannelID), DMUserID: userID},
		DisplayName: displayName(m.Author, nil), Text: stripMention(m.Content, botID)}
	if m.ReferencedMessage != nil {
		in.ReplyToID = parseID(m.ReferencedMessage.ID)
		in.ReplyTo = quoted(botID, m.ReferencedMessage)
	}
	return in, strings.TrimSpace(in.Text) != ""
}
