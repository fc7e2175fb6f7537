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

// saveAssistantBehaviour is POST /assistant/behaviour: the assistant's
// name, whom it answers in direct messages, its persona and a turn's
// limits, validated and saved with an audit row (naming what changed,
// never the persona's text); the name the Discord side keeps in memory is
// reloaded at once. Direct messages turned on are carried at the next
// reconnect (the DM intent is asked for when Kimi identifies), which the
// flash says; saving never reconnects. A refusal — a field's, or the store's on a full disk or another
// program's lock — re-renders the page with the input kept and nothing
// stored.
func (s *Server) saveAssistantBehaviour(c echo.Context) error {
	f := form.ParseAssistantBehaviour(c.Request())
	refuse := func(status int, errs form.Errors) error {
		return s.renderAssistant(c, status, func(v *templates.AssistantView) {
			v.Behaviour, v.BehaviourErrors = f, errs
		})
	}
	if errs := f.Validate(); !errs.OK() {
		return refuse(http.StatusUnprocessableEntity, errs)
	}
	u, _ := f.Update()
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	before, beforeErr := settings.LoadAssistantBehaviour(ctx, s.opts.Store)
	saved, err := settings.SaveAssistantBehaviour(ctx, s.opts.Store, u, settings.Actor{Name: actor(c), IP: c.RealIP()})
	if err != nil {
		if errs := form.AssistantBehaviourErrors(err); !errs.OK() {
			return refuse(http.StatusUnprocessableEntity, errs)
		}
		if errs, status, ok := s.refusedForm(c, err); ok {
			return refuse(status, errs)
		}
		return fmt.Errorf("admin: save assistant behaviour: %w", err)
	}
	if err := s.opts.Assistant.ReloadBehaviour(ctx); err != nil {
		return fmt.Errorf("admin: save assistant behaviour: %w", err)
	}
	flash := flashAssistantBehaviourSaved
	if beforeErr == nil && !before.WantsDMs() && saved.WantsDMs() {
		flash = flashAssistantDMsNextReconnect // turning them off is immediate: the gate drops every DM
	}
	s.setFlash(c, flash)
	return c.Redirect(http.StatusSeeOther, "/assistant#behaviour")
}
