package admin

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/guildcfg"
)

// saveGuildModuleSettings stores a module's settings form (generated from
// its schema) as the guild:<id>:<module> document, compare-and-swap on the
// revision it was opened at. The schema's messages land on their fields,
// the module's cross-field rules above the form; nothing is stored then.
func (s *Server) saveGuildModuleSettings(c echo.Context) error {
	id, err := guildParam(c)
	if err != nil {
		return err
	}
	module := c.Param("module")
	target, schema, err := s.moduleTarget(id, module)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	f := form.ParseGuildModuleSettings(c.Request(), schema)
	errs := f.Validate()
	status := http.StatusUnprocessableEntity
	if errs.OK() {
		text := f.Document()
		saved, werr := s.opts.Guilds.Write(ctx, target, text, f.ExpectedRevision, guildActor(c))
		if werr == nil {
			return s.guildWritten(c, guildPath(id)+"#module-"+module, f.ExpectedRevision, saved)
		}
		var conflict *guildcfg.ConflictError
		if errors.As(werr, &conflict) {
			return s.guildConflict(c, id, "module-"+module, module+" settings", text)
		}
		if refused, st, ok := s.refusedForm(c, werr); ok {
			errs, status = refused, st
		} else if errs = f.Errors(werr); errs.OK() {
			return fmt.Errorf("admin: save %s settings: %w", module, werr)
		}
	}
	return s.renderGuild(c, status, id, guildPageState{module: module, settings: &f, errors: errs})
}
