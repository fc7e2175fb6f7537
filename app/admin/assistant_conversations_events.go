package admin

import (
	"context"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
)

// assistantConversationEvents is GET /assistant/conversations/events (with
// the page's filter and cursor): a text/event-stream that sends the list
// region when it opens and after every turn that begins or ends and every
// conversation deleted (the storage's Watch). A refused filter is 422.
func (s *Server) assistantConversationEvents(c echo.Context) error {
	f := form.ParseConversationsFilter(c.Request())
	if errs := f.Validate(); !errs.OK() {
		return echo.NewHTTPError(422, "The filter is not valid.")
	}
	return s.streamFragments(c, s.opts.Conversations.Watch(c.Request().Context()), func(ctx context.Context) (string, bool, error) {
		v, err := s.conversationsList(ctx, f)
		if err != nil {
			return "", false, err
		}
		html, err := s.convRegions.render(ctx, v)
		return html, err == nil, err
	})
}
