package admin

import (
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/host"
)

// jobPath is a job's address on its module's page: the key path-escaped,
// so a key with a slash, space, "?" or "#" stays one path segment.
func jobPath(module, key string) string {
	return modulePath(module) + "/jobs/" + url.PathEscape(key)
}

// jobParam is the module and the decoded job key of /modules/:name/jobs/:key/….
// echo routes on the raw path when the request's path has escapes that
// differ from the default (%2F), and leaves :key escaped then; otherwise
// it is already decoded (and a literal "%" must stay as it is).
func (s *Server) jobParam(c echo.Context) (host.ModuleStatus, string, error) {
	m, err := s.moduleParam(c)
	if err != nil {
		return m, "", err
	}
	if s.opts.Scheduler == nil {
		return m, "", echo.ErrNotFound
	}
	key := c.Param("key")
	if c.Request().URL.RawPath != "" {
		if key, err = url.PathUnescape(key); err != nil {
			return m, "", echo.ErrNotFound
		}
	}
	return m, key, nil
}
