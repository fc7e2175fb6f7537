package admin

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/web/templates"
)

var confirmDiscordReconnect = templates.ConfirmView{
	Title:   "Reconnect to Discord now?",
	Message: "Kimi drops the gateway connection and identifies again on a fresh session, also after a fatal close. Events sent while it reconnects are missed, and each identify counts against Discord's daily session-start limit.",
	Action:  "/discord/reconnect",
	Button:  "Yes, reconnect now",
	Cancel:  "/discord",
}

// reconnectDiscord is POST /discord/reconnect, after a confirmation: an
// audit row, then the bot reconnects on a fresh session.
func (s *Server) reconnectDiscord(c echo.Context) error {
	if ok, err := s.confirm(c, "discord", confirmDiscordReconnect); !ok {
		return err
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	if err := s.opts.Store.Audit(ctx, store.AuditEntry{Actor: actor(c), Action: settings.AuditActionDiscordReconnect,
		Target: "discord", Detail: "reconnect requested (state was " + string(s.opts.Discord.Status().State) + ")", IP: c.RealIP()}); err != nil {
		return fmt.Errorf("admin: reconnect discord: %w", err)
	}
	s.opts.Discord.Reconnect()
	s.setFlash(c, flashDiscordReconnect)
	return c.Redirect(http.StatusSeeOther, "/discord")
}
