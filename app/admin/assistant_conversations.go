package admin

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/web/templates"
)

// ConversationLog is what /assistant/conversations needs of the
// assistant's conversation storage; *assistant.Conversations implements
// it.
type ConversationLog interface {
	List(ctx context.Context, f assistant.LogFilter, after assistant.LogCursor) (assistant.LogPage, error)
	Detail(ctx context.Context, id int64, withContent bool) (assistant.LogConversation, error)
	Delete(ctx context.Context, id int64, who store.AuditEntry) error
	Watch(ctx context.Context) <-chan struct{}
}

var _ ConversationLog = (*assistant.Conversations)(nil)

// discordNames is the bot's knowledge of names (its state and member
// cache); Options.Discord provides it when it is the bot.
type discordNames interface {
	Names(guildID, channelID, userID uint64) (guild, channel, member string)
}

var _ discordNames = (*discord.Bot)(nil)

// conversationsTimeout bounds a conversation page's reads and a delete.
const conversationsTimeout = 5 * time.Second

const (
	flashConversationDeleted = "acdel"
	flashTranscriptsOn       = "atron"
	flashTranscriptsOff      = "atroff"
)

func init() {
	flashes[flashConversationDeleted] = templates.Flash{Kind: templates.FlashSuccess, Message: "Conversation deleted."}
	flashes[flashTranscriptsOn] = templates.Flash{Kind: templates.FlashSuccess,
		Message: "Transcripts are shown: the conversation pages show message text and tool-call excerpts."}
	flashes[flashTranscriptsOff] = templates.Flash{Kind: templates.FlashSuccess,
		Message: "Transcripts are hidden: the conversation pages show only the structure of each turn."}
}

// requireConversations answers 503 on the conversation pages without the
// conversation storage.
func (s *Server) requireConversations(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.opts.Conversations == nil {
			return echo.NewHTTPError(http.StatusServiceUnavailable, "The assistant's conversation log is not available on this server.")
		}
		return next(c)
	}
}

// names looks up names the bot knows ("" each without the bot).
func (s *Server) names(guildID, channelID, userID uint64) (guild, channel, member string) {
	if n, ok := s.opts.Discord.(discordNames); ok && n != nil {
		return n.Names(guildID, channelID, userID)
	}
	return "", "", ""
}

// conversationPath is a conversation's page.
func conversationPath(id int64) string {
	return "/assistant/conversations/" + strconv.FormatInt(id, 10)
}

// conversationStatusKind is a turn status' badge kind.
func conversationStatusKind(status string) string {
	switch status {
	case assistant.StatusDone:
		return "success"
	case assistant.StatusRunning:
		return "neutral"
	case assistant.StatusFailed:
		return "danger"
	case assistant.StatusInterrupted, assistant.StatusCancelled:
		return "warning"
	}
	return "neutral"
}

// nameOrID is a name with its id, or the id alone.
func nameOrID(name string, id uint64) (label, title string) {
	ids := strconv.FormatUint(id, 10)
	if name == "" {
		return ids, ""
	}
	return name, ids
}

// conversationRow is a log row for the page, with the names the bot knows.
func (s *Server) conversationRow(r assistant.LogRow, now time.Time) templates.ConversationRow {
	p := r.Place
	guild, channel, owner := s.names(p.GuildID, p.ChannelID, r.OwnerID)
	row := templates.ConversationRow{
		ID: strconv.FormatInt(r.ID, 10), URL: conversationPath(r.ID),
		Started: relativeTime(r.Created, now), StartedExact: exactTime(r.Created),
		Active: relativeTime(r.Updated, now), ActiveExact: exactTime(r.Updated),
		Turns: strconv.Itoa(r.Turns), Status: r.LastStatus, StatusKind: conversationStatusKind(r.LastStatus),
		Tokens: strconv.FormatInt(r.Tokens, 10), Tools: strings.Join(r.Tools, ", "), ToolErrors: r.ToolErrors,
		OwnerOnly: r.OwnerOnly,
	}
	if row.Status == "" {
		row.Status = "no turn"
	}
	if p.GuildID == 0 {
		row.Guild = "Direct message"
	} else {
		row.Guild, row.GuildTitle = nameOrID(guild, p.GuildID)
	}
	row.Channel, row.ChannelTitle = nameOrID(channel, p.ChannelID)
	if channel != "" {
		row.Channel = "#" + channel
	}
	row.Owner, row.OwnerTitle = nameOrID(owner, r.OwnerID)
	return row
}

// conversationsList reads the list region for f (valid).
func (s *Server) conversationsList(ctx context.Context, f form.ConversationsFilter) (templates.ConversationsList, error) {
	ctx, cancel := context.WithTimeout(ctx, conversationsTimeout)
	defer cancel()
	after, err := assistant.ParseLogCursor(f.After)
	if err != nil {
		return templates.ConversationsList{}, err
	}
	g, ch, u := f.IDs()
	page, err := s.opts.Conversations.List(ctx, assistant.LogFilter{GuildID: g, ChannelID: ch, UserID: u, Status: f.Status, ToolErrors: f.ToolErrors}, after)
	if err != nil {
		return templates.ConversationsList{}, err
	}
	v := templates.ConversationsList{Filtered: f.Filtered()}
	now := time.Now()
	for _, r := range page.Rows {
		v.Rows = append(v.Rows, s.conversationRow(r, now))
	}
	base := "/assistant/conversations"
	if f.After != "" {
		v.FirstURL = base
		if q := f.Query(false); q != "" {
			v.FirstURL += "?" + q
		}
	}
	if page.More {
		next := f
		next.After = page.Next.String()
		v.NextURL = base + "?" + next.Query(true)
	}
	return v, nil
}

// Show transcripts as the server last read or saved it (Server.transcripts).
const (
	showUnknown int32 = iota
	showOff
	showOn
)

// showTranscripts reads the Show transcripts setting: from the store the
// first time, then as this server last saved it (its save handler is the
// setting's only writer; a failed save forgets it). A read of the store
// and a save hold transcriptsMu, so a read never keeps a value older than
// a save's.
func (s *Server) showTranscripts(ctx context.Context) (bool, error) {
	switch s.transcripts.Load() {
	case showOn:
		return true, nil
	case showOff:
		return false, nil
	}
	s.transcriptsMu.Lock()
	defer s.transcriptsMu.Unlock()
	if v := s.transcripts.Load(); v != showUnknown {
		return v == showOn, nil
	}
	on, err := settings.LoadAssistantShowTranscripts(ctx, s.opts.Store)
	if err != nil {
		return false, err
	}
	v := showOff
	if on {
		v = showOn
	}
	s.transcripts.Store(v)
	return on, nil
}

// saveTranscripts saves Show transcripts through save and keeps what it
// saved (or, when save failed, nothing: the next read asks the store).
func (s *Server) saveTranscripts(on bool, save func() error) error {
	s.transcriptsMu.Lock()
	defer s.transcriptsMu.Unlock()
	err := save()
	switch {
	case err != nil:
		s.transcripts.Store(showUnknown)
	case on:
		s.transcripts.Store(showOn)
	default:
		s.transcripts.Store(showOff)
	}
	return err
}

// conversationID reads the :id parameter (404 when it is not an id).
func conversationID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, echo.NewHTTPError(http.StatusNotFound, "There is no such conversation.")
	}
	return id, nil
}
