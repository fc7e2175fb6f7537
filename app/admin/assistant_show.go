package admin

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// assistantShow is GET /assistant: the provider's status, the last Test
// connection and the provider form.
func (s *Server) assistantShow(c echo.Context) error {
	return s.renderAssistant(c, http.StatusOK, nil)
}
