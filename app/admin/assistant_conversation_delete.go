package admin

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/web/templates"
)

// deleteAssistantConversation is POST /assistant/conversations/{id}/delete,
// after a confirmation page: the conversation and all its rows (turns,
// transcript, tool calls, delivered messages) are deleted with an audit
// row, and the list says so. The usage roll-up keeps its counts.
func (s *Server) deleteAssistantConversation(c echo.Context) error {
	id, err := conversationID(c)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(c, conversationsTimeout)
	defer cancel()
	d, err := s.opts.Conversations.Detail(ctx, id, false)
	if errors.Is(err, store.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, "There is no such conversation: it may have been deleted.")
	}
	if err != nil {
		return fmt.Errorf("admin: delete conversation: %w", err)
	}
	if !form.Confirmed(c.Request()) {
		_, err := s.confirm(c, "assistant", templates.ConfirmView{
			Title: "Delete this conversation?",
			Message: fmt.Sprintf("Kimi deletes conversation %d: its %s, their messages and tool calls. A reply to one of its messages "+
				"in Discord then starts a new conversation. The usage counts (tokens, turns) stay.", d.ID, plural(d.LogRow.Turns, "turn")),
			Action: conversationPath(id) + "/delete",
			Button: "Yes, delete the conversation",
			Cancel: conversationPath(id),
		})
		return err
	}
	if err := s.opts.Conversations.Delete(ctx, id, store.AuditEntry{Actor: actor(c), IP: c.RealIP()}); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return echo.NewHTTPError(http.StatusNotFound, "There is no such conversation: it may have been deleted.")
		}
		if errs, status, ok := s.refusedForm(c, err); ok {
			return echo.NewHTTPError(status, errs.Get(form.FieldForm))
		}
		return fmt.Errorf("admin: delete conversation: %w", err)
	}
	s.setFlash(c, flashConversationDeleted)
	return c.Redirect(http.StatusSeeOther, "/assistant/conversations")
}
