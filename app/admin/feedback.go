package admin

import (
	"regexp"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/web/templates"
)

// Feedback where the eye is: a long page's form posts to its own card's
// fragment (#setup), so a refusal re-rendered in place opens at that card
// with its error summary, and a save's notice is shown beside the form
// that saved (a flash naming the card) rather than only on top.

// setFlashNear is setFlash for a notice shown beside the form whose card
// has the id near (templates.Flash.Near); the cookie carries code@near.
func (s *Server) setFlashNear(c echo.Context, code, near string) {
	if flashNearRE.MatchString(near) {
		code += "@" + near
	}
	s.setFlash(c, code)
}

// flashNearRE is a card id a flash may name (a module's is module-<name>).
var flashNearRE = regexp.MustCompile(`\A[A-Za-z0-9][A-Za-z0-9_.-]{0,100}\z`)

// takeNear moves the flashes for the card near out of ch (shown on top
// otherwise) and returns them.
func takeNear(ch *templates.Chrome, near string) []templates.Flash {
	var taken []templates.Flash
	ch.Flashes = slices.DeleteFunc(ch.Flashes, func(f templates.Flash) bool {
		if f.Near == near {
			taken = append(taken, f)
			return true
		}
		return false
	})
	return taken
}
