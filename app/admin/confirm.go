package admin

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/web/templates"
)

// confirm asks before a destructive action, without JavaScript. Unless the
// POST carries form.FieldConfirm=form.ConfirmYes it renders v (a page whose
// red button posts the same form again with the confirmation and the CSRF
// token) and reports false; the handler then returns err and does nothing
// else. Only a confirmed POST reports true. active is the navigation key of
// the section the action belongs to.
//
//	if ok, err := s.confirm(c, "settings", confirmX); !ok {
//		return err
//	}
func (s *Server) confirm(c echo.Context, active string, v templates.ConfirmView) (ok bool, err error) {
	if form.Confirmed(c.Request()) {
		return true, nil
	}
	return false, render(c, http.StatusOK, templates.ConfirmPage(s.chrome(c, v.Title, active), v))
}

// The confirmation pages of the settings page's destructive actions.
var (
	confirmRevokeSessions = templates.ConfirmView{
		Title: "Sign out other sessions?",
		Message: "Every other browser and device signed in to this account will be signed out and must sign in again. " +
			"This session stays signed in.",
		Action: "/settings/sessions/revoke",
		Button: "Yes, sign out other sessions",
		Cancel: "/settings",
	}
	confirmRemoveWorldtree = templates.ConfirmView{
		Title: "Remove the Worldtree configuration?",
		Message: "Kimi will forget the Worldtree base URL and all three API keys (default, admin and consumer), " +
			"and the Worldtree page leaves the navigation. To connect again you must enter the keys anew.",
		Action: "/settings/worldtree/remove",
		Button: "Yes, remove the Worldtree configuration",
		Cancel: "/settings#worldtree",
	}
)
