package admin

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kimiapp/kimi/app/tasks"
)

// TestBrowserTaskHeldFiles: a refused task form lists its uploads as
// attached; Remove drops one and keeps what was typed; Enter in a field
// then saves the task (the form's default button, never a Remove) with the
// file that is left.
func TestBrowserTaskHeldFiles(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	dir := t.TempDir()
	var paths []string
	for _, name := range []string{"agenda.txt", "map.txt"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("content of "+name), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	tb := newTab(t)
	tb.do("sign in", chromedp.Navigate(h.ts.URL+"/login"), visible(`[data-testid=login-form]`),
		fill(`#login-username`, testUser), fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`), visible(`[data-testid=overview-version]`))
	tb.do("a refused form with two files", chromedp.Navigate(h.ts.URL+"/tasks/new"), visible(`[data-testid=task-form]`),
		fill(`#task-guild`, "42"), fill(`#task-owner`, "9"), fill(`#task-destinations`, "100"), fill(`#task-content`, "Hello"),
		chromedp.SetUploadFiles(chromedp.CSS(`#task-attachments`), paths),
		click(`[data-testid=task-save]`), visible(`[data-testid=task-held-files]`))
	if n := evalJS[int](tb, `document.querySelectorAll('[data-testid=task-held-file]').length`); n != 2 {
		t.Fatalf("%d held files listed, want 2", n)
	}
	// The old list is renamed first, so the wait sees the next page's.
	tb.do("remove the second", chromedp.Evaluate[chromedp.Void](`(() => { const l = document.querySelector('[data-testid=task-held-files]');
		l.dataset.testid = 'old'; l.querySelectorAll('[data-testid=task-held-remove]')[1].click(); })()`),
		visible(`[data-testid=task-held-files]`))
	tb.wantText(`[data-testid=task-held-files]`, "agenda.txt")
	if got := evalJS[string](tb, `document.querySelector('#task-content').value`); got != "Hello" {
		t.Errorf("after Remove the template is %q, want the typed Hello", got)
	}
	tb.do("Enter in the name saves", fill(`#task-name`, "Held\n"), visible(`[data-testid=task-definition]`))
	page, err := h.tasks.admin.List(t.Context(), tasks.ListOptions{})
	if err != nil || len(page.Tasks) != 1 {
		t.Fatalf("tasks = %+v, %v; want the one saved", page, err)
	}
	if names := fileNames(h.taskFiles(t, page.Tasks[0].ID)); !slices.Equal(names, []string{"agenda.txt"}) {
		t.Errorf("the saved task has files %v, want agenda.txt", names)
	}
}
