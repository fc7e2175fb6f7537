package admin

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/web/templates"
)

// ActionDemoMessagePost is the audit action of a message posted in the demo guild from /demo.
const ActionDemoMessagePost = "demo.message.post"

// postDemoMessage posts a message into the demo guild as the chosen demo member, then shows
// the channel again. A refused form is shown again with its text kept.
func (s *Server) postDemoMessage(c echo.Context) error {
	if s.opts.Demo == nil {
		return echo.ErrNotFound
	}
	f := form.ParseDemoMessage(c.Request())
	refused := func(errs form.Errors) error {
		return s.renderDemo(c, http.StatusUnprocessableEntity, demoRefused{channel: f.Channel, as: f.Member,
			at: templates.DemoFormPost, errs: errs, post: f})
	}
	if errs := f.Validate(); !errs.OK() {
		return refused(errs)
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	err := s.opts.Demo.PostAsMember(ctx, f.Channel, f.Member, f.Content)
	if errors.Is(err, form.ErrDemoUnknown) {
		return refused(form.Errors{form.FieldForm: "That channel or member is not in the demo guild; choose again."})
	}
	if err != nil {
		return fmt.Errorf("admin: demo post: %w", err)
	}
	if err := s.opts.Store.Audit(ctx, store.AuditEntry{
		At: time.Now(), Actor: sessionOf(c).Username, Action: ActionDemoMessagePost, Target: f.Channel,
		Detail: "as member " + f.Member + ", " + strconv.Itoa(utf8.RuneCountInString(f.Content)) + " characters", IP: c.RealIP(),
	}); err != nil {
		return fmt.Errorf("admin: demo post: audit: %w", err)
	}
	return c.Redirect(http.StatusSeeOther, demoLocation(f.Channel, f.Member))
}
