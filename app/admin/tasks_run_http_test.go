package admin

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/tasks"
)

// waitRun waits (bounded generously, never timed) until the newest run of
// {task} has status want, and returns it as {run}.
func waitRun(t *testing.T, h *harness, want tasks.RunStatus) tasks.Run {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		runs, err := h.tasks.admin.Runs(context.Background(), h.vars["task"], 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) > 0 && runs[0].Status == want {
			h.vars["run"] = runs[0].ID
			return runs[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task's newest run never reached %s: %+v", want, runs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// uncertainRun seeds a task whose run now's post is uncertain (no answer
// after the request was sent): {task}, {run}, and the post's seq {seq}.
func uncertainRun(t *testing.T, h *harness) {
	t.Helper()
	seedTask(taskDef("Standup", "Standup time"))(t, h)
	h.tasks.poster.mu.Lock()
	h.tasks.poster.err = &tasks.PostError{Started: true, Err: errors.New("connection reset")}
	h.tasks.poster.mu.Unlock()
	if _, err := h.tasks.admin.RunNow(context.Background(), "seed", h.vars["task"]); err != nil {
		t.Fatalf("run now: %v", err)
	}
	waitRun(t, h, tasks.RunUncertain)
	posts, err := h.tasks.admin.RunPosts(context.Background(), h.vars["run"])
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range posts {
		if p.Status == tasks.PostUncertain {
			h.vars["seq"] = strconv.Itoa(p.Seq)
			break
		}
	}
	h.tasks.poster.mu.Lock()
	h.tasks.poster.err = nil
	h.tasks.poster.mu.Unlock()
}

var taskRunScenarios = []scenario{
	{
		name: "run now starts a run and the page shows it", method: http.MethodPost, url: "/tasks/{task}/run", form: url.Values{},
		signedIn: true, setup: seedTask(taskDef("Standup", "Standup time")),
		wantStatus: http.StatusSeeOther, wantAudit: []string{tasks.ActionRunNow},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			wantBody(t, followFlash(t, c, res, "/tasks/"+h.vars["task"]), "Run started")
			run := waitRun(t, h, tasks.RunCompleted)
			// A subscriber's notification of the run (as the outbox
			// writes it) shows with its state and last error.
			h.addSubscription(t, resultKey)
			now := time.Now().UnixMilli()
			if _, err := h.st.Writer().Exec(`INSERT OR IGNORE INTO kimi_result_publications (run_id, task_id, revision, guild_id, owner_id, published_ms, expires_ms, messages)
				VALUES (?, ?, 1, 42, 9, ?, ?, '[]')`, run.ID, run.TaskID, now, now+3_600_000); err != nil {
				t.Fatal(err)
			}
			if _, err := h.st.Writer().Exec(`INSERT INTO kimi_result_notifications (id, run_id, module, name, guild_id, published_ms, expires_ms, status, attempts, detail)
				VALUES ('00000000000000000000000000000abc', ?, 'kudos', 'digest', 42, ?, ?, 'retry', 2, 'Subscriber raised boom')`, run.ID, now, now+3_600_000); err != nil {
				t.Fatal(err)
			}
			page := c.get("/tasks/" + h.vars["task"])
			wantBody(t, page, `data-testid="task-run-`+h.vars["run"]+`"`, "completed", "https://discord.com/channels/42/100/",
				`data-testid="task-run-notes-`+run.ID+`"`, "kudos/digest/42", "Subscriber raised boom")
		},
	},
	{
		name: "run now of a paused task is refused with the reason", method: http.MethodPost, url: "/tasks/{task}/run", form: url.Values{},
		signedIn: true, setup: func(t *testing.T, h *harness) {
			seedTask(taskDef("Standup", "Standup time"))(t, h)
			if _, err := h.tasks.admin.SetPaused(context.Background(), "seed", h.vars["task"], true); err != nil {
				t.Fatal(err)
			}
		},
		wantStatus: http.StatusSeeOther, wantNoAudit: true,
		check: func(t *testing.T, h *harness, c *client, res *response) {
			wantBody(t, followFlash(t, c, res, "/tasks/"+h.vars["task"]), `data-testid="alert-error"`)
		},
	},
	{
		name: "a render-only preview shows the chunks escaped", method: http.MethodPost, url: "/tasks/{task}/preview", form: url.Values{"channel": {""}},
		signedIn: true, setup: seedTask(taskDef("Standup", "<script>alert(3)</script> for {task}")),
		wantStatus: http.StatusOK, wantNoAudit: true,
		wantContains:    []string{`data-testid="task-preview-chunk"`, "alert(3)", "for Standup"},
		wantNotContains: []string{"<script>alert(3)"},
	},
	{
		name: "a preview posted to a channel is a preview run", method: http.MethodPost, url: "/tasks/{task}/preview", form: url.Values{"channel": {"101"}},
		signedIn: true, setup: seedTask(taskDef("Standup", "Standup time")),
		wantStatus: http.StatusSeeOther, wantAudit: []string{tasks.ActionPreview},
	},
	{
		name: "a preview channel that is no id is refused", method: http.MethodPost, url: "/tasks/{task}/preview", form: url.Values{"channel": {"general"}},
		signedIn: true, setup: seedTask(taskDef("Standup", "Standup time")),
		wantStatus: http.StatusBadRequest, wantNoAudit: true, wantContains: []string{`data-testid="error-channel"`},
	},
	{
		name: "an uncertain post offers its retry", method: http.MethodGet, url: "/tasks/{task}",
		signedIn: true, setup: uncertainRun, wantStatus: http.StatusOK,
		wantContains: []string{"uncertain", `data-testid="task-retry-{run}-{seq}"`, "Retry (I checked Discord: it was not posted)"},
	},
	{
		name: "retry of an uncertain post asks for confirmation first", method: http.MethodPost, url: "/tasks/{task}/runs/{run}/posts/{seq}/retry", form: url.Values{},
		signedIn: true, setup: uncertainRun, wantStatus: http.StatusOK, wantNoAudit: true,
		wantContains: []string{"Send this post again?", `name="confirm" value="yes"`},
	},
	{
		name: "confirmed retry re-sends the uncertain post", method: http.MethodPost, url: "/tasks/{task}/runs/{run}/posts/{seq}/retry", form: url.Values{"confirm": {"yes"}},
		signedIn: true, setup: uncertainRun, wantStatus: http.StatusSeeOther, wantAudit: []string{tasks.ActionRetryPost},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			waitRun(t, h, tasks.RunCompleted)
		},
	},
	{
		name: "retry of a post under another task's address is a 404 and re-sends nothing", method: http.MethodPost,
		url: "/tasks/{other}/runs/{run}/posts/{seq}/retry", form: url.Values{"confirm": {"yes"}},
		signedIn: true, setup: func(t *testing.T, h *harness) {
			uncertainRun(t, h)
			owner := h.vars["task"]
			seedTask(taskDef("Other", "Other time"))(t, h)
			h.vars["other"], h.vars["task"] = h.vars["task"], owner
		},
		wantStatus: http.StatusNotFound, wantNoAudit: true,
		check: func(t *testing.T, h *harness, c *client, res *response) {
			posts, err := h.tasks.admin.RunPosts(context.Background(), h.vars["run"])
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range posts {
				if strconv.Itoa(p.Seq) == h.vars["seq"] && p.Status != tasks.PostUncertain {
					t.Fatalf("the post is %s after a retry under another task's address", p.Status)
				}
			}
		},
	},
	{
		name: "a run's one-chunk post shows as chunk 1/1", method: http.MethodPost, url: "/tasks/{task}/run", form: url.Values{},
		signedIn: true, setup: seedTask(taskDef("Standup", "Standup time")),
		wantStatus: http.StatusSeeOther, wantAudit: []string{tasks.ActionRunNow},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			waitRun(t, h, tasks.RunCompleted)
			page := c.get("/tasks/" + h.vars["task"])
			re := regexp.MustCompile(`data-testid="task-post-` + h.vars["run"] + `-1">\s*<td>\s*([0-9]+/[0-9]+)`)
			if m := re.FindStringSubmatch(page.body); m == nil || m[1] != "1/1" {
				t.Fatalf("chunk cell of post 1 = %v, want 1/1", m)
			}
		},
	},
	{
		name: "run now in a server whose scheduled tasks are off is refused with the exact message", method: http.MethodPost, url: "/tasks/{task}/run", form: url.Values{},
		signedIn: true, setup: disabledTask, wantStatus: http.StatusSeeOther, wantNoAudit: true,
		check: func(t *testing.T, h *harness, c *client, res *response) {
			wantBody(t, followFlash(t, c, res, "/tasks/"+h.vars["task"]), `data-testid="alert-error"`, tasks.MsgDisabled)
			if runs, err := h.tasks.admin.Runs(context.Background(), h.vars["task"], 10); err != nil || len(runs) != 0 {
				t.Fatalf("runs = %+v, %v; want none", runs, err)
			}
		},
	},
	{
		name: "a preview posted in a server whose scheduled tasks are off is refused with the exact message", method: http.MethodPost, url: "/tasks/{task}/preview",
		form: url.Values{"channel": {"101"}}, signedIn: true, setup: disabledTask,
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true, wantContains: []string{tasks.MsgDisabled},
	},
}

// disabledTask seeds {task} and moves it to taskOffGuild, whose scheduled
// tasks are off (as when the server's document turned them off later).
func disabledTask(t *testing.T, h *harness) {
	t.Helper()
	seedTask(taskDef("Standup", "Standup time"))(t, h)
	if _, err := h.st.Writer().Exec(`UPDATE kimi_tasks SET guild_id = ? WHERE id = ?`, taskOffGuild, h.vars["task"]); err != nil {
		t.Fatal(err)
	}
}

func TestTaskRunPages(t *testing.T) { runScenarios(t, taskRunScenarios) }
