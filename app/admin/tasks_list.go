package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/tasks"
	"github.com/kimiapp/kimi/web/templates"
)

// tasksList is GET /tasks: every task, newest first, a page at a time by
// the service's keyset cursor (?after=), of one guild with ?guild=. A
// refused guild or a cursor the service did not hand out answers 400 with
// the reason and lists nothing.
func (s *Server) tasksList(c echo.Context) error {
	f := form.ParseTaskFilter(c.Request())
	errs := f.Validate()
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	v := templates.TasksListView{Guild: f.Guild, GuildError: errs.Get(form.TaskGuildFilter), Guilds: s.activeGuildIDs(ctx), NewURL: "/tasks/new", Problem: s.opts.Tasks.Problem()}
	if f.GuildID != 0 {
		v.NewURL = "/tasks/new?" + url.Values{form.TaskGuildFilter: {f.Guild}}.Encode()
	}
	chrome := s.chrome(c, "Tasks", "tasks")
	if !errs.OK() {
		return render(c, http.StatusBadRequest, templates.TasksPage(chrome, v))
	}
	page, err := s.opts.Tasks.List(ctx, tasks.ListOptions{GuildID: f.GuildID, After: f.After, Limit: tasksPageSize})
	if err != nil {
		if f.After != "" {
			v.GuildError = "The page cursor is not valid. Go back to the newest page."
			return render(c, http.StatusBadRequest, templates.TasksPage(chrome, v))
		}
		return tasksNotFound(err, "list tasks")
	}
	ids := make([]string, len(page.Tasks))
	for i, t := range page.Tasks {
		ids[i] = t.ID
	}
	lasts, err := s.opts.Tasks.LastRuns(ctx, ids)
	if err != nil {
		return fmt.Errorf("admin: list tasks: %w", err)
	}
	names, now := s.namer(), time.Now()
	for _, t := range page.Tasks {
		var last *tasks.Run
		if r, ok := lasts[t.ID]; ok {
			last = &r
		}
		v.Rows = append(v.Rows, taskRow(t, names, last, now))
	}
	q := url.Values{}
	if f.GuildID != 0 {
		q.Set(form.TaskGuildFilter, f.Guild)
	}
	if page.Next != "" {
		next := url.Values{form.TaskAfter: {page.Next}}
		if f.GuildID != 0 {
			next.Set(form.TaskGuildFilter, f.Guild)
		}
		v.NextURL = "/tasks?" + next.Encode()
	}
	if f.After != "" {
		v.FirstURL = "/tasks"
		if len(q) > 0 {
			v.FirstURL += "?" + q.Encode()
		}
	}
	return render(c, http.StatusOK, templates.TasksPage(chrome, v))
}
