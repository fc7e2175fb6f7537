package admin

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/proposals"
	"github.com/kimiapp/kimi/web/templates"
)

// approveProposal is POST /proposals/{id}/approve: the service re-validates
// the proposal and applies it only if the live document still equals its
// base (one decision at a time, audited by the service with the admin's
// name). It asks for no confirmation, as a revert does not: approving
// destroys nothing — the text it replaces stays in the document's history,
// one revert away — and the page it is posted from is the review. Whatever
// the outcome (applied, already decided, not applied: …), the service's
// message is the flash of the proposal page it redirects to.
func (s *Server) approveProposal(c echo.Context) error {
	id, err := proposalParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(c, 30*time.Second)
	defer cancel()
	o, err := s.opts.Proposals.Approve(ctx, id, webDecider(c))
	if errors.Is(err, proposals.ErrNotFound) {
		return echo.ErrNotFound
	} else if err != nil {
		return fmt.Errorf("admin: approve proposal: %w", err)
	}
	kind := templates.FlashSuccess
	if !o.Applied {
		kind = templates.FlashWarning
	}
	return s.decided(c, id, kind, o.Message)
}

// webDecider is the signed-in admin as the decider of a decision.
func webDecider(c echo.Context) proposals.Decider {
	return proposals.Decider{Source: "web", Admin: sessionOf(c).Username, IP: c.RealIP()}
}

// decided keeps the decision's message for the proposal page and redirects
// there.
func (s *Server) decided(c echo.Context, id string, kind, message string) error {
	if message == "" {
		message = "Decision recorded."
	}
	s.decisions.put(sessionOf(c).ID, proposalPath(id), templates.Flash{Kind: kind, Message: message}, time.Now())
	return c.Redirect(http.StatusSeeOther, proposalPath(id))
}
