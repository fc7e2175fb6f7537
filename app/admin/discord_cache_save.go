package admin

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/web/templates"
)

// saveDiscordCache is POST /discord/cache: the cache sizes, stored with an
// audit row; they apply at the next start (the caches are sized once).
// Bad input re-renders the page with the input kept and nothing stored.
func (s *Server) saveDiscordCache(c echo.Context) error {
	f := form.ParseDiscordCache(c.Request())
	if errs := f.Validate(); !errs.OK() {
		return s.renderDiscord(c, http.StatusUnprocessableEntity, func(v *templates.DiscordView) {
			v.CacheErrors, v.CacheMessages, v.CacheMembers = errs, clip(f.MessagesRaw, 20), clip(f.MembersRaw, 20)
		})
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	if err := settings.SaveDiscordCache(ctx, s.opts.Store, f.Messages, f.Members, discordActor(c)); err != nil {
		return fmt.Errorf("admin: save discord cache: %w", err)
	}
	s.setFlash(c, flashDiscordCache)
	return c.Redirect(http.StatusSeeOther, "/discord")
}
