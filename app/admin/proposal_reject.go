package admin

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/proposals"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/web/templates"
)

// rejectProposal is POST /proposals/{id}/reject with a reason (required:
// it is shown on the Discord card's Decision field and in the history).
// The service records it (audited with the admin's name), or — when the
// proposed document is already live from an interrupted approval — marks
// it applied; its message is the flash of the proposal page. A missing or
// too long reason, or a write the store refused (503: a full disk,
// another program's lock), re-renders the page with the reason kept and
// nothing decided.
func (s *Server) rejectProposal(c echo.Context) error {
	id, err := proposalParam(c)
	if err != nil {
		return err
	}
	f := form.ParseProposalReject(c.Request())
	if errs := f.Validate(); !errs.OK() {
		return s.renderProposal(c, http.StatusUnprocessableEntity, id, f, errs)
	}
	ctx, cancel := withTimeout(c, 30*time.Second)
	defer cancel()
	o, err := s.opts.Proposals.Reject(ctx, id, webDecider(c), f.Reason)
	if errors.Is(err, proposals.ErrNotFound) {
		return echo.ErrNotFound
	} else if errs, status, ok := s.refusedForm(c, err); ok {
		return s.renderProposal(c, status, id, f, errs)
	} else if err != nil {
		return fmt.Errorf("admin: reject proposal: %w", err)
	}
	kind := templates.FlashSuccess
	if o.Proposal.State != sdk.ProposalRejected || strings.HasPrefix(o.Message, "Proposal is already") {
		kind = templates.FlashWarning
	}
	return s.decided(c, id, kind, o.Message)
}
