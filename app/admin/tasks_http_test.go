package admin

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/tasks"
)

// taskDef is the definition the /tasks scenarios seed: daily at 09:00 in
// the guild's zone, posting in taskChannel.
func taskDef(name, template string) tasks.Definition {
	return tasks.Definition{GuildID: taskGuild, Name: name, OwnerID: taskOwner, Destinations: []uint64{taskChannel},
		Template: template, Schedule: map[string]string{tasks.FieldKind: "daily", tasks.FieldTime: "09:00"}}
}

// seedTask creates a task through the real service as {task}.
func seedTask(def tasks.Definition) func(t *testing.T, h *harness) {
	return func(t *testing.T, h *harness) {
		t.Helper()
		task, err := h.tasks.admin.Create(context.Background(), "seed", def)
		if err != nil {
			t.Fatalf("seed task: %v", err)
		}
		h.vars["task"] = task.ID
	}
}

// taskCount is how many tasks the store holds.
func (h *harness) taskCount(t *testing.T) int {
	t.Helper()
	var n int
	if err := h.st.Reader().QueryRow(`SELECT COUNT(*) FROM kimi_tasks`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func wantTaskCount(n int) func(t *testing.T, h *harness, c *client, res *response) {
	return func(t *testing.T, h *harness, c *client, res *response) {
		t.Helper()
		if got := h.taskCount(t); got != n {
			t.Errorf("%d tasks stored, want %d", got, n)
		}
	}
}

// taskForm is a valid create form; mutate changes it.
func taskForm(mutate ...func(url.Values)) url.Values {
	v := url.Values{
		tasks.FieldGuild: {"42"}, tasks.FieldName: {"Morning"}, tasks.FieldOwner: {"9"},
		tasks.FieldDestinations: {"100, 101"}, tasks.FieldContent: {"Good morning, it is {weekday}"},
		tasks.FieldKind: {"daily"}, tasks.FieldTime: {"09:00"}, tasks.FieldLate: {"catch_up"},
	}
	for _, m := range mutate {
		m(v)
	}
	return v
}

func withoutTasks(o *Options) { o.Tasks = nil }

var taskScenarios = []scenario{
	{
		name: "the list shows a task with its state and schedule", method: http.MethodGet, url: "/tasks",
		signedIn: true, setup: seedTask(taskDef("Standup", "Standup time")), wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="task-row-{task}"`, "Standup", "active", "Every day at 09:00 (Europe/Berlin)", `href="/tasks/{task}"`, "not yet"},
	},
	{
		name: "the list shows a task's last run", method: http.MethodGet, url: "/tasks",
		signedIn: true, setup: uncertainRun, wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="task-row-{task}"`, "needs attention", ">uncertain<"}, wantNotContains: []string{"not yet"},
	},
	{
		name: "the list filtered to another guild hides it", method: http.MethodGet, url: "/tasks?guild=43",
		signedIn: true, setup: seedTask(taskDef("Standup", "Standup time")), wantStatus: http.StatusOK,
		wantContains: []string{"No tasks"}, wantNotContains: []string{"task-row-"},
	},
	{
		name: "a guild filter that is no id is refused", method: http.MethodGet, url: "/tasks?guild=abc",
		signedIn: true, wantStatus: http.StatusBadRequest, wantContains: []string{"Enter the server&#39;s id (digits)."},
	},
	{
		name: "the new form takes the guild's policy", method: http.MethodGet, url: "/tasks/new?guild=42",
		signedIn: true, wantStatus: http.StatusOK,
		wantContains: []string{`value="Europe/Berlin"`, "{date}", "{weekday}", `enctype="multipart/form-data"`},
	},
	{
		name: "create saves the task and goes to its page", method: http.MethodPost, url: "/tasks", form: taskForm(),
		signedIn: true, wantStatus: http.StatusSeeOther, wantAudit: []string{tasks.ActionCreate},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			wantTaskCount(1)(t, h, c, res)
			loc := res.Header.Get("Location")
			if !strings.HasPrefix(loc, "/tasks/") {
				t.Fatalf("Location = %q", loc)
			}
			page := c.get(loc)
			// Channels the bot does not see are named so, their ids in the title.
			wantBody(t, page, "Morning", "Task Morning created.", "Every day at 09:00 (Europe/Berlin)",
				">unknown channel 100</span>", `title="channel id 100"`, `title="channel id 101"`)
		},
	},
	{
		name: "a bad definition shows its field errors, keeps the input and saves nothing", method: http.MethodPost, url: "/tasks",
		form: taskForm(func(v url.Values) {
			v.Set(tasks.FieldName, "")
			v.Set(tasks.FieldDestinations, "199")
			v.Set(tasks.FieldTime, "25:99")
			v.Set(tasks.FieldContent, "Kept <b>text</b>")
		}),
		signedIn: true, wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains: []string{`data-testid="error-name"`, "name is required", `data-testid="error-destinations"`, "is a forum",
			`data-testid="error-time"`, "Kept &lt;b&gt;text&lt;/b&gt;", `value="9"`, "The task was not saved"},
		check: wantTaskCount(0),
	},
	{
		name: "destinations that are no ids are refused before the service", method: http.MethodPost, url: "/tasks",
		form:     taskForm(func(v url.Values) { v.Set(tasks.FieldDestinations, "100, general") }),
		signedIn: true, wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains: []string{`data-testid="error-destinations"`, "is not a Discord id", `>general (not visible to the bot)</option>`},
		check:        wantTaskCount(0),
	},
	{
		name: "a guild with scheduled tasks disabled is the form's error", method: http.MethodPost, url: "/tasks",
		form:     taskForm(func(v url.Values) { v.Set(tasks.FieldGuild, "43") }),
		signedIn: true, wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains: []string{`data-testid="task-form-error"`, tasks.MsgDisabled},
		check:        wantTaskCount(0),
	},
	{
		name: "a held file's remove button shows the form again and saves nothing", method: http.MethodPost, url: "/tasks",
		form:     taskForm(func(v url.Values) { v.Set(form.TaskRemoveHeld, "0123abcd") }),
		signedIn: true, wantStatus: http.StatusOK, wantNoAudit: true,
		wantContains: []string{`data-testid="task-form"`, `value="Morning"`}, wantNotContains: []string{`data-testid="task-form-error"`},
		check: wantTaskCount(0),
	},
	{
		name: "create without the CSRF token is refused", method: http.MethodPost, url: "/tasks", form: taskForm(),
		signedIn: true, noCSRF: true, wantStatus: http.StatusForbidden, wantNoAudit: true, check: wantTaskCount(0),
	},
	{
		name: "edit saves revision 2", method: http.MethodPost, url: "/tasks/{task}/edit",
		form:     taskForm(func(v url.Values) { v.Set(tasks.FieldName, "Standup v2"); v.Set(tasks.FieldGuild, "43") }),
		signedIn: true, setup: seedTask(taskDef("Standup", "Standup time")),
		wantStatus: http.StatusSeeOther, wantAudit: []string{tasks.ActionUpdate},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			page := followFlash(t, c, res, "/tasks/"+h.vars["task"])
			wantBody(t, page, "saved as revision 2")
			task, err := h.tasks.admin.Get(context.Background(), h.vars["task"])
			if err != nil {
				t.Fatal(err)
			}
			if task.Revision != 2 || task.Name != "Standup v2" || task.GuildID != taskGuild {
				t.Errorf("after edit: revision %d, name %q, guild %d; want 2, Standup v2, the task's own guild", task.Revision, task.Name, task.GuildID)
			}
		},
	},
	{
		name: "a refused edit keeps the input and the revision", method: http.MethodPost, url: "/tasks/{task}/edit",
		form:     taskForm(func(v url.Values) { v.Set(tasks.FieldName, ""); v.Set(tasks.FieldContent, "Edited text kept") }),
		signedIn: true, setup: seedTask(taskDef("Standup", "Standup time")),
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains: []string{"name is required", "Edited text kept", `action="/tasks/{task}/edit#task-form"`, `data-testid="task-error-summary"`, `href="#task-name"`},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			if task, err := h.tasks.admin.Get(context.Background(), h.vars["task"]); err != nil || task.Revision != 1 || task.Name != "Standup" {
				t.Errorf("after a refused edit: %+v, %v; want revision 1 unchanged", task, err)
			}
		},
	},
	{
		name: "the edit form is prefilled", method: http.MethodGet, url: "/tasks/{task}/edit",
		signedIn: true, setup: seedTask(taskDef("Standup", "Standup time")), wantStatus: http.StatusOK,
		wantContains: []string{`value="Standup"`, "Standup time", `value="09:00"`, `value="100"`},
	},
	{
		name: "pause pauses the task", method: http.MethodPost, url: "/tasks/{task}/pause", form: url.Values{"paused": {"true"}},
		signedIn: true, setup: seedTask(taskDef("Standup", "Standup time")),
		wantStatus: http.StatusSeeOther, wantAudit: []string{tasks.ActionPause},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			wantBody(t, followFlash(t, c, res, "/tasks/"+h.vars["task"]), "Task Standup paused", `data-testid="task-resume"`)
		},
	},
	{
		name: "resume resumes a paused task", method: http.MethodPost, url: "/tasks/{task}/pause", form: url.Values{"paused": {"false"}},
		signedIn: true, setup: func(t *testing.T, h *harness) {
			seedTask(taskDef("Standup", "Standup time"))(t, h)
			if _, err := h.tasks.admin.SetPaused(context.Background(), "seed", h.vars["task"], true); err != nil {
				t.Fatal(err)
			}
		},
		wantStatus: http.StatusSeeOther, wantAudit: []string{tasks.ActionResume},
	},
	{
		name: "pause without a state is refused", method: http.MethodPost, url: "/tasks/{task}/pause", form: url.Values{},
		signedIn: true, setup: seedTask(taskDef("Standup", "Standup time")), wantStatus: http.StatusBadRequest, wantNoAudit: true,
	},
	{
		name: "delete asks for confirmation first", method: http.MethodPost, url: "/tasks/{task}/delete", form: url.Values{},
		signedIn: true, setup: seedTask(taskDef("Standup", "Standup time")),
		wantStatus: http.StatusOK, wantNoAudit: true, wantContains: []string{"Delete the task Standup?", `name="confirm" value="yes"`},
		check: wantTaskCount(1),
	},
	{
		name: "confirmed delete deletes and goes back to the list", method: http.MethodPost, url: "/tasks/{task}/delete", form: url.Values{"confirm": {"yes"}},
		signedIn: true, setup: seedTask(taskDef("Standup", "Standup time")),
		wantStatus: http.StatusSeeOther, wantLocation: "/tasks", wantAudit: []string{tasks.ActionDelete},
		check: wantTaskCount(0),
	},
	{
		name: "a task page escapes its template", method: http.MethodGet, url: "/tasks/{task}",
		signedIn: true, setup: seedTask(taskDef("<script>alert(1)</script>", "<script>alert(2)</script> {task}")), wantStatus: http.StatusOK,
		wantContains:    []string{"&lt;script&gt;alert(2)&lt;/script&gt;", "&lt;script&gt;alert(1)&lt;/script&gt;"},
		wantNotContains: []string{"<script>alert("},
	},
	{
		name: "an unknown task is a 404", method: http.MethodGet, url: "/tasks/0123456789abcdef0123456789abcdef",
		signedIn: true, wantStatus: http.StatusNotFound,
	},
	{
		name: "a malformed task id is a 404", method: http.MethodGet, url: "/tasks/..%2fetc",
		signedIn: true, wantStatus: http.StatusNotFound,
	},
	{
		name: "without the tasks service the list answers 503", method: http.MethodGet, url: "/tasks",
		signedIn: true, opts: []func(*Options){withoutTasks}, wantStatus: http.StatusServiceUnavailable,
	},
	{
		name: "without the tasks service create answers 503", method: http.MethodPost, url: "/tasks", form: taskForm(),
		signedIn: true, opts: []func(*Options){withoutTasks}, wantStatus: http.StatusServiceUnavailable, wantNoAudit: true,
	},
}

func TestTaskPages(t *testing.T) { runScenarios(t, taskScenarios) }

// problemTasks is the real tasks admin with a start-up problem.
type problemTasks struct {
	TasksAdmin
	problem string
}

func (p problemTasks) Problem() string { return p.problem }

// TestTaskRunnerProblemShown: when the scheduled tasks' runner could not
// finish starting, /tasks says so (escaped) above the list; otherwise it
// shows no such alert.
func TestTaskRunnerProblemShown(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.Tasks = problemTasks{TasksAdmin: o.Tasks, problem: "Kimi could not finish starting the scheduled tasks (<b>disk I/O error</b>)"}
	})
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	res := c.get("/tasks")
	wantBody(t, res, `data-testid="task-runner-problem"`, "could not finish starting the scheduled tasks (&lt;b&gt;disk I/O error&lt;/b&gt;)")

	plain := newHarness(t)
	plain.createAdmin()
	pc := plain.newClient()
	pc.login(testUser, testPassword)
	if body := pc.get("/tasks").body; strings.Contains(body, "task-runner-problem") {
		t.Fatal("/tasks shows a runner problem without one")
	}
}
