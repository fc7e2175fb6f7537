package admin

import (
	"bytes"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/web/templates"
)

// discordEvents is GET /discord/events: a text/event-stream that sends a
// "fragment" event — the server-rendered status region of /discord — when
// it opens and after every change the bot signals (its Watch), as
// /modules/events does. It ends when the client goes away, when the server
// shuts down (CloseStreams) or on a write error.
func (s *Server) discordEvents(c echo.Context) error {
	ctx := c.Request().Context()
	changed := s.opts.Discord.Watch(ctx)
	w := c.Response()
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream; charset=utf-8")
	h.Set(echo.HeaderCacheControl, "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	var buf bytes.Buffer
	send := func() error {
		buf.Reset()
		if err := templates.DiscordStatus(s.discordStatusView(c)).Render(ctx, &buf); err != nil {
			return fmt.Errorf("admin: discord events: %w", err)
		}
		if _, err := w.Write(sseEvent("fragment", buf.String())); err != nil {
			return nil // the client went away
		}
		w.Flush()
		return nil
	}
	if err := send(); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.streams:
			return nil
		case _, ok := <-changed:
			if !ok {
				return nil
			}
			if err := send(); err != nil {
				return err
			}
		}
	}
}
