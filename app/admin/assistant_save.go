package admin

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/web/templates"
)

// saveAssistant is POST /assistant: the provider form is validated, saved
// with an audit row (keys as secret settings, never in the row), and the
// provider is rebuilt from it at once. A refusal re-renders the page with
// the input kept — never a key — and the fields' errors (or, 503, the
// store's refusal of the write); nothing is stored.
func (s *Server) saveAssistant(c echo.Context) error {
	env, _ := s.opts.Assistant.Env()
	f := form.ParseAssistant(c.Request(), env.Locks())
	status := http.StatusUnprocessableEntity
	refuse := func(errs form.Errors) error {
		return s.renderAssistant(c, status, func(v *templates.AssistantView) {
			k := f.Kept()
			fv := &v.Form
			if !f.Locked.BaseURL {
				fv.BaseURL = k.BaseURL
			}
			if !f.Locked.Model {
				fv.Model = strings.TrimSpace(k.Model)
			}
			fv.ContextWindow, fv.MaxTokens, fv.Temperature, fv.Timeout, fv.Thinking = k.ContextWindow, k.MaxTokens, k.Temperature, k.Timeout, k.Thinking
			fv.AllowPrivateNetwork, fv.FallbackBaseURL, fv.FallbackModel = k.AllowPrivateNetwork, k.FallbackBaseURL, k.FallbackModel
			fv.ClearAPIKey, fv.ClearFallbackAPIKey = k.ClearAPIKey, k.ClearFallbackAPIKey
			v.Errors = errs
		})
	}
	if errs := f.Validate(); !errs.OK() {
		return refuse(errs)
	}
	u, _ := f.Update()
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	if _, err := settings.SaveAssistant(ctx, s.opts.Store, u, settings.Actor{Name: actor(c), IP: c.RealIP()}); err != nil {
		if errs := form.AssistantErrors(err); !errs.OK() {
			return refuse(errs)
		}
		if errs, st, ok := s.refusedForm(c, err); ok {
			status = st
			return refuse(errs)
		}
		return fmt.Errorf("admin: save assistant settings: %w", err)
	}
	if err := s.opts.Assistant.Reload(ctx); err != nil {
		return fmt.Errorf("admin: save assistant settings: %w", err)
	}
	s.setFlash(c, flashAssistantSaved)
	return c.Redirect(http.StatusSeeOther, "/assistant")
}
