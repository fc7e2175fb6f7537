package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/web/templates"
)

// saveDiscordToken is POST /discord/token: the token is checked live with
// Discord (GET users/@me, bounded) and stored only when Discord accepts
// it, as a secret setting with an audit row; then the bot reconnects with
// it. A refusal re-renders the page with a field error, nothing stored; the
// token never goes back into the page.
func (s *Server) saveDiscordToken(c echo.Context) error {
	f := form.ParseDiscordToken(c.Request())
	refuse := func(errs form.Errors) error {
		return s.renderDiscord(c, http.StatusUnprocessableEntity, func(v *templates.DiscordView) { v.TokenErrors = errs })
	}
	if errs := f.Validate(); !errs.OK() {
		return refuse(errs)
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), discordCheckTimeout)
	defer cancel()
	if _, err := s.opts.Discord.ValidateToken(ctx, f.Token); err != nil {
		var e form.Errors
		switch {
		case errors.Is(err, discord.ErrTokenRejected):
			e.Add(form.DiscordToken, "Discord rejected this token (401 Unauthorized). Copy the bot token again from the developer portal (Bot → Reset Token); a client secret or public key is not the token.")
		default:
			s.log.Warn("checking a Discord token failed", "err", err)
			e.Add(form.DiscordToken, "Kimi could not check the token with Discord: "+clip(err.Error(), 300)+". Nothing was saved; try again.")
		}
		e.Add(form.FieldForm, form.MsgDiscordTokenNotSaved)
		return refuse(e)
	}
	wctx, wcancel := withTimeout(c, 5*time.Second)
	defer wcancel()
	if err := settings.SaveDiscordToken(wctx, s.opts.Store, f.Token, discordActor(c)); err != nil {
		return fmt.Errorf("admin: save discord token: %w", err)
	}
	s.opts.Discord.Reconnect()
	code := flashDiscordToken
	if src, _ := s.opts.Discord.TokenSource(wctx); src != discord.TokenFromStore {
		code = flashDiscordTokenEnv
	}
	s.setFlash(c, code)
	return c.Redirect(http.StatusSeeOther, "/discord")
}
