package admin

import (
	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/web/templates"
)

// purgeResults is POST /results/{module}/{name}/{guild}/purge, after a
// confirmation: the subscription's expired notifications (never delivered
// within 30 days) are deleted; the service writes the audit row.
func (s *Server) purgeResults(c echo.Context) error {
	k, err := resultKeyParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(c, resultsActionTimeout)
	defer cancel()
	if _, err := s.resultSubscription(ctx, k); err != nil {
		return resultsNotFound(err, "result subscription")
	}
	if f := form.ParseResultsPurge(c.Request()); !f.Confirmed {
		_, err := s.confirm(c, "results", templates.ConfirmView{
			Title:   "Purge the expired notifications?",
			Message: "Kimi deletes the notifications of " + k.String() + " that expired without being delivered. They could not be delivered any more; only their record goes.",
			Action:  resultPath(k) + "/purge",
			Button:  "Yes, purge expired notifications",
			Cancel:  resultPath(k),
		})
		return err
	}
	n, err := s.opts.Results.PurgeExpired(ctx, k, resultsActor(c))
	if err != nil {
		return resultsNotFound(err, "purge expired results")
	}
	return s.resultActed(c, resultPath(k), "Purged "+plural(n, "expired notification")+".")
}
