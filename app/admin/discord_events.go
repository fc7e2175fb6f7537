package admin

import (
	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/web/templates"
)

// discordEvents is GET /discord/events: a text/event-stream that sends a
// "fragment" event — the server-rendered status region of /discord — when
// it opens and after every change the bot signals (its Watch), as
// /modules/events does. It ends when the client goes away, when the server
// shuts down (CloseStreams) or on a write error.
func (s *Server) discordEvents(c echo.Context) error {
	return s.streamFragments(c, s.opts.Discord.Watch(c.Request().Context()), staticFragment(func() templ.Component {
		return templates.DiscordStatus(s.discordStatusView(c))
	}))
}
