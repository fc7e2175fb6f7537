package admin

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/web/templates"
)

// ActionDemoButtonClick is the audit action of a button clicked (or a select menu's values
// picked) on a demo guild message from /demo.
const ActionDemoButtonClick = "demo.button.click"

// clickDemoButton clicks a message's button, or sends a select menu's chosen values, as the
// acting demo member (an interaction the bot answers), then shows the channel again. A
// refusal (the message or component gone, a value not offered) is shown, nothing sent.
func (s *Server) clickDemoButton(c echo.Context) error {
	if s.opts.Demo == nil {
		return echo.ErrNotFound
	}
	f := form.ParseDemoButton(c.Request())
	refused := func(errs form.Errors) error {
		return s.renderDemo(c, http.StatusUnprocessableEntity, demoRefused{channel: f.Channel, as: f.Member,
			at: templates.DemoFormButton, errs: errs})
	}
	if errs := f.Validate(); !errs.OK() {
		return refused(errs)
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	err := s.opts.Demo.ClickButton(ctx, f.Channel, f.Message, f.Member, f.CustomID, f.Values)
	if errs, ok := demoRefusalErrors(err); ok {
		return refused(errs)
	}
	if err != nil {
		return fmt.Errorf("admin: demo click: %w", err)
	}
	detail := "as member " + f.Member + ", component " + strconv.Quote(f.CustomID) + " on message " + f.Message
	if f.Select {
		detail += ", " + strconv.Itoa(len(f.Values)) + " value(s)"
	}
	if err := s.opts.Store.Audit(ctx, store.AuditEntry{
		At: time.Now(), Actor: sessionOf(c).Username, Action: ActionDemoButtonClick, Target: f.Channel, Detail: detail, IP: c.RealIP(),
	}); err != nil {
		return fmt.Errorf("admin: demo click: audit: %w", err)
	}
	return c.Redirect(http.StatusSeeOther, demoLocation(f.Channel, f.Member))
}

// demoRefusalErrors is the form error of a refused demo interaction: a form.DemoRefusal's
// sentence, or, for a channel or member not in the demo guild, the same sentence as the post
// form's.
func demoRefusalErrors(err error) (form.Errors, bool) {
	var r form.DemoRefusal
	switch {
	case errors.As(err, &r):
		return form.Errors{form.FieldForm: string(r)}, true
	case errors.Is(err, form.ErrDemoUnknown):
		return form.Errors{form.FieldForm: "That channel or member is not in the demo guild; choose again."}, true
	}
	return nil, false
}
