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

// ActionDemoCommandRun is the audit action of a slash command run in the demo guild from /demo.
const ActionDemoCommandRun = "demo.command.run"

// runDemoCommand runs a slash command registered in the demo guild as the acting demo member,
// with the options checked against the command's declaration (required ones, types, bounds,
// choices); a refused form is shown again with its values and nothing is sent.
func (s *Server) runDemoCommand(c echo.Context) error {
	if s.opts.Demo == nil {
		return echo.ErrNotFound
	}
	f := form.ParseDemoCommand(c.Request())
	refused := func(errs form.Errors) error {
		return s.renderDemo(c, http.StatusUnprocessableEntity, demoRefused{channel: f.Channel, as: f.Member,
			at: templates.DemoFormCommand, errs: errs, command: &f})
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	cmds, err := s.opts.Demo.DemoCommands(ctx)
	if err != nil {
		return fmt.Errorf("admin: demo command: %w", err)
	}
	i := slices.IndexFunc(cmds, func(cmd templates.DemoCommand) bool { return cmd.Path == f.Command })
	if i < 0 {
		errs := form.Errors{}
		errs.Add(form.FieldDemoCommand, "That command is not registered in the demo guild; choose one of the list.")
		return refused(errs)
	}
	cmd := cmds[i]
	if cmd.Unsendable != "" {
		return refused(form.Errors{form.FieldForm: "/" + cmd.Path + " needs an attachment, which the demo cannot send."})
	}
	values, errs := f.Validate(cmd.Options)
	if !errs.OK() {
		return refused(errs)
	}
	err = s.opts.Demo.RunCommand(ctx, f.Channel, f.Member, cmd.Path, values)
	if errs, ok := demoRefusalErrors(err); ok {
		return refused(errs)
	}
	if err != nil {
		return fmt.Errorf("admin: demo command: %w", err)
	}
	if err := s.opts.Store.Audit(ctx, store.AuditEntry{
		At: time.Now(), Actor: sessionOf(c).Username, Action: ActionDemoCommandRun, Target: f.Channel,
		Detail: "/" + cmd.Path + " as member " + f.Member + ", " + strconv.Itoa(len(values)) + " option(s)", IP: c.RealIP(),
	}); err != nil {
		return fmt.Errorf("admin: demo command: audit: %w", err)
	}
	return c.Redirect(http.StatusSeeOther, demoLocation(f.Channel, f.Member))
}
