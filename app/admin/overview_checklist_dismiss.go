package admin

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/web/templates"
)

// flashChecklistDismissed is the flash after the checklist was dismissed.
const flashChecklistDismissed = "checklistoff"

func init() {
	flashes[flashChecklistDismissed] = templates.Flash{Kind: templates.FlashSuccess,
		Message: "The checklist is dismissed. Each step stays on its own page: Discord, Modules, Guilds and Assistant."}
}

// dismissChecklist is POST /overview/checklist/dismiss: the first-run
// checklist stays hidden from now on, with an audit row naming the steps
// it left open.
func (s *Server) dismissChecklist(c echo.Context) error {
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	pending := checklistPending(checklistSteps(s.checklistState(ctx, s.readChecklist(ctx))))
	if err := settings.DismissChecklist(ctx, s.opts.Store, pending, settings.Actor{Name: actor(c), IP: c.RealIP()}); err != nil {
		return fmt.Errorf("admin: dismiss the checklist: %w", err)
	}
	s.setFlash(c, flashChecklistDismissed)
	return c.Redirect(http.StatusSeeOther, "/")
}
