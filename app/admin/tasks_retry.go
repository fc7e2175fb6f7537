package admin

import (
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/web/templates"
)

// retryTaskPost is POST /tasks/{id}/runs/{run}/posts/{seq}/retry, after a
// confirmation: an uncertain post (Kimi cannot tell whether Discord took
// it) is sent again, because the operator checked Discord and it was not
// posted; the runner writes the audit row.
func (s *Server) retryTaskPost(c echo.Context) error {
	id, err := taskIDParam(c)
	if err != nil {
		return err
	}
	run := c.Param("run")
	seq, err := strconv.Atoi(c.Param("seq"))
	if !taskIDRE.MatchString(run) || err != nil || seq < 0 {
		return echo.ErrNotFound
	}
	if ok, err := s.confirm(c, "tasks", templates.ConfirmView{
		Title: "Send this post again?",
		Message: "Kimi does not know whether Discord received post " + strconv.Itoa(seq) + " of this run. Send it again only if you checked the channel in Discord " +
			"and it is not there: otherwise it appears twice.",
		Action: taskPath(id) + "/runs/" + run + "/posts/" + strconv.Itoa(seq) + "/retry",
		Button: "Yes, I checked Discord: it was not posted",
		Cancel: taskPath(id),
	}); !ok {
		return err
	}
	ctx, cancel := withTimeout(c, tasksActionTimout)
	defer cancel()
	if err := s.opts.Tasks.RetryPost(ctx, actor(c), id, run, seq); err != nil {
		if msg, ok := taskRefusal(err); ok {
			return s.taskActed(c, taskPath(id), templates.FlashError, msg)
		}
		return tasksNotFound(err, "retry task post")
	}
	return s.taskActed(c, taskPath(id), templates.FlashSuccess, "The post is being sent again.")
}
