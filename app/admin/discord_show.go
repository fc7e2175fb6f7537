package admin

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// discordShow is GET /discord: the connection's status, the token, the
// intents and the cache sizes.
func (s *Server) discordShow(c echo.Context) error {
	return s.renderDiscord(c, http.StatusOK, nil)
}
