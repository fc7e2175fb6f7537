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
// Bad input, or a write the store refused (503: a full disk, another
// program's lock), re-renders the page with the input kept and nothing
// stored.
func (s *Server) saveDiscordCache(c echo.Context) error {
	f := form.ParseDiscordCache(c.Request())
	refuse := func(status int, errs form.Errors) error {
		return s.renderDiscord(c, status, func(v *templates.DiscordView) {
			v.CacheErrors, v.CacheMessages, v.CacheMembers = errs, clip(f.MessagesRaw, 20), clip(f.MembersRaw, 20)
		})
	}
	if errs := f.Validate(); !errs.OK() {
		return refuse(http.StatusUnprocessableEntity, errs)
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	if err := settings.SaveDiscordCache(ctx, s.opts.Store, f.Messages, f.Members, discordActor(c)); err != nil {
		if errs, status, ok := s.refusedForm(c, err); ok {
			return refuse(status, errs)
		}
		return fmt.Errorf("admin: save discord cache: %w", err)
	}
	s.setFlash(c, flashDiscordCache)
	return c.Redirect(http.StatusSeeOther, "/discord")
}
