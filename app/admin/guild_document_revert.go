package admin

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/guildcfg"
)

// revertGuildDocument writes a history entry's text back as the newest
// revision (audited as guildcfg.ActionDocumentRevert), compare-and-swap on
// the revision the history page showed. It asks for no confirmation: a
// revert destroys nothing — the text it replaces stays in the history, one
// more revert away — and the button names the revision it restores. An old
// text that no longer passes validation is refused with its messages.
func (s *Server) revertGuildDocument(c echo.Context) error {
	id, err := guildParam(c)
	if err != nil {
		return err
	}
	entry, err := strconv.ParseInt(c.Param("entry"), 10, 64)
	if err != nil || entry <= 0 {
		return echo.ErrNotFound
	}
	f := form.ParseGuildRevert(c.Request())
	target, _, err := s.historyTarget(id, f.Module)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	errs := f.Validate()
	if errs.OK() {
		saved, rerr := s.opts.Guilds.Revert(ctx, target, entry, f.ExpectedRevision, guildActor(c))
		var conflict *guildcfg.ConflictError
		switch {
		case rerr == nil:
			flash := flashGuildReverted
			if saved.Revision == f.ExpectedRevision {
				flash = flashGuildUnchanged
			}
			s.setFlash(c, flash)
			return c.Redirect(http.StatusSeeOther, historyURL(id, f.Module, 0))
		case errors.Is(rerr, guildcfg.ErrUnknownHistory):
			return echo.ErrNotFound
		case errors.As(rerr, &conflict):
			return s.renderGuildHistory(c, http.StatusConflict, id, f.Module, 0, form.Errors{form.FieldForm: form.MsgGuildRevertConflict})
		}
		if errs = form.GuildErrors(rerr, form.FieldForm); errs.OK() {
			return fmt.Errorf("admin: revert guild document: %w", rerr)
		}
	}
	return s.renderGuildHistory(c, http.StatusUnprocessableEntity, id, f.Module, 0, errs)
}
