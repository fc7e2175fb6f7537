package admin

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/settings"
)

// saveDiscordIntents is POST /discord/intents (also the "reconnect without
// it" button after a 4014): the choices are stored with an audit row, the
// host advertises the matching capabilities (modules whose activation
// capabilities are no longer covered are soft-disabled, newly covered ones
// start), and the bot reconnects on a fresh session with the new intents.
func (s *Server) saveDiscordIntents(c echo.Context) error {
	f := form.ParseDiscordIntents(c.Request())
	ctx, cancel := withTimeout(c, discordActionTimeout)
	defer cancel()
	if err := settings.SaveDiscordIntents(ctx, s.opts.Store, f.Members, f.MessageContent, discordActor(c)); err != nil {
		return fmt.Errorf("admin: save discord intents: %w", err)
	}
	if err := s.opts.Discord.ApplyCapabilities(ctx); err != nil {
		return fmt.Errorf("admin: save discord intents: %w", err)
	}
	s.opts.Discord.Reconnect()
	s.setFlash(c, flashDiscordIntents)
	return c.Redirect(http.StatusSeeOther, "/discord")
}
