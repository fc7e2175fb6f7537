package admin

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/web/templates"
)

// ActionDemoModalSubmit is the audit action of a modal submitted in the demo guild from /demo.
const ActionDemoModalSubmit = "demo.modal.submit"

// submitDemoModal submits a modal open for the acting demo member, its inputs checked against
// the modal (required ones, lengths); a refused form is shown again with its values and
// nothing is sent.
func (s *Server) submitDemoModal(c echo.Context) error {
	if s.opts.Demo == nil {
		return echo.ErrNotFound
	}
	f := form.ParseDemoModal(c.Request())
	refused := func(errs form.Errors) error {
		return s.renderDemo(c, http.StatusUnprocessableEntity, demoRefused{channel: f.Channel, as: f.Member,
			at: templates.DemoFormModal, errs: errs, modal: &f})
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	modals, err := s.opts.Demo.DemoModals(ctx, f.Channel, f.Member)
	if errs, ok := demoRefusalErrors(err); ok {
		return refused(errs)
	}
	if err != nil {
		return fmt.Errorf("admin: demo modal: %w", err)
	}
	i := slices.IndexFunc(modals, func(m templates.DemoModal) bool { return m.InteractionID == f.Interaction })
	if i < 0 {
		return s.renderDemo(c, http.StatusUnprocessableEntity, demoRefused{channel: f.Channel, as: f.Member, at: templates.DemoFormButton,
			errs: form.Errors{form.FieldForm: "That modal is no longer open (it was submitted, or was not shown to this member)."}})
	}
	if errs := f.Validate(modals[i].Inputs); !errs.OK() {
		return refused(errs)
	}
	err = s.opts.Demo.SubmitModal(ctx, f.Channel, f.Member, f.Interaction, f.Values)
	if errs, ok := demoRefusalErrors(err); ok {
		return refused(errs)
	}
	if err != nil {
		return fmt.Errorf("admin: demo modal: %w", err)
	}
	if err := s.opts.Store.Audit(ctx, store.AuditEntry{
		At: time.Now(), Actor: sessionOf(c).Username, Action: ActionDemoModalSubmit, Target: f.Channel,
		Detail: strconv.Quote(modals[i].Title) + " as member " + f.Member + ", " + strconv.Itoa(len(f.Values)) + " field(s)", IP: c.RealIP(),
	}); err != nil {
		return fmt.Errorf("admin: demo modal: audit: %w", err)
	}
	return c.Redirect(http.StatusSeeOther, demoLocation(f.Channel, f.Member))
}
