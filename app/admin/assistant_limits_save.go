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

const flashAssistantLimitsSaved = "alsaved"

func init() {
	flashes[flashAssistantLimitsSaved] = templates.Flash{Kind: templates.FlashSuccess,
		Message: "Limits saved; the next trigger is judged by them."}
}

// saveAssistantLimits is POST /assistant/limits: a member's turns in ten
// minutes, the daily token budgets and the monthly cap, and whether staff
// are exempt, validated and saved with an audit row naming what changed.
// The assistant reads them at each trigger. A refusal — a field's, or the
// store's — re-renders the page with the input kept and nothing stored.
func (s *Server) saveAssistantLimits(c echo.Context) error {
	f := form.ParseAssistantLimits(c.Request())
	refuse := func(status int, errs form.Errors) error {
		return s.renderAssistant(c, status, func(v *templates.AssistantView) {
			v.Limits, v.LimitsErrors = f, errs
		})
	}
	if errs := f.Validate(); !errs.OK() {
		return refuse(http.StatusUnprocessableEntity, errs)
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	if _, err := settings.SaveAssistantLimits(ctx, s.opts.Store, f.Update(), settings.Actor{Name: actor(c), IP: c.RealIP()}); err != nil {
		if errs := form.AssistantLimitsErrors(err); !errs.OK() {
			return refuse(http.StatusUnprocessableEntity, errs)
		}
		if errs, status, ok := s.refusedForm(c, err); ok {
			return refuse(status, errs)
		}
		return fmt.Errorf("admin: save assistant limits: %w", err)
	}
	s.setFlash(c, flashAssistantLimitsSaved)
	return c.Redirect(http.StatusSeeOther, "/assistant#limits")
}
