package admin

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/web/templates"
)

// loginForm shows the sign-in form (or goes on to ?next= when already
// signed in).
func (s *Server) loginForm(c echo.Context) error {
	next := localRedirect(c.QueryParam("next"))
	if sessionOf(c) != nil {
		return c.Redirect(http.StatusSeeOther, next)
	}
	ch := s.chrome(c, "Sign in", "")
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	has, err := s.opts.Auth.HasAdmin(ctx)
	if err != nil {
		return err
	}
	if !has {
		ch.Flashes = append(ch.Flashes, templates.Flash{Kind: templates.FlashInfo,
			Message: "No admin account exists yet. Open the set-up link that Kimi printed in its log to create one."})
	}
	return render(c, http.StatusOK, templates.LoginPage(ch, templates.LoginForm{Next: nextField(next)}))
}

func nextField(next string) string {
	if next == "/" {
		return ""
	}
	return next
}
