package admin

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/web/templates"
)

// saveGuildDocument stores the raw text of the guild's server-setup
// document, compare-and-swap on the revision the form was opened at. A
// refusal keeps the text and lists every problem with its line.
func (s *Server) saveGuildDocument(c echo.Context) error {
	id, err := guildParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	f := form.ParseGuildDocument(c.Request())
	raw := templates.GuildRawView{Text: f.Text}
	errs := f.Validate()
	status := http.StatusUnprocessableEntity
	if errs.OK() {
		saved, werr := s.opts.Guilds.Write(ctx, guildcfg.GuildTarget(id), f.Text, f.ExpectedRevision, guildActor(c))
		if werr == nil {
			return s.guildWritten(c, guildPath(id)+"#raw", f.ExpectedRevision, saved)
		}
		var conflict *guildcfg.ConflictError
		if errors.As(werr, &conflict) {
			return s.guildConflict(c, id, "raw", "server setup", f.Text)
		}
		if refused, st, ok := s.refusedForm(c, werr); ok {
			errs, status = refused, st
		} else if errs = form.GuildErrors(werr, form.GuildDocumentText); errs.OK() {
			return fmt.Errorf("admin: save guild document: %w", werr)
		}
		var verr *guildcfg.ValidationError
		if errors.As(werr, &verr) {
			raw.Refused = problemMessages(verr.Problems)
		}
	}
	raw.Errors = errs
	return s.renderGuild(c, status, id, guildPageState{raw: &raw})
}
