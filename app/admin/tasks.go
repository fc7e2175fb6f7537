package admin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/app/tasks"
	"github.com/kimiapp/kimi/web/templates"
)

// TasksAdmin is what the /tasks pages need of the scheduled tasks
// (app/serve.go passes the *tasks.Admin): the definitions with the
// guild's policy looked up per save, the runs and their posts, the
// operator's actions (each audited by the service) and a change signal
// for the live regions.
type TasksAdmin interface {
	Create(ctx context.Context, actor string, def tasks.Definition) (tasks.Task, error)
	Update(ctx context.Context, actor, id string, def tasks.Definition) (tasks.Task, error)
	Policy(guildID uint64) guildcfg.TaskPolicy
	Get(ctx context.Context, id string) (tasks.Task, error)
	Revision(ctx context.Context, id string, rev int) (tasks.Definition, error)
	List(ctx context.Context, o tasks.ListOptions) (tasks.Page, error)
	SetPaused(ctx context.Context, actor, id string, paused bool) (tasks.Task, error)
	Delete(ctx context.Context, actor, id string) error
	Runs(ctx context.Context, id string, limit int) ([]tasks.Run, error)
	LastRuns(ctx context.Context, ids []string) (map[string]tasks.Run, error)
	RunPosts(ctx context.Context, runID string) ([]tasks.PostView, error)
	RunNow(ctx context.Context, actor, id string) (string, error)
	Preview(ctx context.Context, actor, id string, channelID uint64) (tasks.Preview, error)
	RetryPost(ctx context.Context, actor, taskID, runID string, seq int) error
	Watch(ctx context.Context) <-chan struct{}
	// Problem is the runner's start-up problem ("" when none).
	Problem() string
}

var _ TasksAdmin = (*tasks.Admin)(nil)

// RunNotifier lists a run's notifications to subscribers (the
// *results.Service behind Options.Results): a task's history shows them
// when the results service has it.
type RunNotifier interface {
	RunNotifications(ctx context.Context, runID string) ([]results.RunNotification, error)
}

var _ RunNotifier = (*results.Service)(nil)

// Bounds of the /tasks pages.
const (
	tasksPageSize     = 25
	taskRunsShown     = 20
	tasksActionTimout = 30 * time.Second
)

// taskIDRE is a task's or a run's id (tasks.newID: 16 bytes in hex).
var taskIDRE = regexp.MustCompile(`\A[0-9a-f]{32}\z`)

// requireTasks answers 503 when the server runs without the tasks service.
func (s *Server) requireTasks(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.opts.Tasks == nil {
			return echo.NewHTTPError(http.StatusServiceUnavailable, "The scheduled-tasks service is not running in this server.")
		}
		return next(c)
	}
}

// taskIDParam is the {id} of a task address; anything no task can have is
// a 404.
func taskIDParam(c echo.Context) (string, error) {
	id := c.Param("id")
	if !taskIDRE.MatchString(id) {
		return "", echo.ErrNotFound
	}
	return id, nil
}

func taskPath(id string) string { return "/tasks/" + id }

// tasksNotFound maps the service's ErrNotFound to a 404.
func tasksNotFound(err error, what string) error {
	if errors.Is(err, tasks.ErrNotFound) {
		return echo.ErrNotFound
	}
	return fmt.Errorf("admin: %s: %w", what, err)
}

// taskActed keeps the action's message for the page it redirects to.
func (s *Server) taskActed(c echo.Context, page, kind, message string) error {
	if sess := sessionOf(c); sess != nil {
		s.decisions.put(sess.ID, page, templates.Flash{Kind: kind, Message: message}, time.Now())
	}
	return c.Redirect(http.StatusSeeOther, page)
}

// taskRefusal is the operator's sentence of a refused run-now, preview or
// retry (tasks.ErrNotRunnable's text says why; tasks.ErrDisabled: its
// exact message); ok false for any other error.
func taskRefusal(err error) (string, bool) {
	if errors.Is(err, tasks.ErrDisabled) {
		return tasks.MsgDisabled, true
	}
	if !errors.Is(err, tasks.ErrNotRunnable) {
		return "", false
	}
	msg := strings.TrimPrefix(err.Error(), "tasks: ")
	if msg == "" {
		msg = "The task cannot run now."
	}
	return strings.ToUpper(msg[:1]) + msg[1:], true
}

// taskStateKind is a task state's badge kind.
func taskStateKind(st tasks.State) string {
	switch st {
	case tasks.StateActive:
		return "success"
	case tasks.StatePaused:
		return "neutral"
	case tasks.StateNeedsAttention:
		return "danger"
	}
	return "neutral"
}

// taskRunKind is a run status' badge kind.
func taskRunKind(st tasks.RunStatus) string {
	switch st {
	case tasks.RunCompleted:
		return "success"
	case tasks.RunFailed, tasks.RunUncertain:
		return "danger"
	case tasks.RunPending, tasks.RunRunning, tasks.RunDelivering:
		return "warning"
	}
	return "neutral"
}

// taskPostKind is a post status' badge kind.
func taskPostKind(st tasks.PostStatus) string {
	switch st {
	case tasks.PostSent:
		return "success"
	case tasks.PostFailed, tasks.PostUncertain:
		return "danger"
	case tasks.PostSending:
		return "warning"
	}
	return "neutral"
}

// stateText is a state as the page says it.
func stateText(st tasks.State) string { return strings.ReplaceAll(string(st), "_", " ") }

// scheduleText is a definition's schedule in a sentence.
func scheduleText(def tasks.Definition) string {
	sched, fe := def.ParsedSchedule()
	if fe != nil {
		return "Schedule not readable"
	}
	return sched.Describe()
}

// taskRow is a task's summary; last is its newest run (nil: none).
func taskRow(t tasks.Task, names namer, last *tasks.Run, now time.Time) templates.TaskRow {
	r := templates.TaskRow{
		ID: t.ID, URL: taskPath(t.ID), Name: t.Name, Guild: strconv.FormatUint(t.GuildID, 10), GuildName: names.Guild(t.GuildID),
		State: stateText(t.State), StateKind: taskStateKind(t.State), Schedule: scheduleText(t.Definition),
		Paused: t.State == tasks.StatePaused,
	}
	// A paused task keeps its next occurrence for when it is resumed, but
	// nothing runs then: the page says paused, not "next run in 2 hours".
	if !t.NextDue.IsZero() && !r.Paused {
		r.NextDue, r.NextDueExact = relativeNext(t.NextDue, now), exactTime(t.NextDue)
	}
	if last != nil {
		r.LastRun, r.LastRunKind = string(last.Status), taskRunKind(last.Status)
		r.LastRunAt, r.LastRunExact = relativeTime(last.Due, now), exactTime(last.Due)
	}
	return r
}

// activeGuildIDs are the ids of the guilds the bot serves (the form's
// suggestions).
func (s *Server) activeGuildIDs(ctx context.Context) []string {
	if s.opts.Guilds == nil {
		return nil
	}
	list, err := s.opts.Guilds.List(ctx)
	if err != nil {
		return nil
	}
	var ids []string
	for _, g := range list {
		if g.Active {
			ids = append(ids, strconv.FormatUint(g.GuildID, 10))
		}
	}
	return ids
}

// byteSize is n bytes in a short unit.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " B"
}

// taskFormView is the create or edit form's page for f with its errors.
func (s *Server) taskFormView(ctx context.Context, f form.TaskForm, errs form.Errors, existing []tasks.AttachmentMeta) templates.TaskFormView {
	active := s.activeGuildIDs(ctx)
	if f.Guild == "" && len(active) == 1 {
		f.Guild = active[0] // one guild: it is the task's
	}
	v := templates.TaskFormView{
		Title: "New task", Lead: "A message the bot posts on a schedule.", Action: "/tasks", Cancel: "/tasks",
		Form: f, Errors: errs, FormError: errs.Get(form.FieldForm), Guilds: active,
		Kinds:    []string{string(tasks.KindOnce), string(tasks.KindInterval), string(tasks.KindDaily), string(tasks.KindWeekdays), string(tasks.KindWeekly), string(tasks.KindMonthly)},
		Weekdays: []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"},
	}
	if g, err := strconv.ParseUint(f.Guild, 10, 64); err == nil && g != 0 {
		p := s.opts.Tasks.Policy(g)
		v.PolicyKnown, v.PolicyEnabled, v.PolicyTimezone = true, p.Enabled, p.Timezone
		ids := make([]string, len(p.Destinations))
		for i, d := range p.Destinations {
			ids[i] = strconv.FormatUint(d, 10)
		}
		v.PolicyDestinations = strings.Join(ids, ", ")
	}
	for _, a := range existing {
		v.Existing = append(v.Existing, templates.TaskFile{Name: a.Name, Size: byteSize(a.Size)})
	}
	v.Pick = s.taskPickers(v)
	return v
}

// taskSaveErrors maps a refused save to the form's errors: field errors of
// a *tasks.DefinitionError beside their fields, ErrDisabled as the form's;
// ok false for any other error.
func taskSaveErrors(err error) (form.Errors, bool) {
	var de *tasks.DefinitionError
	switch {
	case errors.As(err, &de):
		known := []string{tasks.FieldGuild, tasks.FieldName, tasks.FieldOwner, tasks.FieldDestinations, tasks.FieldContent, tasks.FieldEmbed,
			tasks.FieldMentionUsers, tasks.FieldMentionRoles, tasks.FieldAttachments, tasks.FieldLogChannel, tasks.FieldKind, tasks.FieldAt,
			tasks.FieldEvery, tasks.FieldTime, tasks.FieldWeekday, tasks.FieldDay, tasks.FieldTimezone, tasks.FieldLate}
		var e form.Errors
		for _, k := range slices.Sorted(maps.Keys(de.Fields)) {
			switch field := k; {
			case field == tasks.FieldAnchor:
				e.Add(tasks.FieldEvery, de.Fields[k])
			case slices.Contains(known, field):
				e.Add(field, de.Fields[k])
			default:
				e.Add(form.FieldForm, de.Fields[k]) // a field the form has no input for
			}
		}
		if !e.Has(form.FieldForm) {
			e.Add(form.FieldForm, "The task was not saved: correct the fields marked below.")
		}
		return e, true
	case errors.Is(err, tasks.ErrDisabled):
		var e form.Errors
		e.Add(form.FieldForm, tasks.MsgDisabled)
		return e, true
	}
	return nil, false
}

// taskDetail reads a task page's live region.
func (s *Server) taskDetail(ctx context.Context, id string) (tasks.Task, templates.TaskDetail, error) {
	t, err := s.opts.Tasks.Get(ctx, id)
	if err != nil {
		return t, templates.TaskDetail{}, tasksNotFound(err, "task")
	}
	now := time.Now()
	d := templates.TaskDetail{ActionBase: taskPath(id), State: stateText(t.State), StateKind: taskStateKind(t.State), Paused: t.State == tasks.StatePaused}
	if !t.NextDue.IsZero() && !d.Paused {
		d.NextDue, d.NextDueExact = relativeNext(t.NextDue, now), exactTime(t.NextDue)
	}
	runs, err := s.opts.Tasks.Runs(ctx, id, taskRunsShown)
	if err != nil {
		return t, d, tasksNotFound(err, "task runs")
	}
	notifier, _ := s.opts.Results.(RunNotifier)
	names := s.namer()
	for _, r := range runs {
		row := templates.TaskRunRow{ID: r.ID, Status: string(r.Status), Kind: taskRunKind(r.Status),
			Due: relativeTime(r.Due, now), DueExact: exactTime(r.Due), Detail: r.Detail}
		if r.SkippedCount > 0 {
			row.Skipped = plural(int(r.SkippedCount), "missed occurrence") + " skipped"
		}
		posts, err := s.opts.Tasks.RunPosts(ctx, r.ID)
		if err != nil && !errors.Is(err, tasks.ErrNotFound) {
			return t, d, fmt.Errorf("admin: task run posts: %w", err)
		}
		for _, p := range posts {
			pr := templates.TaskPostRow{Seq: strconv.Itoa(p.Seq), Chunk: strconv.Itoa(p.ChunkIndex) + "/" + strconv.Itoa(p.ChunkTotal),
				Channel: strconv.FormatUint(p.ChannelID, 10), ChannelName: names.Channel(p.ChannelID), Log: p.Log, Status: string(p.Status), Kind: taskPostKind(p.Status),
				Attempts: strconv.Itoa(p.Attempts), Detail: p.Detail}
			if p.Status == tasks.PostSent && p.MessageID != 0 {
				pr.JumpURL = s.messageLink(t.GuildID, p.ChannelID, p.MessageID)
			}
			if p.Status == tasks.PostUncertain {
				pr.RetryURL = taskPath(id) + "/runs/" + r.ID + "/posts/" + pr.Seq + "/retry"
			}
			row.Posts = append(row.Posts, pr)
		}
		if notifier != nil {
			notes, err := notifier.RunNotifications(ctx, r.ID)
			if err != nil {
				row.NotesError = "The notifications of this run could not be read."
			}
			for _, n := range notes {
				row.Notifications = append(row.Notifications, templates.TaskNoteRow{Sub: n.SubKey.String(), Status: string(n.Status),
					Kind: resultStatusKind(n.Status), Attempts: plural(n.Attempts, "attempt"), Detail: n.Detail})
			}
		}
		d.Runs = append(d.Runs, row)
	}
	return t, d, nil
}

// taskEventsURL is the live region's stream of a task page.
func taskEventsURL(id string) string {
	return "/tasks/events?" + url.Values{"id": {id}}.Encode()
}
