package admin

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/tasks"
)

var heldTokenRE = regexp.MustCompile(`name="` + form.TaskHeldFile + `" value="([0-9a-f]+)"`)

// heldTokens are the held files' tokens a task form page lists.
func heldTokensOf(body string) []string {
	var toks []string
	for _, m := range heldTokenRE.FindAllStringSubmatch(body, -1) {
		toks = append(toks, m[1])
	}
	return toks
}

// taskFiles are the stored attachments of task id's current revision.
func (h *harness) taskFiles(t *testing.T, id string) []tasks.Attachment {
	t.Helper()
	ctx := context.Background()
	task, err := h.tasks.admin.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	def, err := h.tasks.admin.Revision(ctx, id, task.Revision)
	if err != nil {
		t.Fatal(err)
	}
	return def.Files
}

// TestTaskRefusedKeepsFiles: a refused task save keeps its uploads on the
// server for the session; the re-rendered form lists them with a remove
// button, the fixed save attaches them (and they are then forgotten), the
// remove button drops one without saving; another session's save cannot
// use them, and an hour later they are gone. The same on the edit form.
func TestTaskRefusedKeepsFiles(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	clk := &testClock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	h.srv.held.now = clk.Now
	c := h.newClient()
	c.login(testUser, testPassword)
	c.get("/tasks/new")
	nameless := taskForm(func(v url.Values) { v.Set(tasks.FieldName, "") })
	withTokens := func(v url.Values, toks ...string) url.Values {
		v[form.TaskHeldFile] = toks
		return v
	}

	type step struct {
		name string
		run  func(t *testing.T)
	}
	var toks []string
	var id string
	for _, s := range []step{
		{"a refused create lists its files", func(t *testing.T) {
			res := c.postMultipart("/tasks", nameless, [][2]string{{"agenda.txt", "first"}, {"map.png", "second"}})
			wantStatus(t, res, http.StatusUnprocessableEntity)
			wantBody(t, res, `data-testid="task-held-files"`, "agenda.txt", "map.png", `name="`+form.TaskRemoveHeld+`"`)
			if toks = heldTokensOf(res.body); len(toks) != 2 {
				t.Fatalf("held tokens %v, want 2", toks)
			}
		}},
		{"refused again with one more: all three listed", func(t *testing.T) {
			res := c.postMultipart("/tasks", withTokens(nameless, toks...), [][2]string{{"notes.md", "third"}})
			wantStatus(t, res, http.StatusUnprocessableEntity)
			wantBody(t, res, "agenda.txt", "map.png", "notes.md")
			if toks = heldTokensOf(res.body); len(toks) != 3 {
				t.Fatalf("held tokens %v, want 3", toks)
			}
		}},
		{"remove drops one and saves nothing", func(t *testing.T) {
			v := withTokens(taskForm(), toks...)
			v.Set(form.TaskRemoveHeld, toks[1])
			res := c.postMultipart("/tasks", v, nil)
			wantStatus(t, res, http.StatusOK)
			if strings.Contains(res.body, "map.png") || !strings.Contains(res.body, "agenda.txt") {
				t.Errorf("after removing map.png the form lists: %v", heldTokensOf(res.body))
			}
			if n := h.taskCount(t); n != 0 {
				t.Errorf("%d tasks after a remove, want 0", n)
			}
			toks = heldTokensOf(res.body)
		}},
		{"another session cannot use them", func(t *testing.T) {
			other := h.newClient()
			other.login(testUser, testPassword)
			other.get("/tasks/new")
			res := other.postMultipart("/tasks", withTokens(taskForm(func(v url.Values) { v.Set(tasks.FieldName, "Other") }), toks...), nil)
			wantStatus(t, res, http.StatusSeeOther)
			if files := h.taskFiles(t, strings.TrimPrefix(res.Header.Get("Location"), "/tasks/")); len(files) != 0 {
				t.Errorf("another session's save attached %v", fileNames(files))
			}
		}},
		{"the fixed save attaches them", func(t *testing.T) {
			res := c.postMultipart("/tasks", withTokens(taskForm(), toks...), [][2]string{{"late.txt", "fourth"}})
			wantStatus(t, res, http.StatusSeeOther)
			id = strings.TrimPrefix(res.Header.Get("Location"), "/tasks/")
			files := h.taskFiles(t, id)
			if names := fileNames(files); !slices.Equal(names, []string{"agenda.txt", "notes.md", "late.txt"}) || string(files[0].Data) != "first" {
				t.Fatalf("stored files %v, want agenda.txt (first), notes.md, late.txt", names)
			}
			if n := h.srv.held.bytes(); n != 0 {
				t.Errorf("%d bytes still held after the save, want 0", n)
			}
		}},
		{"a refused edit keeps its files; the fixed edit attaches them", func(t *testing.T) {
			res := c.postMultipart("/tasks/"+id+"/edit", nameless, [][2]string{{"extra.txt", "fifth"}})
			wantStatus(t, res, http.StatusUnprocessableEntity)
			wantBody(t, res, `data-testid="task-existing-files"`, `data-testid="task-held-files"`, "extra.txt")
			toks = heldTokensOf(res.body)
			res = c.postMultipart("/tasks/"+id+"/edit", withTokens(taskForm(), toks...), nil)
			wantStatus(t, res, http.StatusSeeOther)
			if names := fileNames(h.taskFiles(t, id)); !slices.Equal(names, []string{"agenda.txt", "notes.md", "late.txt", "extra.txt"}) {
				t.Fatalf("stored files after the edit %v, want the three and extra.txt", names)
			}
		}},
		{"an hour later they are gone", func(t *testing.T) {
			res := c.postMultipart("/tasks", nameless, [][2]string{{"old.txt", "sixth"}})
			wantStatus(t, res, http.StatusUnprocessableEntity)
			toks = heldTokensOf(res.body)
			clk.Add(heldUploadTTL)
			res = c.postMultipart("/tasks", withTokens(taskForm(func(v url.Values) { v.Set(tasks.FieldName, "Late") }), toks...), nil)
			wantStatus(t, res, http.StatusSeeOther)
			if files := h.taskFiles(t, strings.TrimPrefix(res.Header.Get("Location"), "/tasks/")); len(files) != 0 {
				t.Errorf("an expired held file was attached: %v", fileNames(files))
			}
		}},
	} {
		t.Run(s.name, s.run)
	}
}

// TestHeldUploadsBounds: per session at most a form's files (count and
// bytes), the oldest dropped first; the sweep frees expired files.
func TestHeldUploadsBounds(t *testing.T) {
	file := func(name string, n int) tasks.Attachment {
		return tasks.Attachment{Name: name, Data: []byte(strings.Repeat("x", n))}
	}
	for _, tc := range []struct {
		name  string
		holds [][]tasks.Attachment
		want  []string // the session's files left, oldest first
	}{
		{"within the bounds", [][]tasks.Attachment{{file("a", 1), file("b", 1)}}, []string{"a", "b"}},
		{"eleven files: the oldest goes", [][]tasks.Attachment{{file("a", 1)}, {file("b", 1), file("c", 1), file("d", 1), file("e", 1),
			file("f", 1), file("g", 1), file("h", 1), file("i", 1), file("j", 1), file("k", 1)}}, []string{"b", "c", "d", "e", "f", "g", "h", "i", "j", "k"}},
		{"over 25 MiB: the oldest go", [][]tasks.Attachment{{file("a", 10<<20)}, {file("b", 10<<20)}, {file("c", 10<<20)}}, []string{"b", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &testClock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
			h := &heldUploads{now: clk.Now}
			defer h.stop()
			var toks []string
			for _, files := range tc.holds {
				for _, r := range h.hold("s1", files) {
					toks = append(toks, r.Token)
				}
				clk.Add(time.Minute)
			}
			got, _ := h.take("s1", toks)
			if names := fileNames(got); !slices.Equal(names, tc.want) {
				t.Errorf("held %v, want %v", names, tc.want)
			}
			if other, _ := h.take("s2", toks); len(other) != 0 {
				t.Errorf("session s2 took %v", fileNames(other))
			}
			clk.Add(heldUploadTTL)
			h.sweep()
			if n := h.bytes(); n != 0 {
				t.Errorf("%d bytes held after the sweep past the hour, want 0", n)
			}
		})
	}
}
