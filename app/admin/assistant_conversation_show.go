package admin

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/web/templates"
)

// assistantConversationShow is GET /assistant/conversations/{id}: each
// turn with its status, duration, iterations, model and tokens, and each
// tool call (tool, module, outcome, duration). Message text and the tool
// calls' argument and result excerpts are read and shown only while Show
// transcripts is on; otherwise the page shows the structure alone.
func (s *Server) assistantConversationShow(c echo.Context) error {
	id, err := conversationID(c)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(c, conversationsTimeout)
	defer cancel()
	on, err := s.showTranscripts(ctx)
	if err != nil {
		return fmt.Errorf("admin: conversation page: %w", err)
	}
	d, err := s.opts.Conversations.Detail(ctx, id, on)
	if errors.Is(err, store.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, "There is no such conversation: it may have been deleted.")
	}
	if err != nil {
		return fmt.Errorf("admin: conversation page: %w", err)
	}
	v := s.conversationView(d, on)
	if err := render(c, http.StatusOK, templates.ConversationPage(s.chrome(c, "Conversation "+v.Row.ID, "assistant"), v)); err != nil {
		return fmt.Errorf("admin: conversation page: %w", err)
	}
	return nil
}

// conversationView is the conversation's page model; without content the
// detail holds no text, and the view none either.
func (s *Server) conversationView(d assistant.LogConversation, content bool) templates.ConversationView {
	now := time.Now()
	v := templates.ConversationView{Row: s.conversationRow(d.LogRow, now), ShowTranscripts: content, Truncated: d.Truncated,
		DeleteURL: conversationPath(d.ID) + "/delete"}
	for i, t := range d.Turns {
		_, _, who := s.names(d.Place.GuildID, 0, t.UserID)
		tv := templates.ConversationTurn{
			N: strconv.Itoa(i + 1), Kind: t.Kind, Status: t.Status, StatusKind: conversationStatusKind(t.Status), ErrorKind: t.ErrorKind,
			Started: exactTime(t.Started), Duration: shortDuration(t.Duration), Iterations: strconv.Itoa(t.Iterations),
			Model: t.Model, Tokens: fmt.Sprintf("%d in (%d cached) / %d out", t.PromptTokens, t.CachedTokens, t.CompletionTokens),
		}
		tv.Who, tv.WhoTitle = nameOrID(who, t.UserID)
		if tv.Model == "" {
			tv.Model = "—"
		}
		if t.Status == assistant.StatusRunning {
			tv.Duration = "running"
		}
		if content {
			for _, m := range t.Messages {
				author := m.AuthorName
				if m.Role == "assistant" {
					author = "Kimi"
				}
				tv.Messages = append(tv.Messages, templates.ConversationMessage{Role: m.Role, Author: author, Content: m.Content})
			}
		}
		for _, call := range t.Calls {
			cv := templates.ConversationCall{Seq: strconv.Itoa(call.Seq), Tool: call.Tool, Module: call.Module,
				Outcome: string(call.Outcome), OutcomeKind: "success", Duration: shortDuration(call.Duration)}
			if call.Module == "" {
				cv.Module = "core"
			}
			if call.Outcome != assistant.OutcomeOK {
				cv.OutcomeKind = "danger"
			}
			if content {
				cv.Arguments, cv.Result = call.Arguments, call.Result
			}
			tv.Calls = append(tv.Calls, cv)
		}
		v.Turns = append(v.Turns, tv)
	}
	return v
}

// shortDuration is a turn's or a tool call's duration: "340 ms", "2.5s".
func shortDuration(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	}
	return d.Round(100 * time.Millisecond).String()
}
