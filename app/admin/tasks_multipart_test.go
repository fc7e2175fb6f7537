package admin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/tasks"
)

// countingReader serves n bytes of a multipart body: a header part, then
// one file part of filler, then the closing boundary, and counts what was
// read of it.
type countingReader struct {
	r    io.Reader
	read int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

// TestTaskUploadSignedOutUnread: a signed-out multipart POST /tasks (a
// body up to the task forms' 27 MiB) is refused (requireAdmin's 401)
// before its body is read:
// the CSRF check used to parse it whole, in memory (PostFormValue's
// 32 MiB; a url-encoded one up to net/http's 10 MiB), for anyone, before
// requireAdmin ran — with or without a pre-session cookie.
func TestTaskUploadSignedOutUnread(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	for _, tc := range []struct {
		name       string
		cookie     bool
		urlencoded bool
	}{{"no cookie", false, false}, {"pre-session cookie", true, false}, {"url-encoded, pre-session cookie", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			const tok = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
			var head bytes.Buffer
			w := multipart.NewWriter(&head)
			_ = w.WriteField("_csrf", tok)
			if _, err := w.CreateFormFile(tasks.FieldAttachments, "big.bin"); err != nil {
				t.Fatal(err)
			}
			tail := "\r\n--" + w.Boundary() + "--\r\n"
			body := &countingReader{r: io.MultiReader(&head, io.LimitReader(zeroReader{}, 26<<20), strings.NewReader(tail))}
			ct := w.FormDataContentType()
			if tc.urlencoded {
				body = &countingReader{r: io.MultiReader(strings.NewReader("_csrf="+tok+"&content="), io.LimitReader(zeroReader{}, 26<<20))}
				ct = "application/x-www-form-urlencoded"
			}
			u, _ := url.Parse(h.ts.URL)
			req := httptest.NewRequest(http.MethodPost, h.ts.URL+"/tasks", body)
			req.Host = u.Host
			req.Header.Set("Content-Type", ct)
			if tc.cookie {
				req.AddCookie(&http.Cookie{Name: csrfCookie, Value: tok})
			}
			rec := httptest.NewRecorder()
			h.ts.Config.Handler.ServeHTTP(rec, req)
			if body.read > 1<<20 {
				t.Errorf("the signed-out upload had %d bytes of its body read (status %d), want it refused unread", body.read, rec.Code)
			}
			if rec.Code != http.StatusUnauthorized {
				t.Errorf("status %d, want requireAdmin's 401", rec.Code)
			}
		})
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// TestTaskUploadSpooled: a signed-in task form's files over the form's
// in-memory share (8 MiB) are spooled to temporary files, not held in
// memory (the CSRF check parsed the form first with net/http's 32 MiB, so
// ParseTaskForm's bound never applied), and the files are gone once the
// request is answered. A temporary directory that cannot be written shows
// the spooling: the upload is refused (400, the form's message) and nothing is saved.
func TestTaskUploadSpooled(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	c.get("/tasks/new")
	big := strings.Repeat("x", 7<<20)

	tmp := t.TempDir()
	t.Setenv("TMPDIR", filepath.Join(tmp, "missing"))
	res := c.postMultipart("/tasks", taskForm(func(v url.Values) { v.Set(tasks.FieldName, "Spooled") }), [][2]string{{"a.bin", big}, {"b.bin", big}})
	wantStatus(t, res, http.StatusBadRequest)
	wantBody(t, res, form.MsgTaskUpload)
	if n := h.taskCount(t); n != 0 {
		t.Errorf("%d tasks after the refused upload, want 0", n)
	}

	t.Setenv("TMPDIR", tmp)
	res = c.postMultipart("/tasks", taskForm(func(v url.Values) { v.Set(tasks.FieldName, "Spooled") }), [][2]string{{"a.bin", big[:6<<20]}, {"b.bin", big[:6<<20]}})
	wantStatus(t, res, http.StatusSeeOther)
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("temporary files left after the request: %v", fmt.Sprint(left))
	}
}

// TestTaskHugeTemplate: a template or embed far over Discord's limits, up
// to the task forms' body limit, is a field error beside its input (422,
// nothing saved), never a 500 or the revision's JSON CHECK; a body over
// the limit is the 413 page.
func TestTaskHugeTemplate(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	c.get("/tasks/new")
	for _, tc := range []struct {
		name      string
		field     string
		value     string
		multipart bool
		status    int
		want      string
	}{
		{"content one over", tasks.FieldContent, strings.Repeat("é", tasks.MaxPostContent+1), false, http.StatusUnprocessableEntity, `data-testid="error-content"`},
		{"content of escaped characters", tasks.FieldContent, strings.Repeat("<\x01", 200_000), false, http.StatusUnprocessableEntity, `data-testid="error-content"`},
		{"content of {task}", tasks.FieldContent, strings.Repeat("{task}", 200_000), true, http.StatusUnprocessableEntity, `data-testid="error-content"`},
		{"content 12 MiB", tasks.FieldContent, strings.Repeat("x", 12<<20), true, http.StatusUnprocessableEntity, `data-testid="error-content"`},
		// Past the form's in-memory share and the 10 MiB net/http allows
		// a form's text besides: the body is not the form's.
		{"content 20 MiB", tasks.FieldContent, strings.Repeat("x", 20<<20), true, http.StatusRequestEntityTooLarge, "shorten it"},
		{"embed 2 MiB", form.TaskEmbedDescription, strings.Repeat("<", 2<<20), true, http.StatusUnprocessableEntity, "embed description is"},
		{"over the body limit", tasks.FieldContent, strings.Repeat("x", 28<<20), true, http.StatusRequestEntityTooLarge, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields := taskForm(func(v url.Values) { v.Set(tc.field, tc.value) })
			var res *response
			if tc.multipart {
				res = c.postMultipart("/tasks", fields, nil)
			} else {
				res = c.post("/tasks", fields)
			}
			wantStatus(t, res, tc.status)
			if tc.want != "" {
				wantBody(t, res, tc.want)
			}
			if n := h.taskCount(t); n != 0 {
				t.Errorf("%d tasks saved, want 0", n)
			}
		})
	}
}

// TestTaskUploadNames: uploads over the count, and file names with path
// separators or 300 bytes, are the attachments' field error (422, nothing
// saved); a NUL is the upload's message (400: mime/multipart refuses the
// header); a name with a directory is stored by its base name (as
// mime/multipart hands it over); more parts than net/http reads (1,000)
// is the 413 that says at most 10.
func TestTaskUploadNames(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	c.get("/tasks/new")
	many := func(n int) [][2]string {
		var files [][2]string
		for i := range n {
			files = append(files, [2]string{fmt.Sprintf("f%d.txt", i), "x"})
		}
		return files
	}
	for _, tc := range []struct {
		name   string
		files  [][2]string
		status int
		want   string
	}{
		{"eleven files", many(11), http.StatusUnprocessableEntity, "11 attachments, at most 10"},
		{"backslash", [][2]string{{`a\b.txt`, "x"}}, http.StatusUnprocessableEntity, "no valid file name"},
		// A NUL in a part's header: mime/multipart refuses the body.
		{"NUL", [][2]string{{"a\x00b.txt", "x"}}, http.StatusBadRequest, form.MsgTaskUpload},
		{"300 bytes", [][2]string{{strings.Repeat("n", 300), "x"}}, http.StatusUnprocessableEntity, "longer than 200 bytes"},
		{"too many parts", many(1200), http.StatusRequestEntityTooLarge, "at most 10 attachments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := c.postMultipart("/tasks", taskForm(), tc.files)
			wantStatus(t, res, tc.status)
			wantBody(t, res, tc.want)
			if n := h.taskCount(t); n != 0 {
				t.Errorf("%d tasks saved, want 0", n)
			}
		})
	}
	res := c.postMultipart("/tasks", taskForm(), [][2]string{{"../../etc/agenda.txt", "x"}})
	wantStatus(t, res, http.StatusSeeOther)
	id := strings.TrimPrefix(res.Header.Get("Location"), "/tasks/")
	task, err := h.tasks.admin.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(task.Definition.Attachments) != 1 || task.Definition.Attachments[0].Name != "agenda.txt" {
		t.Fatalf("stored attachments %+v, want agenda.txt", task.Definition.Attachments)
	}
}
