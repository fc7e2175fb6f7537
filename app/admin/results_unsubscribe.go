package admin

import (
	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/web/templates"
)

// unsubscribeResults is POST /results/{module}/{name}/{guild}/unsubscribe,
// after a confirmation: the subscription and every notification of it are
// deleted (audited with the count by the service) and a running module's
// handler for it is unregistered. The module subscribes again at its next
// start if it still wants to.
func (s *Server) unsubscribeResults(c echo.Context) error {
	k, err := resultKeyParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(c, resultsActionTimeout)
	defer cancel()
	if _, err := s.resultSubscription(ctx, k); err != nil {
		return resultsNotFound(err, "result subscription")
	}
	if f := form.ParseResultsUnsubscribe(c.Request()); !f.Confirmed {
		_, err := s.confirm(c, "results", templates.ConfirmView{
			Title: "Unsubscribe " + k.Module + " from " + k.Name + "?",
			Message: "Kimi deletes this subscription and every notification of it — pending, retrying and blocked ones too, " +
				"so those results are never delivered to " + k.Module + ". If the module still wants them, it subscribes again at its next start " +
				"and receives only results published after that.",
			Action: resultPath(k) + "/unsubscribe",
			Button: "Yes, unsubscribe and delete its notifications",
			Cancel: resultPath(k),
		})
		return err
	}
	n, err := s.opts.Results.Unsubscribe(ctx, k, resultsActor(c))
	if err != nil {
		return resultsNotFound(err, "unsubscribe results")
	}
	return s.resultActed(c, "/results", "Unsubscribed "+k.String()+": "+plural(n, "notification")+" deleted.")
}
