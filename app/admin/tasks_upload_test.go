package admin

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/tasks"
)

// postMultipart submits fields and files (name → bytes, under field
// tasks.FieldAttachments) as multipart/form-data with the CSRF token.
func (c *client) postMultipart(path string, fields url.Values, files [][2]string) *response {
	c.h.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	_ = w.WriteField("_csrf", c.csrf)
	for k, vs := range fields {
		for _, v := range vs {
			_ = w.WriteField(k, v)
		}
	}
	for _, f := range files {
		fw, err := w.CreateFormFile(tasks.FieldAttachments, f[0])
		if err != nil {
			c.h.t.Fatal(err)
		}
		_, _ = fw.Write([]byte(f[1]))
	}
	if err := w.Close(); err != nil {
		c.h.t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, c.h.ts.URL+path, &body)
	if err != nil {
		c.h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	return c.do(req)
}

// TestTaskAttachments: the create form's uploads are stored with the
// task; an edit keeps them unless ticked for removal and adds new ones; a
// refused upload (too large for the server) saves nothing.
func TestTaskAttachments(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	c.get("/tasks/new")
	ctx := context.Background()

	res := c.postMultipart("/tasks", taskForm(), [][2]string{{"agenda.txt", "first"}, {"map.png", "second"}})
	wantStatus(t, res, http.StatusSeeOther)
	id := strings.TrimPrefix(res.Header.Get("Location"), "/tasks/")
	task, err := h.tasks.admin.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	def, err := h.tasks.admin.Revision(ctx, id, task.Revision)
	if err != nil {
		t.Fatal(err)
	}
	if names := fileNames(def.Files); !slices.Equal(names, []string{"agenda.txt", "map.png"}) || string(def.Files[0].Data) != "first" {
		t.Fatalf("stored files = %v, want agenda.txt (first) and map.png", names)
	}
	edit := c.get("/tasks/" + id + "/edit")
	wantBody(t, edit, `name="`+form.TaskRemoveFile+`" value="agenda.txt"`, `value="map.png"`)

	fields := taskForm(func(v url.Values) { v.Set(tasks.FieldName, "Morning v2"); v.Add(form.TaskRemoveFile, "agenda.txt") })
	res = c.postMultipart("/tasks/"+id+"/edit", fields, [][2]string{{"notes.md", "third"}})
	wantStatus(t, res, http.StatusSeeOther)
	task, _ = h.tasks.admin.Get(ctx, id)
	def, err = h.tasks.admin.Revision(ctx, id, task.Revision)
	if err != nil {
		t.Fatal(err)
	}
	if names := fileNames(def.Files); task.Revision != 2 || !slices.Equal(names, []string{"map.png", "notes.md"}) || string(def.Files[0].Data) != "second" {
		t.Fatalf("revision %d files = %v, want revision 2 with map.png (kept, its bytes) and notes.md", task.Revision, names)
	}

	// A file over the server's upload limit (8 MiB in the tests' Checker):
	// the field's error, the typed name kept, nothing saved.
	big := strings.Repeat("x", 9<<20)
	res = c.postMultipart("/tasks", taskForm(func(v url.Values) { v.Set(tasks.FieldName, "Too big") }), [][2]string{{"big.bin", big}})
	wantStatus(t, res, http.StatusUnprocessableEntity)
	wantBody(t, res, `data-testid="error-attachments"`, "upload limit", `value="Too big"`)
	if n := h.taskCount(t); n != 1 {
		t.Errorf("%d tasks after the refused upload, want 1", n)
	}
}

func fileNames(files []tasks.Attachment) []string {
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	return names
}
