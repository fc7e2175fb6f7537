package admin

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/web/templates"
)

// assistantConversations is GET /assistant/conversations: the
// conversation log, newest activity first, 25 a page through a keyset
// cursor, filtered by guild, channel, user, status and tool errors (a
// refused filter re-renders the form with its errors and no rows), with
// the Show transcripts switch. The list is live (…/events).
func (s *Server) assistantConversations(c echo.Context) error {
	ctx := c.Request().Context()
	f := form.ParseConversationsFilter(c.Request())
	on, err := s.showTranscripts(ctx)
	if err != nil {
		return fmt.Errorf("admin: conversations page: %w", err)
	}
	v := templates.ConversationsView{Filter: f, ShowTranscripts: on}
	status := http.StatusOK
	if errs := f.Validate(); !errs.OK() {
		v.Errors, status = errs, http.StatusUnprocessableEntity
	} else {
		v.Live = "/assistant/conversations/events"
		if q := f.Query(true); q != "" {
			v.Live += "?" + q
		}
		if v.List, err = s.conversationsList(ctx, f); err != nil {
			return fmt.Errorf("admin: conversations page: %w", err)
		}
		if v.ListHTML, err = s.convRegions.render(ctx, v.List); err != nil {
			return fmt.Errorf("admin: conversations page: %w", err)
		}
	}
	if err := render(c, status, templates.ConversationsPage(s.chrome(c, "Conversations", "assistant"), v)); err != nil {
		return fmt.Errorf("admin: conversations page: %w", err)
	}
	return nil
}
