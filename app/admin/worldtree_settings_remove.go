package admin

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/settings"
)

// removeWorldtreeSettings deletes the Worldtree configuration, keys
// included, once the confirmation page has been answered.
func (s *Server) removeWorldtreeSettings(c echo.Context) error {
	if ok, err := s.confirm(c, "settings", confirmRemoveWorldtree); !ok {
		return err
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	sess := sessionOf(c)
	if _, err := settings.RemoveWorldtree(ctx, s.opts.Store, settings.Actor{Name: sess.Username, IP: c.RealIP()}); err != nil {
		return fmt.Errorf("admin: remove worldtree settings: %w", err)
	}
	s.worldtree.set(false)
	s.setFlash(c, flashWorldtreeOff)
	return c.Redirect(http.StatusSeeOther, "/settings")
}
