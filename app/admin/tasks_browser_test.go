package admin

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kimiapp/kimi/app/tasks"
)

// TestBrowserTasks walks the form flow: create a task through the form,
// see it listed, open it, run it now, and see the run's status change in
// the history without a reload while the post is held, then released.
func TestBrowserTasks(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	tb := newTab(t)
	tb.do("sign in", chromedp.Navigate(h.ts.URL+"/login"), visible(`[data-testid=login-form]`),
		fill(`#login-username`, testUser), fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`), visible(`[data-testid=overview-version]`))

	tb.do("open the new task form", chromedp.Navigate(h.ts.URL+"/tasks"), click(`[data-testid=task-new]`), visible(`[data-testid=task-form]`),
		fill(`#task-guild`, "42"), fill(`#task-name`, "Browser task"), fill(`#task-owner`, "9"),
		fill(`#task-destinations`, "100"), fill(`#task-content`, "Hello from {task}"),
		chromedp.SetValue(chromedp.CSS(`#task-kind`), "daily"), chromedp.SetValue(chromedp.CSS(`#task-time`), "07:30"),
		click(`[data-testid=task-save]`), visible(`[data-testid=alert-success]`))
	tb.wantText(`[data-testid=alert-success]`, "Task Browser task created.")
	tb.wantText(`[data-testid=task-schedule]`, "Every day at 07:30 (Europe/Berlin)")

	tb.do("see it listed", chromedp.Navigate(h.ts.URL+"/tasks"), visible(`[data-testid=task-table]`))
	tb.wantText(`[data-testid=task-table]`, "Browser task")
	page, err := h.tasks.admin.List(t.Context(), tasks.ListOptions{})
	if err != nil || len(page.Tasks) != 1 {
		t.Fatalf("tasks = %+v, %v; want the one created", page, err)
	}
	id := page.Tasks[0].ID

	release := h.tasks.poster.hold()
	defer release()
	tb.do("open it and run it now", click(`[data-testid=task-open-`+id+`]`), visible(`[data-testid=task-no-runs]`),
		click(`[data-testid=task-run-now]`), visible(`[data-testid=alert-success]`),
		waitTestIDText("task-history", "delivering"),
		chromedp.Evaluate[chromedp.Void](`window.kimiNoReload = true`))
	release()
	tb.do("the run completes without a reload", waitTestIDText("task-history", "completed"))
	if !evalJS[bool](tb, `window.kimiNoReload === true`) {
		t.Fatal("the task page reloaded instead of updating in place")
	}
	if n := h.auditCount(tasks.ActionRunNow); n != 1 {
		t.Errorf("%d run-now audit rows, want 1", n)
	}
}
