package admin

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/web/templates"
)

// msgSessionNotSaved precedes the store's refusal when the credentials were
// right but the session could not be saved.
const msgSessionNotSaved = "Your username and password are right, but you could not be signed in: "

// loginSubmit checks the credentials (rate-limited per IP) and starts a new
// session, replacing any session cookie the browser brought along.
func (s *Server) loginSubmit(c echo.Context) error {
	if err := s.spendAttempt(c, c.FormValue("username")); err != nil {
		return err
	}
	ctx, cancel := withTimeout(c, 15*time.Second)
	defer cancel()
	f := form.ParseLogin(c.Request())
	next := localRedirect(f.Next)
	var old string
	if ck, err := c.Cookie(sessionCookie); err == nil {
		old = ck.Value
	}
	issued, err := s.opts.Auth.Login(ctx, f.Username, f.Password, clientMeta(c), old)
	if errs := f.Refused(err); errs != nil {
		view := templates.LoginForm{Username: f.Username, Next: nextField(next), Errors: errs}
		return render(c, http.StatusUnauthorized, templates.LoginPage(s.chrome(c, "Sign in", ""), view))
	}
	if refused, status, ok := s.refusedForm(c, err); ok {
		// The password was right: only saving the session failed. Say so.
		refused[form.FieldForm] = msgSessionNotSaved + refused[form.FieldForm]
		view := templates.LoginForm{Username: f.Username, Next: nextField(next), Errors: refused}
		return render(c, status, templates.LoginPage(s.chrome(c, "Sign in", ""), view))
	}
	if err != nil {
		return err
	}
	s.setSessionCookie(c, issued)
	s.rememberDevice(c, issued.Username)
	s.clearCookie(c, csrfCookie)
	return c.Redirect(http.StatusSeeOther, next)
}
