package admin

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/web/templates"
)

var confirmRemoveDiscordToken = templates.ConfirmView{
	Title:   "Remove the bot token?",
	Message: "Kimi forgets the stored Discord bot token and disconnects from Discord. Modules keep running but cannot reach Discord until a token is saved again.",
	Action:  "/discord/token/remove",
	Button:  "Yes, remove the token and disconnect",
	Cancel:  "/discord#token",
}

// removeDiscordToken is POST /discord/token/remove, after a confirmation:
// the stored token is deleted (audited) and the bot reconnects, which
// without a token means it stays disconnected.
func (s *Server) removeDiscordToken(c echo.Context) error {
	if ok, err := s.confirm(c, "discord", confirmRemoveDiscordToken); !ok {
		return err
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	if _, err := settings.RemoveDiscordToken(ctx, s.opts.Store, discordActor(c)); err != nil {
		return fmt.Errorf("admin: remove discord token: %w", err)
	}
	s.opts.Discord.Reconnect()
	s.setFlash(c, flashDiscordTokenOff)
	return c.Redirect(http.StatusSeeOther, "/discord")
}
