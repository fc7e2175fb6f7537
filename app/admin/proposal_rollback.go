package admin

import (
	"errors"
	"fmt"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/proposals"
	"github.com/kimiapp/kimi/web/templates"
)

// rollbackProposal is POST /proposals/{id}/rollback: an applied proposal's
// document goes back to the one it was made against. Unlike approving,
// rolling back throws a live configuration away, so it asks first (the
// confirm page; a refusal — not applied, or the document changed since —
// needs no confirmation and is the flash of the proposal page at once).
// The service writes through the approval's compare-and-swap (the write
// expects the proposal's own revision) and audits it with the admin's
// name; its message is the flash.
func (s *Server) rollbackProposal(c echo.Context) error {
	id, err := proposalParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(c, 30*time.Second)
	defer cancel()
	p, _, err := s.opts.Proposals.Get(ctx, id)
	if errors.Is(err, proposals.ErrNotFound) {
		return echo.ErrNotFound
	} else if err != nil {
		return fmt.Errorf("admin: roll back proposal: %w", err)
	}
	check, err := s.opts.Proposals.Check(ctx, id)
	if err != nil {
		return fmt.Errorf("admin: roll back proposal: %w", err)
	}
	if msg := proposals.RollbackRefusal(p, check.Live); msg != "" {
		return s.decided(c, id, templates.FlashWarning, msg)
	}
	what := "the document it was made against"
	if !p.BaseExists {
		what = "no document at all (it did not exist before; it is deleted)"
	}
	if ok, err := s.confirm(c, "proposals", templates.ConfirmView{
		Title: "Roll back this proposal?",
		Message: "“" + p.Summary + "” is live in " + p.Target.String() + ". Rolling back writes " + what +
			" as a new revision; the proposal then reads rolled back, and its text stays in the document's history.",
		Action: proposalPath(id) + "/rollback",
		Button: "Yes, roll back",
		Cancel: proposalPath(id),
	}); !ok {
		return err
	}
	o, err := s.opts.Proposals.Rollback(ctx, id, webDecider(c))
	if errors.Is(err, proposals.ErrNotFound) {
		return echo.ErrNotFound
	} else if err != nil {
		return fmt.Errorf("admin: roll back proposal: %w", err)
	}
	kind := templates.FlashSuccess
	if !o.RolledBack {
		kind = templates.FlashWarning
	}
	return s.decided(c, id, kind, o.Message)
}
