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

// saveAssistantRetention is POST /assistant/retention: the days a
// transcript is kept after its conversation's last activity, validated
// and saved with an audit row. The retention job applies it at its next
// run (a lowered setting deletes what is now past it then, which the card
// says); saving deletes nothing itself. A refusal re-renders the page with
// the input kept and nothing stored.
func (s *Server) saveAssistantRetention(c echo.Context) error {
	f := form.ParseAssistantRetention(c.Request())
	refuse := func(status int, errs form.Errors) error {
		return s.renderAssistant(c, status, func(v *templates.AssistantView) {
			v.Retention.Form, v.Retention.Errors = f, errs
		})
	}
	if errs := f.Validate(); !errs.OK() {
		return refuse(http.StatusUnprocessableEntity, errs)
	}
	u, _ := f.Update()
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	if err := settings.SaveAssistantRetention(ctx, s.opts.Store, u, settings.Actor{Name: actor(c), IP: c.RealIP()}); err != nil {
		if errs := form.AssistantRetentionErrors(err); !errs.OK() {
			return refuse(http.StatusUnprocessableEntity, errs)
		}
		if errs, status, ok := s.refusedForm(c, err); ok {
			return refuse(status, errs)
		}
		return fmt.Errorf("admin: save assistant retention: %w", err)
	}
	s.setFlash(c, flashAssistantRetentionSaved)
	return c.Redirect(http.StatusSeeOther, "/assistant#retention")
}
